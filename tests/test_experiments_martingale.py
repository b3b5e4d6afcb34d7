"""Martingale gap: exact references give their analytic values; planted effects are found."""

from __future__ import annotations

import numpy as np
import pytest

from cotplan.errors import InputError
from cotplan.research.experiments.martingale import (
    MARTINGALE_QUICK,
    gap_matrix,
    martingale_gap,
    paper_grid,
    read_gaps,
)
from cotplan.research.experiments.predictors import PositionalBias, kt, laplace


@pytest.fixture(scope="module")
def laplace_full():  # type: ignore[no-untyped-def]
    return martingale_gap(laplace(), paper_grid(), n_sequences=100, n_boot=300)


def test_paper_grid() -> None:
    grid = paper_grid()
    assert grid[0] == 10
    assert grid[-1] == 198
    assert len(grid) == 95


def test_gap_matrix_is_the_absolute_log_ratio() -> None:
    got = gap_matrix(np.array([0.6, 0.6]), np.array([0.5, 0.5]), np.array([1.0, 0.0]))
    assert got == pytest.approx([abs(np.log(0.6 / 0.5)), abs(np.log(0.4 / 0.5))])


def test_exact_bayes_gap_is_one_over_n(laplace_full) -> None:  # type: ignore[no-untyped-def]
    # Laplace moves log P(x_n) by about ±1/n per observation on balanced data: Δn ≈ 1/n.
    r = laplace_full
    assert pytest.approx(1.0, abs=0.03) == r.fit_inverse.A
    assert r.fit_inverse.r2 > 0.99
    assert np.all(np.abs(r.gap[-20:] * r.ns[-20:] - 1.0) < 0.1)
    # Not zero, and the 1/n law beats log(n)/n for an exact Bayesian.
    assert r.log_lr < 0
    row = r.versus_paper().iloc[0]
    # Laplace is no model: the row is a control, and as one it reads "not reproduced".
    assert (row["verdict"], row["control"]) == ("not comparable (model)", "not reproduced")


def test_reference_against_itself_has_zero_excess(laplace_full) -> None:  # type: ignore[no-untyped-def]
    assert laplace_full.mean_excess == 0.0
    assert np.all(laplace_full.excess == 0.0)


def test_designs_agree_for_an_exact_bayesian() -> None:
    nested = martingale_gap(kt(), paper_grid(), n_sequences=60, n_boot=200, seed=1)
    independent = martingale_gap(
        kt(), paper_grid(), n_sequences=60, n_boot=200, seed=1, design="independent"
    )
    assert pytest.approx(independent.fit_inverse.A, rel=0.05) == nested.fit_inverse.A
    assert nested.data.positions.size == 198 - 10 + 1  # every position, for debiasing
    assert independent.data.positions.size == 95


def test_planted_positional_bias_shows_as_excess_over_bayes() -> None:
    planted = PositionalBias(amplitude=0.5, period=20)
    r = martingale_gap(planted, **MARTINGALE_QUICK)
    assert r.mean_excess_ci.low > 0
    row = r.versus_paper().iloc[3]
    assert (row["verdict"], row["holds"]) == ("cotplan check", "yes")  # not a claim of the paper


def test_bootstrap_intervals_cover_the_point_estimate(laplace_full) -> None:  # type: ignore[no-untyped-def]
    for fit in (laplace_full.fit_log, laplace_full.fit_inverse):
        assert fit.A_ci.low <= fit.A <= fit.A_ci.high
        assert fit.B_ci.low <= fit.B <= fit.B_ci.high


def test_per_sequence_gaps_round_trip(tmp_path, laplace_full) -> None:  # type: ignore[no-untyped-def]
    laplace_full.save(tmp_path)
    data = read_gaps(tmp_path)
    assert np.array_equal(data.positions, laplace_full.data.positions)
    assert np.allclose(data.per_sequence, laplace_full.data.per_sequence)
    assert data.shared


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ns": [10, 12]}, "`ns`: needs at least 3 values"),
        ({"ns": [2, 10, 12]}, "`ns`: must be >= 3"),
        ({"design": "paired"}, "`design`: must be 'nested' or 'independent'"),
        ({"n_sequences": 1}, "`n_sequences`: must be >= 2"),
        ({"n_boot": 10}, "`n_boot`: must be >= 100"),
    ],
)
def test_validation(kwargs: dict[str, object], message: str) -> None:
    params: dict[str, object] = {"ns": [10, 12, 14], "n_sequences": 3, "n_boot": 100, **kwargs}
    with pytest.raises(InputError, match=message):
        martingale_gap(laplace(), **params)  # type: ignore[arg-type]


def test_read_gaps_rejects_other_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="`path`: needs columns"):
        read_gaps(bad)
