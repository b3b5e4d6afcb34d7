"""The position-R² estimator's control: exact Bayes scores about 0 in both designs (seed 0 of
the nested design once scored 0.483), while a planted positional effect still scores well above
it and falls once its harmonics are removed."""

from __future__ import annotations

import pytest

from cotplan.errors import InputError
from cotplan.research.experiments.debias import positional_debias
from cotplan.research.experiments.debias_control import THRESHOLD, debias_control
from cotplan.research.experiments.martingale import martingale_gap, paper_grid
from cotplan.research.experiments.predictors import PositionalBias


def test_exact_bayes_scores_about_zero_in_both_designs() -> None:
    control = debias_control(range(3), n_sequences=100)
    frame = control.to_frame()
    assert len(frame) == 6
    assert set(frame["design"]) == {"nested", "independent"}
    # Seed 0, nested, is the run whose raw-scale R² was 0.483.
    assert frame["r2_before"].abs().max() < 0.05, frame
    assert frame["r2_after"].abs().max() < 0.05, frame
    assert control.passed
    assert "passes its control" in control.summary()


def test_a_planted_positional_effect_is_still_seen_and_removed() -> None:
    planted = PositionalBias(amplitude=0.4, period=40, mode="temperature")
    gaps = martingale_gap(planted, paper_grid(), n_sequences=100, n_boot=100, design="independent")
    result = positional_debias(gaps, n_boot=0, n_permutations=0)
    assert result.r2_before > 3 * THRESHOLD
    assert result.r2_after < THRESHOLD


def test_validation() -> None:
    with pytest.raises(InputError, match="`seeds`"):
        debias_control(())
    with pytest.raises(InputError, match="`designs`"):
        debias_control((0,), designs=("shuffled",))
