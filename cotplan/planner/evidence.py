"""The evidence the planner weighs and the prose it says: the trend test, the peaks before a
fall, percentiles, the test of the √n law and the verdict where reasoning helps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from cotplan.intervals import Interval
from cotplan.planner.data import ALPHA_MAX, Data, subset
from cotplan.planner.law_paper import Fit
from cotplan.planner.records import (
    BoundaryTest,
    Estimate,
    LikelihoodRatioTest,
    TrendTest,
    fmt,
)
from cotplan.planner.state import PlannerFit

__all__: list[str] = []


def _peak_before_a_fall(data: Data, significance: float) -> tuple[int, TrendTest] | None:
    """The budget where accuracy peaks, when it falls significantly at larger budgets.

    Small models often reason their way to the answer and then talk themselves out of it: the
    accuracy rises, peaks and falls. One trend test over every budget can miss the rise (the
    fall cancels it), and a monotone curve fitted through the fall is wrong on both sides. The
    peak is the budget above the smallest with the highest pooled accuracy; the fall is a
    trend test for a decrease over the budgets from the peak up.
    """
    budgets = np.unique(data.k)
    accuracy = np.array([data.y[data.k == b].mean() for b in budgets])
    peak_index = 1 + int(np.argmax(accuracy[1:]))
    if peak_index == len(budgets) - 1 or accuracy[peak_index] <= accuracy[0]:
        return None
    fall = trend_test(subset(data, data.k >= budgets[peak_index]))
    if fall.p_value_decrease >= significance:
        return None
    return int(budgets[peak_index]), fall


def peaks_per_size(data: Data, significance: float) -> dict[int, tuple[int, TrendTest]]:
    """`_peak_before_a_fall` for each size on its own, the fall tested at a Bonferroni level
    over the sizes (more sizes must not mean more false peaks). Budgets are often multiples of
    n, so one budget is early for a large n and late for a small one: peaks are per size."""
    sizes = np.unique(data.n)
    level = significance / len(sizes)
    peaks: dict[int, tuple[int, TrendTest]] = {}
    for size in sizes:
        found = _peak_before_a_fall(subset(data, data.n == size), level)
        if found is not None:
            peaks[int(size)] = found
    return peaks


def trend_test(data: Data) -> TrendTest:
    """Stratified Cochran–Armitage trend test of budget rank against correctness.

    Strata are items when most items were answered at several budgets (the usual calibration:
    each item is its own control, so easy and hard items do not blur the trend); otherwise
    (each item at one budget) the sizes n, so a harder size is not mistaken for a budget effect.
    """
    budgets = np.unique(data.k)
    score = np.searchsorted(budgets, data.k).astype(float)
    frame = pd.DataFrame({"item": data.item, "n": data.n, "x": score, "y": data.y})
    repeated = frame.groupby("item")["x"].nunique().gt(1).mean() >= 0.5
    stratum = "item" if repeated else "n"
    grouped = frame.groupby(stratum)
    t = grouped["y"].transform("size").to_numpy(dtype=float)
    m = grouped["y"].transform("sum").to_numpy(dtype=float)
    x_mean = grouped["x"].transform("mean").to_numpy(dtype=float)
    observed = float(np.sum(score * data.y))
    expected = float(np.sum(x_mean * m / t))
    # Permutation variance within each stratum: m(T − m) / (T(T − 1)) · Σ (x − x̄)²; the
    # factor is repeated on each row of its stratum, so summing over rows is exact.
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where(t > 1, m * (t - m) / (t * (t - 1)), 0.0)
    variance = float(np.sum(factor * (score - x_mean) ** 2))
    where = "within items" if repeated else "within sizes (items seen at one budget each)"
    if variance <= 0:
        return TrendTest(
            0.0, 1.0, 1.0, f"trend test {where}: no answer changed with the budget; nothing to test"
        )
    z = (observed - expected) / math.sqrt(variance)
    p_up, p_down = float(stats.norm.sf(z)), float(stats.norm.cdf(z))
    text = (
        f"trend test {where}: z = {z:.2f} (positive when accuracy rises with the budget); "
        f"p = {p_up:.2g} for a rise, {p_down:.2g} for a fall"
    )
    return TrendTest(z, p_up, p_down, text)


def likelihood_ratio(
    free: Fit,
    half: Fit,
    interval: Interval,
    draws: NDArray[np.float64],
    *,
    significance: float,
    confidence: float,
) -> LikelihoodRatioTest:
    """Is α = 1/2? The free fit against the α = 1/2 one, by χ²₁ and by the item bootstrap
    (`draws`, one row of the five constants a resample; `interval` is α's)."""
    statistic = max(2.0 * (free.loglik - half.loglik), 0.0)
    p_chi2 = float(stats.chi2.sf(statistic, 1))
    alpha_hat = float(free.params[4])
    p_boot = math.nan
    if len(draws):
        # Invert the percentile interval: twice the share of resampled α on the far side
        # of 1/2. Unlike a Wald test it stays valid when α sits at an end of [0, 2].
        alphas = draws[:, 4]
        p_boot = min(1.0, 2.0 * float(min(np.mean(alphas <= 0.5), np.mean(alphas >= 0.5))))
    sig = significance
    ci_text = (
        f"α = {alpha_hat:.2f} ({confidence:.0%} CI {fmt(interval.low)} to {fmt(interval.high)})"
    )
    bound = _on_bound(alpha_hat)
    if bound is not None:
        # The null 1/2 lies inside [0, 2], so χ²₁ stays the statistic's reference under the
        # null (Self & Liang's mixture is for a null ON the boundary, see `growth_test`); what
        # the bound changes is the reading of the estimate and of the interval's end.
        ci_text += (
            f" (α sits on the bound {bound:g} of its range: the fit is constrained there, so "
            f"the interval's end at {bound:g} is the bound, not the data, and the statistic "
            "understates the evidence against 1/2)"
        )
    boot_text = f"< {1 / len(draws):.2g}" if p_boot == 0 and len(draws) else fmt(p_boot)
    tests = f"likelihood-ratio p = {p_chi2:.2g}, item-bootstrap p {boot_text}"
    if not boot_text.startswith("<"):
        tests = tests.replace("item-bootstrap p ", "item-bootstrap p = ")
    plain_rejects = p_chi2 < sig
    boot_rejects = not math.isnan(p_boot) and p_boot < sig
    if plain_rejects and boot_rejects:
        verdict = f"the √n law does not hold for this task: {ci_text}; {tests}"
    elif plain_rejects or boot_rejects:
        verdict = (
            f"the √n law is in doubt: {ci_text}; {tests} (the tests disagree; the "
            "bootstrap one allows for answers of one item being alike)"
        )
    else:
        verdict = f"consistent with the √n law (α = 1/2): {ci_text}; {tests}"
        if interval.high - interval.low > 1.0:
            verdict += "; but the interval is wide: calibrate over a wider range of n"
    return LikelihoodRatioTest(statistic, 1, p_chi2, p_boot, Estimate(alpha_hat, interval), verdict)


def _on_bound(alpha: float) -> float | None:
    """The end of α's range [0, 2] that `alpha` sits on, or None."""
    if alpha >= ALPHA_MAX - 1e-6:
        return ALPHA_MAX
    if alpha <= 1e-6:
        return 0.0
    return None


def boundary_p_value(statistic: float) -> float:
    """P-value of a likelihood-ratio statistic for one parameter whose null is on the boundary
    of its range: the reference is the 50:50 mixture of χ²₀ and χ²₁ (Self & Liang 1987), so
    the p-value is half the χ²₁ one, and 1 when the statistic is 0 (the free fit is on the
    boundary itself)."""
    if not statistic > 1e-9:
        return 1.0
    return 0.5 * float(stats.chi2.sf(statistic, 1))


def growth_test(free: Fit, flat: Fit, significance: float) -> BoundaryTest:
    """Does the budget needed grow with n? α = 0 (the null, on the boundary of [0, 2]) against
    α > 0, by the likelihood ratio of the free fit and the α = 0 fit, with the mixture
    reference (`boundary_p_value`)."""
    statistic = max(2.0 * (free.loglik - flat.loglik), 0.0)
    p_mix = boundary_p_value(statistic)
    p_naive = float(stats.chi2.sf(statistic, 1)) if statistic > 1e-9 else 1.0
    tests = (
        f"boundary likelihood-ratio p = {fmt(p_mix)} for α = 0 against ½χ²₀ + ½χ²₁ "
        f"(χ²₁ alone, which ignores the bound, would give {fmt(p_naive)})"
    )
    if p_mix < significance:
        verdict = f"the budget grows with n: {tests}"
    else:
        verdict = f"no evidence that the budget grows with n: {tests}"
    return BoundaryTest("alpha", 0.0, statistic, p_mix, p_naive, verdict)


def alpha_at_top(fit: PlannerFit, top_error: tuple[float, float, float] | None) -> str:
    """Why α sits on its bound, and what would tell more. Larger budgets help only where the
    error had not yet reached its floor at the largest size; where it had, more sizes would."""
    head = f"α is at the top of its range ({ALPHA_MAX:g})"
    if top_error is not None:
        n, k, error = top_error
        if error <= fit.e0 + 0.02:
            return (
                f"{head}: the error at n = {n:g} already reached its floor by k = {k:g} "
                f"(observed {error:.2f}), so the bound comes from the curve's shape over too "
                "few sizes, not from budgets too small; calibrate more sizes to say how fast "
                "the budget grows"
            )
    return (
        f"{head}: at n = {fit.sizes[-1]} the error fell too little by k = {fit.budgets[-1]} "
        "to say how fast the budget grows; calibrate larger budgets there"
    )


def helps_verdict(
    fit: PlannerFit,
    free_alpha: bool,
    unresolved: bool,
    *,
    top_error: tuple[float, float, float] | None = None,
) -> str:
    """What the fit says where reasoning helps: the fall, the peak, the growth with n, the
    planning law."""
    parts = [
        f"reasoning helps: error falls from {fit.e_base:.2f} without reasoning to a floor "
        f"e0 = {fit.e0:.2f}"
    ]
    positive = [k for k in fit.budgets if k > 0]
    if fit.peak_budget is not None:
        parts.append(
            f"accuracy peaks at k = {fit.peak_budget} and falls at larger budgets, so the "
            f"curve is fitted on budgets up to {fit.peak_budget} and no cap above it is "
            "recommended"
        )
    if unresolved:
        parts.append(
            f"the budgets are too coarse to resolve the curve: the floor is already reached "
            f"at k = {positive[0]}, so k0, c and α are not identified and k* is known only "
            f"to lie below {positive[0]}; calibrate at smaller budgets"
        )
    elif free_alpha:
        parts.append(f"the budget scale grows as n^{fit.alpha:.2f}")
        if fit.alpha > ALPHA_MAX - 0.02:
            parts.append(alpha_at_top(fit, top_error))
        elif fit.alpha < 0.02:
            growth = fit.growth
            parts.append(
                "α is at 0: " + growth.verdict
                if growth is not None
                else "α is at 0: the budget needed does not grow with n here"
            )
    elif fit.settings.alpha is None:
        parts.append(
            f"one size only (n = {fit.sizes[0]}): too few sizes to fit α; fixed α = 1/2 used"
        )
    else:
        parts.append(f"α fixed at {fit.alpha:g}")
    if fit.laws is not None:
        parts.append(f"planning law: {fit.laws.selected} ({fit.laws.reason})")
    return "; ".join(parts)
