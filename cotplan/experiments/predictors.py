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
"""

from __future__ import annotations

import abc
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cotplan.backends.base import Backend
from cotplan.errors import CotplanError, InputError, ResponseFormatError
from cotplan.experiments.sequences import Bits, check_bits

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

FloatArray = npt.NDArray[np.float64]
#: Called with the number of predictions just completed (from worker threads too).
ProgressFn = Callable[[int], None]


class Predictor(abc.ABC):
    """P(next bit = 1 | prefix) for binary sequences.

    Subclasses implement `prob_one`; the other methods have generic implementations in terms
    of it that subclasses override when they can do better (vectorised, cached, batched).
    """

    #: A short label used in tables and charts.
    name: str = "predictor"
    #: True for closed-form references that make no model calls.
    exact: bool = False
    #: True when the prediction depends on the prefix only through its counts.
    exchangeable: bool = False

    @property
    def requests_made(self) -> int:
        """Model requests made so far (answered by the server, cache hits excluded)."""
        return 0

    @property
    def can_score_empty(self) -> bool:
        """Whether P(next = 1 | empty prefix) is defined (a model needs an instruction for it)."""
        return True

    @abc.abstractmethod
    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        """P(next = 1 | prefix) for each prefix, as a float array of the same length."""

    def prefix_probs(
        self,
        sequences: Bits,
        lengths: Sequence[int] | None = None,
        *,
        progress: ProgressFn | None = None,
    ) -> FloatArray:
        """``q[i, j] = P(next = 1 | sequences[i, :lengths[j]])``; lengths default to 0..L-1."""
        bits = check_bits(sequences)
        lens = check_lengths(lengths, bits.shape[1])
        prefixes = [row[:t].tolist() for row in bits for t in lens]
        out = self.prob_one(prefixes).reshape(bits.shape[0], len(lens))
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
        """Continuation paths after `context`: ``z[k, t] = 1`` iff ``uniforms[k, t] < q``.

        `q` is this predictor's P(1 | context, z[k, :t]); using given uniforms (common random
        numbers) makes paths of different predictors directly comparable and order-free.
        """
        u = check_uniforms(uniforms)
        ctx = list(check_bits([list(context)], "context")[0]) if len(context) else []
        paths = np.zeros(u.shape, dtype=np.int8)
        for t in range(u.shape[1]):
            prefixes = [ctx + paths[k, :t].tolist() for k in range(u.shape[0])]
            paths[:, t] = u[:, t] < self.prob_one(prefixes)
            if progress is not None:
                progress(u.shape[0])
        return paths

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def check_lengths(lengths: Sequence[int] | None, n_max: int) -> list[int]:
    if lengths is None:
        return list(range(n_max))
    lens = [int(t) for t in lengths]
    if not lens:
        raise InputError("must not be empty", field="lengths")
    if min(lens) < 0 or max(lens) > n_max:
        raise InputError(f"must lie in 0..{n_max} (the sequence length)", field="lengths")
    return lens


def check_uniforms(uniforms: FloatArray) -> FloatArray:
    u = np.asarray(uniforms, dtype=float)
    if u.ndim != 2 or u.size == 0:
        raise InputError("must be a non-empty 2-D array (paths x steps)", field="uniforms")
    return u


def _counts(prefixes: Sequence[Sequence[int]]) -> tuple[FloatArray, FloatArray]:
    """Ones and lengths of each prefix."""
    ones = np.fromiter((sum(p) for p in prefixes), dtype=float, count=len(prefixes))
    lens = np.fromiter((len(p) for p in prefixes), dtype=float, count=len(prefixes))
    return ones, lens


class _CountPredictor(Predictor):
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


class BetaBernoulli(_CountPredictor):
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


class ClippedMLE(_CountPredictor):
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


class Oracle(_CountPredictor):
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
        base: _CountPredictor | None = None,
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


@runtime_checkable
class SupportsPromptLogprobs(Protocol):
    """A backend that scores every position of a prompt in one request (vLLM `prompt_logprobs`).

    `prompt_logprobs(prompt, top_logprobs=k)` returns, for each prompt token in order, the
    token's text and the top-k alternatives at that position as ``{token text: logprob}``
    (empty for the first token, which has no context).
    """

    def prompt_logprobs(
        self, prompt: str, *, top_logprobs: int
    ) -> Sequence[tuple[str, Mapping[str, float]]]: ...


class BackendPredictor(Predictor):
    """P(next = 1 | prefix) from a model's next-token probabilities of "0" and "1".

    Parameters
    ----------
    backend:
        Any `Backend` with next-token probabilities.
    instruction:
        Text put before the bits (e.g. ``"Coin flips:\\n"``); needed to score an empty prefix.
    style:
        How the bits are written for the tokenizer. ``"space-separated"``: ``"0 1 1 "`` with a
        trailing space, candidates ``"0"``/``"1"`` (tokenizers that split digits and spaces, like
        SmolLM2's). ``"leading-space"``: ``"0 1 1"``, candidates ``" 0"``/``" 1"`` (tokenizers
        that glue the space to the digit, like OpenAI's). ``"auto"`` asks the backend's
        tokenizer which one applies.
    concurrency:
        Sequences scored at once (default: the backend's own).
    prompt_logprobs:
        ``"auto"`` uses one request per sequence when the backend offers all-position scoring
        (`SupportsPromptLogprobs`); ``False`` always asks position by position.
    min_prob:
        Probabilities are clipped to [min_prob, 1 - min_prob]: a candidate the server did not
        list among its top alternatives otherwise gets probability 0 and an infinite log-loss.
    """

    exact = False
    exchangeable = False

    def __init__(
        self,
        backend: Backend,
        *,
        instruction: str = "",
        style: str = "auto",
        concurrency: int | None = None,
        prompt_logprobs: bool | str = "auto",
        min_prob: float = 1e-4,
        name: str | None = None,
    ) -> None:
        if style not in {"auto", "space-separated", "leading-space"}:
            raise InputError(
                f"must be 'auto', 'space-separated' or 'leading-space', got {style!r}",
                field="style",
            )
        if concurrency is not None and concurrency < 1:
            raise InputError(f"must be >= 1, got {concurrency!r}", field="concurrency")
        if not 0.0 < min_prob < 0.5:
            raise InputError(f"must lie in (0, 0.5), got {min_prob!r}", field="min_prob")
        self.backend = backend
        self.instruction = instruction
        self.style = style
        self.concurrency = concurrency
        self.use_prompt_logprobs = prompt_logprobs
        self.min_prob = float(min_prob)
        self.name = name or (backend.model or type(backend).__name__)
        self._lock = threading.Lock()
        self._requests = 0
        self._cache_hits = 0
        self._covered: list[float] = []
        self._missing = 0
        self._resolved_style: str | None = None

    # -- bookkeeping ----------------------------------------------------------------------------

    @property
    def requests_made(self) -> int:
        return self._requests

    @property
    def can_score_empty(self) -> bool:
        return bool(self.instruction.strip())

    @property
    def cache_hits(self) -> int:
        """Predictions the call cache answered (no request made)."""
        return self._cache_hits

    @property
    def predictions(self) -> int:
        """Next-token distributions read so far (one request each, or many per request)."""
        return len(self._covered)

    @property
    def mean_covered_mass(self) -> float:
        """Mean raw probability "0" and "1" got together (1.0: the model wanted nothing else)."""
        return float(np.mean(self._covered)) if self._covered else float("nan")

    def covered_mass_since(self, start: int) -> float:
        """Mean covered mass of the predictions read after the first `start` ones."""
        with self._lock:
            recent = self._covered[start:]
        return float(np.mean(recent)) if recent else float("nan")

    @property
    def min_covered_mass(self) -> float:
        return float(np.min(self._covered)) if self._covered else float("nan")

    @property
    def missing_candidates(self) -> int:
        """Predictions where "0" or "1" was not among the top alternatives (clipped)."""
        return self._missing

    def reset_counters(self) -> None:
        with self._lock:
            self._requests = self._cache_hits = self._missing = 0
            self._covered = []

    # -- prompt format --------------------------------------------------------------------------

    @property
    def resolved_style(self) -> str:
        """The prompt style in use (``"auto"`` resolved through the backend's tokenizer)."""
        if self._resolved_style is None:
            self._resolved_style = self._detect_style()
        return self._resolved_style

    def _detect_style(self) -> str:
        if self.style != "auto":
            return self.style
        try:
            # "0 1 0 1": 7 tokens when digits and spaces are separate, 4 when " 1" is one token.
            n_tokens = self.backend.count_tokens("0 1 0 1")
        except (CotplanError, NotImplementedError, AttributeError):
            return "space-separated"
        return "leading-space" if n_tokens <= 4 else "space-separated"

    def prompt(self, prefix: Sequence[int]) -> tuple[str, tuple[str, str]]:
        """The prompt for a prefix, and the candidates ("0"-like, "1"-like) to read after it."""
        bits = [str(int(b)) for b in prefix]
        if self.resolved_style == "space-separated":
            text = self.instruction + "".join(f"{b} " for b in bits)
            candidates = ("0", "1")
        else:
            text = self.instruction + " ".join(bits)
            candidates = (" 0", " 1") if bits else ("0", "1")
        if not text.strip():
            raise InputError(
                "an empty prefix needs a non-empty `instruction` to make a prompt",
                field="prefixes",
            )
        return text, candidates

    # -- scoring --------------------------------------------------------------------------------

    def _score(self, prefix: Sequence[int]) -> float:
        text, (zero, one) = self.prompt(prefix)
        result = self.backend.next_token_probs(text, [zero, one])
        with self._lock:
            if result.from_cache:
                self._cache_hits += 1
            else:
                self._requests += 1
            self._covered.append(float(result.covered_mass))
            if result.missing:
                self._missing += 1
        return float(np.clip(result.probs[one], self.min_prob, 1.0 - self.min_prob))

    def _workers(self) -> int:
        return self.concurrency or self.backend.default_concurrency

    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        values = self.backend.map(self._score, list(prefixes), concurrency=self._workers())
        return np.asarray(values, dtype=float)

    def _all_positions(self) -> bool:
        if self.use_prompt_logprobs is False:
            return False
        # OpenAI-compatible clients have the method but use it only where declared (vLLM).
        return isinstance(self.backend, SupportsPromptLogprobs) and bool(
            self.backend.supports_prompt_logprobs
        )

    def prefix_probs(
        self,
        sequences: Bits,
        lengths: Sequence[int] | None = None,
        *,
        progress: ProgressFn | None = None,
    ) -> FloatArray:
        bits = check_bits(sequences)
        lens = check_lengths(lengths, bits.shape[1])
        if 0 in lens:
            self.prompt([])  # raises when an empty prefix cannot be scored
        order = sorted(range(len(lens)), key=lambda j: lens[j])

        def one_sequence(row: Bits) -> list[float]:
            if self._all_positions():
                probs = self._score_all_positions(row, max(lens))
                out = [probs[t] for t in lens]
            else:
                # Increasing length, one after another: each request extends the cached prompt.
                out = [0.0] * len(lens)
                for j in order:
                    out[j] = self._score(row[: lens[j]].tolist())
            if progress is not None:
                progress(len(lens))
            return out

        rows = self.backend.map(one_sequence, list(bits), concurrency=self._workers())
        return np.asarray(rows, dtype=float)

    def _score_all_positions(self, row: Bits, max_len: int) -> list[float]:
        """P(next = 1 | first t bits) for t = 0..max_len from one all-positions request."""
        backend = self.backend
        assert isinstance(backend, SupportsPromptLogprobs)
        # A dummy bit after the last one: the distribution at its position is P(next | all).
        bits = [*row[:max_len].tolist(), 0]
        text, _ = self.prompt(bits)
        tokens = backend.prompt_logprobs(text, top_logprobs=20)
        probs = parse_bit_positions(tokens, len(bits), style=self.resolved_style)
        with self._lock:
            self._requests += 1
            for covered, missing, _ in probs:
                if math.isfinite(covered):
                    self._covered.append(covered)
                    self._missing += int(missing)
        return [float(np.clip(q, self.min_prob, 1.0 - self.min_prob)) for _, _, q in probs]

    def sample_paths(
        self,
        context: Sequence[int],
        uniforms: FloatArray,
        *,
        progress: ProgressFn | None = None,
    ) -> Bits:
        u = check_uniforms(uniforms)
        ctx = [int(b) for b in context]

        def one_path(k: int) -> list[int]:
            path: list[int] = []
            for t in range(u.shape[1]):
                # Path by path, step by step: each request extends this path's cached prompt.
                path.append(int(u[k, t] < self._score(ctx + path)))
            if progress is not None:
                progress(u.shape[1])
            return path

        rows = self.backend.map(one_path, range(u.shape[0]), concurrency=self._workers())
        return np.asarray(rows, dtype=np.int8)


def parse_bit_positions(
    tokens: Sequence[tuple[str, Mapping[str, float]]], n_bits: int, *, style: str
) -> list[tuple[float, bool, float]]:
    """Per bit: (covered mass, a candidate missing?, P(1) renormalised) from prompt logprobs.

    The j-th token whose text is a bit is bit j; the alternatives listed at that token are the
    model's distribution for bit j given everything before it.
    """
    out: list[tuple[float, bool, float]] = []
    for index, (token, alternatives) in enumerate(tokens):
        if token.strip() not in {"0", "1"}:
            continue
        if token.strip() != token and style == "space-separated":
            raise ResponseFormatError(
                f"token {token!r} glues a space to a bit; use style='leading-space'"
            )
        if not alternatives:
            if index == 0 and not out:
                out.append((float("nan"), True, float("nan")))  # first token: no context
                continue
            raise ResponseFormatError(f"no alternatives were returned at prompt token {index}")
        if style == "space-separated" or not out:
            zero, one = "0", "1"
        else:
            zero, one = " 0", " 1"
        p0 = math.exp(alternatives[zero]) if zero in alternatives else 0.0
        p1 = math.exp(alternatives[one]) if one in alternatives else 0.0
        covered = p0 + p1
        if covered <= 0.0:
            raise ResponseFormatError(f"neither {zero!r} nor {one!r} listed at token {index}")
        out.append((covered, zero not in alternatives or one not in alternatives, p1 / covered))
    if len(out) != n_bits:
        raise ResponseFormatError(
            f"expected {n_bits} bit tokens in the scored prompt, found {len(out)} "
            "(the tokenizer merges digits; score position by position instead)"
        )
    return out
