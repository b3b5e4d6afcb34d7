"""One interval type and one percentile helper (the old names `cotplan.planner.ConfidenceInterval`
and `cotplan.permutation.average.ProbabilityInterval` are gone: see CHANGELOG.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cotplan.intervals import Interval, percentile_interval
from cotplan.planner.data import percentile_value as planner_percentile
from cotplan.planner.run import wilson_interval
from cotplan.research.experiments import Interval as ExperimentInterval
from cotplan.research.experiments._stats import percentile_interval as experiments_percentile


def test_every_interval_name_is_the_one_type() -> None:
    import cotplan.permutation.average
    import cotplan.planner

    assert ExperimentInterval is Interval
    assert not hasattr(cotplan.planner, "ConfidenceInterval")
    assert not hasattr(cotplan.permutation.average, "ProbabilityInterval")
    assert experiments_percentile is percentile_interval


def test_an_interval_knows_its_level_width_and_members() -> None:
    ci = Interval(0.2, 0.5, 0.9)
    assert ci.width == pytest.approx(0.3)
    assert 0.3 in ci
    assert 0.6 not in ci
    assert "0.3" not in ci
    assert ci.overlaps(0.5, 0.7)
    assert not ci.overlaps(0.51, 0.7)
    assert str(ci) == "[0.2, 0.5]"
    assert wilson_interval(3, 10, 0.9).level == 0.9


def test_percentiles_drop_non_finite_draws_and_interpolate() -> None:
    draws = np.r_[np.arange(101.0), np.nan, np.inf]
    ci = percentile_interval(draws, 0.9)
    assert (ci.low, ci.high, ci.level) == pytest.approx((5.0, 95.0, 0.9))
    empty = percentile_interval([np.nan, np.inf])
    assert math.isnan(empty.low)
    assert math.isnan(empty.high)


def test_keeping_infinite_draws_takes_order_statistics_outward() -> None:
    draws = np.r_[np.arange(9.0), np.inf, np.nan]  # ten draws kept, the last infinite
    ci = percentile_interval(draws, 0.8, keep_infinite=True)
    assert (ci.low, ci.high) == (0.0, math.inf)  # floor(0.9) = 0, ceil(8.1) = 9
    assert planner_percentile(draws, 0.8) == ci
