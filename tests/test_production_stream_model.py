"""Streaming through the capped client and the gateway, with the raw `openai` client against the
real embedded thinking model (SmolLM2 plus cotplan's adapter under llama.cpp): a streamed call
gives the text, token counts and log row of the same call unstreamed."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from production_support import make_plan

from cotplan.backends.local import LocalModel
from cotplan.production import CallLog, LogRecord, capped, report_of
from cotplan.production.gateway import Gateway
from cotplan.tasks import make_tasks

pytestmark = pytest.mark.model

SIZE = 3
ITEM = make_tasks("addition", n=SIZE, count=1, seed=0)[0]
CAP = 6  # make_plan's cap at n = 3: the model's thought is cut and the answer forced


def question() -> list[Any]:  # the SDK types each message by role
    return [{"role": "user", "content": str(ITEM.prompt)}]


def joined(chunks: list[ChatCompletionChunk], field: str) -> str:
    return "".join(
        (choice.delta.model_dump().get(field) or "") for chunk in chunks for choice in chunk.choices
    )


def same_call(row: LogRecord) -> dict[str, Any]:
    """A log row without what differs between two runs of one call (its time and id)."""
    return {k: v for k, v in asdict(row).items() if k not in ("time", "call_id")}


def unstreamed(model: LocalModel, log: CallLog) -> ChatCompletion:
    client = capped(
        openai.OpenAI(base_url=model.base_url, api_key="none"), make_plan(model.model_id), log=log
    )
    return client.chat.completions.create(model=model.model_id, messages=question(), size=SIZE)


def check_same(chunks: list[ChatCompletionChunk], reply: ChatCompletion) -> None:
    message = reply.choices[0].message
    assert joined(chunks, "content") == message.content
    assert message.content  # the forced answer arrived
    assert joined(chunks, "reasoning_content") == (message.model_extra or {})["reasoning_content"]
    last = chunks[-1]
    assert last.usage is not None
    assert reply.usage is not None
    assert last.usage.model_dump() == reply.usage.model_dump()
    streamed, direct = report_of(last), report_of(reply)
    assert streamed == direct
    assert streamed.reasoning_tokens <= CAP
    assert streamed.answer_forced


def test_the_sync_wrapper_streams_what_it_answers_unstreamed(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    reply = unstreamed(thinking_model, log)
    client = capped(
        openai.OpenAI(base_url=thinking_model.base_url, api_key="none"),
        make_plan(thinking_model.model_id),
        log=log,
    )
    with client.chat.completions.create(
        model=thinking_model.model_id, messages=question(), size=SIZE, stream=True
    ) as stream:
        chunks = list(stream)
    check_same(chunks, reply)
    assert len(chunks) > 3  # streamed piece by piece, not in one chunk
    first, second = log.records()
    assert same_call(first) == same_call(second)
    assert second.outcome == "complete"


def test_the_async_wrapper_streams_what_it_answers_unstreamed(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    reply = unstreamed(thinking_model, log)

    async def read() -> list[ChatCompletionChunk]:
        client = capped(
            openai.AsyncOpenAI(base_url=thinking_model.base_url, api_key="none"),
            make_plan(thinking_model.model_id),
            log=log,
        )
        stream = await client.chat.completions.create(
            model=thinking_model.model_id, messages=question(), size=SIZE, stream=True
        )
        async with stream:
            return [chunk async for chunk in stream]

    check_same(asyncio.run(read()), reply)
    first, second = log.records()
    assert same_call(first) == same_call(second)


def test_the_gateway_streams_what_it_answers_unstreamed(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    plan = make_plan(thinking_model.model_id).save(tmp_path / "plan.json")
    path = tmp_path / "gateway.sqlite"
    # Two-phase forcing, declared: this server would cap in one request by default
    # (tests/test_gateway_server_cap_model.py streams that).
    with Gateway(plan, thinking_model.base_url, log=path, provider="openai-compatible") as gateway:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key="none")
        arguments: dict[str, Any] = {
            "model": thinking_model.model_id,
            "messages": question(),
            "extra_body": {"size": SIZE},
        }
        reply = sdk.chat.completions.create(**arguments)
        chunks = list(sdk.chat.completions.create(**arguments, stream=True))
    check_same(chunks, reply)
    first, second = CallLog(path).records()
    assert same_call(first) == same_call(second)
    assert (second.via, second.outcome) == ("gateway", "complete")
