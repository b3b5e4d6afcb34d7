"""Altair charts for the lab (render offline: ``chart.save("x.png")``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

if TYPE_CHECKING:
    from cotplan.lab.ablation import PEAblationResult

__all__ = ["pe_ablation_chart"]

_WIDTH = 300
_HEIGHT = 240


def pe_ablation_chart(result: PEAblationResult) -> alt.HConcatChart:
    """Order variance vs t (log) with v2's values at t = 20; the gap excess; training curves."""
    order = result.order
    drawn = order[order["variance"] > 0]
    zero = sorted(set(order["model"]) - set(drawn["model"]))
    colour = alt.Color("model:N", title="model", sort=list(result.labels))
    lines = (
        alt.Chart(drawn)
        .mark_line(point=True)
        .encode(
            x=alt.X("t:Q", title="prefix length t (t/2 ones)"),
            y=alt.Y(
                "variance:Q",
                scale=alt.Scale(type="log"),
                title="variance over orderings of P(1)",
            ),
            color=colour,
            tooltip=["model", "t", "variance", "variance_float32"],
        )
    )
    v2 = pd.DataFrame(
        {
            "t": 20,
            "variance": order.loc[order["t"] == 20, "v2_variance"],
            "model": order.loc[order["t"] == 20, "model"],
        }
    ).dropna()
    v2 = v2[v2["variance"] > 0]
    paper = (
        alt.Chart(v2)
        .mark_point(shape="diamond", size=90, filled=False, strokeWidth=2)
        .encode(x="t:Q", y="variance:Q", color=colour, tooltip=["model", "variance"])
    )
    note = f"; exactly 0, not drawn: {', '.join(zero)}" if zero else ""
    left = (lines + paper).properties(
        width=_WIDTH,
        height=_HEIGHT,
        title={
            "text": "Order variance (float64)",
            "subtitle": f"diamonds: v2's values at t = 20{note}",
        },
    )
    middle = (
        alt.Chart(result.gaps)
        .mark_line()
        .encode(
            x=alt.X("n:Q", title="n"),
            y=alt.Y("excess:Q", title=f"Δ̂n − Δ̂n({result.reference}) (nats)"),
            color=colour,
        )
        .properties(
            width=_WIDTH,
            height=_HEIGHT,
            title={"text": "Martingale gap over exact Bayes", "subtitle": "same sequences"},
        )
    )
    curves = result.curves[result.curves["excess"] > 0]
    right = (
        alt.Chart(curves)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="training step"),
            y=alt.Y("excess:Q", scale=alt.Scale(type="log"), title="held-out loss − Bayes (nats)"),
            color=colour,
        )
    )
    rule = (
        alt.Chart(pd.DataFrame({"y": [0.001]}))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(y="y:Q")
    )
    right_panel = (right + rule).properties(
        width=_WIDTH,
        height=_HEIGHT,
        title={"text": "Training", "subtitle": "dashed: 0.001 nats"},
    )
    return alt.hconcat(left, middle, right_panel)
