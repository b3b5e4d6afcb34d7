"""Altair charts for the paper's experiments (render offline: ``chart.save("x.png")``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from cotplan.experiments.debias import DebiasResult
    from cotplan.experiments.entropy import EntropyResult
    from cotplan.experiments.falck import FalckResult
    from cotplan.experiments.martingale import MartingaleResult
    from cotplan.experiments.order import OrderResult

__all__ = ["debias_chart", "entropy_chart", "falck_chart", "martingale_chart", "order_chart"]

_WIDTH = 360
_HEIGHT = 260


def martingale_chart(result: MartingaleResult) -> alt.HConcatChart:
    """Δ̂n for the predictor and the exact Bayes reference with both fits; the excess beside."""
    frame = result.to_frame()
    points = pd.concat(
        [
            pd.DataFrame(
                {
                    "n": frame["n"],
                    "gap": frame["gap"],
                    "se": frame["gap_se"],
                    "who": result.predictor,
                }
            ),
            pd.DataFrame(
                {
                    "n": frame["n"],
                    "gap": frame["ref_gap"],
                    "se": frame["ref_gap_se"],
                    "who": f"{result.reference} (exact Bayes)",
                }
            ),
        ]
    )
    points["low"] = points["gap"] - 1.96 * points["se"]
    points["high"] = points["gap"] + 1.96 * points["se"]
    fits = pd.concat(
        [
            pd.DataFrame({"n": frame["n"], "gap": frame["fit_log"], "fit": "A·log n/n + B"}),
            pd.DataFrame({"n": frame["n"], "gap": frame["fit_inverse"], "fit": "A/n + B"}),
        ]
    )
    base = alt.Chart(points)
    dots = base.mark_circle(size=22).encode(
        x=alt.X("n:Q", title="n", scale=alt.Scale(zero=False)),
        y=alt.Y("gap:Q", title="Δ̂n (nats)", scale=alt.Scale(type="log")),
        color=alt.Color("who:N", title=None),
    )
    bars = (
        base.mark_rule(opacity=0.4)
        .encode(x="n:Q", y="low:Q", y2="high:Q", color="who:N")
        .transform_filter("datum.low > 0")
    )
    lines = (
        alt.Chart(fits)
        .mark_line()
        .encode(
            x="n:Q", y="gap:Q", strokeDash=alt.StrokeDash("fit:N", title="fit to the predictor")
        )
    )
    left = (bars + dots + lines).properties(
        width=_WIDTH,
        height=_HEIGHT,
        title=f"Martingale gap, {result.predictor} ({result.design} design)",
    )
    ex = alt.Chart(frame)
    band = ex.mark_area(opacity=0.25).encode(x="n:Q", y="excess_low:Q", y2="excess_high:Q")
    line = ex.mark_line(point=True).encode(
        x=alt.X("n:Q", title="n"), y=alt.Y("excess:Q", title="Δ̂n(model) − Δ̂n(Bayes)")
    )
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="gray").encode(y="y:Q")
    right = (band + line + zero).properties(
        width=_WIDTH, height=_HEIGHT, title="Excess over the exact Bayes reference (95% CI)"
    )
    return alt.hconcat(left, right)


def debias_chart(result: DebiasResult) -> alt.VConcatChart:
    """Gaps with the fitted trend and harmonics, the residual after subtraction, the spectrum."""
    frame = result.to_frame()
    frame["trend + harmonics"] = frame["trend"] + frame["harmonics"]
    long = frame.melt(
        id_vars="position", value_vars=["gap", "trend + harmonics", "debiased"], var_name="series"
    )
    top = (
        alt.Chart(long)
        .mark_line(point=alt.OverlayMarkDef(size=10))
        .encode(
            x=alt.X("position:Q", title="position n"),
            y=alt.Y("value:Q", title="gap (nats)"),
            color=alt.Color("series:N", title=None),
        )
        .properties(
            width=2 * _WIDTH,
            height=_HEIGHT,
            title=f"{result.source}: period {result.period:.1f} (p = {result.p_value:.3g})",
        )
    )
    resid = frame.melt(
        id_vars="position", value_vars=["residual", "smoothed_residual"], var_name="series"
    )
    middle = (
        alt.Chart(resid)
        .mark_line()
        .encode(
            x="position:Q",
            y=alt.Y("value:Q", title="residual"),
            color=alt.Color("series:N", title=None),
        )
        .properties(width=_WIDTH, height=_HEIGHT, title="After subtraction (kernel-smoothed)")
    )
    spectrum = result.spectrum_frame()
    peak = pd.DataFrame({"period": [result.detected_period]})
    spec = alt.Chart(spectrum).mark_line().encode(
        x=alt.X("period:Q", scale=alt.Scale(type="log"), title="period (positions)"),
        y=alt.Y("power:Q", title="periodogram"),
    ) + alt.Chart(peak).mark_rule(color="red").encode(x="period:Q")
    spec = spec.properties(width=_WIDTH, height=_HEIGHT, title="Periodogram of detrended gaps")
    return alt.vconcat(top, alt.hconcat(middle, spec))


def order_chart(result: OrderResult) -> alt.Chart:
    """Spread of permutation-averaged predictions vs k (log-log), theory and RMSE vs Bayes."""
    frame = result.to_frame()
    long = frame.melt(
        id_vars="k", value_vars=["sd", "sd_theory", "rmse_vs_bayes"], var_name="series"
    )
    positive = long[long["value"] > 0]
    # An exchangeable predictor (an exact reference) gives every ordering the same prediction:
    # every spread is 0, which a log axis cannot show (an empty log domain has no size, and
    # vl-convert refuses to draw it). Its zeros go on a linear axis instead.
    log = not positive.empty
    scale = alt.Scale(type="log") if log else alt.Scale(type="linear", domain=[0.0, 1.0])
    chart = (
        alt.Chart(positive if log else long.fillna(0.0))
        .mark_line(point=True)
        .encode(
            x=alt.X("k:Q", scale=alt.Scale(type="log"), title="orderings averaged (k)"),
            y=alt.Y("value:Q", scale=scale, title="standard deviation of P̄_k"),
            color=alt.Color("series:N", title=None),
        )
    )
    title = (
        f"{result.predictor}: slope {result.slope:.3f} (theory −0.5; paper −0.48)"
        if np.isfinite(result.slope)
        else f"{result.predictor}: no spread over orderings"
    )
    out: alt.Chart = chart.properties(width=_WIDTH, height=_HEIGHT, title=title)
    return out


def entropy_chart(result: EntropyResult) -> alt.HConcatChart:
    """Per-position efficiency H/cross-entropy and cumulative code length against n·H."""
    curves = result.curves
    keep = curves["predictor"].eq(result.predictor) | curves["predictor"].str.endswith("(exact)")
    shown = curves[keep]
    eff = (
        alt.Chart(shown)
        .mark_line()
        .encode(
            x=alt.X("n:Q", title="position n"),
            y=alt.Y("efficiency:Q", title="H / cross-entropy", scale=alt.Scale(zero=False)),
            color=alt.Color("predictor:N", title=None),
        )
    )
    rule = (
        alt.Chart(pd.DataFrame({"y": [result.threshold]}))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(y="y:Q")
    )
    setting = f"p = {result.p:g}" if result.p is not None else f"p ~ Beta{result.prior}"
    left = (eff + rule).properties(
        width=_WIDTH, height=_HEIGHT, title=f"Compression efficiency ({setting})"
    )
    code = (
        alt.Chart(shown)
        .mark_line()
        .encode(
            x=alt.X("n:Q", title="n"),
            y=alt.Y(
                "cumulative_efficiency:Q", title="n·H / code length", scale=alt.Scale(zero=False)
            ),
            color=alt.Color("predictor:N", title=None),
        )
        .properties(width=_WIDTH, height=_HEIGHT, title="Cumulative code length")
    )
    return alt.hconcat(left, code)


def falck_chart(result: FalckResult) -> alt.HConcatChart:
    """T1 per setting with its Bayes band, and T3 spreads of path means vs n (log-log)."""
    t1 = result.t1t2.copy()
    t1["setting"] = [f"θ={r.theta:g} n={r.n} N={r.N}" for r in t1.itertuples()]
    band = (
        alt.Chart(t1)
        .mark_rule(size=6, opacity=0.3)
        .encode(y=alt.Y("setting:N", title=None), x=alt.X("T1_low:Q", title="T1"), x2="T1_high:Q")
    )
    dots = (
        alt.Chart(t1)
        .mark_point(filled=True)
        .encode(
            y="setting:N",
            x="T1:Q",
            color=alt.Color(
                "T1_outside:N",
                title="outside band",
                scale=alt.Scale(domain=[False, True], range=["steelblue", "crimson"]),
            ),
        )
    )
    left = (band + dots).properties(width=_WIDTH, height=_HEIGHT, title="T1 vs Bayes bands")
    t3 = result.t3
    if len(t3):
        long = t3.melt(
            id_vars="n",
            value_vars=["iqr", "bayes_iqr", "iqr_half_n", "iqr_double_n"],
            var_name="series",
        )
        long = long[long["value"] > 0]
        right = alt.Chart(long).mark_line(point=True).encode(
            x=alt.X("n:Q", scale=alt.Scale(type="log")),
            y=alt.Y("value:Q", scale=alt.Scale(type="log"), title="IQR of path means"),
            color=alt.Color("series:N", title=None),
        ) + alt.Chart(t3).mark_area(opacity=0.15).encode(
            x="n:Q", y="bayes_low:Q", y2="bayes_high:Q"
        )
    else:
        right = alt.Chart(pd.DataFrame({"n": [], "value": []})).mark_point()
    right = right.properties(width=_WIDTH, height=_HEIGHT, title="T3 epistemic uncertainty")
    return alt.hconcat(left, right)
