"""One reasoning budget translated into each provider's parameters, and the cap check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt
from cotplan.backends.budgets import (
    BUDGET_RULES,
    budget_params,
    check_cap,
    rule_for,
)
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import InputError


def test_plain_output_cap_is_max_tokens() -> None:
    params = budget_params("openai", 64)
    assert params.params == {"max_tokens": 64}
    assert params.cap == 64
    assert params.exact
    assert params.visible_reasoning


def test_zero_budget_sends_no_reasoning_cap() -> None:
    assert budget_params("llama.cpp", 0).params == {}


def test_openai_reasoning_models_cap_reasoning_plus_answer_and_pick_an_effort() -> None:
    params = budget_params("openai-reasoning", 500, answer_tokens=20)
    assert params.params["max_completion_tokens"] == 520
    assert params.params["reasoning_effort"] == "low"
    assert "max_tokens" not in params.params
    assert not params.exact  # an effort level is not a token count
    assert budget_params("openai-reasoning", 0).params["reasoning_effort"] == "minimal"
    assert budget_params("openai-reasoning", 5000).params["reasoning_effort"] == "medium"
    assert budget_params("openai-reasoning", 50_000).params["reasoning_effort"] == "high"


def test_anthropic_thinking_budget_has_a_floor_of_1024() -> None:
    big = budget_params("anthropic", 2000, answer_tokens=16)
    assert big.params == {
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "max_tokens": 2016,
    }
    assert big.params["thinking"]["budget_tokens"] < big.params["max_tokens"]
    small = budget_params("anthropic", 300)
    assert small.params["thinking"] == {"type": "disabled"}
    assert small.params["max_tokens"] == 300
    assert small.visible_reasoning
    assert any("below Anthropic's minimum" in note for note in small.notes)
    assert budget_params("anthropic", 0).params["thinking"] == {"type": "disabled"}


def test_gemini_2_5_thinking_budget_is_soft_and_nested() -> None:
    params = budget_params("gemini-2.5-flash", 256)
    assert params.params == {"thinking_config": {"thinking_budget": 256}}
    assert not params.exact
    assert params.kind == "soft"
    assert any("a target, not a limit" in note for note in params.notes)
    assert budget_params("gemini-2.5-flash", 0).params == {
        "thinking_config": {"thinking_budget": 0}
    }


def test_gemini_3_and_later_take_a_level_not_a_budget() -> None:
    params = budget_params("gemini", 256)
    assert params.params == {"thinking_config": {"thinking_level": "low"}}
    assert params.level == "low"
    assert params.max_tokens is None
    assert any("is a level, not a token count" in note for note in params.notes)


@given(k=st.integers(0, 100_000), answer=st.integers(1, 64))
def test_every_rule_allows_at_least_the_budget(k: int, answer: int) -> None:
    for name, rule in BUDGET_RULES.items():
        params = budget_params(name, k, answer_tokens=answer)
        # Only a provider's own maximum may hold a budget below k, and a note says so.
        assert params.cap >= k or (rule.maximum is not None and params.cap == rule.maximum)
        assert params.k == k


def test_cap_check_flags_an_overrun() -> None:
    assert check_cap(32, 32).held
    over = check_cap(32, 40, rule="gemini")
    assert not over.held
    assert over.overrun == 8
    assert "gemini provider overran the budget: 40 tokens for k = 32" in over.note


def test_bad_input_names_the_field() -> None:
    with pytest.raises(InputError, match="`provider`: unknown provider 'bard'"):
        budget_params("bard", 10)
    with pytest.raises(InputError, match="`k`: must be a whole number of tokens"):
        budget_params("openai", -1)
    with pytest.raises(InputError, match="`k`: must be a whole number of tokens"):
        budget_params("openai", True)
    with pytest.raises(InputError, match="`used`"):
        check_cap(3, -2)


def test_rule_for_a_backend_is_the_rule_it_declares() -> None:
    class Declared(_Plain):
        budget_rule = "anthropic"

    assert rule_for(_Plain()).name == "vllm"  # the default: a plain max_tokens cap
    assert rule_for(Declared()).name == "anthropic"


@pytest.mark.parametrize(
    ("model", "base_url", "rule"),
    [
        ("gpt-4o-mini", None, "openai"),
        ("o3", None, "openai-reasoning"),
        ("gpt-6.2-sol", None, "openai-reasoning"),
        ("gpt-5-chat-latest", None, "openai"),
        ("my-fine-tune", None, "openai"),
        ("qwen3-8b", "http://127.0.0.1:8000/v1", "vllm"),
        ("o4-mini", "http://127.0.0.1:8000/v1", "openai-reasoning"),
        ("claude-sonnet-5", "http://127.0.0.1:8000/v1", "anthropic"),
    ],
)
def test_the_client_declares_the_rule_of_its_model_and_endpoint(
    model: str, base_url: str | None, rule: str
) -> None:
    backend = OpenAICompatibleBackend(model, base_url=base_url, api_key="x", cache=None)
    try:
        assert backend.budget_rule == rule
        assert rule_for(backend).name == rule
    finally:
        backend.close()


class _Plain(Backend):
    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        raise NotImplementedError

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError
