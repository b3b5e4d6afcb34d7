"""Positional debiasing: planted periods are found at their period (not a hard-coded 64) and
removed; an exact Bayesian shows none."""

from __future__ import annotations

import numpy as np
import pytest

from cotplan.errors import InputError
from cotplan.research.experiments.debias import positional_debias
from cotplan.research.experiments.martingale import martingale_gap, paper_grid
from cotplan.research.experiments.predictors import PositionalBias, laplace


def _synthetic(period: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    n = np.arange(10, 199, 2, dtype=float)
    rng = np.random.default_rng(seed)
    gaps = (
        1.0 / n
        + 0.01 * np.sin(2 * np.pi * n / period)
        + 0.004 * np.sin(2 * np.pi * 2 * n / period + 1.0)
        + rng.normal(0.0, 0.002, n.size)
    )
    return n, gaps


@pytest.mark.parametrize("period", [64.0, 40.0, 25.0])
def test_planted_sinusoid_is_found_at_its_period_and_removed(period: float) -> None:
    n, gaps = _synthetic(period)
    result = positional_debias(gaps, n, n_permutations=199)
    assert result.period == pytest.approx(period, rel=0.03)
    assert result.p_value < 0.01
    assert result.explained > 0.8
    assert result.variance_change < 0
    assert result.r2_before > 0.5
    assert result.r2_after < 0.2
    assert result.fit.amplitudes[0] == pytest.approx(0.01, rel=0.2)


def test_pure_noise_has_no_significant_period() -> None:
    n = np.arange(10, 199, 2, dtype=float)
    gaps = 1.0 / n + np.random.default_rng(5).normal(0, 0.002, n.size)
    result = positional_debias(gaps, n, n_permutations=199)
    assert result.p_value > 0.05
    assert result.r2_before < 0.1


def test_exact_bayes_independent_design_shows_no_period() -> None:
    r = martingale_gap(laplace(), paper_grid(), n_sequences=100, n_boot=100, design="independent")
    result = positional_debias(r, n_boot=0, n_permutations=199)
    assert result.p_value > 0.05
    assert abs(result.r2_before) < 0.1


def test_additive_logit_bias_folds_to_half_its_period() -> None:
    # |gap| of an additive positional term in the logit is |cos|-like: half the period.
    planted = PositionalBias(amplitude=0.4, period=40)
    r = martingale_gap(planted, paper_grid(), n_sequences=100, n_boot=100, design="independent")
    result = positional_debias(r, n_boot=0, n_permutations=199)
    assert result.p_value < 0.01
    assert result.period == pytest.approx(20.0, rel=0.05)


def test_temperature_bias_shows_at_its_period_with_intervals() -> None:
    planted = PositionalBias(amplitude=0.4, period=40, mode="temperature")
    r = martingale_gap(planted, paper_grid(), n_sequences=100, n_boot=100, design="independent")
    result = positional_debias(r, n_boot=30, n_permutations=199)
    assert result.p_value < 0.01
    assert result.period == pytest.approx(40.0, rel=0.08)
    assert result.period_ci is not None
    assert result.period_ci.low < result.period_ci.high
    rows = result.versus_paper()
    # A period exists (structural), at 40, not GPT-3's 64: another model's magnitude. The
    # planted predictor is no model, so the row is a control that says what a model would read.
    assert tuple(rows.iloc[0][["verdict", "control"]]) == (
        "not comparable (model)",
        "not comparable (model)",
    )
    assert "is a planted effect, not a language model" in rows.iloc[1]["why"]


def test_short_grid_is_not_testable_for_period_64() -> None:
    n, gaps = _synthetic(20.0)
    result = positional_debias(gaps[:40], n[:40], n_permutations=99)
    row = result.versus_paper().iloc[0]
    assert row["verdict"] == "not testable"
    assert "--full" in row["why"]  # what would make it testable


def test_validation() -> None:
    with pytest.raises(InputError, match="`gaps`: need at least 16"):
        positional_debias(np.ones(5))
    with pytest.raises(InputError, match="`positions`: must be increasing and equally spaced"):
        positional_debias(np.ones(20), np.r_[np.arange(19), 30])
    with pytest.raises(InputError, match="`n_harmonics`: must be >= 1"):
        positional_debias(np.ones(20), n_harmonics=0)


def test_nested_gap_data_uses_the_even_grid_unless_asked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cotplan.research.experiments.martingale import read_gaps

    r = martingale_gap(laplace(), [10, 12, 14, 40], n_sequences=20, n_boot=100)
    r.save(tmp_path)
    data = read_gaps(tmp_path)
    assert data.positions.size == 31  # every position 10..40
    assert positional_debias(data, n_boot=0, n_permutations=0).positions.size == 16
    full = positional_debias(data, n_boot=0, n_permutations=0, all_positions=True)
    assert full.positions.size == 31
