"""`cost_of`: a provider's own usage object, read by that provider's rule, priced to the cent of
genai-prices' own arithmetic (`genai_prices.extract_usage` and `calc_price` on the same body).

The bodies below are shaped like each provider's documented response examples, read on
2026-12-01 (numbers changed to exercise caches and reasoning):

- OpenAI chat completion object: https://platform.openai.com/docs/api-reference/chat/object
- OpenAI Responses object: https://platform.openai.com/docs/api-reference/responses/object
- Anthropic message and its usage with prompt caching:
  https://docs.anthropic.com/en/api/messages and
  https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
- Gemini generateContent response, `UsageMetadata`:
  https://ai.google.dev/api/generate-content#UsageMetadata
- xAI chat completion usage: https://docs.x.ai/developers/advanced-api-usage/prompt-caching/usage-and-pricing
- DeepSeek chat completion usage: https://api-docs.deepseek.com/api/create-chat-completion

and each field's meaning is the one genai-prices 0.2.3's extractors give it
(``genai_prices/data.py``, `Provider.extractors`).
"""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

import cotplan
from cotplan.errors import InputError
from cotplan.pricing import call_cost, cost_of, price_table
from cotplan.pricing.usage import read_usage

# genai-prices' rows alone: the cross-check is against its own arithmetic on its own data.
GENAI = price_table(builtin=False, genai=True)
AT = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)  # off-peak for DeepSeek: one price all day

OPENAI_CHAT: dict[str, Any] = {
    "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    "object": "chat.completion",
    "created": 1764446400,  # 2025-11-29T20:00Z
    "model": "o3-2025-04-16",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}
    ],
    "usage": {
        "prompt_tokens": 12_000,
        "completion_tokens": 3_000,
        "total_tokens": 15_000,
        "prompt_tokens_details": {"cached_tokens": 8_064, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 2_496,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
}
OPENAI_RESPONSES: dict[str, Any] = {
    "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "object": "response",
    "created_at": 1764446400,
    "status": "completed",
    "model": "o4-mini-2025-04-16",
    "output": [],
    "usage": {
        "input_tokens": 36_000,
        "input_tokens_details": {"cached_tokens": 20_000},
        "output_tokens": 8_700,
        "output_tokens_details": {"reasoning_tokens": 8_000},
        "total_tokens": 44_700,
    },
}
ANTHROPIC_MESSAGE: dict[str, Any] = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": "Hi! My name is Claude."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        # input_tokens are only those after the last cache breakpoint.
        "input_tokens": 2_095,
        "cache_creation_input_tokens": 2_051,
        "cache_read_input_tokens": 10_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 2_051, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 503,
        "service_tier": "standard",
    },
}
GEMINI_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "content": {"parts": [{"text": "42"}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 40_000,
        "candidatesTokenCount": 1_200,
        "totalTokenCount": 45_200,
        "cachedContentTokenCount": 32_000,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 40_000}],
        "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 32_000}],
        # Reported apart from candidatesTokenCount.
        "thoughtsTokenCount": 4_000,
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "mAitaLmkHPPlz7IPvtfUqQ4",
}
XAI_CHAT: dict[str, Any] = {
    "id": "a3d1008e-4544-40d4-d075-11527e794e4a",
    "object": "chat.completion",
    "created": 1764446400,
    "model": "grok-3-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "101 * 3 = 303"},
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 125,
        "completion_tokens": 48,
        "total_tokens": 1_253,
        "prompt_tokens_details": {
            "text_tokens": 125,
            "audio_tokens": 0,
            "image_tokens": 0,
            "cached_tokens": 98,
        },
        # Reported apart from completion_tokens: 125 + 48 + 1,080 = 1,253.
        "completion_tokens_details": {
            "reasoning_tokens": 1_080,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "system_fingerprint": "fp_6ca29cf396",
}
DEEPSEEK_CHAT: dict[str, Any] = {
    "id": "930c60df-bf64-41c9-a88e-3ec75f81e00e",
    "object": "chat.completion",
    "created": 1764446400,
    "model": "deepseek-reasoner",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}
    ],
    "usage": {
        "prompt_tokens": 30_000,
        "completion_tokens": 5_000,
        "total_tokens": 35_000,
        "prompt_cache_hit_tokens": 24_000,
        "prompt_cache_miss_tokens": 6_000,
        "prompt_tokens_details": {"cached_tokens": 24_000},
        "completion_tokens_details": {"reasoning_tokens": 4_200},
    },
    "system_fingerprint": "fp_a1b2c3d4e5",
}

# (body, genai-prices provider id, its API flavor, the provider cotplan is told or None)
CASES = {
    "openai chat": (OPENAI_CHAT, "openai", "chat", None),
    "openai responses": (OPENAI_RESPONSES, "openai", "responses", None),
    "anthropic message": (ANTHROPIC_MESSAGE, "anthropic", "default", "anthropic"),
    "gemini": (GEMINI_RESPONSE, "google", "default", None),
    "xai chat": (XAI_CHAT, "x-ai", "chat", None),
    "deepseek chat": (DEEPSEEK_CHAT, "deepseek", "chat", None),
}


