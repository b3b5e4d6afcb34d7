"""The budget rules against each provider's documented parameters, the answer's room, the
after-call check, and the table in docs/reference/providers.md.

Every request body below is checked field by field against what the provider documents. The
documented fields and values, and where they were read (2026-12-01):

- OpenAI chat completions: `max_completion_tokens` (reasoning + visible output; reasoning
  models refuse `max_tokens`), `reasoning_effort` in none/minimal/low/medium/high/xhigh by
  model: "gpt-5.1 ... supports none, low, medium, and high"; "All models before gpt-5.1 ... do
  not support none"; "gpt-5-pro ... only supports high"; "xhigh is supported for all models
  after gpt-5.1-codex-max" (openai-python `ReasoningEffort`, the same text on
  learn.microsoft.com @azure/ai-projects ReasoningEffort); o1/o3/o4: low, medium, high
  (docs.rs openai-tools `ReasoningEffort`, model support table).
- OpenAI Responses: `max_output_tokens`, `reasoning.effort` (openai-python Responses types).
- Anthropic Messages: `thinking: {type: "enabled", budget_tokens}` with budget_tokens >= 1024
  and < max_tokens, "a target rather than a strict limit" (docs.anthropic.com extended
  thinking); `thinking: {type: "adaptive"}` + `output_config: {effort}` on Opus 4.6/Sonnet 4.6
  (budget form deprecated) and Opus 4.7 (budget form a 400) (docs.aws.amazon.com Bedrock
  claude-messages-adaptive-thinking); Sonnet 5: "manual extended thinking now returns a 400"
  (platform.claude.com models/sonnet-5/overview).
- Gemini: `thinking_config.thinking_budget` (2.5 Pro 128..32768, cannot be turned off; 2.5
  Flash 0..24576; 2.5 Flash-Lite 0 or 512..24576) or `thinking_config.thinking_level` (3 Pro:
  low, high; 3 Flash: minimal, low, medium, high), never both (a 400) (ai.google.dev thinking
  and gemini-3 pages, read in hexdocs gemini_ex `ThinkingConfig` and docs.rs adk-rust
  `ThinkingConfig`).
- DeepSeek: `thinking: {type}`; `max_tokens` includes the chain of thought
  (api-docs.deepseek.com thinking_mode).
- xAI: `reasoning_effort` (grok-3-mini: low, high; grok-4.3: none, low, medium, high; grok-4.5:
  low, medium, high) (docs.x.ai reasoning; vercel/ai @ai-sdk/xai release notes).
- OpenRouter: `reasoning: {max_tokens}` or `reasoning: {effort}`, "one of the following (not
  both)"; effort none..xhigh; `max_tokens` (openrouter.ai/docs/use-cases/reasoning-tokens).
- vLLM: `thinking_token_budget` (vllm docs/features/reasoning_outputs.md); llama.cpp server:
  `thinking_budget_tokens` (ggml-org/llama.cpp tools/server/README.md); SGLang:
  `custom_params: {thinking_budget}` with `--enable-strict-thinking`
  (docs.sglang.io advanced_features/thinking_budget); all take `max_tokens`.
"""

from __future__ import annotations

import csv
import importlib.resources
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cotplan.backends.budgets import (
    BUDGET_RULES,
    EFFORT_LADDER,
    budget_params,
    budget_table,
    check_cap,
    request_fields,
    resolve_rule,
)
from cotplan.backends.server_rules import CLOSE_ROOM
from cotplan.errors import InputError

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reference" / "providers.md"

_OPENAI_CHAT = {"max_completion_tokens", "reasoning_effort"}
_OPENAI_RESPONSES = {"max_output_tokens", "reasoning.effort"}
_OPENAI_O = ("low", "medium", "high")
_GPT5 = ("minimal", "low", "medium", "high")
_GPT51 = ("none", "low", "medium", "high")
_GPT52 = ("none", "low", "medium", "high", "xhigh")

