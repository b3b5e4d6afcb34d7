"""What cotplan's results look like at a terminal: answer-first summaries and tables that fit.

The command line parses its options, calls one library function and hands the result to a
renderer here; a notebook can call the same renderer (rich renders in Jupyter too). Renderers
take a result and a `rich` console and decide nothing about the result: what to compute lives
with the result, what to show first lives here. One module per area (planning, calibration,
costs, production); the research companion renders its own results in
`cotplan.research.render`.
"""

from __future__ import annotations

__all__: list[str] = []
