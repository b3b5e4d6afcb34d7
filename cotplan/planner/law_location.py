"""Location laws: the error falls around a budget that grows with n.

    logistic:  e(k, n) = e0 + (e_base − e0) · S((k − a · n^β) / (s · n^γ)),  S(z) = 1 / (1 + e^z)
    step:      e(k, n) = e0 when k ≥ a · n^β, else e_base

A reasoning model that must walk through its input before it can answer (a parity over n bits
takes about 3 tokens a bit) fails until the budget covers the walk and then succeeds: its error
is a step at a budget proportional to n, which the paper's exponential can only smear. The
logistic describes a smooth fall around a location a · n^β whose width s · n^γ may grow with n;
the step is its sharp limit, fitted exactly (the likelihood of a step is flat between budgets, so
it is maximised by search over the budgets where it can sit, not by a gradient).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from cotplan.planner.data import Cells

__all__: list[str] = []

LOGISTIC_PARAMS = ("e0", "e_base", "a", "beta", "s", "gamma")
STEP_PARAMS = ("e0", "e_base", "a", "beta")
_EXP_MAX = 2.0
_CLIP = 1e-12


# --------------------------------------------------------------------------------------------
# logistic


def logistic_error(params: NDArray[np.float64], n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
    e0, eb, a, beta, s, gamma = (float(p) for p in params)
    n_arr = np.asarray(n, dtype=float)
    z = (np.asarray(k, dtype=float) - a * n_arr**beta) / (s * n_arr**gamma)
    out: NDArray[np.float64] = e0 + (eb - e0) * special.expit(-z)
    return out


def logistic_k_star(params: NDArray[np.float64], n: float, eps: float) -> float:
    """The budget where the logistic curve reaches `eps` (0 if met at k = 0, inf if never)."""
    e0, eb, a, beta, s, gamma = (float(p) for p in params)
    if eps <= e0:
        return math.inf
    if float(logistic_error(params, n, 0.0)) <= eps:
        return 0.0
    r = (eps - e0) / (eb - e0)
    k = a * n**beta + s * n**gamma * math.log((1.0 - r) / r)
    return max(float(k), 0.0)


def _logistic_nll(x: NDArray[np.float64], cells: Cells) -> tuple[float, NDArray[np.float64]]:
    e0, eb, log_a, beta, log_s, gamma = (float(v) for v in x)
    loc = math.exp(log_a) * np.exp(beta * cells.logn)
    width = math.exp(log_s) * np.exp(gamma * cells.logn)
    z = (cells.k - loc) / width
    g = special.expit(-z)
    gap = eb - e0
    e = np.clip(e0 + gap * g, _CLIP, 1.0 - _CLIP)
    failures = cells.trials - cells.successes
    loglik = float(cells.successes @ np.log1p(-e) + failures @ np.log(e))
    dl_de = failures / e - cells.successes / (1.0 - e)
    # de/dz = −gap · g (1 − g); the chain rule through z for each location/width parameter.
    de_dz = -gap * g * (1.0 - g) * dl_de
    dz_dloga = -loc / width
    grad = np.array(
        [
            float((1.0 - g) @ dl_de),
            float(g @ dl_de),
            float(de_dz @ dz_dloga),
            float(de_dz @ (dz_dloga * cells.logn)),
            float(de_dz @ -z),
            float(de_dz @ (-z * cells.logn)),
        ]
    )
    return -loglik, -grad


def _crossings(cells: Cells) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per size, the budget where the observed error first falls below its midpoint."""
    sizes, crossings = [], []
    for n in np.unique(cells.n):
        at = cells.n == n
        order = np.argsort(cells.k[at])
        k = cells.k[at][order]
        err = 1.0 - cells.successes[at][order] / cells.trials[at][order]
        mid = 0.5 * (err.max() + err.min())
        below = np.flatnonzero(err <= mid)
        if len(below) and k[below[0]] > 0:
            sizes.append(n)
            crossings.append(k[below[0]])
    return np.array(sizes, dtype=float), np.array(crossings, dtype=float)


def logistic_starts(cells: Cells) -> list[NDArray[np.float64]]:
    err = 1.0 - cells.successes / cells.trials
    e_first = float(np.clip(np.average(err[cells.k == cells.k.min()]), 0.05, 0.98))
    e_last = float(np.clip(np.average(err[cells.k == cells.k.max()]), 0.005, 0.95))
    if e_last >= e_first:
        e_last = e_first / 2
    sizes, where = _crossings(cells)
    if len(sizes) >= 2 and np.ptp(np.log(sizes)) > 0:
        beta, log_a = np.polyfit(np.log(sizes), np.log(where), 1)
        beta = float(np.clip(beta, 0.0, _EXP_MAX))
        a = math.exp(float(log_a))
    elif len(sizes):
        beta, a = 0.5, float(where[0]) / math.sqrt(float(sizes[0]))
    else:
        positive = cells.k[cells.k > 0]
        beta = 0.5
        a = float(np.median(positive)) / math.sqrt(float(np.exp(np.mean(cells.logn))))
    starts = []
    for width, gamma in ((0.1, beta), (0.3, beta), (0.3, 0.5 * beta), (0.05, 0.0)):
        s = max(width * a, 1e-2)
        starts.append(np.array([e_last, e_first, max(a, 1e-2), beta, s, gamma]))
    return starts


