"""The paper's law: e(k, n) = e0 + (e_base − e0) · exp(−max(k − k0, 0) / (c · n^α)).

Its likelihood (with the analytic gradient), the SLSQP maximiser, k* and the optimal budget in
closed form, and the through-origin least-squares c of the paper's own code.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from cotplan.intervals import Interval
from cotplan.planner.data import ALPHA_MAX, Cells, Data, percentile_value, pooled_cells

__all__: list[str] = []

PARAMS = ("e0", "e_base", "k0", "c", "alpha")
_CLIP = 1e-12


@dataclass(frozen=True)
class Fit:
    params: NDArray[np.float64]  # natural: e0, e_base, k0, c, alpha
    loglik: float


def _to_x(params: NDArray[np.float64], k_scale: float) -> NDArray[np.float64]:
    """Natural constants -> optimiser variables: e0, e_base, k0 / k_scale, ln c, α."""
    e0, eb, k0, c, alpha = (float(p) for p in params)
    return np.array([e0, eb, k0 / k_scale, math.log(max(c, 1e-300)), alpha])


def _from_x(x: NDArray[np.float64], k_scale: float) -> NDArray[np.float64]:
    return np.array([x[0], x[1], x[2] * k_scale, math.exp(x[3]), x[4]])


def _bounds() -> list[tuple[float, float]]:
    return [
        (0.0, 1.0 - 1e-9),
        (0.0, 1.0),
        (0.0, 1.0),
        (math.log(1e-6), math.log(1e6)),
        (0.0, ALPHA_MAX),
    ]


def paper_error(params: NDArray[np.float64], n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
    e0, eb, k0, c, alpha = (float(p) for p in params)
    n_arr = np.asarray(n, dtype=float)
    k_arr = np.asarray(k, dtype=float)
    scale = c * n_arr**alpha
    out: NDArray[np.float64] = e0 + (eb - e0) * np.exp(-np.maximum(k_arr - k0, 0.0) / scale)
    return out


def _negloglik_and_grad(
    x: NDArray[np.float64], cells: Cells, k_scale: float
) -> tuple[float, NDArray[np.float64]]:
    # Scalar math on the five parameters, numpy only on the cells: this runs thousands of
    # times per bootstrap, and numpy's per-call overhead on scalars dominated.
    e0, eb, k0_unit, log_c, alpha = (float(v) for v in x)
    k0 = k0_unit * k_scale
    scale = math.exp(log_c) * np.exp(alpha * cells.logn)
    u = np.maximum(cells.k - k0, 0.0)
    z = u / scale
    decay = np.exp(-z)
    gap = eb - e0
    e = np.clip(e0 + gap * decay, _CLIP, 1.0 - _CLIP)
    failures = cells.trials - cells.successes
    loglik = float(cells.successes @ np.log1p(-e) + failures @ np.log(e))
    dl_de = failures / e - cells.successes / (1.0 - e)
    g_decay = gap * decay * dl_de
    gz = g_decay * z
    grad = np.array(
        [
            float((1.0 - decay) @ dl_de),
            float(decay @ dl_de),
            float(np.sum(np.where(u > 0, g_decay / scale, 0.0))) * k_scale,
            float(np.sum(gz)),
            float(gz @ cells.logn),
        ]
    )
    return -loglik, -grad


def maximise(
    cells: Cells,
    starts: Sequence[NDArray[np.float64]],
    fixed: Mapping[int, float],
    k_max: float,
    ftol: float = 1e-9,
) -> Fit:
    """Best of several SLSQP runs; `fixed` maps parameter index -> natural value.

    Box bounds on the natural scale (c on a log scale, k0 in units of the largest budget), not
    logistic transforms: real calibrations put e0 at 0 or α at an end of its range, where a
    logistic flattens the likelihood and a bootstrap started there never moves.
    """
    return maximise_all(cells, starts, fixed, k_max, ftol=ftol)[0]


def maximise_all(
    cells: Cells,
    starts: Sequence[NDArray[np.float64]],
    fixed: Mapping[int, float],
    k_max: float,
    *,
    ftol: float = 1e-9,
    maxiter: int = 500,
) -> list[Fit]:
    """The optimum SLSQP reaches from each start, best first (see `maximise`)."""
    k_scale = max(float(k_max), 1.0)
    free = [i for i in range(5) if i not in fixed]
    bounds = _bounds()
    lower = np.array([bounds[i][0] for i in free])
    upper = np.array([bounds[i][1] for i in free])
    fits: list[Fit] = []
    for start in starts:
        params = np.array(start, dtype=float)
        for i, value in fixed.items():
            params[i] = value
        x_full = _to_x(params, k_scale)
        x0 = np.clip(x_full[free], lower, upper)

        def objective(
            x: NDArray[np.float64], x_full: NDArray[np.float64] = x_full
        ) -> tuple[float, NDArray[np.float64]]:
            trial = x_full.copy()
            trial[free] = x
            value, grad = _negloglik_and_grad(trial, cells, k_scale)
            return value, grad[free]

        with warnings.catch_warnings():
            # Overflow in exp() at extreme trial points is harmless (clipped above).
            warnings.simplefilter("ignore", RuntimeWarning)
            result = optimize.minimize(
                objective,
                x0,
                jac=True,
                # SLSQP, not L-BFGS-B: on a busy machine L-BFGS-B's BLAS calls on 5-vectors
                # cost milliseconds each (thread hand-offs); SLSQP was 10-50x faster here.
                method="SLSQP",
                bounds=list(zip(lower, upper, strict=True)),
                options={"maxiter": maxiter, "ftol": ftol},
            )
        x_best = x_full.copy()
        x_best[free] = np.clip(result.x, lower, upper)
        value, _ = _negloglik_and_grad(x_best, cells, k_scale)
        fit = Fit(_from_x(x_best, k_scale), -value)
        for i, v in fixed.items():
            fit.params[i] = v
        fits.append(fit)
    assert fits, "no start given"
    # Stable: among equal optima the earlier start wins, as before.
    return sorted(fits, key=lambda f: -f.loglik)


#: Distinct local optima of the full-data fit kept as bootstrap starts (best first).
_MAX_BASINS = 6


def paper_basins(fits: Sequence[Fit], k_max: float) -> list[NDArray[np.float64]]:
    """The distinct optima among `fits` (best first), compared on the optimiser's scale.

    Two optima are the same basin when every optimiser variable (e0, e_base, k0 / k_max,
    ln c, α) agrees within 0.02 (0.05 for ln c).
    """
    k_scale = max(float(k_max), 1.0)
    tolerance = np.array([0.02, 0.02, 0.02, 0.05, 0.02])
    kept: list[NDArray[np.float64]] = []
    xs: list[NDArray[np.float64]] = []
    for fit in sorted(fits, key=lambda f: -f.loglik):
        if not math.isfinite(fit.loglik):
            continue
        x = _to_x(fit.params, k_scale)
        if all(np.any(np.abs(x - y) > tolerance) for y in xs):
            kept.append(fit.params.copy())
            xs.append(x)
        if len(kept) == _MAX_BASINS:
            break
    return kept


def paper_k_star(params: NDArray[np.float64], n: float, eps: float) -> float:
    """k* for one parameter vector: 0 if already met, inf if unattainable."""
    e0, eb, k0, c, alpha = (float(p) for p in params)
    if eps >= eb:
        return 0.0
    if eps <= e0:
        return math.inf
    return float(k0 + c * n**alpha * math.log((eb - e0) / (eps - e0)))


def k_star_ls(c_ls: float, n: float, eps: float) -> float:
    return c_ls * math.sqrt(n) * math.log(1.0 / eps)


def paper_c_least_squares(cells: Cells) -> float:
    """The paper code's c: regress k on x = √n · ln(1/ε̂) through the origin.

    ε̂ is each (n, k) cell's error with half a success and half a failure added, so cells with
    no errors still give a finite x; cells at k = 0 carry no information about c and are left
    out.
    """
    use = cells.k > 0
    if not use.any():
        return math.nan
    err = (cells.trials[use] - cells.successes[use] + 0.5) / (cells.trials[use] + 1.0)
    x = np.sqrt(cells.n[use]) * np.log(1.0 / err)
    w = cells.trials[use]
    denominator = float(np.sum(w * x * x))
    if denominator <= 0:
        return math.nan
    return float(np.sum(w * x * cells.k[use]) / denominator)


def optimal_k(params: NDArray[np.float64], n: float, value: float, price: float) -> float:
    """Argmin over integer k ≥ 0 of value · e(k, n) + price · k (closed form, then round)."""
    e0, eb, k0, c, alpha = (float(p) for p in params)
    gain = value * (eb - e0)
    scale = c * n**alpha
    if not (gain > 0 and scale > 0 and math.isfinite(scale)) or gain <= price * scale:
        return 0.0
    k_cont = k0 + scale * math.log(gain / (price * scale))
    candidates = np.array([0.0, math.floor(k_cont), math.ceil(k_cont)])
    costs = value * paper_error(params, n, candidates) + price * candidates
    return float(candidates[int(np.argmin(costs))])


def paper_starts(cells: Cells, *, free_alpha: bool, alpha: float) -> list[NDArray[np.float64]]:
    err = 1.0 - cells.successes / cells.trials
    k_min, k_max = cells.k.min(), cells.k.max()
    e_first = float(np.clip(np.average(err[cells.k == k_min]), 0.05, 0.95))
    e_last = float(np.clip(np.average(err[cells.k == k_max]), 0.01, 0.95))
    if e_last >= e_first:
        e_last = e_first / 2
    positive = cells.k[cells.k > 0]
    k_small = float(positive.min()) if positive.size else 1.0
    k_mid = float(np.median(positive)) if positive.size else 1.0
    alphas = [0.5, 0.25, 1.0] if free_alpha else [alpha]
    starts = []
    for a in alphas:
        n_typ = float(np.exp(np.mean(cells.logn))) ** a
        for c_mult in (0.2, 1.0, 5.0):
            for k0 in (0.0, 0.5 * k_small):
                c = max(k_mid / math.log(2.0) / n_typ * c_mult, 1e-3)
                starts.append(np.array([e_last, e_first, k0, c, a]))
    return starts


def spread_starts(cells: Cells, *, free_alpha: bool, alpha: float) -> list[NDArray[np.float64]]:
    """A thinned `paper_starts` grid (three starts): one per α of the grid when α is free,
    else one per scale of c, all with k0 = 0. Each bootstrap refit starts from these on its own
    resample as well as from the full-data optima, so a resample whose optimum lies in a basin
    the full data did not favour (or found) is not held in the full-data one."""
    grid = paper_starts(cells, free_alpha=free_alpha, alpha=alpha)
    # The grid is ordered α, then c multiplier (0.2, 1, 5), then k0 (0, half the first budget).
    if free_alpha:
        return [grid[i] for i in (2, 8, 14)]
    return [grid[i] for i in (0, 2, 4)]


def _refit(
    cells: Cells,
    basins: Sequence[NDArray[np.float64]],
    spread: Sequence[NDArray[np.float64]],
    fixed: Mapping[int, float],
    k_max: float,
) -> Fit:
    """One bootstrap refit: from every basin to convergence, from the spread starts for a
    limited number of steps (they start far from any optimum and are the slow ones); a spread
    start that ends above every basin's optimum is then run to convergence."""
    best = maximise_all(cells, basins, fixed, k_max, ftol=1e-7)[0]
    scout = maximise_all(cells, spread, fixed, k_max, ftol=1e-5, maxiter=15)[0]
    if scout.loglik > best.loglik + 1e-6:
        polished = maximise(cells, [scout.params], fixed, k_max, ftol=1e-7)
        if polished.loglik > best.loglik:
            best = polished
    return best


