"""Calibration runs and plan runs on the real embedded model, including resuming a killed run."""

from __future__ import annotations

from pathlib import Path

import pytest

from cotplan.backends.cache import CallCache
from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.planner import BudgetPlanner
from cotplan.planner.calibrate import CALIBRATION_COLUMNS, calibrate
from cotplan.planner.run import run_plan
from cotplan.tasks import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("parity", n=4, count=3, seed=0)
BUDGETS = [0, 4, 8]


def test_calibration_frame_is_tidy(local_backend: LocalBackend) -> None:
    result = calibrate(local_backend, ITEMS[:2], BUDGETS, progress=False)
    frame = result.frame
    assert list(frame.columns) == list(CALIBRATION_COLUMNS)
    assert len(frame) == 2 * len(BUDGETS)
    assert sorted(frame["k"].unique()) == BUDGETS
    assert (frame["reasoning_tokens"] <= frame["k"]).all()
    assert frame["cap_held"].all()
    assert (frame["n"] == 4).all()
    assert set(frame["size_source"]) == {"n"}
    assert (frame["cost_usd"] == 0.0).all()
    assert not frame["from_cache"].any()  # the shared fixture has no cache
    # One reasoning run per item at k = 8 serves k = 4; k = 0 needs no reasoning run:
    # 2 items x (1 reasoning + 3 answers).
    assert result.requests == 8
    # The one note: this grid stops short of the model's thinking, on purpose (a quick test).
    assert all(note.startswith("the grid's top") for note in result.notes)


def test_a_killed_run_resumes_without_paying_twice(local_model: LocalModel, tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    first = local_model.backend(cache=cache)
    # A run that "died" after its first two items: their calls are in the cache.
    calibrate(first, ITEMS[:2], BUDGETS, progress=False)
    assert first.stats.requests == 8

    resumed = local_model.backend(cache=cache)
    full = calibrate(resumed, ITEMS, BUDGETS, progress=False)
    assert full.requests == 4  # only the third item was asked
    assert full.cache_hits == 8
    assert resumed.stats.requests == 4
    assert full.frame["from_cache"].sum() == 2 * len(BUDGETS)

    again = local_model.backend(cache=cache)
    replay = calibrate(again, ITEMS, BUDGETS, progress=False)
    assert again.stats.requests == 0
    assert replay.frame["from_cache"].all()
    columns = ["item", "k", "correct", "reasoning_tokens", "answer_tokens", "extracted"]
    assert replay.frame[columns].equals(full.frame[columns])


def test_run_plan_applies_k_star_and_compares_with_uncapped(local_backend: LocalBackend) -> None:
    # Constants given, not fitted: k* = 2 · √4 · ln(1 / 0.5) = 2.77 -> a cap of 3 tokens.
    planner = BudgetPlanner.from_constants(c=2.0, alpha=0.5)
    held_out = make_tasks("parity", n=4, count=2, seed=1)
    result = run_plan(local_backend, planner, held_out, 0.5, uncapped=12, progress=False)
    assert result.plan["tokens"].tolist() == [3]
    planned = result.answers["planned"]
    assert [a.k for a in planned] == [3, 3]
    assert all(a.reasoning_tokens <= 3 for a in planned)
    assert all(a.k == 12 for a in result.answers["uncapped"])
    table = result.comparison.set_index("policy")
    assert list(table.index) == ["planned", "uncapped"]
    assert table.loc["planned", "reasoning_tokens"] <= 3
    assert 0.0 <= result.tokens_saved <= 1.0
    assert set(result.frame["policy"]) == {"planned", "uncapped"}
