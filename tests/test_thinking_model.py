"""The embedded thinking model, served as reasoning models are: the real llama.cpp server with
cotplan's adapter, read by the raw openai client and by cotplan."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.generate import budgeted_answer, budgeted_answers
from cotplan.tasks import make_tasks

pytestmark = pytest.mark.slow

ITEMS = make_tasks("count", n=4, count=4, seed=11)


def _raw_client(model: LocalModel) -> openai.OpenAI:
    return openai.OpenAI(base_url=model.base_url, api_key="x", max_retries=0)


def test_chat_completions_write_the_thinking_as_r1_distills_do(thinking_model: Any) -> None:
    reply = _raw_client(thinking_model).chat.completions.create(
        model="thinking",
        messages=[{"role": "user", "content": str(ITEMS[0].prompt)}],
        max_tokens=400,
        temperature=0,
    )
    message = reply.choices[0].message.model_dump()
    assert reply.choices[0].finish_reason == "stop"
    # The model opens its own thinking and closes it before the answer; llama.cpp's reasoning
    # parser (on for the adapter's chat template, see backends/adapters.py) returns the thinking
    # apart, as it does for an R1 distill.
    assert message["reasoning_content"].startswith('I count "')
    assert "appears" in message["reasoning_content"]
    assert message["content"].startswith("Answer:")


def test_cotplan_splits_the_thinking_from_the_answer(thinking_backend: LocalBackend) -> None:
    completion = thinking_backend.generate(
        [{"role": "user", "content": str(ITEMS[1].prompt)}], max_tokens=400
    )
    assert completion.reasoning.strip().startswith('I count "')
    assert completion.text.strip().startswith("Answer:")


def test_uncapped_it_over_thinks_and_answers(thinking_backend: LocalBackend) -> None:
    answers = [budgeted_answer(thinking_backend, item, 400) for item in ITEMS]
    assert all(a.protocol == "think" and a.mode == "template" for a in answers)
    assert sum(a.correct for a in answers) >= 3
    for answer in answers:
        assert not answer.truncated
        settled = answer.reasoning.find("appears")
        assert settled > 0, answer.reasoning
        # Reasoning models spend more thinking than the answer needs: the work settles the
        # answer, then a re-check follows.
        assert len(answer.reasoning) > 1.5 * settled


def test_a_cut_closes_the_thinking_and_the_answer_follows(thinking_backend: LocalBackend) -> None:
    item = ITEMS[2]
    cut, full = budgeted_answers(thinking_backend, item, [6, 400])
    assert cut.truncated
    assert cut.forced
    assert cut.reasoning_tokens == 6
    assert cut.extracted is not None  # an answer, not a thought, after the forced close
    assert full.correct
    assert cut.reasoning_tokens < full.reasoning_tokens
