"""The path statistics of Falck et al.'s checks and their null distributions.

T1 and T2 (`path_statistics`), T1's exact null given each path's count of ones (`t1_null`),
T2's permutation null (`t2_null`), and the bands and p-values read from them. The module
docstring of `cotplan.research.experiments.falck` says what each statistic tests.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from cotplan.research.experiments.predictors import FloatArray
from cotplan.research.experiments.sequences import Bits

__all__ = [
    "LAGS",
    "autocorrelation",
    "exact_band",
    "exact_p",
    "iqr",
    "loglog",
    "null_band",
    "outside",
    "path_statistics",
    "t1_null",
    "t2_null",
]

#: Lags of T2: acf[k+1] − acf[1] for k = 1..LAGS.
LAGS = 5


def autocorrelation(paths: Bits, max_lag: int) -> FloatArray:
    """Within-path autocorrelation at lags 1..max_lag, NaN for constant paths or too-short ones."""
    z = paths.astype(float)
    centred = z - z.mean(axis=-1, keepdims=True)
    denom = np.sum(centred**2, axis=-1)
    out = np.full((*z.shape[:-1], max_lag), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        for lag in range(1, max_lag + 1):
            if lag < z.shape[-1]:
                num = np.sum(centred[..., :-lag] * centred[..., lag:], axis=-1)
                out[..., lag - 1] = np.where(denom > 0, num / denom, np.nan)
    return out


def path_statistics(paths: Bits) -> tuple[FloatArray, FloatArray]:
    """T1 and T2 (k = 1..5) over the last two axes (paths, steps); leading axes are kept."""
    z = paths.astype(float)
    half = z.shape[-1] // 2
    t1 = (z[..., :half].mean(axis=-1) - z[..., half:].mean(axis=-1)).mean(axis=-1)
    acf = autocorrelation(paths, LAGS + 1)
    with np.errstate(invalid="ignore"):
        diffs = acf[..., 1:] - acf[..., :1]
        valid = np.isfinite(diffs)
        t2 = np.where(valid, diffs, 0.0).sum(axis=-2) / np.maximum(valid.sum(axis=-2), 1)
    t2 = np.where(valid.sum(axis=-2) > 0, t2, np.nan)
    return np.asarray(t1, dtype=float), np.asarray(t2, dtype=float)


def iqr(values: FloatArray) -> FloatArray:
    """The interquartile range over the last axis."""
    q75, q25 = np.percentile(values, [75, 25], axis=-1)
    return np.asarray(q75 - q25, dtype=float)


def outside(value: float, low: float, high: float) -> bool:
    """Whether `value` lies outside [low, high], a value on an edge counting as inside.

    The statistics and their bands sit on the same lattice (path means of N bits are multiples
    of 1/N), so a value equal to an edge can differ from it in the last bits of a float; such a
    value is on the edge, not beyond it."""
    tol = 1e-9 * max(1.0, abs(low), abs(high))
    return bool(value < low - tol or value > high + tol)


def null_band(null: FloatArray, level: float) -> tuple[float, float]:
    """The central `level` percentile band of the finite draws of a null."""
    finite = null[np.isfinite(null)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def t1_null(paths: Bits) -> tuple[FloatArray, FloatArray]:
    """The exact null distribution of T1 under exchangeability, given each path's count of ones.

    With s ones on a path of length N, the ones in its first half (h bits) are hypergeometric,
    and T1 = (1/h + 1/(N − h))·mean(a) − mean(s)/(N − h) is affine in the total a over paths, whose
    distribution is the convolution of the paths' hypergeometric laws. Returns the support of T1
    (increasing) and its probabilities: no simulation, so nothing moves when the seed does.
    """
    k, length = paths.shape
    half = length // 2
    ones = paths.sum(axis=1).astype(np.int64)
    pmf = np.ones(1)
    for s in ones:
        a = np.arange(0, min(s, half) + 1)
        pmf = np.convolve(pmf, stats.hypergeom.pmf(a, length, s, half))
    total = np.arange(pmf.size, dtype=float)
    values = ((1 / half + 1 / (length - half)) * total - ones.sum() / (length - half)) / k
    keep = pmf > 0
    return np.asarray(values[keep], dtype=float), np.asarray(pmf[keep] / pmf[keep].sum())


def exact_band(values: FloatArray, pmf: FloatArray, tail: float) -> tuple[float, float]:
    """The narrowest band with at most `tail` probability beyond each edge (discrete, exact)."""
    below = np.cumsum(pmf)  # P(T <= v)
    above = np.cumsum(pmf[::-1])[::-1]  # P(T >= v)
    inside = (below > tail) & (above > tail)
    if not inside.any():
        return math.nan, math.nan
    return float(values[inside][0]), float(values[inside][-1])


def exact_p(values: FloatArray, pmf: FloatArray, value: float) -> float:
    """Two-sided p-value of `value` under the exact null."""
    tol = 1e-12
    lower = float(pmf[values <= value + tol].sum())
    upper = float(pmf[values >= value - tol].sum())
    return min(1.0, 2 * min(lower, upper))


def t2_null(paths: Bits, draws: int, rng: np.random.Generator) -> FloatArray:
    """T2 under exchangeability: each path's bits in a uniformly random order, `draws` times."""
    k, length = paths.shape
    chunk = max(1, 2_000_000 // max(1, k * length))
    out = []
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        order = np.argsort(rng.random((size, k, length)), axis=-1)
        shuffled = np.take_along_axis(np.broadcast_to(paths, (size, k, length)), order, axis=-1)
        out.append(path_statistics(shuffled)[1])
    return np.concatenate(out, axis=0)


def loglog(x: FloatArray, y: FloatArray) -> float:
    """The slope of log y on x over the positive y (NaN with fewer than two)."""
    ok = y > 0
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(x[ok], np.log(y[ok]), 1)[0])