#: The request fields (dotted) each rule may send, as each provider documents them (see the
#: module docstring), and the levels each documents for the models the rule serves.
DOCUMENTED: Mapping[str, tuple[set[str], tuple[str, ...]]] = {
    "openai": ({"max_tokens"}, ()),
    "openai-reasoning": (_OPENAI_CHAT, _GPT5),
    "openai-reasoning-o": (_OPENAI_CHAT, _OPENAI_O),
    "openai-reasoning-pro": (_OPENAI_CHAT, ("high",)),
    "openai-reasoning-none": (_OPENAI_CHAT, _GPT51),
    "openai-reasoning-xhigh": (_OPENAI_CHAT, _GPT52),
    "openai-responses-output": ({"max_output_tokens"}, ()),
    "openai-responses": (_OPENAI_RESPONSES, _GPT5),
    "openai-responses-o": (_OPENAI_RESPONSES, _OPENAI_O),
    "openai-responses-pro": (_OPENAI_RESPONSES, ("high",)),
    "openai-responses-none": (_OPENAI_RESPONSES, _GPT51),
    "openai-responses-xhigh": (_OPENAI_RESPONSES, _GPT52),
    "anthropic": ({"thinking.type", "thinking.budget_tokens", "max_tokens"}, ()),
    "anthropic-adaptive": (
        {"thinking.type", "output_config.effort", "max_tokens"},
        ("low", "medium", "high"),
    ),
    "gemini": ({"thinking_config.thinking_level"}, ("low", "high")),
    "gemini-flash": ({"thinking_config.thinking_level"}, ("minimal", "low", "medium", "high")),
    "gemini-2.5-pro": ({"thinking_config.thinking_budget"}, ()),
    "gemini-2.5-flash": ({"thinking_config.thinking_budget"}, ()),
    "gemini-2.5-flash-lite": ({"thinking_config.thinking_budget"}, ()),
    "deepseek": ({"thinking.type", "max_tokens"}, ()),
    "xai": ({"reasoning_effort", "max_completion_tokens"}, ("low", "medium", "high")),
    "xai-mini": ({"reasoning_effort", "max_completion_tokens"}, ("low", "high")),
    "xai-none": ({"reasoning_effort", "max_completion_tokens"}, _GPT51),
    "openrouter": ({"reasoning.max_tokens", "reasoning.effort", "max_tokens"}, ()),
    "vllm": ({"max_tokens"}, ()),
    "vllm-thinking": ({"thinking_token_budget", "max_tokens"}, ()),
    "llama.cpp": ({"max_tokens"}, ()),
    "llama.cpp-thinking": ({"thinking_budget_tokens", "max_tokens"}, ()),
    "sglang": ({"max_tokens"}, ()),
    "sglang-thinking": ({"custom_params.thinking_budget", "max_tokens"}, ()),
    "nim-thinking": ({"nvext.max_thinking_tokens", "max_tokens"}, ()),
    "ollama": ({"max_tokens"}, ()),
}


