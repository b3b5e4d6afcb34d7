"""One predictor interface, P(next bit = 1 | prefix), with exact references and a model backend.

Every experiment talks to a `Predictor`:

- `prob_one(prefixes)`: batched P(next = 1 | prefix) for arbitrary prefixes;
- `prefix_probs(sequences, lengths)`: the same for every prefix of every sequence, which is what
  the martingale and entropy experiments need; backends order these requests so that each
  sequence's prefixes go one after another in increasing length (the server's prompt cache then
  only evaluates the two new tokens of each request);
- `sample_paths(context, uniforms)`: autoregressive continuation paths (Falck et al.'s tests).

Exact references are closed-form and vectorised: `BetaBernoulli(a, b)` (`laplace()` is
a = b = 1, `kt()` is a = b = 1/2), `ClippedMLE`, the `Oracle` that knows p; and two synthetic
predictors with planted effects that the estimators must find: `PositionalBias` (a positional
sinusoid) and `Recency` (recent bits weigh more: order-dependent, not a martingale).
`BackendPredictor` asks any `Backend` for the next-token probabilities of "0" and "1",
renormalised, and keeps the probability mass the two candidates covered.

The interface is `cotplan.research.experiments.predictor_base`, the model predictor
`cotplan.research.experiments.backend_predictor`; both are re-exported here.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence

import numpy as np

from cotplan.errors import InputError
from cotplan.research.experiments.backend_predictor import (
    BackendPredictor,
    SupportsPromptLogprobs,
)
from cotplan.research.experiments.backend_predictor import (
    parse_bit_positions as parse_bit_positions,
)
from cotplan.research.experiments.predictor_base import (
    FloatArray,
    Predictor,
    ProgressFn,
)
from cotplan.research.experiments.predictor_base import check_lengths as check_lengths
from cotplan.research.experiments.predictor_base import check_uniforms as check_uniforms
from cotplan.research.experiments.sequences import Bits, check_bits

__all__ = [
    "BackendPredictor",
    "BetaBernoulli",
    "ClippedMLE",
    "FloatArray",
    "Oracle",
    "PositionalBias",
    "Predictor",
    "ProgressFn",
    "Recency",
    "SupportsPromptLogprobs",
    "kt",
    "laplace",
]


def _counts(prefixes: Sequence[Sequence[int]]) -> tuple[FloatArray, FloatArray]:
    """Ones and lengths of each prefix."""
    ones = np.fromiter((sum(p) for p in prefixes), dtype=float, count=len(prefixes))
    lens = np.fromiter((len(p) for p in prefixes), dtype=float, count=len(prefixes))
    return ones, lens


class CountPredictor(Predictor):
    """An exchangeable reference: the prediction is a function of (ones, length) only."""

    exact = True
    exchangeable = True

    @abc.abstractmethod
    def from_counts(self, ones: FloatArray, lengths: FloatArray) -> FloatArray:
        """P(next = 1) after `ones` ones in `lengths` bits (broadcasting arrays)."""

    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        ones, lens = _counts(prefixes)
        return self.from_counts(ones, lens)

    def prefix_probs(
        self,
        sequences: Bits,
        lengths: Sequence[int] | None = None,
        *,
        progress: ProgressFn | None = None,
    ) -> FloatArray:
        bits = check_bits(sequences)
        lens = np.asarray(check_lengths(lengths, bits.shape[1]))
        cum = np.concatenate([np.zeros((bits.shape[0], 1)), np.cumsum(bits, axis=1)], axis=1)
        out = self.from_counts(
            cum[:, lens], np.broadcast_to(lens.astype(float), cum[:, lens].shape)
        )
        if progress is not None:
            progress(out.size)
        return out

    def sample_paths(
        self,
        context: Sequence[int],
        uniforms: FloatArray,
        *,
        progress: ProgressFn | None = None,
    ) -> Bits:
        u = check_uniforms(uniforms)
        ones = np.full(u.shape[0], float(sum(context)))
        length = float(len(context))
        paths = np.zeros(u.shape, dtype=np.int8)
        for t in range(u.shape[1]):
            q = self.from_counts(ones, np.full_like(ones, length + t))
            paths[:, t] = u[:, t] < q
            ones += paths[:, t]
        if progress is not None:
            progress(u.size)
        return paths


class BetaBernoulli(CountPredictor):
    """The Bayes posterior predictive under a Beta(a, b) prior: (k + a) / (t + a + b)."""

    def __init__(self, a: float = 1.0, b: float = 1.0, *, name: str | None = None) -> None:
        if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
            raise InputError(f"must be positive and finite, got a={a!r}, b={b!r}", field="a")
        self.a = float(a)
        self.b = float(b)
        self.name = name or f"Beta({a:g},{b:g})"

    def from_counts(self, ones: FloatArray, lengths: FloatArray) -> FloatArray:
        return np.asarray((ones + self.a) / (lengths + self.a + self.b), dtype=float)


def laplace() -> BetaBernoulli:
    """Laplace's rule of succession, Beta(1, 1): the Bayes predictor under a uniform prior."""
    return BetaBernoulli(1.0, 1.0, name="Laplace")


