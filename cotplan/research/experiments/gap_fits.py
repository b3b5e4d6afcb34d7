"""The gap law Δn = A·f(n) + B, f = log(n)/n or 1/n, fitted by weighted least squares.

Weights are the inverse variances of each Δ̂n; intervals come from resampling the sequences,
with the same resamples for the model, the reference and their difference
(`bootstrap_moments`). `cotplan.research.experiments.martingale` measures the gaps and fits both
laws.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from cotplan.intervals import Interval
from cotplan.research.experiments._stats import (
    bootstrap_counts,
    percentile_interval,
    wls,
    wls_batch,
)
from cotplan.research.experiments.predictors import FloatArray

__all__ = ["GapFit", "bootstrap_moments", "fit_gap_laws", "gap_basis", "inverse_variance_weights"]


@dataclass(frozen=True)
class GapFit:
    """Δn = A·f(n) + B by weighted least squares, f = log(n)/n or 1/n, with bootstrap intervals."""

    form: str
    A: float
    B: float
    A_se: float
    B_se: float
    A_ci: Interval
    B_ci: Interval
    r2: float
    adj_r2: float
    chi2: float

    @property
    def aic(self) -> float:
        """Gaussian AIC with the per-n variances taken as known: χ² + 2·(2 parameters)."""
        return self.chi2 + 4.0

    def predict(self, n: FloatArray) -> FloatArray:
        return self.A * gap_basis(self.form, np.asarray(n, dtype=float)) + self.B

    def as_dict(self) -> dict[str, Any]:
        return {
            "form": self.form,
            "A": self.A,
            "A_se": self.A_se,
            "A_low": self.A_ci.low,
            "A_high": self.A_ci.high,
            "B": self.B,
            "B_se": self.B_se,
            "B_low": self.B_ci.low,
            "B_high": self.B_ci.high,
            "r2": self.r2,
            "adj_r2": self.adj_r2,
            "chi2": self.chi2,
            "aic": self.aic,
        }


def gap_basis(form: str, n: FloatArray) -> FloatArray:
    """f(n) of the law Δn = A·f(n) + B: log(n)/n or 1/n."""
    return np.asarray(np.log(n) / n if form == "log(n)/n" else 1.0 / n, dtype=float)


def bootstrap_moments(
    matrices: list[FloatArray], n_boot: int, shared: bool, rng: np.random.Generator
) -> list[tuple[FloatArray, FloatArray]]:
    """Bootstrap means and variances-of-the-mean per column, same resamples for every matrix."""
    s, p = matrices[0].shape
    means = [np.empty((n_boot, p)) for _ in matrices]
    seconds = [np.empty((n_boot, p)) for _ in matrices]
    if shared:
        counts = bootstrap_counts(s, n_boot, rng)
        for m, mean, second in zip(matrices, means, seconds, strict=True):
            mean[:] = counts @ m / s
            second[:] = counts @ (m * m) / s
    else:
        for j in range(p):
            counts = bootstrap_counts(s, n_boot, rng)
            stacked = np.column_stack(
                [m[:, j] for m in matrices] + [m[:, j] ** 2 for m in matrices]
            )
            moments = counts @ stacked / s
            for k, (mean, second) in enumerate(zip(means, seconds, strict=True)):
                mean[:, j] = moments[:, k]
                second[:, j] = moments[:, len(matrices) + k]
    out = []
    for mean, second in zip(means, seconds, strict=True):
        var_of_mean = np.maximum(second - mean**2, 0.0) / (s - 1)
        out.append((mean, var_of_mean))
    return out


def inverse_variance_weights(var: FloatArray) -> FloatArray:
    """Inverse variances, with zeros floored at 1/1000 of the median positive variance (per row)."""
    positive = np.where(var > 0, var, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-zero row has no median: floor 1
        median = np.nanmedian(np.atleast_2d(positive), axis=-1, keepdims=True)
    floor = np.where(np.isfinite(median), 1e-3 * median, 1.0)
    return np.asarray(1.0 / np.maximum(np.atleast_2d(var), floor), dtype=float).reshape(var.shape)


def fit_gap_laws(
    n: FloatArray, M: FloatArray, boot_mean: FloatArray, boot_var: FloatArray
) -> tuple[tuple[GapFit, GapFit], float]:
    """Both laws fitted to the column means of M, with intervals from the bootstrap means;
    and the share of resamples in which log(n)/n fits better (lower χ²)."""
    y = M.mean(axis=0)
    var = M.var(axis=0, ddof=1) / M.shape[0]
    w = inverse_variance_weights(var)
    bw = inverse_variance_weights(boot_var)
    out = []
    chi2s = []
    for form in ("log(n)/n", "1/n"):
        X = np.column_stack([gap_basis(form, n), np.ones_like(n)])
        point = wls(X, y, w)
        coef, chi2 = wls_batch(X, boot_mean, bw)
        chi2s.append(chi2)
        out.append(
            GapFit(
                form=form,
                A=float(point.coef[0]),
                B=float(point.coef[1]),
                A_se=float(np.std(coef[:, 0], ddof=1)),
                B_se=float(np.std(coef[:, 1], ddof=1)),
                A_ci=percentile_interval(coef[:, 0]),
                B_ci=percentile_interval(coef[:, 1]),
                r2=point.r2,
                adj_r2=point.adj_r2,
                chi2=point.chi2,
            )
        )
    share = float(np.mean(chi2s[0] < chi2s[1]))
    return (out[0], out[1]), share
