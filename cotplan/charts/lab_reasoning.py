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
    from cotplan.lab.reasoning.report import LabStudy

__all__ = ["budget_law_chart", "error_grid_chart", "study_charts"]


def study_charts(study: LabStudy) -> dict[str, Any]:
    """Both charts of a study, by file name: the error grid and k* against n."""
    return {"error_grid.png": error_grid_chart(study), "k_star.png": budget_law_chart(study)}


def error_grid_chart(study: LabStudy) -> Any:
    """Observed error against the budget (points and lines), the planner's fitted curve (thin)
    and the blind reference (dashed), one colour per size n. Left: budget in tokens; right:
    budget as a share of the full trace (3n), where curves of a law linear in n coincide."""
    import altair as alt

    grid = study.to_frame()
    grid["share"] = grid["k"] / grid["trace_tokens"]
    long = pd.concat(
        [
            grid.assign(curve="observed", value=grid["error"]),
            grid.assign(curve="planner fit", value=grid["fitted"]),
            grid.assign(curve="blind reference", value=grid["blind"]),
        ],
        ignore_index=True,
    )
    color = alt.Color("n:O", title="size n", scale=alt.Scale(scheme="viridis"))
    dash = alt.StrokeDash(
        "curve:N",
        title="curve",
        scale=alt.Scale(
            domain=["observed", "planner fit", "blind reference"],
            range=[[1, 0], [2, 2], [6, 3]],
        ),
    )
    y = alt.Y("value:Q", title="error rate", scale=alt.Scale(domain=[0, 1]))

    def panel(x: Any, title: str) -> Any:
        lines = alt.Chart(long).mark_line().encode(x=x, y=y, color=color, strokeDash=dash)
        points = (
            alt.Chart(grid)
            .mark_circle(size=25)
            .encode(x=x, y=alt.Y("error:Q"), color=color, tooltip=["n", "k", "answers", "error"])
        )
        return alt.layer(lines, points).properties(title=title, width=330, height=260)

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


def budget_law_chart(study: LabStudy) -> Any:
    """k*(n, ε) read off the calibration, per target ε, on log-log axes, beside the mechanism
    (3n + 2 tokens: the full trace) and the √n law fitted through the same points."""
    import altair as alt

    table = study.law_frame()
    table = table[np.isfinite(table["k"]) & (table["k"] > 0)]
    points = table.assign(what="observed k*", value=table["k"])
    lines = pd.concat(
        [
            table.assign(what="full trace 3n + 2", value=table["trace_tokens"]),
            table.assign(what="√n law c·√n·ln(1/ε)", value=table["sqrt_law_k"]),
        ],
        ignore_index=True,
    )
    x = alt.X("n:Q", title="size n", scale=alt.Scale(type="log", zero=False))
    y = alt.Y("value:Q", title="budget k (tokens)", scale=alt.Scale(type="log", zero=False))
    color = alt.Color("eps:O", title="target ε", scale=alt.Scale(scheme="plasma"))
    observed = alt.Chart(points).mark_line(point=True).encode(x=x, y=y, color=color)
    references = (
        alt.Chart(lines)
        .mark_line(strokeDash=[4, 3], opacity=0.6)
        .encode(x=x, y=y, color=color, detail="what:N", strokeWidth=alt.value(1))
    )
    return alt.layer(references, observed).properties(
        title=alt.TitleParams(
            f"{study.family}: k* against n (solid: observed; dashed: 3n + 2 and the √n law)"
        ),
        width=420,
        height=300,
    )
