"""Charts of a lab reasoning study: the error grid, and k* against n on log-log axes.

Each function takes a `LabStudy` and returns an Altair chart; save with `chart.save("x.png")`
(offline through vl-convert). `study_charts` is the study's entry in `cotplan.charts.CHARTS`:
a study has two charts, so it returns both, by the file name `LabStudy.save` gives each.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from cotplan.research.lab.reasoning.report import LabStudy

__all__ = ["budget_law_chart", "error_grid_chart", "study_charts"]


def study_charts(study: LabStudy) -> dict[str, Any]:
    """Both charts of a study, by file name: the error grid and k* against n."""
    return {"error_grid.png": error_grid_chart(study), "k_star.png": budget_law_chart(study)}


def error_grid_chart(study: LabStudy) -> Any:
    """Observed error against the budget (points and lines, with its 95% Wilson interval as a
    band), the planner's fitted curve (thin) and the blind reference (dashed), one colour per
    size n, whose legend gives the items per cell. Left: budget in tokens; right: budget as a
    share of the full trace (3n), where curves of a law linear in n coincide."""
    import altair as alt

    grid = study.to_frame()
    grid["share"] = grid["k"] / grid["trace_tokens"]
    # A cell's interval depends on how many items it has (4 at n = 3 in the tiny preset), so
    # the count belongs in the legend beside the size.
    items = grid.groupby("n")["answers"].agg(["min", "max"])
    labels = {
        int(n): f"n = {int(n)} ({hi} items)" if lo == hi else f"n = {int(n)} ({lo}–{hi} items)"
        for n, lo, hi in zip(
            items.index, items["min"].astype(int), items["max"].astype(int), strict=True
        )
    }
    grid["size"] = grid["n"].astype(int).map(labels)
    order = [labels[n] for n in sorted(labels)]
    long = pd.concat(
        [
            grid.assign(curve="observed", value=grid["error"]),
            grid.assign(curve="planner fit", value=grid["fitted"]),
            grid.assign(curve="blind reference", value=grid["blind"]),
        ],
        ignore_index=True,
    )
    color = alt.Color(
        "size:O",
        title="size n (items per cell)",
        sort=order,
        scale=alt.Scale(domain=order, scheme="viridis"),
        legend=alt.Legend(labelLimit=0, symbolOpacity=1),
    )
    dash = alt.StrokeDash(
        "curve:N",
        title="line",
        scale=alt.Scale(
            domain=["observed", "planner fit", "blind reference"],
            range=[[1, 0], [2, 2], [6, 3]],
        ),
    )
    y_title = "error rate (band: 95% Wilson interval)"
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(domain=[0, 1]))

    def panel(x: Any, title: str) -> Any:
        # The share panel's axis stops at 1.1 (past it nothing changes): clip what lies beyond.
        band = (
            alt.Chart(grid)
            .mark_area(opacity=0.12, clip=True)
            .encode(x=x, y=alt.Y("low:Q", title=y_title), y2="high:Q", color=color)
        )
        lines = alt.Chart(long).mark_line(clip=True).encode(x=x, y=y, color=color, strokeDash=dash)
        points = (
            alt.Chart(grid)
            .mark_circle(size=25, clip=True)
            .encode(
                x=x,
                y=alt.Y("error:Q", title=y_title),
                color=color,
                tooltip=[
                    "n",
                    "k",
                    "answers",
                    "error",
                    alt.Tooltip("low:Q", format=".2f"),
                    alt.Tooltip("high:Q", format=".2f"),
                ],
            )
        )
        return alt.layer(band, lines, points).properties(title=title, width=330, height=260)

    left = panel(alt.X("k:Q", title="reasoning budget k (tokens)"), "by tokens")
    right = panel(
        alt.X("share:Q", title="k / 3n (share of the trace)", scale=alt.Scale(domain=[0, 1.1])),
        "by share of the trace",
    )
    return alt.hconcat(left, right).properties(
        title=alt.TitleParams(
            f"{study.family}: error against the reasoning budget",
            subtitle=textwrap.wrap(study.law, 150),
        )
    )


#: The budget-law chart's line styles: one per kind of line, so that the mechanism and the
#: √n law are told apart by their dash as well as by the legend.
_LAW_LINES = {
    "observed k*": [1, 0],
    "full trace 3n + 2": [8, 4],
    "√n law c·√n·ln(1/ε)": [2, 3],
}


def budget_law_chart(study: LabStudy) -> Any:
    """k*(n, ε) read off the calibration, per target ε, on log-log axes, beside the mechanism
    (3n + 2 tokens: the full trace) and the √n law fitted through the same points.

    Each ε has its colour and its ring size: where k* does not depend on ε the rings nest
    instead of hiding one another, and the subtitle names the sizes where they coincide. The
    axes span the data (not the next powers of ten)."""
    import altair as alt

    table = study.law_frame()
    table = table[np.isfinite(table["k"]) & (table["k"] > 0)].copy()
    targets = sorted({float(e) for e in table["eps"]}, reverse=True)
    names = {e: f"ε = {e:g}" for e in targets}
    table["target"] = table["eps"].astype(float).map(names)
    order = [names[e] for e in targets]
    points = table.assign(what="observed k*", value=table["k"])
    trace = (
        table.drop_duplicates("n")
        .assign(what="full trace 3n + 2", value=lambda t: t["trace_tokens"])
        .drop(columns=["target"])
    )
    sqrt_law = table.assign(what="√n law c·√n·ln(1/ε)", value=table["sqrt_law_k"])
    values = pd.concat([points["value"], trace["value"], sqrt_law["value"]])
    values = values[np.isfinite(values) & (values > 0)]
    ns = table["n"].astype(float)
    pad = 1.12
    x_domain = [float(ns.min()) / pad, float(ns.max()) * pad] if len(ns) else [1.0, 10.0]
    y_domain = (
        [float(values.min()) / pad, float(values.max()) * pad] if len(values) else [1.0, 10.0]
    )
    x = alt.X("n:Q", title="size n", scale=alt.Scale(type="log", domain=x_domain, nice=False))
    y_title = "budget k (tokens)"
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(type="log", domain=y_domain, nice=False))
    color = alt.Color(
        "target:N",
        title="target ε",
        sort=order,
        scale=alt.Scale(domain=order, scheme="plasma"),
    )
    dash = alt.StrokeDash(
        "what:N",
        title="line",
        scale=alt.Scale(domain=list(_LAW_LINES), range=list(_LAW_LINES.values())),
        legend=alt.Legend(labelLimit=0, symbolSize=400, symbolStrokeWidth=2),
    )
    rings = alt.Size(
        "target:N",
        title="target ε",
        sort=order,
        scale=alt.Scale(domain=order, range=[70 + 90 * i for i in range(len(order))][::-1]),
    )
    observed_line = alt.Chart(points).mark_line().encode(x=x, y=y, color=color, strokeDash=dash)
    observed_rings = (
        alt.Chart(points)
        .mark_point(filled=False, strokeWidth=2)
        .encode(x=x, y=y, color=color, size=rings, tooltip=["n", "eps", "k", "planner_k"])
    )
    sqrt_lines = (
        alt.Chart(sqrt_law)
        .mark_line(opacity=0.8, strokeWidth=1.5)
        .encode(x=x, y=y, color=color, strokeDash=dash)
    )
    trace_line = (
        alt.Chart(trace).mark_line(color="black", strokeWidth=1.5).encode(x=x, y=y, strokeDash=dash)
    )
    same = [
        int(n)
        for n, group in points.groupby("n")
        if len(order) > 1 and group["k"].nunique() == 1 and len(group) == len(order)
    ]
    subtitle = ["solid: observed k*; long dashes (black): full trace 3n + 2; dots: √n law, per ε"]
    if same:
        subtitle.append(
            f"k* is the same for every ε at n = {', '.join(map(str, same))}: "
            "the ε lines coincide there (nested rings)"
        )
    return alt.layer(trace_line, sqrt_lines, observed_line, observed_rings).properties(
        title=alt.TitleParams(f"{study.family}: k* against n", subtitle=subtitle),
        width=420,
        height=300,
    )
