"""The shape-free law: a non-increasing error curve per calibrated size (isotonic binomial fit).

It assumes nothing about the shape of the fall, only that more budget does not hurt (the planner
cuts a peaked curve at its peak before any law sees it). Its maximum-likelihood fit is the
pool-adjacent-violators average of the observed error rates weighted by answers. Between budgets
it interpolates linearly; it knows nothing about sizes it has not seen, so across sizes it scales
k* by a power of n fitted through the per-size k* (said so wherever it is used).

Its "parameters" are the fitted error of each calibrated cell, stored as an array of rows
(n, k, error).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cotplan.planner.data import Cells

__all__: list[str] = []


def pava_decreasing(
    values: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Weighted least-squares non-increasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([float(v), float(w), 1.0])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            total = w1 + w2
            mean = (m1 * w1 + m2 * w2) / total if total > 0 else 0.5 * (m1 + m2)
            blocks.append([mean, total, c1 + c2])
    out = np.concatenate([np.full(int(c), m) for m, _, c in blocks])
    return out.astype(float)


def fit_monotone(cells: Cells) -> tuple[NDArray[np.float64], float]:
    rows: list[tuple[float, float, float]] = []
    loglik = 0.0
    for n in np.unique(cells.n):
        at = np.flatnonzero(cells.n == n)
        order = at[np.argsort(cells.k[at])]
        err = 1.0 - cells.successes[order] / cells.trials[order]
        fitted = pava_decreasing(err, cells.trials[order])
        e = np.clip(fitted, 1e-12, 1.0 - 1e-12)
        wrong = cells.trials[order] - cells.successes[order]
        loglik += float(wrong @ np.log(e) + cells.successes[order] @ np.log1p(-e))
        rows.extend(
            (float(n), float(k), float(e)) for k, e in zip(cells.k[order], fitted, strict=True)
        )
    out: NDArray[np.float64] = np.array(rows, dtype=np.float64).reshape(-1, 3)
    return out, loglik


def _curve(
    params: NDArray[np.float64], n: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    sizes = np.unique(params[:, 0])
    # A size not calibrated reads the curve of the nearest calibrated size (in log n).
    nearest = sizes[int(np.argmin(np.abs(np.log(sizes) - math.log(n))))]
    rows = params[params[:, 0] == nearest]
    return rows[:, 1], rows[:, 2]


def monotone_error(params: NDArray[np.float64], n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
    n_arr, k_arr = np.broadcast_arrays(np.asarray(n, dtype=float), np.asarray(k, dtype=float))
    out = np.empty(n_arr.shape, dtype=float)
    for size in np.unique(n_arr):
        at = n_arr == size
        ks, es = _curve(params, float(size))
        out[at] = np.interp(k_arr[at], ks, es)
    return out


def _k_star_at(params: NDArray[np.float64], n: float, eps: float) -> float:
    ks, es = _curve(params, n)
    if es[0] <= eps:
        return 0.0
    below = np.flatnonzero(es <= eps)
    if not len(below):
        return math.inf
    j = int(below[0])
    # Linear interpolation between the last budget above ε and the first at or below it.
    k_lo, k_hi, e_lo, e_hi = ks[j - 1], ks[j], es[j - 1], es[j]
    return float(k_lo + (k_hi - k_lo) * (e_lo - eps) / (e_lo - e_hi))


def monotone_k_star(params: NDArray[np.float64], n: float, eps: float) -> float:
    """k* on the calibrated curve at a calibrated size; elsewhere k* ∝ n^b through them."""
    sizes = np.unique(params[:, 0])
    if np.any(np.isclose(sizes, n)):
        return _k_star_at(params, n, eps)
    at = np.array([_k_star_at(params, float(s), eps) for s in sizes])
    use = np.isfinite(at) & (at > 0)
    if use.sum() >= 2:
        b, log_a = np.polyfit(np.log(sizes[use]), np.log(at[use]), 1)
        return float(math.exp(float(log_a)) * n ** float(b))
    return _k_star_at(params, n, eps)