def _dotted(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in params.items():
        if isinstance(value, Mapping):
            out |= _dotted(value, f"{prefix}{name}.")
        else:
            out[f"{prefix}{name}"] = value
    return out


# -- the rules as data -----------------------------------------------------------------------


def test_every_rule_is_documented_here_and_names_its_source() -> None:
    assert set(DOCUMENTED) == set(BUDGET_RULES)
    for rule in BUDGET_RULES.values():
        assert re.search(r"read 20\d\d-\d\d-\d\d", rule.source), rule.name  # a dated source
        assert rule.provider, rule.name
        assert rule.forcing, rule.name
        assert set(rule.levels) <= set(EFFORT_LADDER), rule.name
        assert rule.levels == DOCUMENTED[rule.name][1], rule.name
        for _, variant in rule.variants:
            assert variant in BUDGET_RULES


@pytest.mark.parametrize("k", [0, 1, 100, 600, 1023, 1024, 2048, 9000, 40_000, 100_000])
@pytest.mark.parametrize("name", sorted(BUDGET_RULES))
def test_every_field_sent_is_one_the_provider_documents(name: str, k: int) -> None:
    fields, levels = DOCUMENTED[name]
    sent = _dotted(budget_params(name, k, answer_tokens=16).params)
    assert set(sent) <= fields
    for field, value in sent.items():
        if field.endswith(("effort", "thinking_level")):
            # OpenRouter documents effort "none" to turn reasoning off; its budget is a count.
            assert value in levels or (value == "none" and field == "reasoning.effort")
        elif field.endswith(".type"):
            assert value in {"enabled", "disabled", "adaptive"}
        else:
            assert type(value) is int
            assert value >= 0


# -- request bodies, field by field ----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "model", "k", "rule", "body"),
    [
        # Anthropic: the budget form where it is accepted, adaptive + effort where it is not.
        (
            "anthropic",
            "claude-haiku-4-5",
            2048,
            "anthropic",
            {"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 2064},
        ),
        (
            "anthropic",
            "claude-3-7-sonnet-20250219",
            1024,
            "anthropic",
            {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 1040},
        ),
        (
            "anthropic",
            "claude-sonnet-5",
            2048,
            "anthropic-adaptive",
            {
                "thinking": {"type": "adaptive"},
                "output_config": {"effort": "medium"},
                "max_tokens": 2064,
            },
        ),
        (
            "anthropic",
            "claude-opus-4-7",
            500,
            "anthropic-adaptive",
            {
                "thinking": {"type": "adaptive"},
                "output_config": {"effort": "low"},
                "max_tokens": 516,
            },
        ),
        ("anthropic", "claude-opus-4-6", 40_000, "anthropic-adaptive", None),
        ("anthropic", "claude-fable-5-1", 0, "anthropic-adaptive", None),
        # Gemini: per-model budget ranges on 2.5, levels from 3 on; never both.
        (
            "google",
            "gemini-2.5-pro",
            0,
            "gemini-2.5-pro",
            {"thinking_config": {"thinking_budget": 128}},
        ),
        (
            "google",
            "gemini-2.5-flash",
            0,
            "gemini-2.5-flash",
            {"thinking_config": {"thinking_budget": 0}},
        ),
        (
            "google",
            "gemini-2.5-flash",
            30_000,
            "gemini-2.5-flash",
            {"thinking_config": {"thinking_budget": 24576}},
        ),
        (
            "google",
            "gemini-2.5-flash-lite",
            100,
            "gemini-2.5-flash-lite",
            {"thinking_config": {"thinking_budget": 512}},
        ),
        (
            "google",
            "gemini-3-pro-preview",
            20_000,
            "gemini",
            {"thinking_config": {"thinking_level": "high"}},
        ),
        (
            "google",
            "gemini-3-flash-preview",
            0,
            "gemini-flash",
            {"thinking_config": {"thinking_level": "minimal"}},
        ),
        ("google", "gemini-4-neon", 500, "gemini", {"thinking_config": {"thinking_level": "low"}}),
        # OpenAI: the levels each model accepts, under the cap over reasoning + answer.
        (
            "openai",
            "o3",
            0,
            "openai-reasoning-o",
            {"reasoning_effort": "low", "max_completion_tokens": 16},
        ),
        (
            "openai",
            "gpt-5",
            0,
            "openai-reasoning",
            {"reasoning_effort": "minimal", "max_completion_tokens": 16},
        ),
        (
            "openai",
            "gpt-5.1",
            0,
            "openai-reasoning-none",
            {"reasoning_effort": "none", "max_completion_tokens": 16},
        ),
        (
            "openai",
            "gpt-5-pro",
            64,
            "openai-reasoning-pro",
            {"reasoning_effort": "high", "max_completion_tokens": 80},
        ),
        (
            "openai",
            "gpt-6.2-sol",
            50_000,
            "openai-reasoning-xhigh",
            {"reasoning_effort": "xhigh", "max_completion_tokens": 50_016},
        ),
        ("openai", "gpt-4o-mini", 64, "openai", {"max_tokens": 64}),
        # DeepSeek, xAI, OpenRouter.
        (
            "deepseek",
            "deepseek-reasoner",
            1000,
            "deepseek",
            {"thinking": {"type": "enabled"}, "max_tokens": 1016},
        ),
        (
            "deepseek",
            "deepseek-chat",
            0,
            "deepseek",
            {"thinking": {"type": "disabled"}, "max_tokens": 16},
        ),
        (
            "xai",
            "grok-3-mini",
            5000,
            "xai-mini",
            {"reasoning_effort": "low", "max_completion_tokens": 5016},
        ),
        (
            "xai",
            "grok-4.3",
            0,
            "xai-none",
            {"reasoning_effort": "none", "max_completion_tokens": 16},
        ),
        ("xai", "grok-4.5", 0, "xai", {"reasoning_effort": "low", "max_completion_tokens": 16}),
        (
            "openrouter",
            "deepseek/deepseek-r1",
            2048,
            "openrouter",
            {"reasoning": {"max_tokens": 2048}, "max_tokens": 2064},
        ),
        (
            "openrouter",
            "qwen/qwen3-8b",
            0,
            "openrouter",
            {"reasoning": {"effort": "none"}, "max_tokens": 16},
        ),
    ],
)
def test_request_bodies_match_the_documented_parameters(
    provider: str, model: str, k: int, rule: str, body: dict[str, Any] | None
) -> None:
    sent = request_fields(provider, model, k, answer_tokens=16)
    assert sent.rule == rule
    if body is not None:
        assert sent.params == body
    fields = _dotted(sent.params)
    assert "max_tokens" not in fields or not rule.startswith("openai-")
    if "thinking.budget_tokens" in fields:  # Anthropic: >= 1024 and < max_tokens
        assert 1024 <= fields["thinking.budget_tokens"] < fields["max_tokens"]
    if rule == "anthropic-adaptive":
        assert fields["thinking.type"] == "adaptive"
        assert "thinking.budget_tokens" not in fields  # a 400 on these models


def _priced(provider: str) -> list[str]:
    path = importlib.resources.files("cotplan.pricing") / "prices.csv"
    with path.open(encoding="utf-8") as handle:
        return sorted(
            {row["model"] for row in csv.DictReader(handle) if row["provider"] == provider}
        )


@pytest.mark.parametrize("model", _priced("anthropic") + _priced("google") + _priced("openai"))
def test_every_priced_model_gets_a_form_its_api_accepts(model: str) -> None:
    provider = {"claude": "anthropic", "gemini": "google"}.get(model.split("-")[0], "openai")
    sent = request_fields(provider, model, 2048)
    if model.startswith("claude-haiku-4-5"):
        assert sent.rule == "anthropic"  # Haiku 4.5 has the budget form only
    elif provider == "anthropic":
        assert sent.rule == "anthropic-adaptive"  # Claude 5.x refuses the budget form
    elif provider == "google":
        assert sent.rule == "gemini"  # Gemini 4: levels, never a budget
    else:
        assert sent.rule == "openai-reasoning-xhigh"  # gpt-6: none..xhigh


def test_the_responses_api_takes_its_own_fields() -> None:
    sent = budget_params("openai-responses", 64, model="o4-mini")
    assert sent.rule == "openai-responses-o"
    assert sent.params == {"reasoning": {"effort": "low"}, "max_output_tokens": 80}
    assert sent.max_tokens == 80
    assert sent.extra == {"reasoning": {"effort": "low"}}


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ("vllm-thinking", "thinking_token_budget"),
        ("llama.cpp-thinking", "thinking_budget_tokens"),
        ("sglang-thinking", "custom_params.thinking_budget"),
        ("nim-thinking", "nvext.max_thinking_tokens"),
    ],
)
def test_server_side_caps_are_hard_and_leave_room_for_the_answer(rule: str, field: str) -> None:
    sent = budget_params(rule, 300, answer_tokens=16)
    fields = _dotted(sent.params)
    assert fields == {field: 300, "max_tokens": 300 + CLOSE_ROOM + 16}
    assert sent.kind == "hard"
    assert sent.exact
    assert sent.answer_room == CLOSE_ROOM + 16
    assert BUDGET_RULES[rule].hard


