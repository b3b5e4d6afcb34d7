"""A model as a predictor: P(next = 1 | prefix) from any `Backend`'s next-token probabilities.

`BackendPredictor` asks for the probabilities of "0" and "1", renormalises them, and keeps the
probability mass the two candidates covered. A backend that scores a whole prompt at once
(`SupportsPromptLogprobs`) answers every prefix of a sequence in one request, read by
`parse_bit_positions`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from cotplan.backends.base import Backend
from cotplan.errors import CotplanError, InputError, ResponseFormatError
from cotplan.research.experiments.predictor_base import (
    FloatArray,
    Predictor,
    ProgressFn,
    check_lengths,
    check_uniforms,
)
from cotplan.research.experiments.sequences import Bits, check_bits

__all__ = ["BackendPredictor", "SupportsPromptLogprobs", "parse_bit_positions"]


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
