"""Orderings for permutation averaging: properties of the random, banded and balanced schedules."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.errors import InputError
from cotplan.permutation.schedules import (
    band_sizes,
    cycle_length,
    latin_square,
    make_orderings,
    position_counts,
    williams_sequence,
)

SCHEDULES = ("random", "banded", "balanced")
sizes = st.integers(min_value=1, max_value=9)
seeds = st.integers(min_value=0, max_value=2**32)


@settings(max_examples=60, deadline=None)
@given(n=sizes, m=st.integers(1, 40), seed=seeds, schedule=st.sampled_from(SCHEDULES))
def test_every_row_is_a_permutation(n: int, m: int, seed: int, schedule: str) -> None:
    rows = make_orderings(n, m, schedule, seed=seed)  # type: ignore[arg-type]
    assert rows.shape == (m, n)
    assert all(sorted(row) == list(range(n)) for row in rows.tolist())


@settings(max_examples=60, deadline=None)
@given(n=sizes, cycles=st.integers(1, 5), seed=seeds)
def test_balanced_puts_each_example_in_each_position_once_per_cycle(
    n: int, cycles: int, seed: int
) -> None:
    rows = make_orderings(n, n * cycles, "balanced", seed=seed)
    for c in range(cycles):
        counts = position_counts(rows[c * n : (c + 1) * n])
        assert (counts == 1).all()
    assert (position_counts(rows) == cycles).all()


@settings(max_examples=40, deadline=None)
@given(half=st.integers(1, 5))
def test_williams_square_balances_neighbours_for_even_sizes(half: int) -> None:
    n = 2 * half
    square = latin_square(n)
    pairs = [(int(a), int(b)) for row in square for a, b in itertools.pairwise(row)]
    assert sorted(pairs) == sorted((a, b) for a in range(n) for b in range(n) if a != b)
    assert all(sorted(col) == list(range(n)) for col in square.T.tolist())


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 5), seed=seeds, extra=st.integers(0, 2))
def test_balanced_cycles_do_not_repeat_until_every_ordering_was_used(
    n: int, seed: int, extra: int
) -> None:
    passes = math.factorial(n - 1)  # distinct cycles
    rows = make_orderings(n, n * (passes + extra), "balanced", seed=seed)
    first_pass = {tuple(row) for row in rows[: n * passes].tolist()}
    assert len(first_pass) == math.factorial(n)  # every ordering exactly once
    assert (position_counts(rows) == passes + extra).all()


def test_williams_sequence_zigzags() -> None:
    assert williams_sequence(6) == [0, 1, 5, 2, 4, 3]
    assert williams_sequence(1) == [0]


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(2, 10),
    m=st.integers(1, 30),
    seed=seeds,
)
def test_banded_keeps_every_example_inside_its_band(
    data: st.DataObject, n: int, m: int, seed: int
) -> None:
    bands = data.draw(st.integers(1, n))
    rows = make_orderings(n, m, "banded", seed=seed, bands=bands)
    start = 0
    for size in band_sizes(n, bands):
        block = rows[:, start : start + size]
        assert ((block >= start) & (block < start + size)).all()
        start += size


@settings(max_examples=60, deadline=None)
@given(
    n=sizes,
    m=st.integers(1, 30),
    cut=st.integers(1, 30),
    seed=seeds,
    schedule=st.sampled_from(SCHEDULES),
)
def test_seeds_reproduce_and_prefixes_are_stable(
    n: int, m: int, cut: int, seed: int, schedule: str
) -> None:
    full = make_orderings(n, m, schedule, seed=seed)  # type: ignore[arg-type]
    again = make_orderings(n, m, schedule, seed=seed)  # type: ignore[arg-type]
    shorter = make_orderings(n, min(cut, m), schedule, seed=seed)  # type: ignore[arg-type]
    np.testing.assert_array_equal(full, again)
    np.testing.assert_array_equal(full[: min(cut, m)], shorter)


def test_different_seeds_give_different_orderings() -> None:
    a = make_orderings(6, 12, "random", seed=1)
    b = make_orderings(6, 12, "random", seed=2)
    assert not np.array_equal(a, b)
    c = make_orderings(6, 12, "balanced", seed=1)
    d = make_orderings(6, 12, "balanced", seed=2)
    assert not np.array_equal(c, d)


def test_random_orderings_are_roughly_uniform_over_positions() -> None:
    # 6000 draws of 3 examples: each cell expects 2000, sd ≈ 36.5; 5 sd is a ~1e-6 false alarm.
    counts = position_counts(make_orderings(3, 6000, "random", seed=0))
    assert np.abs(counts - 2000).max() < 5 * np.sqrt(6000 * (1 / 3) * (2 / 3))


def test_band_sizes_split_evenly_or_as_given() -> None:
    assert band_sizes(7, 3) == (3, 2, 2)
    assert band_sizes(5) == (3, 2)
    assert band_sizes(1) == (1,)
    assert band_sizes(6, [1, 2, 3]) == (1, 2, 3)
    assert cycle_length("balanced", 5) == 5
    assert cycle_length("random", 5) is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 4, "m": 0}, r"`m`: must be an integer between 1"),
        ({"n": 0, "m": 3}, r"`n`: must be an integer >= 1"),
        ({"n": 4, "m": 3, "schedule": "latin"}, r"`schedule`: must be one of random, banded"),
        ({"n": 4, "m": 3, "seed": -1}, r"`seed`: must be an integer between 0"),
        ({"n": 4, "m": 3, "schedule": "random", "bands": 2}, r"`bands`: only applies"),
        ({"n": 4, "m": 3, "schedule": "banded", "bands": 5}, r"`bands`: must be an int.* 1 and 4"),
        ({"n": 4, "m": 3, "schedule": "banded", "bands": [2, 3]}, r"add up to 5, not to the 4"),
        ({"n": 4, "m": 3, "schedule": "banded", "bands": "22"}, r"`bands`: must be a number"),
        ({"n": 4, "m": 2.5}, r"`m`: must be an integer"),
    ],
)
def test_bad_schedule_arguments_are_named(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        make_orderings(**kwargs)  # type: ignore[arg-type]
