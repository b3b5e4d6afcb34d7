"""Exact expected log-loss curves of count-based predictors, and the Bayes limit.

For a predictor that depends on a prefix only through its counts, the expected cross-entropy
at every position is a sum over the binomial (p fixed) or beta-binomial (p from a prior)
distribution of the count: no sampling. `cotplan.research.experiments.entropy` reads sampled curves
against these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from cotplan.research.experiments.predictors import (
    BetaBernoulli,
    CountPredictor,
    FloatArray,
    kt,
    laplace,
)

__all__ = [
    "LAPLACE_HORIZON",
    "bayes_limit",
    "binary_entropy",
    "exact_first_n",
    "expected_curve",
    "expected_prior_entropy",
    "first_reaching",
    "laplace_threshold_table",
]

#: How far the exact Laplace curve is followed to find where it reaches the threshold.
LAPLACE_HORIZON = 400


def binary_entropy(p: FloatArray | float) -> FloatArray:
    """H(p) in nats (0 at p = 0 or 1)."""
    q = np.asarray(p, dtype=float)
    return np.asarray(-special.xlogy(q, q) - special.xlogy(1 - q, 1 - q), dtype=float)


def expected_prior_entropy(a: float, b: float) -> float:
    """E[H(p)] for p ~ Beta(a, b): E[−p ln p] = a/(a+b)·(ψ(a+b+1) − ψ(a+1)), and symmetric."""
    s = a + b
    return float(
        a / s * (special.digamma(s + 1) - special.digamma(a + 1))
        + b / s * (special.digamma(s + 1) - special.digamma(b + 1))
    )


def expected_curve(
    predictor: CountPredictor,
    n_max: int,
    *,
    p: float | None = None,
    prior: tuple[float, float] = (1.0, 1.0),
) -> tuple[FloatArray, float]:
    """Exact expected cross-entropy at positions 1..n_max, and the expected entropy.

    With `p` fixed the count of ones before position n is Binomial(n − 1, p); with `p=None` it
    is beta-binomial under `prior`, and the loss uses the posterior mean of p given the count.
    """
    t = np.arange(n_max, dtype=float)[:, None]
    k = np.arange(n_max, dtype=float)[None, :]
    valid = k <= t
    kk = np.where(valid, k, 0.0)
    q = np.clip(predictor.from_counts(kk, np.broadcast_to(t, kk.shape)), 1e-300, 1 - 1e-16)
    if p is not None:
        weights = stats.binom.pmf(kk, t, p)
        mean = np.full_like(kk, p)
    else:
        a, b = prior
        weights = stats.betabinom.pmf(kk, t, a, b)
        mean = (kk + a) / (t + a + b)
    loss = -mean * np.log(q) - (1 - mean) * np.log1p(-q)
    out = np.asarray(np.sum(np.where(valid, weights * loss, 0.0), axis=1), dtype=float)
    entropy = float(binary_entropy(p)) if p is not None else expected_prior_entropy(*prior)
    return out, entropy


def first_reaching(efficiency: FloatArray, threshold: float) -> int | None:
    """The first position from which `efficiency` stays >= threshold to the end (1-based)."""
    above = np.asarray(efficiency) >= threshold
    if not above[-1]:
        return None
    below = np.flatnonzero(~above)
    return int(below[-1] + 2) if below.size else 1


def bayes_limit(
    n: int, prior: tuple[float, float] = (1.0, 1.0), threshold: float = 0.99, n_max: int = 400
) -> dict[str, float]:
    """What the Bayes mixture achieves in expectation under its prior (the best any predictor can).

    Returns the per-position efficiency at position `n` and the first position where it
    reaches `threshold` (searched up to `n_max`).
    """
    ce, h = expected_curve(BetaBernoulli(*prior), max(n, n_max), p=None, prior=prior)
    eff = h / ce
    first = first_reaching(eff[:n_max], threshold)
    return {
        "efficiency_at_n": float(eff[n - 1]),
        "excess_at_n": float(ce[n - 1] - h),
        "first_n": float(first) if first is not None else math.inf,
        "entropy": h,
    }


def laplace_threshold_table(
    ps: Sequence[float] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    threshold: float = 0.99,
    n_max: int = 400,
) -> pd.DataFrame:
    """Exact first position at which Laplace (and KT) reach `threshold` efficiency, per p."""
    rows = []
    for p in ps:
        row: dict[str, Any] = {"p": p, "entropy_nats": float(binary_entropy(p))}
        for ref in (laplace(), kt()):
            ce, h = expected_curve(ref, n_max, p=p)
            first = first_reaching(h / ce, threshold)
            row[f"{ref.name}_first_n"] = first if first is not None else math.inf
            row[f"{ref.name}_efficiency_at_20"] = float(h / ce[19])
        rows.append(row)
    return pd.DataFrame(rows)


def exact_first_n(
    ref: CountPredictor, p: float | None, prior: tuple[float, float], threshold: float
) -> int | None:
    """Where `ref`'s exact efficiency first stays >= threshold, within `LAPLACE_HORIZON`."""
    ce, h = expected_curve(ref, LAPLACE_HORIZON, p=p, prior=prior)
    return first_reaching(h / ce, threshold)
