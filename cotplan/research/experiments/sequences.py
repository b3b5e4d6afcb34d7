"""Exchangeable binary sequences: the data every experiment conditions the predictors on.

Two kinds, both seeded:

- balanced: exactly ``ceil(n/2)`` ones, uniformly shuffled (the paper's martingale data);
- i.i.d. Bernoulli with a success probability that is either fixed or drawn per sequence from a
  Beta(a, b) prior (so that a Beta-Bernoulli predictor with the same prior is Bayes-optimal).

Sequences are `numpy` arrays of dtype int8 with one row per sequence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cotplan.errors import InputError
from cotplan.validation import require_int

__all__ = [
    "Bits",
    "balanced_sequences",
    "bernoulli_sequences",
    "beta_bernoulli_sequences",
    "check_bits",
    "random_orderings",
]

#: A 2-D array of 0/1 values, one row per sequence.
Bits = npt.NDArray[np.int8]


def _check_count(value: int, name: str, minimum: int = 1) -> int:
    return require_int(value, name, low=minimum)


def balanced_sequences(n: int, n_sequences: int, seed: int | np.random.Generator = 0) -> Bits:
    """`n_sequences` independent shuffles of ``ceil(n/2)`` ones and ``floor(n/2)`` zeros.

    Each row is uniformly distributed over the arrangements of that multiset, so the rows are
    exchangeable sequences (as in the paper's martingale experiment).
    """
    n = _check_count(n, "n")
    n_sequences = _check_count(n_sequences, "n_sequences")
    rng = np.random.default_rng(seed)
    base = np.zeros(n, dtype=np.int8)
    base[: math.ceil(n / 2)] = 1
    # argsort of uniform keys is a uniform random permutation, drawn for all rows at once.
    order = np.argsort(rng.random((n_sequences, n)), axis=1)
    return base[order]


def bernoulli_sequences(
    p: float | Sequence[float] | npt.NDArray[np.float64],
    n: int,
    n_sequences: int,
    seed: int | np.random.Generator = 0,
) -> Bits:
    """i.i.d. Bernoulli(p) rows; `p` is one value or one value per row."""
    n = _check_count(n, "n")
    n_sequences = _check_count(n_sequences, "n_sequences")
    probs = np.broadcast_to(np.asarray(p, dtype=float), (n_sequences,)).reshape(-1, 1)
    if not np.all((probs >= 0.0) & (probs <= 1.0)):
        raise InputError("must lie in [0, 1]", field="p")
    rng = np.random.default_rng(seed)
    return (rng.random((n_sequences, n)) < probs).astype(np.int8)


def beta_bernoulli_sequences(
    n: int,
    n_sequences: int,
    a: float = 1.0,
    b: float = 1.0,
    seed: int | np.random.Generator = 0,
) -> tuple[Bits, npt.NDArray[np.float64]]:
    """Rows drawn by first drawing p ~ Beta(a, b) per row, then n i.i.d. Bernoulli(p) bits.

    Returns ``(bits, p)``. Under this prior the Beta-Bernoulli(a, b) predictor is the Bayes
    mixture: no predictor has a lower expected log-loss at any position.
    """
    if not (a > 0 and b > 0):
        raise InputError(f"Beta prior parameters must be positive, got a={a!r}, b={b!r}", field="a")
    n = _check_count(n, "n")
    n_sequences = _check_count(n_sequences, "n_sequences")
    rng = np.random.default_rng(seed)
    p = rng.beta(a, b, size=n_sequences)
    bits = (rng.random((n_sequences, n)) < p[:, None]).astype(np.int8)
    return bits, p


def random_orderings(
    ones: int, n: int, n_orderings: int, seed: int | np.random.Generator = 0
) -> Bits:
    """`n_orderings` uniformly random orderings of one multiset: `ones` ones among `n` bits."""
    n = _check_count(n, "n")
    ones = _check_count(ones, "ones", minimum=0)
    if ones > n:
        raise InputError(f"must be at most n={n}, got {ones}", field="ones")
    n_orderings = _check_count(n_orderings, "n_orderings")
    rng = np.random.default_rng(seed)
    base = np.zeros(n, dtype=np.int8)
    base[:ones] = 1
    return base[np.argsort(rng.random((n_orderings, n)), axis=1)]


def check_bits(sequences: object, name: str = "sequences") -> Bits:
    """A 2-D int8 array of 0/1 from a list of lists or an array; rejects anything else."""
    try:
        array = np.asarray(sequences)
    except (ValueError, TypeError) as exc:  # ragged lists
        raise InputError(f"must be a rectangular array of 0/1 values ({exc})", field=name) from exc
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2 or array.shape[1] == 0 or array.shape[0] == 0:
        raise InputError(f"must be a non-empty 2-D array, got shape {array.shape}", field=name)
    if array.dtype.kind not in "biu" or not np.isin(array, (0, 1)).all():
        raise InputError("must contain only 0 and 1", field=name)
    return array.astype(np.int8)
