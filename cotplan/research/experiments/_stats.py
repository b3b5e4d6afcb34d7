"""Small statistics shared by the experiments: weighted fits, bootstrap counts, kernel smoothing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cotplan.intervals import percentile_interval
from cotplan.research.experiments.predictors import FloatArray

__all__ = [
    "LinearFit",
    "bootstrap_counts",
    "kernel_smooth",
    "loo_bandwidth",
    "percentile_interval",
    "weighted_r2",
    "wls",
    "wls_batch",
]


@dataclass(frozen=True)
class LinearFit:
    """Weighted least squares of y on the columns of X (an intercept is a column of ones)."""

    coef: FloatArray
    fitted: FloatArray
    chi2: float
    r2: float
    adj_r2: float


def weighted_r2(y: FloatArray, fitted: FloatArray, w: FloatArray) -> float:
    """1 - weighted residual sum of squares / weighted total sum of squares."""
    mean = float(np.sum(w * y) / np.sum(w))
    total = float(np.sum(w * (y - mean) ** 2))
    if total <= 0:
        return float("nan")
    return 1.0 - float(np.sum(w * (y - fitted) ** 2)) / total


def wls(X: FloatArray, y: FloatArray, w: FloatArray) -> LinearFit:
    """Weighted least squares; `adj_r2` counts every column of X as a parameter."""
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    fitted = X @ coef
    chi2 = float(np.sum(w * (y - fitted) ** 2))
    r2 = weighted_r2(y, fitted, w)
    n, p = X.shape
    adj = 1.0 - (1.0 - r2) * (n - 1) / (n - p) if n > p else float("nan")
    return LinearFit(np.asarray(coef, dtype=float), np.asarray(fitted, dtype=float), chi2, r2, adj)


def wls_batch(X: FloatArray, Y: FloatArray, W: FloatArray) -> tuple[FloatArray, FloatArray]:
    """WLS for many (y, w) rows at once: coefficients (B, p) and chi-square (B,)."""
    XtW = np.einsum("np,bn->bpn", X, W)
    A = XtW @ X
    rhs = np.einsum("bpn,bn->bp", XtW, Y)
    coef = np.linalg.solve(A, rhs[..., None])[..., 0]
    resid = Y - coef @ X.T
    return coef, np.sum(W * resid**2, axis=1)


def bootstrap_counts(n_items: int, n_boot: int, rng: np.random.Generator) -> FloatArray:
    """Resampling counts, shape (n_boot, n_items): row b = how often each item is drawn."""
    draws = rng.integers(0, n_items, size=(n_boot, n_items))
    flat = (draws + n_items * np.arange(n_boot)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n_items).reshape(n_boot, n_items).astype(float)


def _weights(x: FloatArray, h: float) -> FloatArray:
    diff = (x[:, None] - x[None, :]) / h
    return np.exp(-0.5 * diff * diff)


def _exclusion(size: int, exclude: int) -> FloatArray:
    """1 where |i - j| > exclude (kept), 0 within the left-out block around each point."""
    idx = np.arange(size)
    return np.asarray(np.abs(idx[:, None] - idx[None, :]) > exclude, dtype=float)


def kernel_smooth(
    x: FloatArray, y: FloatArray, h: float, *, leave_out: int | None = None
) -> FloatArray:
    """Nadaraya-Watson with a Gaussian kernel of bandwidth `h`.

    `leave_out=m` predicts each point without the points within m indices of it (m = 0 is
    leave-one-out): with correlated neighbours, plain leave-one-out rewards chasing the noise.
    """
    K = _weights(x, h)
    if leave_out is not None:
        K = K * _exclusion(x.size, leave_out)
    denom = K.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (K @ y) / denom
    return np.asarray(np.where(denom > 1e-300, out, np.nan), dtype=float)


def loo_bandwidth(
    x: FloatArray, y: FloatArray, *, leave_out: int = 0, n_grid: int = 40
) -> tuple[float, float]:
    """The bandwidth minimising leave-out squared error, and the cross-validated R².

    `leave_out` as in `kernel_smooth` (0: leave-one-out). The R² compares the smoother's
    left-out predictions with left-out means (the "no position effect" model), so noise that a
    smoother would chase does not count as structure; it is negative when position predicts
    worse than the mean.
    """
    spacing = float(np.min(np.diff(np.sort(x)))) if x.size > 1 else 1.0
    span = float(np.ptp(x)) or 1.0
    grid = np.geomspace(0.5 * spacing, span, n_grid)
    keep = _exclusion(x.size, leave_out)
    diff2 = (x[:, None] - x[None, :]) ** 2
    scores = []
    for h in grid:
        K = np.exp(-0.5 * diff2 / (h * h)) * keep
        denom = K.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            pred = np.where(denom > 1e-300, (K @ y) / denom, np.nan)
        scores.append(float(np.nanmean((y - pred) ** 2)))
    best = int(np.nanargmin(scores))
    kept = keep.sum(axis=1)
    left_out_mean = (keep @ y) / np.maximum(kept, 1.0)
    baseline = float(np.mean((y - left_out_mean) ** 2))
    r2 = 1.0 - scores[best] / baseline if baseline > 0 else float("nan")
    return float(grid[best]), r2
