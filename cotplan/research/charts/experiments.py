"""Altair charts for the paper's experiments (render offline: ``chart.save("x.png")``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from cotplan.research.experiments.debias import DebiasResult
    from cotplan.research.experiments.entropy import EntropyResult
    from cotplan.research.experiments.falck import FalckResult
    from cotplan.research.experiments.martingale import MartingaleResult
    from cotplan.research.experiments.order import OrderResult

__all__ = ["debias_chart", "entropy_chart", "falck_chart", "martingale_chart", "order_chart"]

_WIDTH = 360
_HEIGHT = 260


def martingale_chart(result: MartingaleResult) -> alt.HConcatChart:
    """Δ̂n for the predictor and the exact Bayes reference, each with its own two fits (drawn in
    its colour, dashed by the form fitted) and its 95% interval; the excess beside."""
    frame = result.to_frame()
    model = result.predictor
    bayes = f"{result.reference} (exact Bayes)"
    points = pd.concat(
        [
            pd.DataFrame(
                {"n": frame["n"], "gap": frame["gap"], "se": frame["gap_se"], "who": model}
            ),
            pd.DataFrame(
                {"n": frame["n"], "gap": frame["ref_gap"], "se": frame["ref_gap_se"], "who": bayes}
            ),
        ]
    )
    points["low"] = points["gap"] - 1.96 * points["se"]
    points["high"] = points["gap"] + 1.96 * points["se"]
    ns = result.ns.astype(float)
    # Each series carries its own fits: a fit drawn in the other series' colour (as it once
    # was, with no colour given) reads as that series' law.
    fits = pd.concat(
        [
            pd.DataFrame({"n": frame["n"], "gap": fit.predict(ns), "who": who, "fit": form})
            for who, pair in (
                (model, (result.fit_log, result.fit_inverse)),
                (bayes, (result.ref_fit_log, result.ref_fit_inverse)),
            )
            for fit, form in zip(pair, ("A·log n/n + B", "A/n + B"), strict=True)
        ]
    )
    colour = alt.Color(
        "who:N",
        title="sequences scored by",
        scale=alt.Scale(domain=[model, bayes], range=["#d62728", "#1f77b4"]),
        legend=alt.Legend(labelLimit=0, orient="bottom", direction="vertical", symbolOpacity=1),
    )
    x = alt.X("n:Q", title="n (observations)", scale=alt.Scale(zero=False))
    y_title = "Δ̂n (nats), 95% interval"
    base = alt.Chart(points)
    dots = base.mark_circle(size=22).encode(
        x=x, y=alt.Y("gap:Q", title=y_title, scale=alt.Scale(type="log")), color=colour
    )
    bars = (
        base.mark_rule(opacity=0.4)
        .encode(x=x, y=alt.Y("low:Q", title=y_title), y2="high:Q", color=colour)
        .transform_filter("datum.low > 0")
    )
    lines = (
        alt.Chart(fits)
        .mark_line(strokeWidth=1.5)
        .encode(
            x=x,
            y=alt.Y("gap:Q", title=y_title),
            color=colour,
            detail="fit:N",
            strokeDash=alt.StrokeDash(
                "fit:N",
                title="fitted law",
                scale=alt.Scale(domain=["A·log n/n + B", "A/n + B"], range=[[1, 0], [5, 3]]),
            ),
        )
    )
    left = (bars + dots + lines).properties(
        width=_WIDTH,
        height=_HEIGHT,
        title=f"Martingale gap, {model} ({result.design} design)",
    )
    ex = alt.Chart(frame)
    excess_title = "Δ̂n(model) − Δ̂n(Bayes) (nats)"
    band = ex.mark_area(opacity=0.25).encode(
        x=alt.X("n:Q", title="n (observations)"),
        y=alt.Y("excess_low:Q", title=excess_title),
        y2="excess_high:Q",
    )
    line = ex.mark_line(point=True).encode(
        x=alt.X("n:Q", title="n (observations)"), y=alt.Y("excess:Q", title=excess_title)
    )
    zero = (
        alt.Chart(pd.DataFrame({"y": [0.0]}))
        .mark_rule(color="gray")
        .encode(y=alt.Y("y:Q", title=excess_title))
    )
    right = (band + line + zero).properties(
        width=_WIDTH, height=_HEIGHT, title="Excess over the exact Bayes reference (95% CI)"
    )
    return alt.hconcat(left, right)


#: The debias chart's series, in words (the frame's column names are code, not a legend).
_DEBIAS_SERIES = {
    "gap": "measured gap Δ̂n",
    "trend + harmonics": "fitted trend + positional harmonics",
    "debiased": "gap − harmonics (debiased)",
    "residual": "residual after subtraction",
    "smoothed_residual": "kernel-smoothed residual",
}


def debias_chart(result: DebiasResult) -> alt.VConcatChart:
    """Gaps (with their 95% interval where the result has standard errors) with the fitted
    trend and harmonics, the residual after subtraction, the spectrum. The title says whether
    the period is significant, not only its p-value."""
    frame = result.to_frame()
    frame["trend + harmonics"] = frame["trend"] + frame["harmonics"]
    long = frame.melt(
        id_vars="position", value_vars=["gap", "trend + harmonics", "debiased"], var_name="series"
    )
    long["series"] = long["series"].map(_DEBIAS_SERIES)
    top_order = [_DEBIAS_SERIES[k] for k in ("gap", "trend + harmonics", "debiased")]
    x = alt.X("position:Q", title="position n")
    top_y = "gap (nats)"
    lines = (
        alt.Chart(long)
        .mark_line(point=alt.OverlayMarkDef(size=10))
        .encode(
            x=x,
            y=alt.Y("value:Q", title=top_y),
            color=alt.Color(
                "series:N",
                title="curve",
                sort=top_order,
                scale=alt.Scale(domain=top_order),
                legend=alt.Legend(labelLimit=0),
            ),
        )
    )
    layers: list[alt.Chart] = []
    if result.standard_errors is not None:
        se = np.asarray(result.standard_errors, dtype=float)
        interval = pd.DataFrame(
            {
                "position": frame["position"],
                "low": frame["gap"] - 1.96 * se,
                "high": frame["gap"] + 1.96 * se,
            }
        )
        layers.append(
            alt.Chart(interval)
            .mark_area(opacity=0.15, color="gray")
            .encode(x=x, y=alt.Y("low:Q", title=top_y), y2="high:Q")
        )
    verdict = "significant" if result.significant else "not significant"
    heading = (
        f"{result.source}: period {result.period:.1f}, {verdict} "
        f"(p = {result.p_value:.3g}, permutation test, {result.n_permutations} shuffles)"
    )
    top = alt.layer(*layers, lines).properties(
        width=2 * _WIDTH,
        height=_HEIGHT,
        title=alt.TitleParams(
            heading,
            subtitle="gray band: 95% interval of the measured gap"
            if result.standard_errors is not None
            else "no standard errors: no interval to draw",
        ),
    )
    resid = frame.melt(
        id_vars="position", value_vars=["residual", "smoothed_residual"], var_name="series"
    )
    resid["series"] = resid["series"].map(_DEBIAS_SERIES)
    middle = (
        alt.Chart(resid)
        .mark_line()
        .encode(
            x=x,
            y=alt.Y("value:Q", title="residual (nats)"),
            color=alt.Color("series:N", title="residual", legend=alt.Legend(labelLimit=0)),
        )
        .properties(width=_WIDTH, height=_HEIGHT, title="After subtraction (kernel-smoothed)")
    )
    spectrum = result.spectrum_frame()
    peak = pd.DataFrame({"period": [result.detected_period]})
    period_x = alt.X("period:Q", scale=alt.Scale(type="log"), title="period (positions)")
    spec = alt.Chart(spectrum).mark_line().encode(
        x=period_x, y=alt.Y("power:Q", title="periodogram power")
    ) + alt.Chart(peak).mark_rule(color="red").encode(x=period_x)
    spec = spec.properties(
        width=_WIDTH,
        height=_HEIGHT,
        title=alt.TitleParams(
            "Periodogram of detrended gaps",
            subtitle=f"red: detected period {result.detected_period:.1f}",
        ),
    )
    out: alt.VConcatChart = alt.vconcat(top, alt.hconcat(middle, spec)).resolve_scale(
        color="independent"
    )
    return out


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
    """Per-position efficiency H / cross-entropy with its 95% band (sampled curves; exact
    references have none) and the labelled threshold, beside the cumulative efficiency
    n·H / code length."""
    curves = result.curves
    keep = curves["predictor"].eq(result.predictor) | curves["predictor"].str.endswith("(exact)")
    shown = curves[keep].copy()
    # efficiency = H / CE, so a ±1.96 se interval on the cross-entropy maps to one on the
    # efficiency; where CE − 1.96 se reaches 0 the top is unbounded and is clipped to the
    # panel so that a few noisy early positions do not flatten the rest.
    entropy = shown["efficiency"] * shown["cross_entropy"]
    half = 1.96 * shown["se"]
    top = float(max(1.05, shown["efficiency"].max()))
    shown["eff_low"] = entropy / (shown["cross_entropy"] + half)
    upper = shown["cross_entropy"] - half
    shown["eff_high"] = np.where(upper > 0, entropy / upper.where(upper > 0, 1.0), top)
    shown["eff_high"] = shown["eff_high"].clip(upper=top)
    sampled = shown[~shown["exact"].astype(bool) & (shown["se"] > 0)]
    colour = alt.Color(
        "predictor:N",
        title="curve",
        # The model's name is long; the default label limit cut it.
        legend=alt.Legend(labelLimit=0, orient="bottom", direction="vertical", symbolOpacity=1),
    )
    x = alt.X("n:Q", title="position n")
    eff_title = "efficiency H / cross-entropy"
    eff = (
        alt.Chart(shown)
        .mark_line()
        .encode(
            x=x,
            y=alt.Y("efficiency:Q", title=eff_title, scale=alt.Scale(zero=False)),
            color=colour,
        )
    )
    band = (
        alt.Chart(sampled)
        .mark_area(opacity=0.2)
        .encode(x=x, y=alt.Y("eff_low:Q", title=eff_title), y2="eff_high:Q", color=colour)
    )
    label = f"{result.threshold:g}: the paper's {result.threshold:.0%}-of-optimal threshold"
    threshold = pd.DataFrame({"y": [result.threshold], "n": [float(shown["n"].min())]})
    rule = (
        alt.Chart(threshold)
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(y=alt.Y("y:Q", title=eff_title))
    )
    rule_text = (
        alt.Chart(threshold)
        .mark_text(align="left", baseline="top", dy=3, color="gray", fontSize=10)
        .encode(x=x, y=alt.Y("y:Q", title=eff_title), text=alt.value(label))
    )
    setting = f"p = {result.p:g}" if result.p is not None else f"p ~ Beta{result.prior}"
    left = (band + eff + rule + rule_text).properties(
        width=_WIDTH,
        height=_HEIGHT,
        title=alt.TitleParams(
            f"Compression efficiency per position ({setting})",
            subtitle="band: 95% interval of the sampled curve; exact references have none",
        ),
    )
    code = (
        alt.Chart(shown)
        .mark_line()
        .encode(
            x=alt.X("n:Q", title="n (positions so far)"),
            y=alt.Y(
                "cumulative_efficiency:Q",
                title="n·H / code length of the first n",
                scale=alt.Scale(zero=False),
            ),
            color=colour,
        )
        .properties(
            width=_WIDTH,
            height=_HEIGHT,
            title="Cumulative efficiency: n·H / code length",
        )
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
    left = (band + dots).properties(
        width=_WIDTH, height=_HEIGHT, title="T1 vs cotplan's exact exchangeable band"
    )
    t3 = result.t3
    if len(t3):
        long = t3.melt(
            id_vars="n",
            value_vars=["iqr", "bayes_iqr", "iqr_half_n", "iqr_double_n"],
            var_name="series",
        )
        long = long[long["value"] > 0]
        long["series"] = long["series"].map(
            {
                "iqr": "model",
                "bayes_iqr": f"Bayes ({result.reference})",
                "iqr_half_n": "Bayes as if n/2",
                "iqr_double_n": "Bayes as if 2n",
            }
        )
        right = alt.Chart(long).mark_line(point=True).encode(
            x=alt.X("n:Q", scale=alt.Scale(type="log")),
            y=alt.Y("value:Q", scale=alt.Scale(type="log"), title="IQR of path means"),
            color=alt.Color("series:N", title=None),
        ) + alt.Chart(t3).mark_area(opacity=0.15).encode(
            x="n:Q", y="bayes_low:Q", y2="bayes_high:Q"
        )
        if "iqr_context_low" in t3:  # the model's spread: lowest to highest across contexts
            spread = t3[(t3["iqr_context_low"] > 0) & (t3["iqr_context_high"] > 0)]
            right = right + alt.Chart(spread).mark_rule(strokeWidth=2).encode(
                x="n:Q", y="iqr_context_low:Q", y2="iqr_context_high:Q"
            )
    else:
        right = alt.Chart(pd.DataFrame({"n": [], "value": []})).mark_point()
    right = right.properties(
        width=_WIDTH,
        height=_HEIGHT,
        title=alt.TitleParams(
            "T3 epistemic uncertainty",
            subtitle=f"iqr: median over {result.contexts} context(s) per n, bar: their range",
        ),
    )
    # Each panel its own colours: T1's outside/inside would otherwise swallow T3's series.
    chart: alt.HConcatChart = alt.hconcat(left, right).resolve_scale(color="independent")
    return chart
