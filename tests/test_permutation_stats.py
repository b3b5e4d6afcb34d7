"""The arithmetic of permutation averaging: intervals, spread by schedule, slopes, calibration.

Pools here are synthetic (no model): an exactly additive position effect, where balanced cycles
must cancel the order noise completely and random orderings must follow σ/√m.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cotplan.errors import InputError
from cotplan.permutation.average import summarize_orderings
from cotplan.permutation.evaluate import (
    OrderingPool,
    brier_score,
    expected_calibration_error,
    loglog_slope,
    matching_m,
    schedule_spread,
)
from cotplan.permutation.schedules import make_orderings

N = 4
ALL = np.array(list(itertools.permutations(range(N))), dtype=np.int64)


def _additive(orderings: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
    """P(first choice) = 0.5 + effect of (example, position), additive; optional extra noise."""
    effect = np.array([[0.10, -0.05, 0.02, -0.07],
                       [-0.03, 0.08, -0.06, 0.01],
                       [0.04, -0.02, 0.09, -0.11],
                       [-0.06, 0.03, -0.01, 0.12]])  # fmt: skip
    p = 0.5 + effect[orderings, np.arange(N)].sum(axis=1)
    if noise is not None:
        p = p + noise
    return np.stack([p, 1 - p], axis=1)


def test_iid_interval_is_the_t_interval_over_orderings() -> None:
    rows = _additive(make_orderings(N, 7, "random", seed=1))
    s = summarize_orderings(rows, confidence=0.9)
    sd = rows[:, 0].std(ddof=1)
    q = stats.t.ppf(0.95, 6)
    assert s.method == "orderings"
    assert s.sd[0] == pytest.approx(sd)
    assert s.variance[0] == pytest.approx(sd**2)
    assert s.se[0] == pytest.approx(sd / math.sqrt(7))
    assert s.low[0] == pytest.approx(rows[:, 0].mean() - q * sd / math.sqrt(7))
    assert s.high[0] == pytest.approx(rows[:, 0].mean() + q * sd / math.sqrt(7))


def test_one_ordering_has_no_interval() -> None:
    s = summarize_orderings(np.array([[0.3, 0.7]]))
    assert s.method == "none"
    assert math.isnan(s.sd[0])
    assert math.isnan(s.low[0])


def test_balanced_cycles_cancel_an_additive_position_effect() -> None:
    rows = _additive(make_orderings(N, 3 * N, "balanced", seed=5))
    s = summarize_orderings(rows, cycle=N)
    assert s.method == "cycles"
    assert s.se[0] == pytest.approx(0.0, abs=1e-12)
    assert s.mean[0] == pytest.approx(_additive(ALL)[:, 0].mean())
    fewer = summarize_orderings(rows[: 2 * N], cycle=N)
    assert fewer.method == "orderings"
    assert "conservative" in fewer.description
    forced = summarize_orderings(rows[: 2 * N], cycle=N, interval="cycles")
    assert forced.method == "cycles"


def test_intervals_cover_at_their_level() -> None:
    # 2000 simulated runs; binomial sd of the coverage at 95% is 0.0049, so the bounds below
    # are about 4 sd from 0.95 (false alarm < 1e-4).
    rng = np.random.default_rng(0)
    target = _additive(ALL)[:, 0].mean()
    covered_random = covered_cycles = covered_iid_balanced = 0
    runs = 2000
    for r in range(runs):
        random_rows = _additive(make_orderings(N, 12, "random", seed=r), rng.normal(0, 0.05, 12))
        s = summarize_orderings(random_rows)
        covered_random += s.low[0] <= target <= s.high[0]
        balanced_rows = _additive(
            make_orderings(N, 4 * N, "balanced", seed=r), rng.normal(0, 0.05, 4 * N)
        )
        c = summarize_orderings(balanced_rows, cycle=N)
        covered_cycles += c.low[0] <= target <= c.high[0]
        o = summarize_orderings(balanced_rows, cycle=N, interval="orderings")
        covered_iid_balanced += o.low[0] <= target <= o.high[0]
    assert 0.93 <= covered_random / runs <= 0.97
    assert 0.93 <= covered_cycles / runs <= 0.97
    # Treating balanced orderings as independent over-covers: position effects inflate the
    # spread between orderings but cancel in the average.
    assert covered_iid_balanced / runs > 0.985


def test_schedule_spread_follows_root_m_for_random_and_vanishes_for_balanced() -> None:
    pool = OrderingPool(ALL, _additive(ALL), ("a", "b"), calls=len(ALL))
    sigma = _additive(ALL)[:, 0].std(ddof=0)
    ms = [1, 2, 4, 8, 12, 16, 20]
    random = schedule_spread(pool, "random", ms, replicates=3000, seed=0)
    # Monte Carlo sd of a sample sd from 3000 replicates is about 1.3%; allow 6%.
    np.testing.assert_allclose(random, sigma / np.sqrt(ms), rtol=0.06)
    balanced = schedule_spread(pool, "balanced", ms, replicates=500, seed=0)
    assert balanced[[2, 3, 4, 5, 6]] == pytest.approx(0.0, abs=1e-12)
    assert balanced[1] > 0.0
    fit = loglog_slope(ms, random)
    assert fit.low <= -0.5 <= fit.high
    assert matching_m(float(random[-1]), ms, balanced) == 4


def test_pool_lookup_matches_rows() -> None:
    pool = OrderingPool(ALL, _additive(ALL), ("a", "b"), calls=len(ALL))
    some = make_orderings(N, 9, "random", seed=2)
    np.testing.assert_allclose(pool.lookup(some), _additive(some))


def test_loglog_slope_recovers_an_exact_power_law() -> None:
    ms = np.array([1, 2, 4, 8, 16])
    fit = loglog_slope(ms, 3.0 * ms**-0.48)
    assert fit.slope == pytest.approx(-0.48)
    assert fit.intercept == pytest.approx(math.log(3.0))
    with pytest.raises(InputError, match=r"need at least 3 positive points"):
        loglog_slope([1, 2, 3], [1.0, 0.0, -1.0])


def test_brier_and_calibration_error_by_hand() -> None:
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.7, 0.3]])
    truth = [0, 1, 1, 0]
    assert brier_score(probs, truth) == pytest.approx(
        np.mean([2 * 0.1**2, 2 * 0.6**2, 2 * 0.2**2, 2 * 0.3**2])
    )
    # Bins: 0.9 (correct), 0.6 (wrong), 0.8 (correct), 0.7 (correct): one item per bin.
    expected = (abs(1 - 0.9) + abs(0 - 0.6) + abs(1 - 0.8) + abs(1 - 0.7)) / 4
    assert expected_calibration_error(probs, truth) == pytest.approx(expected)
    perfect = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert brier_score(perfect, [0, 1]) == 0.0
    assert expected_calibration_error(perfect, [0, 1]) == 0.0


def test_spread_chart_renders_offline(tmp_path: Path) -> None:
    from cotplan.charts.costs import save_chart
    from cotplan.charts.permutation import spread_chart

    frame = pd.DataFrame(
        {
            "schedule": ["random"] * 3 + ["balanced"] * 3 + ["reference"] * 3,
            "m": [1, 4, 16] * 3,
            "sd": [0.2, 0.1, 0.05, 0.2, 0.01, 0.004, 0.2, 0.1, 0.05],
        }
    )
    path = save_chart(spread_chart(frame), tmp_path / "spread.svg")
    assert "<svg" in path.read_text()
    with pytest.raises(InputError, match=r"`frame`: needs columns \['sd'\]"):
        spread_chart(frame.drop(columns="sd"))
