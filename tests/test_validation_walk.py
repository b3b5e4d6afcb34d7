"""Each quantity is checked once on each path, at the boundary, against one ceiling.

A public function declares its parameters' constraints (`cotplan.validation.validate_params`);
the declared functions it calls trust it. These tests follow `k` and `eps` from the public API
down through the library and count how often each is checked, so a check added again deeper
down (or a second ceiling) fails here.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import pandas as pd
import pytest
from test_plan_artifact import planted

import cotplan.validation as validation
from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt, Usage
from cotplan.errors import InputError
from cotplan.generate import budgeted_answer, budgeted_answers
from cotplan.planner import plan_from_calibration
from cotplan.tasks import TaskItem
from cotplan.validation import BUDGET, MAX_BUDGET, SHARE, validate_params

ITEM = TaskItem(id="q1", prompt="What is 3 + 4?", answer="7", kind="integer", n=2)


class _Scripted(Backend):
    """A chat model answering "Answer: 7" to everything (parsing double: no model runs)."""

    model = "gpt-4o-mini"
    budget_rule = "openai"
    supports_logprobs = False

    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        usage = Usage(prompt_tokens=10, completion_tokens=min(max_tokens, 3))
        return Completion("Answer: 7", "stop", usage, self.model)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


@pytest.fixture
def checks() -> Iterator[Counter[str]]:
    """How many times each field was checked by a one-value check, by field name, wherever the
    check was called from (a profiler sees calls through names imported into other modules)."""
    codes = {
        getattr(validation, name).__code__
        for name in (
            "require_budget",
            "require_unit",
            "require_int",
            "require_number",
            "require_positive",
        )
    }
    seen: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            seen[str(frame.f_locals.get("field"))] += 1

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


def test_k_is_checked_once_from_budgeted_answer(checks: Counter[str]) -> None:
    budgeted_answer(_Scripted(), ITEM, 16, answer_tokens=8)
    assert checks["k"] == 1
    assert checks["answer_tokens"] == 1


def test_budgets_are_checked_once_from_budgeted_answers(checks: Counter[str]) -> None:
    budgeted_answers(_Scripted(), ITEM, [0, 8, 16])
    assert checks["budgets"] == 3  # one check per budget, none again per answer
    assert checks["k"] == 0


def test_eps_is_checked_once_from_plan_from_calibration(
    checks: Counter[str], tmp_path: Path
) -> None:
    plan_from_calibration(planted(tmp_path / "c.csv"), 0.3, sizes=[4], delta=0.05, n_bootstrap=0)
    assert checks["eps"] == 1
    assert checks["delta"] == 1


def test_eps_and_delta_are_checked_once_on_the_way_to_the_early_exit(
    checks: Counter[str], tmp_path: Path
) -> None:
    # `certify_early_exit` declares eps and delta (no alias of the check of its own): under the
    # plan, which checked them at the boundary, it trusts them.
    calibration = planted(tmp_path / "c.csv")
    plan_from_calibration(calibration, 0.3, sizes=[4], n_bootstrap=0, exit="certified")
    assert checks["eps"] == 1
    assert checks["delta"] == 1
    assert checks["reach"] == 1


def test_the_early_exit_checks_eps_and_delta_when_called_itself(tmp_path: Path) -> None:
    from cotplan.planner.early_exit import certify_early_exit

    frame = pd.read_csv(planted(tmp_path / "c.csv"))
    with pytest.raises(InputError, match="`eps`"):
        certify_early_exit(frame, 1.5)
    with pytest.raises(InputError, match="`delta`"):
        certify_early_exit(frame, 0.3, delta=0.0)


def test_one_ceiling_for_a_budget_everywhere() -> None:
    with pytest.raises(InputError, match=f"0..{MAX_BUDGET}"):
        budgeted_answer(_Scripted(), ITEM, MAX_BUDGET + 1)
    with pytest.raises(InputError, match="`budgets`"):
        budgeted_answers(_Scripted(), ITEM, [8, MAX_BUDGET + 1])
    # the largest budget is accepted on the same path that refuses one more
    assert budgeted_answer(_Scripted(), ITEM, MAX_BUDGET).k == MAX_BUDGET


def test_a_declaration_converts_and_names_the_parameter() -> None:
    @validate_params(k=BUDGET, eps=SHARE)
    def plan(k: int, eps: float, note: str | None = None) -> tuple[Any, Any]:
        return k, eps

    import numpy as np

    k, eps = plan(np.int64(8), np.float32(0.25))
    assert (type(k), type(eps)) == (int, float)
    with pytest.raises(InputError, match="`eps`"):
        plan(8, 1.5)
    assert plan.__constraints__ == {"k": BUDGET, "eps": SHARE}  # type: ignore[attr-defined]


def test_nested_declared_calls_trust_their_caller(checks: Counter[str]) -> None:
    @validate_params(k=BUDGET)
    def inner(k: int) -> int:
        return k

    @validate_params(k=BUDGET)
    def outer(k: int) -> int:
        return inner(k) + inner(k)

    assert outer(4) == 8
    assert checks["k"] == 1
    inner(4)  # called from outside again: checked again
    assert checks["k"] == 2


def test_a_declaration_naming_no_parameter_fails_at_definition() -> None:
    with pytest.raises(TypeError, match="no parameter"):

        @validate_params(kk=BUDGET)
        def typo(k: int) -> int:
            return k


def test_a_command_checks_first_then_calls_trusting(checks: Counter[str]) -> None:
    from cotplan.validation import check_call, trusting

    with pytest.raises(InputError, match="`k`"):
        check_call(budgeted_answer, k=-1)  # refused before any model is connected
    options = check_call(budgeted_answer, k=16, answer_tokens=8)
    with trusting():
        budgeted_answer(_Scripted(), ITEM, **options)
    assert checks["k"] == 2  # the refused value and the accepted one; none inside the call
    assert checks["answer_tokens"] == 1