def fit_logistic(
    cells: Cells,
    starts: list[NDArray[np.float64]],
    *,
    exponents_fixed: bool = False,
    ftol: float = 1e-9,
    maxiter: int = 500,
) -> tuple[NDArray[np.float64], float]:
    """Maximum likelihood, best of `starts` (natural parameters); returns (params, loglik).

    `exponents_fixed` keeps β and γ at their start values (one size: n cannot inform them)."""
    k_top = max(float(cells.k.max()), 1.0)
    exponent = (0.0, _EXP_MAX)
    bounds = [
        (0.0, 1.0 - 1e-9),
        (0.0, 1.0),
        (math.log(1e-3), math.log(100.0 * k_top)),
        exponent,
        (math.log(1e-3), math.log(100.0 * k_top)),
        exponent,
    ]
    if exponents_fixed:
        bounds[3] = (float(starts[0][3]), float(starts[0][3]))
        bounds[5] = (float(starts[0][5]), float(starts[0][5]))
    best_x, best_value = None, math.inf
    for start in starts:
        e0, eb, a, beta, s, gamma = (float(v) for v in start)
        x0 = np.array([e0, eb, math.log(max(a, 1e-3)), beta, math.log(max(s, 1e-3)), gamma])
        x0 = np.clip(x0, [b[0] for b in bounds], [b[1] for b in bounds])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = optimize.minimize(
                _logistic_nll,
                x0,
                args=(cells,),
                jac=True,
                method="SLSQP",
                bounds=bounds,
                options={"maxiter": maxiter, "ftol": ftol},
            )
        x = np.clip(result.x, [b[0] for b in bounds], [b[1] for b in bounds])
        value = _logistic_nll(x, cells)[0]
        if value < best_value:
            best_x, best_value = x, value
    assert best_x is not None
    params = np.array(
        [best_x[0], best_x[1], math.exp(best_x[2]), best_x[3], math.exp(best_x[4]), best_x[5]]
    )
    return params, -best_value


# --------------------------------------------------------------------------------------------
# step


def step_error(params: NDArray[np.float64], n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
    e0, eb, a, beta = (float(p) for p in params)
    n_arr = np.asarray(n, dtype=float)
    past = np.asarray(k, dtype=float) >= a * n_arr**beta - 1e-9
    out: NDArray[np.float64] = np.where(past, e0, eb).astype(float)
    return out


def step_k_star(params: NDArray[np.float64], n: float, eps: float) -> float:
    e0, eb, a, beta = (float(p) for p in params)
    if eps >= eb:
        return 0.0
    if eps < e0:
        return math.inf
    return float(a * n**beta)


_BETAS = np.linspace(0.0, _EXP_MAX, 81)


def fit_step(
    cells: Cells,
    betas: NDArray[np.float64] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[NDArray[np.float64], float]:
    """Exact maximum likelihood over the exponent grid β ∈ {0, 0.025, ..., 2} and every place
    the step can sit (at a calibrated budget: a = k / n^β of some cell).

    The two levels are the pooled error rates on either side, each with half an answer of each
    kind added, so a level seen without a single error still predicts one now and then (a zero
    would make any later error infinitely unlikely).

    The likelihood of a step is flat between calibrated budgets: it only depends on which cells
    lie past the step, so the maximum is a set (every β of the grid and every a that split the
    cells alike), and the fit reports one member, the step at the calibrated budget. With `rng`
    (the bootstrap's refits) a member is drawn uniformly instead: a β among the maximising ones,
    then a uniformly over the a that split the cells the same way, so the percentile intervals
    carry the width the budget grid leaves as well as the resampling's."""
    failures = cells.trials - cells.successes
    positive = cells.k > 0
    best: tuple[float, NDArray[np.float64]] = (-math.inf, np.array([0.0, 0.0, 0.0, 0.0]))
    ties: list[tuple[float, NDArray[np.float64], float]] = []
    for beta in _BETAS if betas is None else betas:
        t = cells.k / np.exp(beta * cells.logn)
        candidates = np.unique(t[positive])
        if not len(candidates):
            break
        # past[i, j]: cell j is at or past the step placed at candidate i.
        past = t[None, :] >= candidates[:, None] - 1e-9
        n_past = past @ cells.trials
        f_past = past @ failures
        n_before = cells.trials.sum() - n_past
        f_before = failures.sum() - f_past
        e0 = (f_past + 0.5) / (n_past + 1.0)
        eb = (f_before + 0.5) / (n_before + 1.0)
        ll = (
            f_past * np.log(e0)
            + (n_past - f_past) * np.log1p(-e0)
            + f_before * np.log(eb)
            + (n_before - f_before) * np.log1p(-eb)
        )
        # A step that makes things worse is not this law: keep only falls.
        ll = np.where(e0 <= eb, ll, -np.inf)
        i = int(np.argmax(ll))
        if ll[i] > best[0] + 1e-9:
            best = (float(ll[i]), np.array([e0[i], eb[i], candidates[i], beta]))
        if rng is not None and np.isfinite(ll[i]):
            # The a that put exactly the same cells past the step: above the largest t before
            # it, up to the candidate itself.
            before = t[~past[i]]
            low = float(before.max()) if len(before) else 0.0
            ties.append((float(ll[i]), np.array([e0[i], eb[i], candidates[i], beta]), low))
    if rng is None or not ties:
        return best[1], best[0]
    tied = [(params, low) for ll_i, params, low in ties if ll_i >= best[0] - 1e-9]
    params, low = tied[int(rng.integers(len(tied)))]
    drawn = params.copy()
    drawn[2] = float(rng.uniform(low, params[2])) if params[2] > low else params[2]
    return drawn, best[0]
