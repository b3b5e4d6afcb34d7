"""Charts of the planner's results: the error curves against the calibration, k* by size, and
a plan run against uncapped reasoning.

`calibration_chart(planner)` and `budget_chart(planner, eps=)` take a fitted `BudgetPlanner`;
`plan_budget_chart(result)` draws a `PlanResult`'s k* by size, `plan_run_chart(run)` a
`PlanRun`, `comparison_chart(frame)` any `compare_answers` frame. `cotplan.charts.chart(result)`
finds them through `CHARTS`. Each returns an Altair chart; save with `chart.save("x.png")` (PNG
and SVG render offline through vl-convert) or `chart.save("x.html", inline=True)`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cotplan.errors import InfeasibleTargetError

if TYPE_CHECKING:
    from cotplan.planner.fit import BudgetPlanner
    from cotplan.planner.plan_result import PlanResult
    from cotplan.planner.run import PlanRun

__all__ = [
    "budget_chart",
    "calibration_chart",
    "comparison_chart",
    "plan_budget_chart",
    "plan_run_chart",
]


def calibration_chart(planner: BudgetPlanner, *, title: str | None = None) -> Any:
    """Observed error rate per (n, k) as points, the fitted e(k, n) as lines with bootstrap
    bands, one colour per size n. The verdict is the subtitle."""
    import altair as alt

    observed = planner.observed_errors()
    curve = planner.error_curve()
    curve["n"] = curve["n"].astype(int)
    color = alt.Color("n:O", title="size n", scale=alt.Scale(scheme="viridis"))
    x = alt.X("k:Q", title="reasoning budget k (tokens, cap)")
    y_title = "error rate"
    band = (
        alt.Chart(curve.dropna(subset=["low", "high"]))
        .mark_area(opacity=0.15)
        .encode(x=x, y=alt.Y("low:Q", title=y_title), y2="high:Q", color=color)
    )
    line = (
        alt.Chart(curve)
        .mark_line()
        .encode(
            x=x,
            y=alt.Y("error:Q", title=y_title, scale=alt.Scale(domain=[0, 1])),
            color=color,
        )
    )
    points = (
        alt.Chart(observed)
        .mark_circle(opacity=0.9)
        .encode(
            x=x,
            y=alt.Y("error:Q", title=y_title),
            color=color,
            size=alt.Size("answers:Q", title="answers", scale=alt.Scale(range=[20, 200])),
            tooltip=["n:O", "k:Q", "answers:Q", "wrong:Q", alt.Tooltip("error:Q", format=".2f")],
        )
    )
    layers = [line, points] if curve["low"].isna().all() else [band, line, points]
    heading = title or "Error against reasoning budget: calibration (points) and fit (lines)"
    return (
        alt.layer(*layers)
        .properties(
            title=alt.TitleParams(heading, subtitle=_wrap(planner.verdict_)),
            width=560,
            height=320,
        )
        .resolve_scale(size="independent")
    )


def budget_chart(
    planner: BudgetPlanner,
    *,
    eps: float,
    sizes: Sequence[float] | None = None,
    title: str | None = None,
) -> Any:
    """k* against n (log scale) with its bootstrap interval, next to the cap to use (certified
    at calibrated sizes, scaled by the law elsewhere), the paper's α = 1/2 fit and the
    through-origin least-squares c. Sizes default to a grid over the calibrated range (and the
    calibrated sizes themselves); an unattainable `eps` gives an empty chart whose subtitle
    says why."""
    import altair as alt

    if sizes is None:
        low, high = (planner.sizes_[0], planner.sizes_[-1]) if planner.sizes_ else (1, 100)
        grid = np.geomspace(max(low, 1), max(high, 2), 25)
        sizes = sorted({float(v) for v in grid} | {float(v) for v in planner.sizes_})
    rows: list[dict[str, Any]] = []
    note = planner.verdict_
    for n in sizes:
        try:
            budget = planner.budget(n, eps)
        except InfeasibleTargetError as exc:
            note = str(exc)
            rows = []
            break
        rows.append(
            {"n": n, "model": "fit", "k": budget.k_star, "low": budget.low, "high": budget.high}
        )
        if planner.status_ == "helps":
            rows.append({"n": n, "model": "cap (certified / scaled)", "k": float(budget.tokens)})
        for name, label in (("alpha_half", "α = 1/2 fit"), ("least_squares", "least-squares c")):
            if name in budget.baselines and math.isfinite(budget.baselines[name]):
                rows.append({"n": n, "model": label, "k": budget.baselines[name]})
    frame = pd.DataFrame(rows, columns=["n", "model", "k", "low", "high"])
    target = eps
    x = alt.X("n:Q", title="size n", scale=alt.Scale(type="log", domain=[min(sizes), max(sizes)]))
    y_title = f"k* for ε = {target:g} (tokens)"
    y = alt.Y("k:Q", title=y_title)
    color = alt.Color("model:N", title="model")
    fit_rows = frame[(frame["model"] == "fit") & np.isfinite(frame["high"].astype(float))]
    band = (
        alt.Chart(fit_rows)
        .mark_area(opacity=0.2)
        .encode(x=x, y=alt.Y("low:Q", title=y_title), y2="high:Q")
    )
    lines = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=x,
            y=y,
            color=color,
            tooltip=["n:Q", "model:N", alt.Tooltip("k:Q", format=".1f")],
        )
    )
    heading = title or "Reasoning budget k* by size"
    return alt.layer(band, lines).properties(
        title=alt.TitleParams(heading, subtitle=_wrap(note)), width=560, height=300
    )


def _wrap(text: str, width: int = 95) -> list[str]:
    """Split a long verdict into subtitle lines."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    if current:
        lines.append(current)
    return lines[:4]


def plan_budget_chart(result: PlanResult) -> Any:
    """k* by size for the plan's ε (`budget_chart` of its planner)."""
    return budget_chart(result.planner, eps=result.eps)


def plan_run_chart(run: PlanRun) -> Any:
    """Accuracy (with Wilson intervals) against mean reasoning tokens, one point per policy of
    a plan run (planned and uncapped)."""
    return comparison_chart(run.comparison, title=f"Plan (ε = {run.eps:g}) vs uncapped")


def comparison_chart(comparison: pd.DataFrame, *, title: str = "Policies") -> Any:
    """Accuracy with its interval against mean reasoning tokens per item, one point per policy
    (a `compare_answers` frame)."""
    import altair as alt

    x = alt.X("reasoning_tokens:Q", title="mean reasoning tokens per item")
    y_title = "accuracy (95% Wilson interval)"
    base = alt.Chart(comparison)
    bars = base.mark_rule().encode(
        x=x, y=alt.Y("accuracy_low:Q", title=y_title), y2="accuracy_high:Q", color="policy:N"
    )
    points = base.mark_point(filled=True, size=90).encode(
        x=x,
        y=alt.Y("accuracy:Q", title=y_title, scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("policy:N", title="policy"),
        tooltip=[
            "policy:N",
            alt.Tooltip("accuracy:Q", format=".2f"),
            alt.Tooltip("reasoning_tokens:Q", format=".1f"),
        ],
    )
    return alt.layer(bars, points).properties(title=title, width=480, height=300)