def _genai_total(body: dict[str, Any], provider_id: str, flavor: str, when: datetime) -> Decimal:
    from genai_prices import extract_usage

    extracted = extract_usage(body, provider_id=provider_id, api_flavor=flavor)
    return extracted.calc_price(genai_request_timestamp=when).total_price


@pytest.mark.parametrize("case", sorted(CASES))
def test_cost_of_agrees_with_genai_prices_to_the_last_decimal(case: str) -> None:
    body, provider_id, flavor, told = CASES[case]
    ours = cost_of(body, told, at=AT, table=GENAI)
    assert ours.usd == _genai_total(body, provider_id, flavor, AT)
    assert ours.provider == provider_id
    assert ours.usd > 0


def test_each_provider_is_converted_into_cotplans_one_meaning() -> None:
    anthropic = read_usage(ANTHROPIC_MESSAGE)
    assert (anthropic.api, anthropic.prompt_tokens) == ("anthropic", 2_095 + 2_051 + 10_000)
    assert (anthropic.cached_tokens, anthropic.cache_write_tokens) == (10_000, 2_051)
    gemini = read_usage(GEMINI_RESPONSE)
    assert (gemini.api, gemini.model) == ("gemini", "gemini-2.5-flash")
    assert (gemini.prompt_tokens, gemini.cached_tokens) == (40_000, 32_000)
    assert (gemini.completion_tokens, gemini.reasoning_tokens) == (5_200, 4_000)
    xai = read_usage(XAI_CHAT)
    assert (xai.api, xai.completion_tokens, xai.reasoning_tokens) == ("xai-chat", 1_128, 1_080)
    openai = read_usage(OPENAI_CHAT)
    assert (openai.api, openai.completion_tokens, openai.reasoning_tokens) == (
        "openai-chat",
        3_000,
        2_496,
    )
    deepseek = read_usage(DEEPSEEK_CHAT)
    assert (deepseek.prompt_tokens, deepseek.cached_tokens) == (30_000, 24_000)
    responses = read_usage(OPENAI_RESPONSES)
    assert (responses.api, responses.cached_tokens) == ("openai-responses", 20_000)
    assert responses.created == datetime(2025, 11, 29, 20, tzinfo=UTC)


def test_cost_of_is_call_cost_on_the_converted_counts() -> None:
    # Anthropic's input_tokens entered by hand as the prompt would miss the cache tokens.
    read = read_usage(ANTHROPIC_MESSAGE)
    by_hand = call_cost(
        "claude-haiku-4-5",
        provider="anthropic",
        on=AT.date(),
        table=GENAI,
        prompt_tokens=read.prompt_tokens,
        completion_tokens=503,
        cached_tokens=10_000,
        cache_write_tokens=2_051,
    )
    assert cost_of(ANTHROPIC_MESSAGE, at=AT, table=GENAI).usd == by_hand.usd
    too_low = call_cost(
        "claude-haiku-4-5",
        provider="anthropic",
        on=AT.date(),
        table=GENAI,
        prompt_tokens=2_095,
        completion_tokens=503,
    )
    assert too_low.usd < by_hand.usd


def test_an_sdk_object_is_priced_like_its_dict() -> None:
    from openai.types.chat import ChatCompletion

    sdk = ChatCompletion.model_validate(OPENAI_CHAT)
    assert cost_of(sdk, at=AT, table=GENAI).usd == cost_of(OPENAI_CHAT, at=AT, table=GENAI).usd


def test_a_bare_usage_block_needs_the_model() -> None:
    usage = ANTHROPIC_MESSAGE["usage"]
    with pytest.raises(InputError, match="`model`: the response names no model"):
        cost_of(usage, "anthropic", at=AT, table=GENAI)
    bare = cost_of(usage, "anthropic", at=AT, model="claude-haiku-4-5", table=GENAI)
    assert bare.usd == cost_of(ANTHROPIC_MESSAGE, at=AT, table=GENAI).usd


def test_the_price_is_the_one_in_effect_when_the_call_was_made() -> None:
    # o3's price fell on 2025-06-10; `created` dates the call when `at` is not given.
    before = copy.deepcopy(OPENAI_CHAT)
    before["created"] = int(datetime(2025, 5, 1, tzinfo=UTC).timestamp())
    old = cost_of(before, table=GENAI)
    new = cost_of(OPENAI_CHAT, table=GENAI)
    assert old.usd > new.usd
    assert cost_of(OPENAI_CHAT, at=date(2025, 5, 1), table=GENAI).usd == old.usd