def test_the_api_rule_stays_what_a_backend_declares_and_the_variant_follows_the_model() -> None:
    assert resolve_rule("anthropic", None).name == "anthropic"
    assert resolve_rule("anthropic", "anthropic:claude-sonnet-5-5").name == "anthropic-adaptive"
    assert (
        resolve_rule("gemini", "models/gemini-2.5-flash-lite-001").name == "gemini-2.5-flash-lite"
    )
    assert resolve_rule("gemini", "gemini-2.5-flash").name == "gemini-2.5-flash"
    assert resolve_rule("openai-reasoning", "O4-mini").name == "openai-reasoning-o"
    assert resolve_rule("vllm", "qwen3-8b").name == "vllm"  # a rule without variants
    with pytest.raises(InputError, match="`model`: must be a model name"):
        resolve_rule("anthropic", 3)  # type: ignore[arg-type]


# -- properties ------------------------------------------------------------------------------


@given(
    name=st.sampled_from(sorted(BUDGET_RULES)),
    k=st.integers(0, 200_000),
    answer=st.integers(1, 256),
)
def test_the_answer_always_has_room(name: str, k: int, answer: int) -> None:
    sent = budget_params(name, k, answer_tokens=answer)
    rule = BUDGET_RULES[name]
    # Either the answer is asked for apart (two-phase, or nothing caps it), or the one cap
    # leaves at least the answer's room once the reasoning has used its budget.
    assert sent.answer_room is None or sent.answer_room >= answer
    if sent.total is not None:
        assert sent.max_tokens == sent.total
        if sent.answer_room is not None:
            assert sent.total - sent.cap == sent.answer_room
    if sent.kind == "hard" and rule.total_cap and not sent.visible_reasoning:
        assert sent.total is not None
        assert sent.total - sent.cap >= answer + rule.close_room
    fields = _dotted(sent.params)
    # A thinking budget is always strictly below the cap on everything.
    for budget in ("thinking.budget_tokens", "reasoning.max_tokens"):
        if budget in fields:
            assert fields[budget] < fields["max_tokens"]