@dataclass(frozen=True)
class PaperBootstrap:
    """The item bootstrap of the paper law: draws (one row a resample) and percentile
    intervals of the free-α fit, of the α = 1/2 fit, and of the least-squares c."""

    draws: NDArray[np.float64]
    half_draws: NDArray[np.float64]
    ls_draws: NDArray[np.float64]
    intervals: dict[str, Interval]
    half_intervals: dict[str, Interval]
    ls_interval: Interval


def paper_bootstrap(
    data: Data,
    primary: Fit,
    half: Fit,
    fixed_primary: Mapping[int, float],
    fixed: Mapping[int, float],
    *,
    k_max: float,
    n_bootstrap: int,
    seed: int,
    confidence: float,
    basins: Sequence[NDArray[np.float64]] = (),
    half_basins: Sequence[NDArray[np.float64]] = (),
) -> PaperBootstrap | None:
    """Item-bootstrap refits of the free-α and α = 1/2 fits, and their percentile intervals
    (None when `n_bootstrap` is 0).

    Each refit starts from every distinct optimum of the full-data multi-start fit (`basins`,
    its best first; the best alone when none are given) and from a thinned start grid on the
    resample itself (`spread_starts`). A refit started only at the full-data optimum stays in
    that optimum's basin even where the resample's own optimum lies elsewhere, which narrows
    the intervals (a constructed case in tests/test_planner_intervals.py).
    """
    if n_bootstrap == 0:
        return None
    rng = np.random.default_rng(seed)
    draws = np.empty((n_bootstrap, 5))
    half_draws = np.empty((n_bootstrap, 5))
    ls_draws = np.empty(n_bootstrap)
    probs = np.full(data.n_items, 1.0 / data.n_items)
    primary_starts = list(basins) or [primary.params]
    half_starts = list(half_basins) or [half.params]
    free_alpha = 4 not in fixed_primary
    alpha_start = float(fixed_primary.get(4, 0.5))
    for b in range(n_bootstrap):
        counts = rng.multinomial(data.n_items, probs).astype(float)
        cells = pooled_cells(data, counts[data.item])
        spread = spread_starts(cells, free_alpha=free_alpha, alpha=alpha_start)
        fit = _refit(cells, primary_starts, spread, fixed_primary, k_max)
        draws[b] = fit.params
        if half is primary:
            half_draws[b] = fit.params
        else:
            half_spread = spread_starts(cells, free_alpha=False, alpha=0.5)
            half_draws[b] = _refit(cells, half_starts, half_spread, {**fixed, 4: 0.5}, k_max).params
        ls_draws[b] = paper_c_least_squares(cells)
    intervals = {
        name: (
            Interval(primary.params[i], primary.params[i])
            if i in fixed_primary
            else percentile_value(draws[:, i], confidence)
        )
        for i, name in enumerate(PARAMS)
    }
    return PaperBootstrap(
        draws=draws,
        half_draws=half_draws,
        ls_draws=ls_draws,
        intervals=widen_at_bounds(intervals, data, fixed_primary, confidence),
        half_intervals={
            name: percentile_value(half_draws[:, i], confidence) for i, name in enumerate(PARAMS)
        },
        ls_interval=percentile_value(ls_draws, confidence),
    )


