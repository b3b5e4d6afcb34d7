"""Where nothing can be certified at a calibrated size, the cap is the conservative end of the
law's k* interval, not the point k*: a seeded simulation on a linear-exponential error curve.

Items turn right after an exponential number of tokens (mean C · n) unless they never do
(probability E0), so the true error is E0 + (1 − E0) · exp(−k / (C · n)) and the true k* for ε
is known. With E0 = 0.06 and ε = 0.1, 80 items a size rarely certify ε (a certificate needs
at most about 3 errors in 80 at some budget, and the floor alone gives 4.8 on average), which
is the case this test is about; sizes that certify are left out. Over the seeded calibrations
the point k* meets ε about as often as it misses it; the conservative end meets it with the
interval's confidence (a one-sided 97.5% bound), up to the finite number of seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cotplan.planner import BudgetPlanner

E0, C, EPS = 0.06, 4.0, 0.1
BUDGETS = [0, 8, 16, 32, 64, 128, 256]
SIZES = [4, 8]
ITEMS = 80


def _true_error(n: int, k: float) -> float:
    return E0 + (1 - E0) * math.exp(-k / (C * n))


def _calibration(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for n in SIZES:
        never = rng.random(ITEMS) < E0
        turns = rng.exponential(C * n, ITEMS)
        for i in range(ITEMS):
            for k in BUDGETS:
                right = bool(not never[i] and turns[i] <= k)
                rows.append({"item": f"{n}-{i}", "n": n, "k": k, "correct": right})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_an_uncertified_cap_meets_eps_with_the_intervals_confidence() -> None:
    conservative, point = [], []
    for seed in range(6):
        planner = BudgetPlanner(law="paper", n_bootstrap=100, random_state=seed)
        planner.fit(_calibration(seed))
        for n in SIZES:
            budget = planner.budget(n, EPS)
            if budget.certified:
                continue
            assert "conservative end" in budget.basis or "reaching past" in budget.basis
            assert budget.tokens >= math.ceil(budget.k_star - 1e-9)
            conservative.append(_true_error(n, budget.tokens) <= EPS)
            point.append(_true_error(n, math.ceil(budget.k_star - 1e-9)) <= EPS)
    assert len(conservative) >= 6
    # Seeded, so exact; the tolerance allows one miss in the cases drawn.
    assert sum(conservative) >= len(conservative) - 1
    assert sum(point) <= 0.7 * len(point)
