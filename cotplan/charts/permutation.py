"""Charts of permutation-averaged answers: one query's orderings, and spread versus m.

- `orderings_chart(result)`: each ordering's probability per choice (points) with the average
  and its interval (a tick and a rule): how much the order moved the answer, and where the
  average landed.
- `spread_chart(frame)`: the spread of the m-ordering average versus m on log-log axes, one
  line per schedule, with the σ/√m line that independent orderings follow.

Save with `cotplan.charts.costs.save_chart(chart, "x.png")` (PNG/SVG offline, HTML inline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from cotplan.errors import InputError

if TYPE_CHECKING:
    from cotplan.permutation.average import AnswerDistribution

__all__ = ["orderings_chart", "spread_chart"]


def orderings_chart(result: AnswerDistribution, *, title: str | None = None) -> Any:
    """Per-ordering probabilities (points) and the averaged probability with its interval."""
    import altair as alt

    points = result.orderings_frame()
    summary = result.to_frame()
    y = alt.Y("choice:N", title=None, sort=list(result.choices))
    x_scale = alt.Scale(domain=[0, 1])
    dots = (
        alt.Chart(points)
        .mark_circle(opacity=0.45, size=40)
        .encode(
            x=alt.X("prob:Q", title="probability (renormalized over the choices)", scale=x_scale),
            y=y,
            yOffset=alt.YOffset("jitter:Q"),
            tooltip=["ordering:Q", "order:N", "choice:N", alt.Tooltip("prob:Q", format=".3f")],
        )
        .transform_calculate(jitter="random() * 10 - 5")
    )
    rule = (
        alt.Chart(summary.dropna(subset=["ci_low", "ci_high"]))
        .mark_rule(strokeWidth=3, color="black")
        .encode(x="ci_low:Q", x2="ci_high:Q", y=y)
    )
    tick = (
        alt.Chart(summary)
        .mark_tick(color="black", thickness=3, size=26)
        .encode(
            x="prob:Q",
            y=y,
            tooltip=[
                "choice:N",
                alt.Tooltip("prob:Q", format=".3f"),
                alt.Tooltip("ci_low:Q", format=".3f"),
                alt.Tooltip("ci_high:Q", format=".3f"),
            ],
        )
    )
    heading = title or (
        f"{result.query!r}: {result.m} {result.schedule} orderings, answer {result.answer!r}"
    )
    subtitle = (
        f"points: single orderings; black: average and {result.confidence:.0%} interval "
        f"({result.interval_method}); method {result.method}"
    )
    return (dots + rule + tick).properties(
        title=alt.TitleParams(heading, subtitle=subtitle),
        width=480,
        height=60 * len(result.choices),
    )


def spread_chart(frame: pd.DataFrame, *, title: str | None = None) -> Any:
    """Spread (standard deviation of the average) versus m, log-log, one line per schedule.

    `frame` needs columns ``schedule``, ``m`` and ``sd``; a ``reference`` schedule (σ/√m) is
    drawn dashed when present. Spreads that are zero up to rounding are left out.
    """
    import altair as alt

    missing = {"schedule", "m", "sd"} - set(frame.columns)
    if missing:
        raise InputError(f"needs columns {sorted(missing)}", field="frame")
    # A spread that is zero up to rounding (every ordering used) has no place on log axes.
    data = frame[frame["sd"] > 1e-6 * float(frame["sd"].max())].copy()
    x = alt.X("m:Q", title="orderings m", scale=alt.Scale(type="log"))
    y = alt.Y("sd:Q", title="standard deviation of the average", scale=alt.Scale(type="log"))
    color = alt.Color("schedule:N", title="schedule")
    lines = (
        alt.Chart(data[data["schedule"] != "reference"])
        .mark_line(point=True)
        .encode(
            x=x, y=y, color=color, tooltip=["schedule:N", "m:Q", alt.Tooltip("sd:Q", format=".4f")]
        )
    )
    reference = (
        alt.Chart(data[data["schedule"] == "reference"])
        .mark_line(strokeDash=[4, 4], color="gray")
        .encode(x=x, y=y)
    )
    heading = title or "Spread of the permutation average versus m"
    return (reference + lines).properties(
        title=alt.TitleParams(heading, subtitle="dashed: σ/√m (independent orderings)"),
        width=480,
        height=300,
    )
