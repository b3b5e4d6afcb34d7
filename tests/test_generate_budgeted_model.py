"""Budgeted CoT on the real embedded model (SmolLM2-135M under llama.cpp)."""

from __future__ import annotations

import math

import pytest

from cotplan.backends.local import LocalBackend
from cotplan.generate import budgeted_answer, budgeted_answers
from cotplan.tasks import TaskItem, is_correct, make_tasks

pytestmark = pytest.mark.model

ITEM = make_tasks("addition", n=3, count=1, seed=0)[0]


def test_zero_budget_answers_directly(local_backend: LocalBackend) -> None:
    result = budgeted_answer(local_backend, ITEM, 0)
    assert result.mode == "template"
    assert result.calls == 1
    assert result.reasoning == ""
    assert result.reasoning_tokens == 0
    assert 1 <= result.answer_tokens <= 16
    assert not result.truncated
    assert not result.forced
    assert result.cap_held
    assert result.correct == is_correct(result.answer_text, ITEM, prefilled=True)
    assert result.cost_usd == 0.0  # the embedded model is priced at a deliberate zero
    assert result.question_tokens == result.prompt_tokens


def test_a_cut_reasoning_is_closed_and_the_answer_forced(local_backend: LocalBackend) -> None:
    result = budgeted_answer(local_backend, ITEM, 6)
    # 6 tokens is far too few for this model to reach "Answer:" on its own.
    assert result.truncated
    assert result.forced
    assert result.reasoning_tokens == 6
    assert result.cap_held
    assert result.calls == 2
    assert result.reasoning.strip()
    # The answer phase re-sends the reasoning: its prompt is longer than the question's.
    assert result.prompt_tokens > 2 * result.question_tokens
    if result.extracted is not None:
        assert 0.0 < result.answer_prob <= 1.0
    else:
        assert math.isnan(result.answer_prob)


def test_one_run_serves_every_budget_exactly(local_backend: LocalBackend) -> None:
    budgets = [0, 4, 12]
    shared = budgeted_answers(local_backend, ITEM, budgets)
    one_by_one = [budgeted_answer(local_backend, ITEM, k) for k in budgets]
    assert [a.k for a in shared] == budgets
    for a, b in zip(shared, one_by_one, strict=True):
        assert a.reasoning == b.reasoning
        assert a.answer_text == b.answer_text
        assert a.reasoning_tokens == b.reasoning_tokens
        assert a.correct == b.correct
    assert [a.reasoning_tokens for a in shared] == [0, 4, 12]


def test_chat_mode_on_the_same_model(local_backend: LocalBackend) -> None:
    item = TaskItem(id="c", prompt="What is 2 + 2?", answer="4", kind="integer", n=2)
    result = budgeted_answer(local_backend, item, 8, mode="chat")
    assert result.mode == "chat"
    assert result.reasoning_tokens <= 8
    assert result.cap_held
    assert result.calls in (1, 2)
    assert result.forced == (result.truncated and result.calls == 2)