def kt() -> BetaBernoulli:
    """The Krichevsky-Trofimov estimator, Beta(1/2, 1/2) (the Jeffreys prior)."""
    return BetaBernoulli(0.5, 0.5, name="KT")


class ClippedMLE(CountPredictor):
    """The maximum-likelihood frequency k / t, clipped to [eps, 1 - eps]; 1/2 before any data.

    Clipping keeps the log-loss finite when the frequency is 0 or 1; `eps` sets how much a
    surprise costs (-log eps nats).
    """

    def __init__(self, eps: float = 0.01, *, name: str | None = None) -> None:
        if not 0.0 < eps < 0.5:
            raise InputError(f"must lie in (0, 0.5), got {eps!r}", field="eps")
        self.eps = float(eps)
        self.name = name or "clipped MLE"

    def from_counts(self, ones: FloatArray, lengths: FloatArray) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore"):
            freq = np.where(lengths > 0, ones / np.maximum(lengths, 1.0), 0.5)
        return np.asarray(np.clip(freq, self.eps, 1.0 - self.eps), dtype=float)


class Oracle(CountPredictor):
    """Knows the true p and predicts it at every step: its cross-entropy is exactly H(p)."""

    def __init__(self, p: float, *, name: str | None = None) -> None:
        if not 0.0 < p < 1.0:
            raise InputError(f"must lie in (0, 1), got {p!r}", field="p")
        self.p = float(p)
        self.name = name or f"oracle p={p:g}"

    def from_counts(self, ones: FloatArray, lengths: FloatArray) -> FloatArray:
        return np.full(np.broadcast(ones, lengths).shape, self.p)


