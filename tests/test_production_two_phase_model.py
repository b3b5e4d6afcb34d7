"""Two-phase forcing on the embedded thinking model (llama.cpp, text completions): through the
wrapper and through the gateway, the raw `openai` client's call with tools, one with a JSON
schema and one with logprobs each answer in the chat shape with the cap held, and the client's
`max_tokens` bounds the whole completion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from production_support import make_plan

from cotplan.backends.local import LocalModel
from cotplan.production import capped, report_of
from cotplan.production.gateway import Gateway

# Grammars make llama.cpp slow on 2 cores: a few minutes under load.
pytestmark = [pytest.mark.model, pytest.mark.slow]

CAP = 6  # make_plan's cap at n = 3
QUESTION: list[Any] = [{"role": "user", "content": "What is 1 + 4 + 8?"}]
SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "sum",
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
    }
]


def calls(sdk: Any, model: str, size: dict[str, Any]) -> dict[str, Any]:
    """The three calls (and one with a short `max_tokens`), each with `size`'s arguments."""
    return {
        "schema": sdk.chat.completions.create(
            model=model, messages=QUESTION, response_format=SCHEMA, max_tokens=40, **size
        ),
        "tools": sdk.chat.completions.create(
            model=model,
            messages=QUESTION,
            tools=TOOLS,
            tool_choice="required",
            max_tokens=60,
            **size,
        ),
        "logprobs": sdk.chat.completions.create(
            model=model, messages=QUESTION, logprobs=True, top_logprobs=2, **size
        ),
        "short": sdk.chat.completions.create(model=model, messages=QUESTION, max_tokens=8, **size),
    }


def check(replies: dict[str, Any]) -> None:
    for reply in replies.values():
        report = report_of(reply)
        assert (report.mode, report.cap) == ("template", CAP)
        assert 0 < report.reasoning_tokens <= CAP  # the cap held
        assert reply.usage.completion_tokens_details.reasoning_tokens == report.reasoning_tokens
    # The grammar held the answer to the schema after the capped thought.
    assert set(json.loads(replies["schema"].choices[0].message.content)) == {"answer"}
    (call,) = replies["tools"].choices[0].message.tool_calls
    assert call.function.name == "add"
    assert set(json.loads(call.function.arguments)) == {"a", "b"}
    assert replies["tools"].choices[0].finish_reason == "tool_calls"
    logprobs = replies["logprobs"].choices[0].logprobs
    assert logprobs is not None
    assert logprobs.content
    assert all(len(token.top_logprobs) <= 2 for token in logprobs.content)
    assert replies["logprobs"].choices[0].message.content.startswith("Answer:")
    # max_tokens bounds thinking and answer together.
    assert replies["short"].usage.completion_tokens <= 8


def test_tools_schemas_and_logprobs_through_the_wrapper_and_the_gateway(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    model = thinking_model.model_id
    raw = openai.OpenAI(base_url=thinking_model.base_url, api_key="none")
    plan = make_plan(model).save(tmp_path / "plan.json")
    # An OpenAI-compatible address: two-phase forcing, at the size given once.
    check(calls(capped(raw, plan, log=False, size=3), model, {}))
    gateway = Gateway(plan, thinking_model.base_url, log=tmp_path / "log.sqlite", provider=None)
    with gateway:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key="none")
        check(calls(sdk, model, {"extra_body": {"size": 3}}))
