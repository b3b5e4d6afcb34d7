"""Streamed capped calls on doubles of the upstream: the same requests as unstreamed ones (each
streamed), chunks the SDK parses, the report on the last chunk, and the log row written at the
end, also when the caller stops early or the upstream fails mid-stream. (The real embedded model
streaming through the wrapper and the gateway is in test_production_stream_model.py.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionChunk
from production_support import (
    THINKER,
    Upstream,
    ask,
    chat_chunks,
    chat_reply,
    make_plan,
    text_chunks,
    text_reply,
)
from starlette.testclient import TestClient

from cotplan.production import CallLog, capped, report_of
from cotplan.production.gateway import make_app
from cotplan.production.streaming import AsyncCappedStream, CappedStream

THINKING = ["Let", " me", " add", " 1", " and", " 4"]
ANSWER = [" 1", "3", " "]


def unstreamed() -> Upstream:
    return Upstream(text_reply("Let me add 1 and 4", "length", 6), text_reply(" 13 ", "stop", 3))


def streamed() -> Upstream:
    return Upstream(text_chunks(THINKING, "length"), text_chunks(ANSWER, "stop"))


def joined(chunks: list[ChatCompletionChunk], field: str) -> str:
    return "".join(
        (choice.delta.model_dump().get(field) or "") for chunk in chunks for choice in chunk.choices
    )


def without_stream(request: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    path, body = request
    rest = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    return path, rest


def test_a_stream_makes_the_same_requests_and_ends_in_the_same_report(tmp_path: Path) -> None:
    plain, upstream = unstreamed(), streamed()
    log = CallLog(tmp_path / "log.sqlite")
    expected = capped(plain.client(), make_plan(THINKER), log=False).chat.completions.create(
        **ask(), size=3
    )
    stream = capped(upstream.client(), make_plan(THINKER), log=log).chat.completions.create(
        **ask(), size=3, stream=True
    )
    assert isinstance(stream, CappedStream)
    chunks = list(stream)

    assert [without_stream(r) for r in upstream.requests] == plain.requests
    for _, body in upstream.requests:
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
    assert chunks[0].choices[0].delta.role == "assistant"
    assert joined(chunks, "reasoning_content") == "Let me add 1 and 4"
    assert joined(chunks, "content") == expected.choices[0].message.content == "Answer: 13"
    assert {chunk.id for chunk in chunks} == {chunks[0].id}
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert last.usage is not None
    assert expected.usage is not None
    assert last.usage.model_dump() == expected.usage.model_dump()
    assert report_of(last) == report_of(expected)
    assert all("cotplan" not in (chunk.model_extra or {}) for chunk in chunks[:-1])
    (row,) = log.records()
    assert (row.reasoning_tokens, row.answer_tokens, row.outcome) == (6, 3, "complete")
    assert row.answer_forced
    assert row.call_id == last.id


def test_include_usage_ends_in_a_usage_chunk_as_the_sdk_documents() -> None:
    client = capped(streamed().client(), make_plan(THINKER), log=False)
    chunks = list(
        client.chat.completions.create(
            **ask(), size=3, stream=True, stream_options={"include_usage": True}
        )
    )
    finish, usage = chunks[-2:]
    assert finish.choices[0].finish_reason == "stop"
    assert finish.usage is None
    assert usage.choices == []
    assert usage.usage is not None
    assert usage.usage.completion_tokens == 9
    assert report_of(usage).answer_forced


def test_a_caller_that_stops_early_ends_the_upstream_and_the_log_says_so(tmp_path: Path) -> None:
    upstream = streamed()
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(upstream.client(), make_plan(THINKER), log=log)
    with client.chat.completions.create(**ask(), size=3, stream=True) as stream:
        role, first, second = next(stream), next(stream), next(stream)
    assert role.choices[0].delta.role == "assistant"
    assert joined([first, second], "reasoning_content") == "Let me"
    assert len(upstream.requests) == 1  # the answer was never asked for
    (row,) = log.records()
    assert row.outcome == "stopped"
    assert row.reasoning_tokens == 2  # the pieces seen; the usage never came
    assert not row.answer_forced
    assert list(stream) == []  # a closed stream gives nothing more


def test_an_upstream_error_mid_stream_is_raised_and_logged(tmp_path: Path) -> None:
    broken = [*text_chunks(THINKING, "length")[:3], {"error": {"message": "slot died"}}]
    upstream = Upstream(broken)
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(upstream.client(), make_plan(THINKER), log=log)
    stream = client.chat.completions.create(**ask(), size=3, stream=True)
    seen = [next(stream) for _ in range(4)]  # the role and three pieces of thought
    with pytest.raises(openai.APIError, match="slot died"):
        next(stream)
    assert joined(seen, "reasoning_content") == "Let me add"
    (row,) = log.records()
    assert (row.outcome, row.reasoning_tokens) == ("error", 3)


def test_an_upstream_refusing_the_call_raises_from_create_and_logs_nothing(
    tmp_path: Path,
) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(Upstream(500).client(), make_plan(THINKER), log=log)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(**ask(), size=3, stream=True)
    assert log.records() == []


def test_the_async_client_streams_the_same_chunks(tmp_path: Path) -> None:
    sync_upstream, async_upstream = streamed(), streamed()
    log = CallLog(tmp_path / "log.sqlite")
    expected = list(
        capped(sync_upstream.client(), make_plan(THINKER), log=False).chat.completions.create(
            **ask(), size=3, stream=True
        )
    )

    async def read() -> list[ChatCompletionChunk]:
        client = capped(async_upstream.async_client(), make_plan(THINKER), log=log)
        stream = await client.chat.completions.create(**ask(), size=3, stream=True)
        assert isinstance(stream, AsyncCappedStream)
        async with stream:
            return [chunk async for chunk in stream]

    chunks = asyncio.run(read())
    assert async_upstream.requests == sync_upstream.requests
    assert joined(chunks, "content") == joined(expected, "content")
    assert joined(chunks, "reasoning_content") == joined(expected, "reasoning_content")
    assert report_of(chunks[-1]) == report_of(expected[-1])
    (row,) = log.records()
    assert row.outcome == "complete"


def test_hidden_reasoning_passes_the_providers_chunks_on() -> None:
    upstream = Upstream(chat_chunks(["Answer:", " 13"], "stop", completion=30, reasoning=26))
    client = capped(
        upstream.client("https://api.openai.com/v1"), make_plan("o3-mini", 64), log=False
    )
    chunks = list(client.chat.completions.create(**ask("o3-mini"), size=3, stream=True))
    ((_, body),) = upstream.requests
    assert body["max_completion_tokens"] == 64 + 16
    assert body["stream_options"] == {"include_usage": True}
    assert joined(chunks, "content") == "Answer: 13"
    assert {chunk.id for chunk in chunks} == {"chatcmpl-1"}
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    report = report_of(last)
    assert (report.reasoning_tokens, report.answer_tokens) == (26, 4)
    assert not report.answer_forced


def test_a_hidden_cap_that_ate_the_answer_streams_the_retry_under_one_id() -> None:
    upstream = Upstream(
        chat_chunks([], "length", completion=80, reasoning=80),
        chat_chunks(["Answer: 13"], "stop", completion=4, reasoning=0, ident="chatcmpl-2"),
    )
    client = capped(
        upstream.client("https://api.openai.com/v1"), make_plan("o3-mini", 64), log=False
    )
    chunks = list(client.chat.completions.create(**ask("o3-mini"), size=3, stream=True))
    assert upstream.requests[1][1]["messages"][-1]["content"].startswith("Stop reasoning now.")
    assert joined(chunks, "content") == "Answer: 13"
    assert {chunk.id for chunk in chunks} == {"chatcmpl-1"}
    finishes = [c.finish_reason for chunk in chunks for c in chunk.choices if c.finish_reason]
    assert finishes == ["stop"]  # the first request's "length" is not handed on
    report = report_of(chunks[-1])
    assert report.answer_forced
    assert report.cap_bitten
    assert report.requests == 2
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 84


def test_the_unstreamed_hidden_reply_is_unchanged_by_the_streamed_path() -> None:
    # Both modes share their requests (`cotplan.production.phases`): a guard that the
    # unstreamed hidden call still reads its one reply.
    upstream = Upstream(chat_reply("Answer: 13", "stop", completion=30, reasoning=26))
    client = capped(
        upstream.client("https://api.openai.com/v1"), make_plan("o3-mini", 64), log=False
    )
    reply = client.chat.completions.create(**ask("o3-mini"), size=3)
    assert "stream" not in upstream.requests[0][1]
    assert report_of(reply).reasoning_tokens == 26


# -- the gateway ------------------------------------------------------------------------------


def events(text: str) -> list[Any]:
    lines = [line.removeprefix("data: ") for line in text.split("\n\n") if line]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


def test_the_gateway_streams_server_sent_events(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(streamed().client(), make_plan(THINKER), log=log, via="gateway")
    with TestClient(make_app(client)) as http:
        response = http.post("/v1/chat/completions", json={**ask(), "size": 3, "stream": True})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    sent = events(response.text)
    assert sent[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate(body) for body in sent[:-1]]
    assert joined(chunks, "content") == "Answer: 13"
    assert report_of(chunks[-1]).cap == 6
    (row,) = log.records()
    assert (row.via, row.outcome) == ("gateway", "complete")


def test_the_gateway_sends_a_mid_stream_error_as_an_error_event(tmp_path: Path) -> None:
    broken = [*text_chunks(THINKING, "length")[:2], {"error": {"message": "slot died"}}]
    client = capped(Upstream(broken).client(), make_plan(THINKER), log=tmp_path / "l.sqlite")
    with TestClient(make_app(client)) as http:
        response = http.post("/v1/chat/completions", json={**ask(), "size": 3, "stream": True})
    sent = events(response.text)
    assert "[DONE]" not in sent
    assert sent[-1]["error"]["message"] == "upstream: slot died"
    assert [row.outcome for row in CallLog(tmp_path / "l.sqlite").records()] == ["error"]


def test_the_gateway_refuses_a_stream_it_cannot_open_with_the_upstreams_status(
    tmp_path: Path,
) -> None:
    client = capped(Upstream(503).client(), make_plan(THINKER), log=False)
    with TestClient(make_app(client)) as http:
        response = http.post("/v1/chat/completions", json={**ask(), "size": 3, "stream": True})
    assert response.status_code == 503
    assert response.json()["error"]["type"] == "upstream_error"
