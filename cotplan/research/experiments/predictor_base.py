"""The predictor interface, P(next bit = 1 | prefix), that every experiment talks to.

- `prob_one(prefixes)`: batched P(next = 1 | prefix) for arbitrary prefixes;
- `prefix_probs(sequences, lengths)`: the same for every prefix of every sequence, which is what
  the martingale and entropy experiments need; backends order these requests so that each
  sequence's prefixes go one after another in increasing length (the server's prompt cache then
  only evaluates the two new tokens of each request);
- `sample_paths(context, uniforms)`: autoregressive continuation paths (Falck et al.'s tests).

The references and the model predictor are in `cotplan.research.experiments.predictors`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from cotplan.errors import InputError
from cotplan.research.experiments.sequences import Bits, check_bits

__all__ = ["FloatArray", "Predictor", "ProgressFn", "check_lengths", "check_uniforms"]

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
