"""The planner's fitted state is one frozen value, built by functions of the data alone.

`BudgetPlanner.fit` keeps the `PlannerFit` that `fitting.fit_planner` returns and copies its
public parts into the `*_` attributes; these tests pin that the record is frozen, that building
it twice from the same data gives the same record, and that a refit replaces every part of the
state (nothing of an earlier fit survives in a helper's fields).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from cotplan.planner import BudgetPlanner
from cotplan.planner.data import validate_frame
from cotplan.planner.fitting import fit_planner
from cotplan.planner.shapes import SHAPES
from cotplan.planner.state import PlannerFit


def _helps() -> pd.DataFrame:
    return SHAPES["paper α=1/2"].calibration((4, 8), 20, 0)


def _flat() -> pd.DataFrame:
    return SHAPES["flat"].calibration((4, 8), 20, 0)


def test_the_fitted_state_is_a_frozen_record() -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(_helps())
    state = planner.state_
    assert isinstance(state, PlannerFit)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.status = "given"  # type: ignore[misc]


def test_building_the_record_twice_gives_the_same_values() -> None:
    planner = BudgetPlanner("paper", n_bootstrap=3)
    data = validate_frame(_helps())
    first = fit_planner(planner.check_params(), data)
    second = fit_planner(planner.check_params(), data)
    assert first.status == second.status == "helps"
    assert first.verdict == second.verdict
    assert np.array_equal(first.constants.params, second.constants.params)
    assert np.array_equal(first.draws, second.draws)
    assert first.law is not None
    assert second.law is not None
    assert np.array_equal(first.law.params, second.law.params)


def test_public_attributes_are_read_off_the_record() -> None:
    planner = BudgetPlanner("paper", n_bootstrap=3).fit(_helps())
    state = planner.state_
    assert (planner.e0_, planner.e_base_, planner.k0_, planner.c_, planner.alpha_) == (
        state.e0,
        state.e_base,
        state.k0,
        state.c,
        state.alpha,
    )
    assert planner.status_ == state.status
    assert planner.verdict_ == state.verdict
    assert planner.law_ == state.law_name
    assert planner.bootstrap_.shape == (3, 5)
    # The attributes are copies: editing one leaves what `budget` plans from untouched.
    before = planner.budget(8, 0.3)
    planner.intervals_["c"] = planner.intervals_["e0"]
    planner.peak_budgets_[8] = 1
    assert planner.budget(8, 0.3) == before


def test_a_refit_replaces_the_whole_state() -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(_helps())
    assert planner.law_ is not None
    assert len(planner.state_.law.params)
    planner.fit(_flat())
    assert planner.status_ == "no_benefit"
    assert planner.law_ is None
    assert planner.laws_ is None
    assert not hasattr(planner, "_law_params")
    assert math.isnan(planner.alpha_half_["c"])


def test_given_constants_build_the_record_once() -> None:
    planner = BudgetPlanner.from_constants(c=1.2, log_base="2", alpha=0.7)
    state = planner.state_
    assert state.status == planner.status_ == "given"
    assert state.data is None
    assert state.certified is None
    assert planner.c_ == pytest.approx(1.2 / math.log(2))
    assert planner.alpha_half_["alpha"] == 0.5
    assert planner.alpha_half_["c"] == planner.c_
