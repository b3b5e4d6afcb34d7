"""Altair charts, one module per area, all rendering offline (PNG/SVG, inline HTML).

Charts are a leaf: they take a result (or its frames) and nothing below them imports them. A
result exposes its data (`to_frame()` and friends); `chart(result)` draws it and
`save(result, folder)` writes its tables with its chart beside them. Each area's module is
imported on first use: altair is slow to import, and most runs draw nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cotplan.errors import InputError

__all__ = ["chart", "save"]


def chart(result: Any) -> Any:
    """The Altair chart of an experiment result, a cost projection or comparison, or a lab ablation.

    For example ``chart(martingale_gap(laplace)).save("martingale.png")``.
    """
    draw = _drawers(type(result).__module__).get(type(result).__name__)
    if draw is None:
        raise InputError(
            f"`result` has no chart here: a {type(result).__name__} (charts draw the experiments' "
            "results, cost projections and comparisons, and the positional-encoding ablation)",
            field="result",
        )
    return draw(result)


def save(result: Any, folder: str | Path, *, charts: bool = True) -> list[Path]:
    """Write `result`'s tables into `folder` and, unless `charts` is False, its charts as PNG.

    The same files as ``result.save(folder)``, plus each chart (for a result made of several,
    such as the reproduction report or the ablation across seeds, each part's chart).
    """
    written: list[Path] = result.save(folder, draw=chart if charts else None)
    return written


def _drawers(module: str) -> dict[str, Callable[[Any], Any]]:
    """The chart functions for the results defined in `module`, by result class name."""
    if module == "cotplan.pricing.projection":
        from cotplan.charts import costs

        return {"Projection": costs.projection_chart, "Comparison": costs.comparison_chart}
    if module.startswith("cotplan.experiments."):
        from cotplan.charts import experiments as ex

        return {
            "DebiasResult": ex.debias_chart,
            "EntropyResult": ex.entropy_chart,
            "FalckResult": ex.falck_chart,
            "MartingaleResult": ex.martingale_chart,
            "OrderResult": ex.order_chart,
        }
    if module == "cotplan.lab.ablation":
        from cotplan.charts import lab

        return {"PEAblationResult": lab.pe_ablation_chart}
    return {}
