"""Anthropic's Message Batches: the translation at the service's edges (requests into Messages
params, results back into the OpenAI output lines the batch path judges)."""

from __future__ import annotations

import json

import pytest

from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import InputError
from cotplan.planner.batch import service_for
from cotplan.planner.batch_anthropic import (
    AnthropicBatches,
    chat_body,
    messages_params,
    output_line,
)
from cotplan.planner.batch_format import BatchRequest, read_output
from cotplan.planner.batch_providers import OpenAIBatches


def _request(budget: int) -> BatchRequest:
    backend = OpenAICompatibleBackend(
        "claude-sonnet-4-5", base_url="http://127.0.0.1:9/v1", api_key="k", provider="anthropic"
    )
    from cotplan.backends.budgets import budget_params

    fields = budget_params(backend.budget_rule, budget, answer_tokens=16, model=backend.model)
    operation, params = backend._request_params(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
        max_tokens=fields.total,
        temperature=0.0,
        stop=["\n\n"],
        seed=7,
        logprobs=0,
        extra={k: v for k, v in fields.params.items() if k != "max_tokens"},
    )
    return BatchRequest(operation, params)


def test_each_request_keeps_its_thinking_budget_and_its_custom_id_fits_anthropic() -> None:
    thinking = _request(2048)
    params = messages_params(thinking.body)
    assert params == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 2064,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "2+2?"}],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "stop_sequences": ["\n\n"],
    }
    # Thinking off: sampling is kept; a seed has no place in a Messages request.
    off = messages_params(_request(0).body)
    assert off["thinking"] == {"type": "disabled"}
    assert off["temperature"] == 0.0
    assert "seed" not in off
    assert len(thinking.custom_id) <= 64
    assert thinking.custom_id.replace("-", "").isalnum()


def test_a_field_a_messages_request_cannot_carry_is_refused_not_dropped() -> None:
    with pytest.raises(InputError, match="logprobs"):
        messages_params({"model": "claude-x", "max_tokens": 5, "messages": [], "logprobs": True})


def test_results_come_back_as_the_output_lines_a_live_answer_would_be() -> None:
    request = _request(2048)
    message = {
        "id": "msg_1",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "two and two", "signature": "s"},
            {"type": "text", "text": "4"},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "cache_read_input_tokens": 5, "output_tokens": 31},
    }
    body = chat_body(message)
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "4",
        "reasoning_content": "two and two",
    }
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 25
    assert body["usage"]["completion_tokens"] == 31
    cut = chat_body({**message, "content": [], "stop_reason": "max_tokens"})
    assert cut["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": None},
        "finish_reason": "length",
    }
    lines = [
        output_line(
            {"custom_id": request.custom_id, "result": {"type": "succeeded", "message": message}}
        ),
        output_line(
            {
                "custom_id": "cp-other",
                "result": {
                    "type": "errored",
                    "error": {"type": "error", "error": {"message": "overloaded"}},
                },
            }
        ),
        output_line({"custom_id": "cp-late", "result": {"type": "expired"}}),
    ]
    other, late = (
        BatchRequest("chat", {"model": "m", "n": 1}),
        BatchRequest("chat", {"model": "m", "n": 2}),
    )
    lines[1]["custom_id"], lines[2]["custom_id"] = other.custom_id, late.custom_id
    text = "".join(json.dumps(line) + "\n" for line in lines)
    read = read_output(text, {r.custom_id: r for r in (request, other, late)}, source="results")
    assert read.answers[request.custom_id]["choices"][0]["message"]["content"] == "4"
    assert "overloaded" in read.failures[other.custom_id]
    assert "expired" in read.failures[late.custom_id]


def test_a_claude_model_is_batched_through_message_batches_others_through_openai() -> None:
    claude = OpenAICompatibleBackend(
        "claude-opus-5",
        base_url="https://api.anthropic.com/v1/",
        api_key="sk-ant",
        provider="anthropic",
    )
    service = service_for(claude)
    assert isinstance(service, AnthropicBatches)
    assert str(service.client.base_url).rstrip("/") == "https://api.anthropic.com"
    assert service.client.api_key == "sk-ant"
    gpt = OpenAICompatibleBackend("o4-mini", api_key="sk-x")
    assert isinstance(service_for(gpt), OpenAIBatches)
