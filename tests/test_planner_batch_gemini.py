"""Gemini's Batch Mode: the translation at the service's edges (chat requests into inline
GenerateContent requests, responses back into the OpenAI output lines the batch path judges)."""

from __future__ import annotations

import json

import pytest

from cotplan.backends.budgets import budget_params
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import InputError
from cotplan.planner.batch_format import BatchRequest, read_output
from cotplan.planner.batch_gemini import chat_body, generate_request, output_line

BASE = "http://127.0.0.1:9/v1beta/openai/"


def _request(budget: int) -> BatchRequest:
    backend = OpenAICompatibleBackend("gemini-2.5-flash", base_url=BASE, api_key="k")
    fields = budget_params(backend.budget_rule, budget, answer_tokens=16, model=backend.model)
    operation, params = backend._request_params(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
        max_tokens=fields.total or budget + 16,
        temperature=0.0,
        stop=["\n\n"],
        seed=7,
        logprobs=0,
        extra={k: v for k, v in fields.params.items() if k != "max_tokens"},
    )
    return BatchRequest(operation, params)


def test_each_request_keeps_its_thinking_budget_cap_and_fields() -> None:
    request = generate_request(_request(512).body)
    assert request == {
        "model": "gemini-2.5-flash",
        "contents": [{"role": "user", "parts": [{"text": "2+2?"}]}],
        "config": {
            "max_output_tokens": 528,
            "system_instruction": "Be brief.",
            "temperature": 0.0,
            "seed": 7,
            "stop_sequences": ["\n\n"],
            "thinking_config": {"thinking_budget": 512},
        },
    }
    assert generate_request(_request(0).body)["config"]["thinking_config"] == {"thinking_budget": 0}


def test_the_compatible_endpoints_google_form_and_assistant_turns_translate() -> None:
    body = {
        "model": "gemini-3-pro",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "again"},
        ],
        "max_tokens": 64,
        "google": {"thinking_config": {"thinking_level": "low"}},
    }
    request = generate_request(body)
    assert [c["role"] for c in request["contents"]] == ["user", "model", "user"]
    assert request["config"] == {
        "max_output_tokens": 64,
        "thinking_config": {"thinking_level": "low"},
    }


def test_a_field_with_no_place_in_a_gemini_request_is_refused() -> None:
    body = {"model": "gemini-2.5-flash", "messages": [], "max_tokens": 8, "logprobs": True}
    with pytest.raises(InputError, match=r"no place for \['logprobs'\]"):
        generate_request(body)
    with pytest.raises(InputError, match="no role 'tool'"):
        generate_request({"model": "m", "messages": [{"role": "tool", "content": "x"}]})


def test_a_response_reads_back_as_the_chat_answer_with_thoughts_inside_completion() -> None:
    response = {
        "response_id": "r-1",
        "model_version": "gemini-2.5-flash",
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "step by step", "thought": True}, {"text": "Answer: 4"}],
                },
                "finish_reason": "STOP",
            }
        ],
        "usage_metadata": {
            "prompt_token_count": 12,
            "candidates_token_count": 3,
            "thoughts_token_count": 40,
            "total_token_count": 55,
        },
    }
    body = chat_body(response)
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "Answer: 4",
        "reasoning_content": "step by step",
    }
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == 43
    assert body["usage"]["completion_tokens_details"] == {"reasoning_tokens": 40}
    cut = {**response, "candidates": [{"content": {"parts": []}, "finish_reason": "MAX_TOKENS"}]}
    assert chat_body(cut)["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": None},
        "finish_reason": "length",
    }
    assert "usage" not in chat_body({"candidates": response["candidates"]})


def test_results_are_judged_as_live_answers_and_an_error_is_a_failure() -> None:
    request = _request(32)
    good = {
        "response": {
            "candidates": [{"content": {"parts": [{"text": "4"}]}, "finish_reason": "STOP"}],
            "usage_metadata": {"prompt_token_count": 5, "candidates_token_count": 1},
        }
    }
    bad = {"error": {"code": 500, "message": "injected"}}
    lines = [output_line(good, request.custom_id), output_line(bad, "cp-other")]
    text = "".join(json.dumps(line) + "\n" for line in lines).encode()
    read = read_output(text, {request.custom_id: request, "cp-other": request}, source="t")
    assert set(read.answers) == {request.custom_id}
    assert "injected" in read.failures["cp-other"]


def test_a_gemini_model_is_batched_through_gemini_batch_mode() -> None:
    pytest.importorskip("google.genai")
    from cotplan.planner.batch import service_for
    from cotplan.planner.batch_gemini import GeminiBatches

    backend = OpenAICompatibleBackend("gemini-2.5-flash", base_url=BASE, api_key="k-secret")
    service = service_for(backend)
    assert isinstance(service, GeminiBatches)
    assert service.kind == "gemini"
    # The SDK is pointed at the host: its own paths start at /v1beta.
    assert str(service.client._api_client._http_options.base_url).rstrip("/") == (
        "http://127.0.0.1:9"
    )
