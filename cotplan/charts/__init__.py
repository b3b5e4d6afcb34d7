"""Altair charts, one module per area, all rendering offline (PNG/SVG, inline HTML).

Charts are a leaf: they take a result (or its frames) and nothing below them imports them. A
result exposes its data (`to_frame()` and friends); `chart(result)` draws it and
`save(result, folder)` writes its tables with its chart beside them. Each area's module is
imported on first use: altair is slow to import, and most runs draw nothing.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cotplan.errors import InputError

__all__ = ["CHARTS", "chart", "save"]

#: Which chart draws which result: the result class (module and name) -> the chart module
#: (its full name) and its function. A test checks that every entry still names a class
#: and a function, so moving a result class fails there instead of silently losing its chart.
CHARTS: dict[tuple[str, str], tuple[str, str]] = {
    ("cotplan.pricing.projection", "Projection"): ("cotplan.charts.costs", "projection_chart"),
    ("cotplan.pricing.projection", "Comparison"): ("cotplan.charts.costs", "comparison_chart"),
    ("cotplan.research.experiments.debias", "DebiasResult"): (
        "cotplan.research.charts.experiments",
        "debias_chart",
    ),
    ("cotplan.research.experiments.entropy", "EntropyResult"): (
        "cotplan.research.charts.experiments",
        "entropy_chart",
    ),
    ("cotplan.research.experiments.falck", "FalckResult"): (
        "cotplan.research.charts.experiments",
        "falck_chart",
    ),
    ("cotplan.research.experiments.martingale", "MartingaleResult"): (
        "cotplan.research.charts.experiments",
        "martingale_chart",
    ),
    ("cotplan.research.experiments.order", "OrderResult"): (
        "cotplan.research.charts.experiments",
        "order_chart",
    ),
    ("cotplan.research.lab.ablation", "PEAblationResult"): (
        "cotplan.research.charts.lab",
        "pe_ablation_chart",
    ),
    ("cotplan.planner.fit", "BudgetPlanner"): ("cotplan.charts.planner", "calibration_chart"),
    ("cotplan.planner.plan_result", "PlanResult"): ("cotplan.charts.planner", "plan_budget_chart"),
    ("cotplan.planner.run", "PlanRun"): ("cotplan.charts.planner", "plan_run_chart"),
    # A study has two charts: its entry returns both, by file name (LabStudy.save writes them).
    ("cotplan.research.lab.reasoning.report", "LabStudy"): (
        "cotplan.research.charts.lab_reasoning",
        "study_charts",
    ),
}


def chart(result: Any) -> Any:
    """The Altair chart of a result: an experiment's, a cost projection or comparison, a lab
    ablation, a fitted planner (its calibration), a plan (k* by size) or a plan run.

    For example ``chart(martingale_gap(laplace)).save("martingale.png")``.
    """
    draw = _drawer(result)
    if draw is None:
        raise InputError(
            f"`result` has no chart here: a {type(result).__name__} (charts draw the results "
            "listed in `cotplan.charts.CHARTS`)",
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


def _drawer(result: Any) -> Callable[[Any], Any] | None:
    """The chart function for `result`'s class (or a class it derives from), if any."""
    for (module, name), (area, function) in CHARTS.items():
        # A result's module is imported before the result exists: a module not loaded yet
        # cannot be the one (and importing it could load torch for nothing).
        loaded = sys.modules.get(module)
        kind = getattr(loaded, name, None) if loaded is not None else None
        if isinstance(kind, type) and isinstance(result, kind):
            drawer: Callable[[Any], Any] = getattr(importlib.import_module(area), function)
            return drawer
    return None
