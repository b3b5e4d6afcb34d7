"""The best Beta prior for a set of predictions: the fair baseline for "Bayesian in expectation".

A model whose averaged predictions miss Laplace's rule is not Laplace; it may still be a Bayesian
with another prior. Averaged predictions of 0.564, 0.700 and 0.831 for 5, 10 and 15 ones in 20
miss Laplace by up to 0.29, yet a Beta(16.2, 1.3) prior predicts them within 0.002: a Bayesian
with a strong prior. So a verdict on "Bayesian in expectation" is read against the Beta prior
that fits the same predictions best, beside the fixed reference.

The fit maximises the beta-binomial marginal likelihood of the next observation: with k ones in
n seen, a Beta(a, b) prior predicts P(1) = (k + a)/(n + a + b), and the next bit, drawn from the
model's averaged prediction p, has expected log marginal likelihood
p·log q + (1 − p)·log(1 − q). Summed over the multisets this is minus the Kullback-Leibler
divergence from the model's predictive to the prior's, up to a constant: the fitted prior is the
exchangeable Beta-Bernoulli predictive closest to the model's. Other exchangeable laws (mixtures
of Betas) could fit better still, so a miss by every Beta prior is evidence against a Bayesian
reading, not proof.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from cotplan.errors import InputError
from cotplan.research.experiments.predictors import BetaBernoulli, FloatArray

__all__ = ["BetaPriorFit", "fit_beta_prior", "refit_max_gaps"]

#: Prior strengths a + b searched by the first grid (pseudo-observations). Below 1e-3 the
#: predictive is the frequency k/n; above 1e6 it is the prior mean whatever the data.
STRENGTH_RANGE = (1e-3, 1e6)
#: Prior means searched by the first grid, as logits: ±12 is a mean within 6e-6 of 0 or 1.
LOGIT_SPAN = 12.0
#: The first grid: means x strengths.
COARSE = (161, 91)
#: Bounds on log a and log b while polishing: the grid's corners, and no further.
LOG_PARAM_RANGE = (math.log(1e-8), math.log(1e6))
#: Levenberg-Marquardt steps; each row of a batch stops improving long before this.
POLISH_STEPS = 100


@dataclass(frozen=True)
class BetaPriorFit:
    """A Beta(alpha, beta) prior fitted to predictions after `ones` ones in `lengths` bits.

    `predictive` is the fitted prior's posterior predictive for each multiset and `gap` the
    predictions minus it; `max_gap` is the largest |gap|. `dof` is the number of multisets minus
    the prior's two parameters: with `dof` ≤ 0, any predictions that rise with the count of ones
    fit exactly, so a small gap says nothing. `at_bound` is True when the fit runs into the search's
    edge, a prior worth a million observations or next to none (predictions no Beta prior
    produces, such as ones that fall with k).
    """

    alpha: float
    beta: float
    ones: FloatArray
    lengths: FloatArray
    predictions: FloatArray
    predictive: FloatArray
    kl: float
    at_bound: bool

    @property
    def gap(self) -> FloatArray:
        return np.asarray(self.predictions - self.predictive, dtype=float)

    @property
    def max_gap(self) -> float:
        return float(np.max(np.abs(self.gap)))

    @property
    def dof(self) -> int:
        return int(self.predictions.size) - 2

    @property
    def strength(self) -> float:
        """alpha + beta: how many observations the prior is worth."""
        return self.alpha + self.beta

    def predictor(self) -> BetaBernoulli:
        """The fitted prior as an exact reference predictor."""
        return BetaBernoulli(self.alpha, self.beta, name=f"fitted {self.label}")

    @property
    def label(self) -> str:
        return f"Beta({self.alpha:.3g}, {self.beta:.3g})"


def _kl(p: FloatArray, q: FloatArray, w: FloatArray) -> FloatArray:
    """Weighted sum over the last axis of KL(Bernoulli(p) ‖ Bernoulli(q)), broadcasting q."""
    q = np.clip(q, 1e-15, 1 - 1e-15)
    per = special.xlogy(p, p / q) + special.xlogy(1 - p, (1 - p) / (1 - q))
    return np.asarray(np.sum(w * per, axis=-1), dtype=float)


def _grid_start(k: FloatArray, n: FloatArray, p: FloatArray, w: FloatArray) -> FloatArray:
    """The best (log a, log b) on a coarse grid of prior means and strengths: finds the basin.

    The objective is smooth but not convex, and its valley is long and curved when the counts
    pin the predictive's slope but not the prior's strength: local steps alone can stall.
    """
    lo, hi = (math.log(v) for v in STRENGTH_RANGE)
    mean = special.expit(np.linspace(-LOGIT_SPAN, LOGIT_SPAN, COARSE[0]))[:, None, None]
    strength = np.exp(np.linspace(lo, hi, COARSE[1]))[None, :, None]
    values = _kl(p, (k + mean * strength) / (n + strength), w)
    i, j = np.unravel_index(int(np.argmin(values)), values.shape)
    a = float(mean[i, 0, 0] * strength[0, j, 0])
    b = float((1 - mean[i, 0, 0]) * strength[0, j, 0])
    return np.clip(np.log([a, b]), *LOG_PARAM_RANGE)


def _polish(
    theta: FloatArray, k: FloatArray, n: FloatArray, p: FloatArray, w: FloatArray
) -> FloatArray:
    """Levenberg-Marquardt (Fisher scoring with damping) on (log a, log b), each row of a batch.

    `theta` is (B, 2), `p` (B, m). With q = (k + a)/(n + a + b) the gradient of the divergence
    is Σ w (q − p)/(q(1 − q)) ∂q and its expected Hessian Σ w ∂q ∂qᵀ/(q(1 − q)); a step is kept
    only where it lowers the divergence, and the damping adapts per row.
    """

    def predictive(t: FloatArray) -> FloatArray:
        a, b = np.exp(t[:, :1]), np.exp(t[:, 1:])
        return np.asarray(np.clip((k + a) / (n + a + b), 1e-12, 1 - 1e-12), dtype=float)

    value = _kl(p, predictive(theta), w)
    damping = np.full(theta.shape[0], 1e-3)
    for _ in range(POLISH_STEPS):
        a, b = np.exp(theta[:, :1]), np.exp(theta[:, 1:])
        total = n + a + b
        q = predictive(theta)
        jac = np.stack([a * (n - k + b) / total**2, -b * (k + a) / total**2], axis=-1)
        info = w / (q * (1 - q))
        grad = np.einsum("bm,bmj->bj", info * (q - p), jac)
        hess = np.einsum("bm,bmi,bmj->bij", info, jac, jac)
        diag = np.einsum("bii->bi", hess)
        damped = hess + (damping[:, None] * (diag + 1e-12))[:, :, None] * np.eye(2)
        step = -np.linalg.solve(damped, grad[..., None])[..., 0]
        trial = np.clip(theta + step, *LOG_PARAM_RANGE)
        trial_value = _kl(p, predictive(trial), w)
        better = trial_value < value
        theta = np.where(better[:, None], trial, theta)
        value = np.where(better, trial_value, value)
        damping = np.where(better, damping / 3.0, damping * 4.0)
        # Done when every row's steps have shrunk to nothing (it failed to improve ~10 times).
        if np.all(damping > 1e6):
            break
    return theta


def _fit(
    theta: FloatArray, k: FloatArray, n: FloatArray, p: FloatArray, w: FloatArray
) -> BetaPriorFit:
    a, b = (float(v) for v in np.exp(theta))
    predictive = np.asarray((k + a) / (n + a + b), dtype=float)
    lo, hi = LOG_PARAM_RANGE
    return BetaPriorFit(
        alpha=a,
        beta=b,
        ones=k,
        lengths=n,
        predictions=p,
        predictive=predictive,
        kl=max(0.0, float(_kl(p, predictive, w))),  # rounding can dip below 0
        # Within 1% of the log range of an edge (or a strength below the grid's): the best
        # prior lies beyond what the search allows.
        at_bound=bool(np.max(theta) > hi - 0.01 * (hi - lo) or a + b < 2 * STRENGTH_RANGE[0]),
    )


def refit_max_gaps(fit: BetaPriorFit, predictions: FloatArray) -> FloatArray:
    """The largest gap of the best Beta prior for each row of `predictions` (B, multisets).

    For a bootstrap: every row is polished at once from `fit`'s prior, which resampled
    predictions move only a little (no grid per row).
    """
    p = np.atleast_2d(np.asarray(predictions, dtype=float))
    if p.shape[1] != fit.predictions.size:
        raise InputError(
            f"needs {fit.predictions.size} predictions per row, got {p.shape[1]}",
            field="predictions",
        )
    start = np.clip(np.log([fit.alpha, fit.beta]), *LOG_PARAM_RANGE)
    theta = _polish(np.tile(start, (p.shape[0], 1)), fit.ones, fit.lengths, p, np.ones(p.shape[1]))
    a, b = np.exp(theta[:, :1]), np.exp(theta[:, 1:])
    q = (fit.ones + a) / (fit.lengths + a + b)
    return np.asarray(np.max(np.abs(p - q), axis=1), dtype=float)


def fit_beta_prior(
    ones: Sequence[float] | FloatArray,
    lengths: Sequence[float] | FloatArray | float,
    predictions: Sequence[float] | FloatArray,
    *,
    weights: Sequence[float] | FloatArray | None = None,
) -> BetaPriorFit:
    """The Beta prior whose posterior predictive best matches `predictions` (marginal likelihood).

    `predictions[i]` is a model's P(next = 1) after `ones[i]` ones among `lengths[i]` bits (one
    length for all is allowed); `weights` (default equal) weigh the multisets. A coarse grid of
    prior means and strengths finds the basin; Levenberg-Marquardt steps on (log a, log b)
    polish it.
    """
    k = np.asarray(ones, dtype=float).ravel()
    p = np.asarray(predictions, dtype=float).ravel()
    n = np.broadcast_to(np.asarray(lengths, dtype=float), k.shape).astype(float)
    if k.size == 0 or p.size != k.size:
        raise InputError(
            f"needs one prediction per multiset, got {p.size} predictions for {k.size} counts",
            field="predictions",
        )
    if not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InputError("must be probabilities in [0, 1]", field="predictions")
    if np.any(~np.isfinite(n)) or np.any(n < 0) or np.any((k < 0) | (k > n)):
        raise InputError("each count of ones must lie in 0..length", field="ones")
    w = np.ones_like(p) if weights is None else np.asarray(weights, dtype=float).ravel()
    if w.shape != p.shape or np.any(~np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise InputError("must be one non-negative weight per multiset, not all 0", field="weights")
    theta = _polish(_grid_start(k, n, p, w)[None, :], k, n, p[None, :], w)[0]
    return _fit(theta, k, n, p, w)
