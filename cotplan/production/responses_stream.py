"""A streamed Responses call through the gateway (``POST /v1/responses`` with ``stream: true``),
capped in the one request where the upstream takes the cap on a Responses body
(`cotplan.production.responses_cap`; the request is the unstreamed call's, `ResponsesCall`).

The upstream's server-sent events go to the client as they came, under the upstream's event
names and in its order (``response.created``, ``response.output_text.delta``, ...,
``response.completed``), with one change: the final response (``response.completed``, or
``response.incomplete`` where `max_output_tokens` ended it) carries what the unstreamed reply
carries, the reasoning tokens filled in where its usage leaves them out (counted by the
server's tokenizer), the leaked thinking close dropped from its output text and the ``cotplan``
report. The call is then logged and counted in the metrics as a chat call is.

A failure once the 200 has gone (the upstream drops the connection, times out, sends what
cannot be read, or ends the stream without a final response) ends the stream with one error
event, `Failure.responses_event`, as a chat stream ends with `Failure.event`; the call is logged
with outcome ``error``. A client that hangs up stops the upstream request (outcome ``stopped``).
An error event or ``response.failed`` the upstream sends itself is passed on as it came.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from starlette.concurrency import run_in_threadpool

from cotplan.backends.base import Usage
from cotplan.errors import ResponseFormatError
from cotplan.production.calls import CapReport
from cotplan.production.gateway_errors import failure_of
from cotplan.production.responses_cap import ResponsesCall
from cotplan.production.server_cap import CloseFilter, ServerCap, without_close
from cotplan.production.upstream import tokenize, tokenize_async

__all__ = ["FINAL_EVENTS", "OpenedStream", "open_responses_stream", "responses_events"]

#: The events that carry the finished response, its usage with them.
FINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})

#: Events that say the upstream itself failed the call (passed on as they came).
_FAILED_EVENTS = frozenset({"response.failed", "error"})

Upstream = openai.OpenAI | openai.AsyncOpenAI
#: Told how the call ended, for the metrics: (status, report, error kind).
Done = Callable[..., None]
#: Logs the call: (report, call id, outcome).
Record = Callable[[CapReport, str, str], None]


@dataclass(frozen=True)
class OpenedStream:
    """The upstream's streamed answer, its events not yet read; `asynchronous`: read on the
    event loop (the gateway's own async client), else line by line in a worker thread (a
    team's sync client)."""

    response: httpx2.Response
    asynchronous: bool

    async def lines(self) -> AsyncIterator[str]:
        if self.asynchronous:
            async for line in self.response.aiter_lines():
                yield line
            return
        lines = self.response.iter_lines()

        def read() -> str | None:
            return next(lines, None)

        while True:
            got: str | None = await run_in_threadpool(read)
            if got is None:
                return
            yield got

    async def close(self) -> None:
        if self.asynchronous:
            await self.response.aclose()
        else:
            await run_in_threadpool(self.response.close)


async def open_responses_stream(upstream: Upstream, body: dict[str, Any]) -> OpenedStream:
    """The upstream's streamed answer to `body` on ``/responses``; an error status raises the
    SDK's error before any event is read (the client gets a plain error reply, no stream)."""
    sent = {**body, "stream": True}
    if isinstance(upstream, openai.AsyncOpenAI):
        opened = await upstream.post(
            "/responses",
            body=sent,
            cast_to=object,
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        return OpenedStream(opened.response, asynchronous=True)
    sync = upstream
    got = await run_in_threadpool(
        lambda: sync.post(
            "/responses", body=sent, cast_to=object, stream=True, stream_cls=openai.Stream[object]
        )
    )
    return OpenedStream(got.response, asynchronous=False)


async def _events(answer: OpenedStream) -> AsyncIterator[list[str]]:
    """The upstream's events, each as its lines (a blank line ends one)."""
    pending: list[str] = []
    async for line in answer.lines():
        if line:
            pending.append(line)
        elif pending:
            yield pending
            pending = []
    if pending:
        yield pending


def _fields(lines: list[str]) -> tuple[str | None, str]:
    """An event's name (None where it has no ``event:`` line) and its data."""
    name, data = None, []
    for line in lines:
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return name, "\n".join(data)


def _payload(data: str) -> dict[str, Any] | None:
    try:
        body = json.loads(data)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _written(name: str | None, body: dict[str, Any]) -> str:
    """An event the gateway changed, written out under the upstream's name."""
    data = json.dumps(body, separators=(",", ":"))
    head = f"event: {name}\n" if name is not None else ""
    return f"{head}data: {data}\n\n"


class _Relay:
    """One streamed call's state: the last sequence number, how it ended."""

    def __init__(self, one: ResponsesCall, upstream: Upstream) -> None:
        self.one = one
        self.upstream = upstream
        self.sequence = -1
        self.report: CapReport | None = None
        self.call_id = ""
        self.failed = False
        self.filters: dict[tuple[object, ...], CloseFilter] = {}

    async def finished(self, name: str | None, body: dict[str, Any]) -> str:
        """The final event with the unstreamed reply's additions (see the module)."""
        response = body.get("response")
        if not isinstance(response, dict):
            raise ResponseFormatError(f"the upstream's {name} event holds no response object")
        counted = None
        if text := self.one.reasoning_text(response):
            asked = {"content": text, "model": self.one.call.model}
            if isinstance(self.upstream, openai.AsyncOpenAI):
                counted = await tokenize_async(self.upstream, asked)
            else:
                counted = await run_in_threadpool(tokenize, self.upstream, asked)
        self.report = self.one.finish(response, counted)
        self.call_id = str(response.get("id", ""))
        return _written(name, body)

    async def relay(self, lines: list[str]) -> str:
        """One upstream event as the client gets it."""
        name, data = _fields(lines)
        body = _payload(data)
        if body is not None:
            kind = body.get("type")
            name_or_kind = name if name is not None else kind if isinstance(kind, str) else None
            number = body.get("sequence_number")
            if isinstance(number, int) and not isinstance(number, bool):
                self.sequence = max(self.sequence, number)
            if name_or_kind in FINAL_EVENTS and self.report is None:
                return await self.finished(name, body)
            if name_or_kind in _FAILED_EVENTS:
                self.failed = True
            if self.one.call.words.close and self._without_close(name_or_kind, body):
                return _written(name, body)
        return "\n".join(lines) + "\n\n"

    def _without_close(self, kind: str | None, body: dict[str, Any]) -> bool:
        """The thinking close llama.cpp leaks before the answer after a forced close
        (`server_cap.CloseFilter`) dropped from an output text event, as the final response
        and a chat stream drop it; whether `body` changed (else it goes on as it came)."""
        words = self.one.call.words
        if kind == "response.output_text.delta" and isinstance(body.get("delta"), str):
            key = (body.get("item_id"), body.get("output_index"), body.get("content_index"))
            closer = self.filters.setdefault(key, CloseFilter(words.close.strip()))
            kept = closer(body["delta"])
            changed = bool(kept != body["delta"])
            body["delta"] = kept  # an event emptied stays, so that the order and numbers hold
            return changed
        parts: list[Any] = []
        if kind == "response.output_text.done":
            parts = [body]
        elif kind == "response.content_part.done":
            parts = [body.get("part")]
        elif kind == "response.output_item.done" and isinstance(body.get("item"), dict):
            parts = list(body["item"].get("content") or [])
        changed = False
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                kept = without_close(part["text"], words)
                changed = changed or bool(kept != part["text"])
                part["text"] = kept
        return changed

    def unfinished(self) -> CapReport:
        """The report of a call that never reached its final response: no usage measured."""
        spent = Usage(trusted=False)
        return ServerCap(self.one.call, self.one.provider).report(
            spent, 0, answered=False, counted=False
        )


def _as_upstream(exc: Exception, answer: httpx2.Response) -> Exception:
    """A transport error while the stream was read as the SDK's error for it (the upstream
    timed out: 504; it dropped the connection: 502), as a failure before the stream would be."""
    if isinstance(exc, httpx2.TimeoutException):
        return openai.APITimeoutError(request=answer.request)
    if isinstance(exc, httpx2.TransportError):
        return openai.APIConnectionError(message=f"{exc} (mid-stream)", request=answer.request)
    return exc


async def responses_events(
    one: ResponsesCall,
    upstream: Upstream,
    answer: OpenedStream,
    *,
    secrets: tuple[str, ...],
    done: Done,
    record: Record,
) -> AsyncIterator[str]:
    """The upstream's stream `answer` relayed (see the module); `done` is told how the call
    ended (for the metrics) and `record` logs it."""
    relay = _Relay(one, upstream)
    outcome = "stopped"
    try:
        async for lines in _events(answer):
            yield await relay.relay(lines)
        if relay.report is None and not relay.failed:
            raise ResponseFormatError(
                "the upstream's Responses stream ended before its response.completed event"
            )
    except Exception as exc:
        outcome = "error"
        failure = failure_of(_as_upstream(exc, answer.response), secrets)
        done(failure.status, None, failure.kind)
        yield failure.responses_event(relay.sequence + 1)
        return
    finally:
        # Also when the client hung up (the task is cancelled here): the upstream request
        # stops, and the call is logged as it ended.
        await answer.close()
        if relay.report is None:
            record(relay.unfinished(), relay.call_id, "error" if relay.failed else outcome)
        else:
            record(relay.report, relay.call_id, "complete")
    if relay.report is None:  # the upstream failed the call in its own events
        done(502, None, "upstream_error")
    else:
        done(200, relay.report.to_dict())
