"""Exchangeable binary sequences: counts, shapes, seeding, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.errors import InputError
from cotplan.research.experiments.sequences import (
    balanced_sequences,
    bernoulli_sequences,
    beta_bernoulli_sequences,
    check_bits,
    random_orderings,
)


@given(n=st.integers(1, 300), rows=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_balanced_rows_have_exactly_ceil_half_ones(n: int, rows: int, seed: int) -> None:
    bits = balanced_sequences(n, rows, seed)
    assert bits.shape == (rows, n)
    assert bits.dtype == np.int8
    assert np.all(bits.sum(axis=1) == math.ceil(n / 2))


def test_balanced_is_seeded_and_shuffled() -> None:
    a = balanced_sequences(40, 50, seed=3)
    assert np.array_equal(a, balanced_sequences(40, 50, seed=3))
    assert not np.array_equal(a, balanced_sequences(40, 50, seed=4))
    # Shuffled: every position is a 1 about half the time (2000 rows, tolerance 5 sd).
    many = balanced_sequences(40, 2000, seed=1).mean(axis=0)
    assert np.all(np.abs(many - 0.5) < 5 * math.sqrt(0.25 / 2000))


def test_beta_bernoulli_draws_p_per_row() -> None:
    bits, p = beta_bernoulli_sequences(200, 500, 2.0, 5.0, seed=0)
    assert bits.shape == (500, 200)
    assert p.shape == (500,)
    assert abs(p.mean() - 2 / 7) < 0.03
    # The row frequencies follow their own p.
    assert np.corrcoef(bits.mean(axis=1), p)[0, 1] > 0.95


def test_bernoulli_fixed_p() -> None:
    bits = bernoulli_sequences(0.3, 1000, 20, seed=0)
    assert abs(bits.mean() - 0.3) < 0.02


def test_random_orderings_keep_the_multiset() -> None:
    rows = random_orderings(7, 20, 100, seed=0)
    assert np.all(rows.sum(axis=1) == 7)
    assert len({tuple(r) for r in rows}) > 90


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: balanced_sequences(0, 3), "`n`: must be an integer >= 1"),
        (lambda: balanced_sequences(4, 0), "`n_sequences`: must be an integer >= 1"),
        (lambda: bernoulli_sequences(1.5, 4, 2), "`p`: must lie in"),
        (lambda: beta_bernoulli_sequences(4, 2, 0.0, 1.0), "`a`: Beta prior parameters"),
        (lambda: random_orderings(5, 4, 3), "`ones`: must be at most n=4"),
        (lambda: check_bits([[0, 2]]), "`sequences`: must contain only 0 and 1"),
        (lambda: check_bits([[0, 1], [1]]), "`sequences`: must be a rectangular"),
    ],
)
def test_validation_names_the_parameter(call: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        call()  # type: ignore[operator]
