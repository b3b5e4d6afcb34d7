"""Properties of the BudgetPlanner that hold for any constants or any (small) calibration.

Hypothesis runs derandomized, so these are deterministic; tolerances for the planted recovery
are ±4 sd of the estimates over 200 replicate fits (benchmarks/planner_recovery.py), i.e. a
false-alarm rate of order 1e-4 per example had the draws been random.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cotplan.errors import InfeasibleTargetError, InputError
from cotplan.planner import BudgetPlanner

constants = st.fixed_dictionaries(
    {
        "c": st.floats(0.05, 50),
        "alpha": st.floats(0.0, 2.0),
        "e0": st.floats(0.0, 0.5),
        "k0": st.floats(0.0, 50),
        "e_base": st.floats(0.55, 1.0),
    }
)


@given(constants, st.floats(1, 5000), st.floats(1, 5000), st.floats(0.51, 0.99))
@settings(max_examples=200, deadline=None, derandomize=True)
def test_budget_grows_with_n_and_with_stricter_targets(
    params: dict[str, float], n1: float, n2: float, eps_frac: float
) -> None:
    planner = BudgetPlanner.from_constants(**params)  # type: ignore[arg-type]
    lo_n, hi_n = sorted((n1, n2))
    eps_hi = params["e0"] + eps_frac * (params["e_base"] - params["e0"])
    eps_lo = params["e0"] + 0.5 * (eps_hi - params["e0"])
    assume(0 < eps_lo < eps_hi < 1)
    assert planner.budget(lo_n, eps_hi).k_star <= planner.budget(hi_n, eps_hi).k_star + 1e-9
    assert planner.budget(hi_n, eps_hi).k_star <= planner.budget(hi_n, eps_lo).k_star + 1e-9
    assert planner.budget(hi_n, eps_hi).k_star >= params["k0"] - 1e-9


@given(constants, st.floats(1, 5000), st.floats(0, 1e5))
@settings(max_examples=200, deadline=None, derandomize=True)
def test_predicted_error_lies_between_floor_and_base(
    params: dict[str, float], n: float, k: float
) -> None:
    planner = BudgetPlanner.from_constants(**params)  # type: ignore[arg-type]
    error = planner.predict_error(n, k)
    assert params["e0"] - 1e-12 <= error <= params["e_base"] + 1e-12
    assert planner.predict_error(n, k + 10) <= error + 1e-12


@given(constants, st.floats(1, 1000))
@settings(max_examples=100, deadline=None, derandomize=True)
def test_budget_then_predict_returns_the_target(params: dict[str, float], n: float) -> None:
    planner = BudgetPlanner.from_constants(**params)  # type: ignore[arg-type]
    eps = (params["e0"] + params["e_base"]) / 2
    assume(0 < eps < 1)
    k = planner.budget(n, eps).k_star
    assert math.isfinite(k)
    assert planner.predict_error(n, k) == pytest.approx(eps, rel=1e-6, abs=1e-9)


def _planted(seed: int, items: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes, budgets = (4, 8, 16, 32), (0, 4, 8, 16, 32, 64, 128)
    n = np.repeat(np.array(sizes), items * len(budgets))
    k = np.tile(np.array(budgets), len(sizes) * items)
    item = np.repeat(np.arange(len(sizes) * items), len(budgets))
    error = 0.1 + 0.9 * np.exp(-np.maximum(k - 5.0, 0) / (2.0 * n**0.5))
    return pd.DataFrame({"item": item, "n": n, "k": k, "correct": rng.random(len(k)) >= error})


@given(st.integers(0, 2**31))
@settings(max_examples=8, deadline=None, derandomize=True)
def test_planted_constants_are_recovered_for_any_seed(seed: int) -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(_planted(seed, items=60))
    assert planner.status_ == "helps"
    assert abs(planner.alpha_ - 0.5) < 0.45
    assert abs(planner.e0_ - 0.1) < 0.05
    assert abs(planner.k0_ - 5.0) < 2.5
    truth = 5.0 + 2.0 * 4.0 * math.log(0.9 / 0.1)  # k* at n = 16, ε = 0.2
    assert planner.budget(16, 0.2).k_star == pytest.approx(truth, abs=7.5)  # sd 1.8


@st.composite
def small_frames(draw: st.DrawFn) -> pd.DataFrame:
    """Tiny, lopsided calibrations: few items, one or two sizes and budgets, any outcomes."""
    items = draw(st.integers(1, 12))
    sizes = draw(st.lists(st.integers(1, 64), min_size=1, max_size=2, unique=True))
    budgets = draw(st.lists(st.integers(0, 256), min_size=1, max_size=3, unique=True))
    mode = draw(st.sampled_from(["random", "all right", "all wrong", "rises"]))
    rows = []
    for i in range(items):
        n = sizes[i % len(sizes)]
        for k in budgets:
            if mode == "random":
                correct = draw(st.booleans())
            elif mode == "rises":
                correct = k >= max(budgets) // 2 and i % 3 != 0
            else:
                correct = mode == "all right"
            rows.append({"item": f"i{i}", "n": n, "k": k, "correct": correct})
    return pd.DataFrame(rows)


@given(small_frames(), st.floats(0.01, 0.99))
@settings(max_examples=120, deadline=None, derandomize=True)
def test_degenerate_calibrations_give_a_verdict_not_a_crash(
    frame: pd.DataFrame, eps: float
) -> None:
    planner = BudgetPlanner(n_bootstrap=10, min_items=3).fit(frame)
    assert planner.status_ in {
        "helps",
        "no_benefit",
        "hurts",
        "all_correct",
        "all_wrong",
        "too_few",
    }
    assert planner.verdict_
    if planner.status_ == "too_few":
        with pytest.raises(InputError, match="cannot plan"):
            planner.budget(8, eps)
    else:
        try:
            budget = planner.budget(8, eps)
        except InfeasibleTargetError as info:
            refused: InfeasibleTargetError | None = info
        else:
            refused = None
        if refused is not None:
            # Only a target below what the law (or the flat error) reaches is refused.
            assert refused.attainable is not None
            assert refused.attainable >= eps - 1e-12
            return
        assert budget.k_star >= 0
        assert budget.tokens >= 0
        assert math.isfinite(budget.k_star)
        assert not (budget.low > budget.k_star)
        if planner.status_ != "helps":
            assert budget.k_star == 0.0
    str(planner.report())