def widen_at_bounds(
    intervals: Mapping[str, Interval],
    data: Data,
    fixed: Mapping[int, float],
    confidence: float,
) -> dict[str, Interval]:
    """`intervals` with those that collapsed onto 0 or 1 replaced by exact binomial bounds.

    When some budget had no wrong answers, every resample has none either and the
    bootstrap puts e0 at exactly 0: an interval of zero width that 16 answers cannot
    justify. The floor lies below the true error of every (n, k) cell, so the
    Clopper-Pearson upper bound of the best cell (by items, not rows) bounds e0; likewise
    e_base lies above the true error of every cell.
    """
    cells = pooled_cells(data)
    # Distinct items per cell: repeated samples of one item are not independent answers.
    items_per_cell = (
        pd.DataFrame({"cell": data.cell, "item": data.item})
        .groupby("cell")["item"]
        .nunique()
        .reindex(range(len(data.cell_n)), fill_value=0)
        .to_numpy(dtype=float)
    )[np.bincount(data.cell, minlength=len(data.cell_n)) > 0]
    wrong = cells.trials - cells.successes
    tail = (1.0 - confidence) / 2.0
    out = dict(intervals)
    ci = out["e0"]
    if 0 not in fixed and ci.high - ci.low < 1e-6 and ci.high < 1e-6:
        best = int(np.argmin(wrong / cells.trials))
        m = max(float(items_per_cell[best]), 1.0)
        out["e0"] = Interval(0.0, 1.0 - tail ** (1.0 / m))
    ci = out["e_base"]
    if 1 not in fixed and ci.high - ci.low < 1e-6 and ci.low > 1.0 - 1e-6:
        worst = int(np.argmax(wrong / cells.trials))
        m = max(float(items_per_cell[worst]), 1.0)
        out["e_base"] = Interval(tail ** (1.0 / m), 1.0)
    return out
