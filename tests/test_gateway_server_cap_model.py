"""The server mode on the embedded thinking model (llama.cpp with its reasoning parser): the
raw `openai` client through the gateway sends tools, a JSON schema and logprobs, and each call
is one request with the cap held, the prompt the client's own, and the usage counting the
reasoning; streamed, it says what it says unstreamed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from production_support import make_plan

from cotplan.backends.local import LocalModel
from cotplan.production import CallLog, report_of
from cotplan.production.detect import detect_provider
from cotplan.production.gateway import Gateway

pytestmark = pytest.mark.model

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
            },
        },
    }
]


def test_the_gateway_caps_tools_schemas_and_logprobs_in_one_request(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    raw = openai.OpenAI(base_url=thinking_model.base_url, api_key="none")
    assert detect_provider(raw).provider == "llama.cpp-thinking"
    model = thinking_model.model_id
    uncapped = raw.chat.completions.create(model=model, messages=QUESTION, temperature=0)
    assert uncapped.usage is not None
    plan = make_plan(model).save(tmp_path / "plan.json")
    log = tmp_path / "log.sqlite"
    with Gateway(plan, thinking_model.base_url, log=log) as gateway:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key="none")
        size: dict[str, Any] = {"extra_body": {"size": 3}}
        schema = sdk.chat.completions.create(
            model=model, messages=QUESTION, response_format=SCHEMA, **size
        )
        tools = sdk.chat.completions.create(
            model=model, messages=QUESTION, tools=TOOLS, tool_choice="auto", **size
        )
        logprobs = sdk.chat.completions.create(
            model=model, messages=QUESTION, logprobs=True, top_logprobs=2, **size
        )
        streamed = list(
            sdk.chat.completions.create(model=model, messages=QUESTION, stream=True, **size)
        )
    # The grammar held the answer to the schema, after a capped thought.
    assert '"answer"' in (schema.choices[0].message.content or "")
    assert logprobs.choices[0].logprobs is not None
    assert logprobs.choices[0].logprobs.content
    for reply in (schema, tools, logprobs):
        report = report_of(reply)
        assert (report.mode, report.requests, report.cap) == ("server", 1, CAP)
        assert 0 < report.reasoning_tokens <= CAP
        assert reply.usage is not None
        assert reply.usage.completion_tokens_details is not None
        assert reply.usage.completion_tokens_details.reasoning_tokens == report.reasoning_tokens
        # The client's prompt, not a rewritten one: as many prompt tokens as uncapped.
        assert report.prompt_tokens <= 1.05 * uncapped.usage.prompt_tokens
    # Streamed, the content is what the unstreamed call answers (no leaked </think>).
    content = "".join(
        (choice.delta.content or "") for chunk in streamed for choice in chunk.choices
    )
    assert content == logprobs.choices[0].message.content
    assert report_of(streamed[-1]).reasoning_tokens == report_of(logprobs).reasoning_tokens
    rows = CallLog(log).records()
    assert [(row.mode, row.outcome) for row in rows] == [("server", "complete")] * 4