def test_a_name_several_providers_sell_is_priced_at_its_makers_price() -> None:
    cost = cost_of(ANTHROPIC_MESSAGE, at=AT, table=GENAI)
    assert cost.provider == "anthropic"
    assert "also sold by google" in cost.notes


def test_anthropic_extras_cotplan_does_not_price_are_noted() -> None:
    body = copy.deepcopy(ANTHROPIC_MESSAGE)
    body["usage"]["cache_creation"]["ephemeral_1h_input_tokens"] = 51
    body["usage"]["server_tool_use"] = {"web_search_requests": 2}
    notes = cost_of(body, at=AT, table=GENAI).notes
    assert "51 tokens written to the 1-hour cache are priced at the 5-minute rate" in notes
    assert "2 web searches are not priced" in notes


def _with(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    inner = out
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        (
            _with(OPENAI_CHAT, ("usage", "prompt_tokens_details", "audio_tokens"), 10),
            r"`usage.prompt_tokens_details.audio_tokens`: audio tokens are not priced",
        ),
        (
            _with(
                GEMINI_RESPONSE,
                ("usageMetadata", "promptTokensDetails"),
                [{"modality": "AUDIO", "tokenCount": 5}],
            ),
            r"`usageMetadata.promptTokensDetails`: audio tokens",
        ),
        (
            _with(OPENAI_CHAT, ("usage", "completion_tokens"), -1),
            r"`usage.completion_tokens`: must not be negative",
        ),
        (
            _with(OPENAI_CHAT, ("usage", "completion_tokens"), None),
            r"`usage.completion_tokens`: is missing",
        ),
        (
            _with(OPENAI_CHAT, ("usage", "completion_tokens"), 100),
            r"`usage.completion_tokens_details.reasoning_tokens`: 2496 reasoning tokens exceed",
        ),
        (
            _with(ANTHROPIC_MESSAGE, ("usage", "cache_read_input_tokens"), 1.5),
            r"`usage.cache_read_input_tokens`: must be a whole number",
        ),
        ({"model": "o3", "choices": []}, r"`response.usage`: no usage block"),
        (_with(OPENAI_CHAT, ("model",), 7), r"`model`: must be a model name"),
        (_with(OPENAI_RESPONSES, ("created_at",), "yesterday"), r"`created_at`: 'yesterday'"),
    ],
)
def test_bad_usage_names_the_field(body: dict[str, Any], pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        cost_of(body, table=GENAI)


def test_bad_arguments_name_the_parameter() -> None:
    with pytest.raises(InputError, match="`response`: must be a provider's response"):
        cost_of(42)
    with pytest.raises(InputError, match="`provider`: must be a non-empty provider name"):
        cost_of(OPENAI_CHAT, " ")
    with pytest.raises(InputError, match="`at`: must be a datetime or a date"):
        cost_of(OPENAI_CHAT, at="2026-11-29")  # type: ignore[arg-type]


def test_cost_of_is_public() -> None:
    assert cotplan.cost_of is cost_of
    assert "cost_of" in cotplan.__all__


def test_the_numbers_docs_costs_md_prints() -> None:
    # docs/costs.md, "The provider's own usage object": the same calls on the default table.
    noon = datetime(2026, 11, 29, 12, tzinfo=UTC)
    message = {
        "type": "message",
        "model": "claude-haiku-4-5",
        "usage": {
            "input_tokens": 2_095,
            "cache_creation_input_tokens": 2_051,
            "cache_read_input_tokens": 10_000,
            "output_tokens": 503,
        },
    }
    c = cost_of(message, at=noon)
    assert (str(c.usd), c.prompt_tokens, c.provider) == ("0.00817375", 14_146, "anthropic")
    gemini = {
        "modelVersion": "gemini-2.5-flash",
        "usageMetadata": {
            "promptTokenCount": 40_000,
            "cachedContentTokenCount": 32_000,
            "candidatesTokenCount": 1_200,
            "thoughtsTokenCount": 4_000,
        },
    }
    g = cost_of(gemini, at=noon)
    assert (str(g.usd), g.output_tokens, g.reasoning_tokens) == ("0.01636", 1_200, 4_000)
    hours = {
        hour: call_cost(
            "deepseek-reasoner",
            prompt_tokens=30_000,
            cached_tokens=24_000,
            completion_tokens=5_000,
            at=noon.replace(hour=hour),
        ).usd
        for hour in (12, 20)
    }
    assert {h: str(usd) for h, usd in hours.items()} == {12: "0.01761", 20: "0.00440"}
    haiku = call_cost(
        "claude-3-5-haiku", prompt_tokens=1_000, completion_tokens=100, on=noon.date()
    )
    assert (haiku.provider, str(haiku.usd)) == ("anthropic", "0.0012")
    assert haiku.notes.startswith(
        "'claude-3-5-haiku' is also sold by google; priced at its maker's (anthropic) list price"
    )
