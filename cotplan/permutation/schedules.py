"""Orderings of few-shot examples: which permutations a permutation average scores.

An ordering is a row of example indices, one per prompt position (``row[p]`` is the example
placed at position ``p``). Three schedules:

- ``random``: independent uniform permutations (with replacement: with few examples the same
  ordering can come back). The paper's scheme; the spread of the average falls as m^-1/2.
- ``banded``: split the positions into consecutive bands and shuffle only within each band, so
  examples never leave their band (the authors' later code does this to keep a curriculum or a
  recency structure while still averaging local order effects).
- ``balanced``: cycles of n orderings that form a Latin square, so that over each full cycle
  every example sits in every position exactly once. A model whose answer moves with "which
  example is where" (first-order position bias) gets exactly the same total over every cycle,
  so that part of the order noise cancels instead of averaging out at m^-1/2. The square is the
  cyclic Williams design (rows ``(w + r) mod n`` with ``w = 0, 1, n-1, 2, n-2, ...``): for an
  even number of examples each ordered pair of examples is also adjacent exactly once per cycle,
  which balances "what came just before" as well. Every cycle relabels the examples with a
  random permutation and shuffles its rows, so a partial cycle is a random subset of one.
  Relabellings that differ by a cyclic shift give the same rows, so there are (n-1)! distinct
  cycles; they are drawn without replacement until all were used (then a new pass starts), so
  no ordering is scored twice within a pass and (n-1)! cycles are exactly all n! orderings.
  Cycles are therefore exchangeable draws without replacement from a finite set: the interval
  over cycle means ignores that finite-population correction, which makes it conservative.

Every schedule is prefix-stable: the first m' rows of ``make_orderings(n, m, ...)`` are
``make_orderings(n, m', ...)``, so stopping early never changes the orderings already scored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from cotplan.errors import InputError
from cotplan.validation import require_int

__all__ = [
    "DEFAULT_BANDS",
    "MAX_ORDERINGS",
    "SCHEDULES",
    "IntArray",
    "Schedule",
    "band_sizes",
    "check_schedule",
    "cycle_length",
    "latin_square",
    "make_orderings",
    "position_counts",
    "williams_sequence",
]

Schedule = Literal["random", "banded", "balanced"]
SCHEDULES: tuple[str, ...] = get_args(Schedule)
IntArray = npt.NDArray[np.int64]

#: Bands the ``banded`` schedule uses when none are given: the first and second half.
DEFAULT_BANDS = 2

#: Most orderings one call may ask for (a guard against `m=10**9`).
MAX_ORDERINGS = 100_000


def _check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    return require_int(value, name, low=low, high=high)


def check_schedule(schedule: object) -> Schedule:
    """`schedule` as a `Schedule`, or an `InputError` listing the known ones."""
    if schedule not in SCHEDULES:
        raise InputError(
            f"must be one of {', '.join(SCHEDULES)}, got {schedule!r}", field="schedule"
        )
    return schedule  # type: ignore[return-value]


def williams_sequence(n: int) -> list[int]:
    """0, 1, n-1, 2, n-2, ...: the first row of a Williams Latin square of order n."""
    n = _check_int(n, "n", 1)
    sequence = [0]
    low, high = 1, n - 1
    take_low = True
    while len(sequence) < n:
        if take_low:
            sequence.append(low)
            low += 1
        else:
            sequence.append(high)
            high -= 1
        take_low = not take_low
    return sequence


def latin_square(n: int) -> IntArray:
    """The cyclic Williams square: row r is ``(williams_sequence(n) + r) mod n``.

    Each column is a permutation of 0..n-1 (every example in every position once); for even n
    every ordered pair (a, b), a != b, appears in adjacent positions exactly once.
    """
    base = np.asarray(williams_sequence(n), dtype=np.int64)
    return (base[None, :] + np.arange(n, dtype=np.int64)[:, None]) % n


def band_sizes(n: int, bands: int | Sequence[int] | None = None) -> tuple[int, ...]:
    """Sizes of consecutive bands covering n positions.

    `bands` is a number of bands (sizes as equal as possible, earlier bands one larger) or the
    sizes themselves (positive, adding up to n); None means `DEFAULT_BANDS` (capped at n).
    """
    n = _check_int(n, "n", 1)
    if bands is None:
        bands = min(DEFAULT_BANDS, n)
    if isinstance(bands, int | np.integer) and not isinstance(bands, bool):
        count = _check_int(bands, "bands", 1, n)
        size, extra = divmod(n, count)
        return tuple(size + (1 if i < extra else 0) for i in range(count))
    if isinstance(bands, str) or not isinstance(bands, Sequence) or len(bands) == 0:
        raise InputError(
            f"must be a number of bands or a list of band sizes, got {bands!r}", field="bands"
        )
    sizes = tuple(_check_int(size, "bands", 1) for size in bands)
    if sum(sizes) != n:
        raise InputError(
            f"band sizes {list(sizes)} add up to {sum(sizes)}, not to the {n} examples",
            field="bands",
        )
    return sizes


def cycle_length(schedule: Schedule, n: int) -> int | None:
    """Orderings per balanced cycle (n), or None for schedules without cycles."""
    return n if check_schedule(schedule) == "balanced" else None


def make_orderings(
    n: int,
    m: int,
    schedule: Schedule = "balanced",
    *,
    seed: int = 0,
    bands: int | Sequence[int] | None = None,
) -> IntArray:
    """`m` orderings of `n` examples under `schedule`, as an (m, n) array; seeded, prefix-stable.

    ``row[p]`` is the index of the example at position ``p``. `bands` applies to the
    ``banded`` schedule only.
    """
    n = _check_int(n, "n", 1)
    m = _check_int(m, "m", 1, MAX_ORDERINGS)
    schedule = check_schedule(schedule)
    seed = _check_int(seed, "seed", 0, 2**63 - 1)
    if bands is not None and schedule != "banded":
        raise InputError(f"only applies to schedule='banded', not {schedule!r}", field="bands")
    rng = np.random.default_rng(seed)
    out = np.empty((m, n), dtype=np.int64)
    if schedule == "random":
        for i in range(m):
            out[i] = rng.permutation(n)
    elif schedule == "banded":
        sizes = band_sizes(n, bands)
        starts = np.cumsum((0, *sizes[:-1]))
        for i in range(m):
            out[i] = np.concatenate(
                [start + rng.permutation(size) for start, size in zip(starts, sizes, strict=True)]
            )
    else:
        square = latin_square(n)
        # Relabelling σ and σ∘(x + s mod n) give the same set of rows, so there are (n-1)!
        # distinct cycles; they are drawn without replacement (a new pass starts once all were
        # used), so no cycle repeats one already scored and (n-1)! cycles cover all n! orders.
        distinct = math.factorial(n - 1)
        used: set[frozenset[tuple[int, ...]]] = set()
        for cycle in range(math.ceil(m / n)):
            if len(used) == distinct:
                used.clear()
            while True:
                relabelled = rng.permutation(n)[square]
                key = frozenset(tuple(row) for row in relabelled.tolist())
                if key not in used:
                    break
            used.add(key)
            rows = relabelled[rng.permutation(n)]
            first = cycle * n
            take = min(n, m - first)
            out[first : first + take] = rows[:take]
    return out


def position_counts(orderings: IntArray) -> IntArray:
    """counts[e, p]: how often example e sits at position p over the given orderings."""
    rows = np.asarray(orderings, dtype=np.int64)
    if rows.ndim != 2:
        raise InputError("must be a 2-D array of orderings", field="orderings")
    n = rows.shape[1]
    counts = np.zeros((n, n), dtype=np.int64)
    for position in range(n):
        np.add.at(counts[:, position], rows[:, position], 1)
    return counts
