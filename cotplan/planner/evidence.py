"""The evidence the planner weighs: the trend test, the peak before a fall, percentiles."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from cotplan.planner.data import _Data, _subset
from cotplan.planner.records import _NAN_CI, ConfidenceInterval, TrendTest

__all__: list[str] = []


def _peak_before_a_fall(data: _Data, significance: float) -> tuple[int, TrendTest] | None:
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
    fall = _trend_test(_subset(data, data.k >= budgets[peak_index]))
    if fall.p_value_decrease >= significance:
        return None
    return int(budgets[peak_index]), fall


def _peaks_per_size(data: _Data, significance: float) -> dict[int, tuple[int, TrendTest]]:
    """`_peak_before_a_fall` for each size on its own, the fall tested at a Bonferroni level
    over the sizes (more sizes must not mean more false peaks). Budgets are often multiples of
    n, so one budget is early for a large n and late for a small one: peaks are per size."""
    sizes = np.unique(data.n)
    level = significance / len(sizes)
    peaks: dict[int, tuple[int, TrendTest]] = {}
    for size in sizes:
        found = _peak_before_a_fall(_subset(data, data.n == size), level)
        if found is not None:
            peaks[int(size)] = found
    return peaks


def _trend_test(data: _Data) -> TrendTest:
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


def _percentile(values: NDArray[np.float64], confidence: float) -> ConfidenceInterval:
    """Percentile interval that tolerates infinite draws (no interpolation across them)."""
    finite_or_inf = values[~np.isnan(values)]
    if len(finite_or_inf) == 0:
        return _NAN_CI
    tail = (1.0 - confidence) / 2.0
    ordered = np.sort(finite_or_inf)
    lo = ordered[math.floor(tail * (len(ordered) - 1))]
    hi = ordered[math.ceil((1.0 - tail) * (len(ordered) - 1))]
    return ConfidenceInterval(float(lo), float(hi))
