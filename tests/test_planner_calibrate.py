"""Calibration grids, the calibration file, Wilson intervals and the paired policy comparison.

Pure parts only; runs on the real model are in test_planner_calibrate_model.py.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.errors import InputError
from cotplan.generate import BudgetedAnswer
from cotplan.planner import BudgetPlanner
from cotplan.planner.budget_grids import default_budgets, paper_budgets
from cotplan.planner.calibrate import (
    CALIBRATION_COLUMNS,
    Calibration,
    load_calibration,
)
from cotplan.planner.run import PlanRun, compare_answers, relative_target, wilson_interval


def test_default_grid_is_zero_plus_powers_of_two() -> None:
    assert default_budgets() == [0, 8, 16, 32, 64, 128]
    assert default_budgets(100) == [0, 8, 16, 32, 64, 100]
    assert default_budgets(4) == [0, 4]
    with pytest.raises(InputError, match="`max_budget`: must be an integer >= 1"):
        default_budgets(0)


def test_paper_grid_follows_algorithm_1() -> None:
    grid = paper_budgets(100)
    assert grid[0] == 0
    assert grid[-1] == 100  # 10 * sqrt(100)
    assert grid == sorted(set(grid))
    # ceil(20 ln 100) = 93 log-spaced values in [1, 100]; rounding merges the small ones.
    assert 30 < len(grid) - 1 <= 93
    ratios = np.diff(np.log(grid[1:]))
    assert ratios[-10:].max() < 0.1  # log-spaced: fine steps at the top
    assert paper_budgets(16, count=4) == [0, 1, 3, 12, 40]


@given(n=st.integers(1, 10_000))
@settings(max_examples=60)
def test_paper_grid_stays_in_range(n: int) -> None:
    grid = paper_budgets(n)
    assert grid[0] == 0
    assert all(1 <= k <= math.ceil(10 * math.sqrt(n)) for k in grid[1:])
    assert grid == sorted(set(grid))


def test_paper_grid_validates() -> None:
    with pytest.raises(InputError, match="`n`: must be an integer >= 1"):
        paper_budgets(0)
    with pytest.raises(InputError, match="`count`"):
        paper_budgets(10, count=0)


def _frame() -> pd.DataFrame:
    rows = []
    for i in range(4):
        for k in (0, 16):
            rows.append(
                {c: None for c in CALIBRATION_COLUMNS}
                | {"item": f"q{i}", "family": "parity", "n": 4, "k": k, "correct": k > 0 or i == 0,
                   "reasoning_tokens": k, "answer_tokens": 2, "truncated": k > 0,
                   "cost_usd": 0.0}
            )  # fmt: skip
    return pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS))


def test_calibration_round_trips_through_csv(tmp_path: Path) -> None:
    calibration = Calibration(frame=_frame(), model="m")
    path = calibration.to_csv(tmp_path / "deep" / "calibration.csv")
    loaded = load_calibration(path)
    assert loaded.budgets == [0, 16]
    assert loaded.sizes == [4]
    assert list(loaded.frame["item"]) == list(calibration.frame["item"])
    accuracy = loaded.accuracy()
    assert accuracy.loc[4, 0] == pytest.approx(0.25)
    assert accuracy.loc[4, 16] == pytest.approx(1.0)
    summary = loaded.summary()
    assert list(summary.columns[:3]) == ["n", "k", "answers"]
    assert summary["reasoning_tokens"].tolist() == [0.0, 16.0]


def test_load_calibration_names_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="`calibration`: no such file"):
        load_calibration(tmp_path / "nope.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("item,n,correct\nq1,4,True\n")
    with pytest.raises(InputError, match=r"bad.csv, `calibration`: missing column\(s\) k"):
        load_calibration(bad)


def test_wilson_interval_matches_the_textbook() -> None:
    # 8 of 10 at 95%: 0.4902 to 0.9433 (Wilson score, z = 1.96).
    ci = wilson_interval(8, 10)
    assert ci.low == pytest.approx(0.4902, abs=1e-4)
    assert ci.high == pytest.approx(0.9433, abs=1e-4)
    zero = wilson_interval(0, 10)
    assert zero.low == 0.0
    assert 0.25 < zero.high < 0.35
    assert math.isnan(wilson_interval(0, 0).low)
    with pytest.raises(InputError, match="`successes`"):
        wilson_interval(11, 10)


def _answer(item: str, k: int, correct: bool, reasoning: int) -> BudgetedAnswer:
    return BudgetedAnswer(
        item=item, family="f", n=4, k=k, expected="1", extracted="1" if correct else "0",
        correct=correct, reasoning="", answer_text="", truncated=False, forced=False,
        prompt_tokens=20, question_tokens=20, reasoning_tokens=reasoning, answer_tokens=2,
        cost_usd=0.0, latency_s=0.1, answer_prob=math.nan, cap_held=True, overrun=0,
        from_cache=False, calls=2, model="m", mode="template",
    )  # fmt: skip


def test_compare_answers_pairs_policies_by_item() -> None:
    items = [f"q{i}" for i in range(20)]
    base = [_answer(i, 512, j % 5 != 0, 100) for j, i in enumerate(items)]  # 16 / 20 right
    half = [_answer(i, 32, j % 5 != 0 and j != 1, 30) for j, i in enumerate(items)]  # 15 / 20
    table = compare_answers({"planned": half, "uncapped": base}, baseline="uncapped", seed=1)
    planned = table.set_index("policy").loc["planned"]
    assert planned["accuracy"] == pytest.approx(0.75)
    assert planned["accuracy_retained"] == pytest.approx(0.75 / 0.8)
    assert planned["tokens_ratio"] == pytest.approx(0.3)
    assert planned["tokens_saved"] == pytest.approx(0.7)
    # Every item spent exactly 30 vs 100 tokens: the paired interval has no width.
    assert planned["tokens_saved_low"] == pytest.approx(0.7)
    assert planned["tokens_saved_high"] == pytest.approx(0.7)
    assert planned["accuracy_change_low"] <= -0.05 <= planned["accuracy_change_high"]
    assert planned["accuracy_change_high"] <= 0.0  # never better on any resample
    baseline = table.set_index("policy").loc["uncapped"]
    assert baseline["accuracy_retained"] == 1.0
    assert baseline["tokens_saved"] == 0.0


def test_compare_answers_needs_the_same_items() -> None:
    base = [_answer("a", 512, True, 10), _answer("b", 512, True, 10)]
    other = [_answer("a", 8, True, 5)]
    with pytest.raises(InputError, match="`answers`: policy 'x' must answer the same items"):
        compare_answers({"x": other, "uncapped": base}, baseline="uncapped")
    with pytest.raises(InputError, match="`baseline`: 'nope' is not one of"):
        compare_answers({"uncapped": base}, baseline="nope")


def test_relative_target_leaves_a_share_of_the_gain() -> None:
    planner = BudgetPlanner.from_constants(c=2.0, e0=0.2, e_base=0.6)
    assert relative_target(planner, 0.25) == pytest.approx(0.30)
    assert relative_target(planner, 0.5) == pytest.approx(0.40)
    flat = BudgetPlanner(n_bootstrap=0).fit(
        pd.DataFrame(
            {"item": [f"q{i}" for i in range(10) for _ in (0, 8)],
             "n": 4, "k": [0, 8] * 10, "correct": [i % 2 == 0 for i in range(10) for _ in (0, 8)]}
        )
    )  # fmt: skip
    assert flat.status_ == "no_benefit"
    assert relative_target(flat) == pytest.approx(0.5)
    with pytest.raises(InputError, match="`remaining`: must be in"):
        relative_target(planner, 1.0)


def _plan_run(planned: list[BudgetedAnswer], free: list[BudgetedAnswer]) -> PlanRun:
    comparison = compare_answers({"planned": planned, "uncapped": free}, baseline="uncapped")
    return PlanRun(
        comparison=comparison, frame=pd.DataFrame(), plan=pd.DataFrame(), eps=0.2,
        uncapped=512, model="m", status="helps", verdict="",
    )  # fmt: skip


def test_plan_run_concludes_in_words() -> None:
    items = [f"q{i}" for i in range(30)]
    free = [_answer(i, 512, True, 100) for i in items]
    lost = _plan_run([_answer(i, 0, j < 10, 0) for j, i in enumerate(items)], free)
    assert lost.conclusion.startswith("the plan LOST accuracy on held-out items (-0.67")
    assert lost.tokens_saved == pytest.approx(1.0)
    assert lost.accuracy_change == pytest.approx(-2 / 3)
    same = _plan_run([_answer(i, 32, j != 3, 30) for j, i in enumerate(items)], free)
    assert "saved 70% of reasoning tokens" in same.conclusion
    assert "not distinguishable from 0 on 30 items" in same.conclusion
    with pytest.raises(InputError, match="`policy`: must be one of"):
        same.row("fixed")


def test_untrusted_token_counts_are_left_out_of_the_savings_not_counted_as_zero() -> None:
    items = [f"q{i}" for i in range(10)]
    base = [_answer(i, 512, True, 100) for i in items]
    # One planned answer's usage was missing: it read 0 tokens, flagged untrusted.
    planned = [_answer(i, 32, True, 30) for i in items[:-1]]
    planned.append(replace(_answer(items[-1], 32, True, 0), usage_trusted=False))
    row = compare_answers({"planned": planned, "uncapped": base}, baseline="uncapped")
    assert row.set_index("policy").loc["planned", "tokens_saved"] == pytest.approx(0.7)


def test_an_old_csv_loads_with_the_new_columns_meaning_what_their_absence_did(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.csv"
    _frame().drop(columns=["answer_lost", "no_answer", "usage_trusted"]).to_csv(path, index=False)
    frame = load_calibration(path).frame
    assert not frame["answer_lost"].any()
    assert not frame["no_answer"].any()
    assert frame["usage_trusted"].all()


def test_an_empty_answer_is_left_out_of_the_fit_not_scored_wrong() -> None:
    from cotplan.planner.data import validate_frame

    frame = _frame().assign(no_answer=False)
    frame.loc[frame.index[-1], ["no_answer", "correct"]] = [True, False]
    assert len(validate_frame(frame).item) == len(frame) - 1
