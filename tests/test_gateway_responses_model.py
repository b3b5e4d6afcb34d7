"""The Responses API through the gateway on the embedded thinking model (llama.cpp with its
reasoning parser): the raw `openai` client's `responses.create` is capped in one request, the
reasoning counted in the Responses usage, and the answer the model's own."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from production_support import make_plan

from cotplan.backends.local import LocalModel
from cotplan.production import CallLog
from cotplan.production.gateway import Gateway

pytestmark = pytest.mark.model

CAP = 6  # make_plan's cap at n = 3


def test_the_responses_api_is_capped_on_the_thinking_model(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    model = thinking_model.model_id
    raw = openai.OpenAI(base_url=thinking_model.base_url, api_key="none")
    uncapped = raw.responses.create(model=model, input="What is 1 + 4 + 8?", temperature=0)
    assert uncapped.usage is not None
    plan = make_plan(model).save(tmp_path / "plan.json")
    log = tmp_path / "log.sqlite"
    with Gateway(plan, thinking_model.base_url, log=log) as gateway:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key="none")
        reply = sdk.responses.create(
            model=model, input="What is 1 + 4 + 8?", temperature=0, extra_body={"size": 3}
        )
    assert reply.usage is not None
    reasoning = reply.usage.output_tokens_details.reasoning_tokens
    assert 0 < reasoning <= CAP + 2  # the server's cap held (its close and line break aside)
    assert reply.usage.output_tokens < uncapped.usage.output_tokens
    assert not reply.output_text.lstrip().startswith("</think>")  # the leaked close dropped
    report = (reply.model_extra or {})["cotplan"]
    assert (report["cap"], report["mode"], report["requests"]) == (CAP, "server", 1)
    assert report["reasoning_tokens"] == reasoning
    [row] = CallLog(log).records()
    assert (row.cap, row.reasoning_tokens, row.via) == (CAP, reasoning, "gateway")


def test_a_streamed_responses_call_is_capped_on_the_thinking_model(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    model = thinking_model.model_id
    plan = make_plan(model).save(tmp_path / "plan.json")
    log = tmp_path / "log.sqlite"
    with Gateway(plan, thinking_model.base_url, log=log) as gateway:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key="none")
        stream = sdk.responses.create(
            model=model,
            input="What is 1 + 4 + 8?",
            temperature=0,
            max_output_tokens=40,
            stream=True,
            extra_body={"size": 3},
        )
        events = list(stream)
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created"
    assert kinds[-1] in ("response.completed", "response.incomplete")
    final = events[-1].response  # type: ignore[union-attr]
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")  # type: ignore[union-attr]
    assert not text.lstrip().startswith("</think>")  # the leaked close dropped
    assert text == final.output_text
    assert final.usage is not None
    reasoning = final.usage.output_tokens_details.reasoning_tokens
    assert 0 < reasoning <= CAP + 2  # the server's cap held (its close and line break aside)
    report = (final.model_extra or {})["cotplan"]
    assert (report["cap"], report["mode"], report["requests"]) == (CAP, "server", 1)
    assert report["reasoning_tokens"] == reasoning
    [row] = CallLog(log).records()
    assert (row.cap, row.reasoning_tokens, row.outcome) == (CAP, reasoning, "complete")