@given(name=st.sampled_from(sorted(BUDGET_RULES)), k=st.integers(0, 200_000))
def test_a_budget_that_becomes_a_level_says_so(name: str, k: int) -> None:
    sent = budget_params(name, k)
    fields = _dotted(sent.params)
    assert not {"thinking_config.thinking_budget", "thinking_config.thinking_level"} <= set(fields)
    assert not {"reasoning.max_tokens", "reasoning.effort"} <= set(fields)
    if sent.level is not None:
        assert sent.kind == "level"
        assert not sent.exact
        assert any("is a level, not a token count" in note for note in sent.notes)
    if sent.kind == "soft":
        assert any("target" in note for note in sent.notes)


# -- after the call: did the cap hold, did the answer survive? -------------------------------


@pytest.mark.parametrize("reason", ["length", "max_tokens", "max_output_tokens", "MAX_TOKENS"])
@pytest.mark.parametrize("content", [None, "", "  \n"])
def test_a_cap_that_ate_the_answer_is_reported(reason: str, content: str | None) -> None:
    check = check_cap(64, 64, rule="openai-reasoning", finish_reason=reason, content=content)
    assert check.held
    assert not check.answer_survived
    assert check.verdict == "cap ate the answer"
    assert "the cap ate the answer" in check.note
    assert "do not score it" in check.note


def test_an_answer_that_survived_is_not_flagged() -> None:
    assert check_cap(64, 60, finish_reason="length", content="Answer: 15").verdict == "held"
    assert check_cap(64, 60, finish_reason="stop", content="").answer_survived
    assert check_cap(64, 60).answer_survived  # nothing known about the answer: not judged
    over = check_cap(1024, 1500, rule="anthropic", finish_reason="end_turn", content="15")
    assert over.verdict == "overran"
    assert "a target, not a limit" in over.note


def test_check_cap_names_a_bad_field() -> None:
    with pytest.raises(InputError, match="`finish_reason`: must be a string"):
        check_cap(4, 4, finish_reason=3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`content`: must be a string or None"):
        check_cap(4, 4, finish_reason="length", content=["x"])  # type: ignore[arg-type]


# -- the table in docs/reference/providers.md ---------------------------------------------------


def test_the_docs_table_is_the_functions_output() -> None:
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- budget-table:start -->\n(.*?)<!-- budget-table:end -->", text, flags=re.S
    )
    assert found is not None, "docs/reference/providers.md lost its budget-table markers"
    assert found.group(1) == budget_table(), (
        "docs/reference/providers.md's budget table is stale: regenerate it with "
        "`python -c 'from cotplan.backends.budgets import budget_table; print(budget_table())'`"
    )
    assert "## What cotplan sends for a budget" in text


def test_budget_table_names_its_field() -> None:
    with pytest.raises(InputError, match="`k`"):
        budget_table(-1)