class PositionalBias(Predictor):
    """A synthetic predictor with a planted positional effect, for checking the estimators.

    ``mode="logit"``: ``logit q = logit base + amplitude · sin(2π t / period)``, an additive
    positional bias (t = prefix length). ``mode="temperature"``: ``logit q = (1 + amplitude ·
    sin(2π t / period)) · logit base``, a position-dependent confidence. Neither is
    exchangeable; their period is known, so the debiasing must find it.

    The paper's gap takes an absolute value of a difference, and that matters here: an additive
    bias moves the log-probability of the observed bit up for a 1 and down for a 0, so in the
    mean absolute gap it is invisible while it is smaller than the Bayes update (about 1/n) and
    folds to half its period (|cos|) where it is larger. The temperature form scales the update
    itself and shows at its own period.
    """

    exact = True
    exchangeable = False

    def __init__(
        self,
        base: CountPredictor | None = None,
        *,
        amplitude: float = 0.2,
        period: float = 32.0,
        mode: str = "logit",
        name: str | None = None,
    ) -> None:
        if period <= 2:
            raise InputError(f"must be > 2, got {period!r}", field="period")
        if mode not in {"logit", "temperature"}:
            raise InputError(f"must be 'logit' or 'temperature', got {mode!r}", field="mode")
        if mode == "temperature" and not 0 <= amplitude < 1:
            raise InputError(
                f"must lie in [0, 1) for mode='temperature', got {amplitude!r}", field="amplitude"
            )
        self.base = base or laplace()
        self.amplitude = float(amplitude)
        self.period = float(period)
        self.mode = mode
        label = "+ sin" if mode == "logit" else "× (1 + sin)"
        self.name = name or f"{self.base.name} {label}(2πt/{period:g})"

    def _shift(self, q: FloatArray, lengths: FloatArray) -> FloatArray:
        logit = np.log(q) - np.log1p(-q)
        wave = self.amplitude * np.sin(2 * np.pi * lengths / self.period)
        logit = logit + wave if self.mode == "logit" else logit * (1.0 + wave)
        return np.asarray(1.0 / (1.0 + np.exp(-logit)), dtype=float)

    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        ones, lens = _counts(prefixes)
        return self._shift(self.base.from_counts(ones, lens), lens)

    def prefix_probs(
        self,
        sequences: Bits,
        lengths: Sequence[int] | None = None,
        *,
        progress: ProgressFn | None = None,
    ) -> FloatArray:
        bits = check_bits(sequences)
        lens = np.asarray(check_lengths(lengths, bits.shape[1]), dtype=float)
        base = self.base.prefix_probs(bits, lens.astype(int).tolist())
        out = self._shift(base, np.broadcast_to(lens, base.shape))
        if progress is not None:
            progress(out.size)
        return out


class Recency(Predictor):
    """A forgetful Beta-Bernoulli: each observation's weight decays by `decay` per later step.

    ``q = (Σ_i decay^(t-i) x_i + a) / (Σ_i decay^(t-i) + a + b)``. With decay < 1 it is neither
    exchangeable nor a martingale (recent bits count more, as in a recency-biased model); with
    decay = 1 it is `BetaBernoulli(a, b)`. Used to check that the order-variance and Falck
    estimators detect what they should.
    """

    exact = True
    exchangeable = False

    def __init__(
        self, decay: float = 0.9, a: float = 1.0, b: float = 1.0, *, name: str | None = None
    ) -> None:
        if not 0.0 < decay <= 1.0:
            raise InputError(f"must lie in (0, 1], got {decay!r}", field="decay")
        if not (a > 0 and b > 0):
            raise InputError(f"must be positive, got a={a!r}, b={b!r}", field="a")
        self.decay = float(decay)
        self.a = float(a)
        self.b = float(b)
        self.exchangeable = decay == 1.0
        self.name = name or f"recency({decay:g})"

    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        out = np.empty(len(prefixes))
        for i, prefix in enumerate(prefixes):
            bits = np.asarray(prefix, dtype=float)
            w = self.decay ** np.arange(bits.size - 1, -1, -1, dtype=float)
            out[i] = (float(w @ bits) + self.a) / (float(w.sum()) + self.a + self.b)
        return out

    def sample_paths(
        self,
        context: Sequence[int],
        uniforms: FloatArray,
        *,
        progress: ProgressFn | None = None,
    ) -> Bits:
        u = check_uniforms(uniforms)
        bits = np.asarray(list(context), dtype=float)
        w = self.decay ** np.arange(bits.size - 1, -1, -1, dtype=float)
        ones = np.full(u.shape[0], float(w @ bits) if bits.size else 0.0)
        total = float(w.sum()) if bits.size else 0.0
        paths = np.zeros(u.shape, dtype=np.int8)
        for t in range(u.shape[1]):
            q = (ones + self.a) / (total + self.a + self.b)
            paths[:, t] = u[:, t] < q
            ones = self.decay * ones + paths[:, t]
            total = self.decay * total + 1.0
        if progress is not None:
            progress(u.size)
        return paths
