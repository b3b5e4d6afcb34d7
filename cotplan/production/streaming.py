"""Streamed capped calls: `create(..., stream=True)` on a capped client.

What comes back is what the client gives for a stream: an iterator of `ChatCompletionChunk`
(`CappedStream`; `AsyncCappedStream`, an async iterator, for `AsyncOpenAI`), with `close()` and
the context-manager form of `openai.Stream`. Upstream errors on the first request are raised by
`create` itself, as the client raises them; later ones by the iteration.

The cap is applied by the same requests as an unstreamed call (`cotplan.production.phases`),
each sent with ``stream=True`` and ``stream_options={"include_usage": True}``, so that token
counts come from the upstream's usage as they do unstreamed:

- ``template`` (two-phase forcing): the thinking is streamed as it comes, as
  `delta.reasoning_content` (the first request's `max_tokens` stops it at the cap), then the
  forced answer as `delta.content`, as the unstreamed reply's `content` reads (the marker
  before the model's first words, trailing whitespace dropped); a tool call is read whole and
  sent as one `delta.tool_calls` after the thinking. With logprobs, each answer chunk carries
  `logprobs.content` for the upstream tokens it hands on; with n > 1, the choices are streamed
  one after the other, each under its own `index` with its own finish chunk. All chunks carry
  one id.
- ``hidden`` (the provider's cap): the upstream's chunks are passed on as they come (a retry
  for an answer the cap ate is streamed after them, under the first id).
- the certified early exit (`cotplan.production.exiting`): its short requests are made
  unstreamed (`Call`: each probe is read whole); each chunk of thinking is handed on when its
  request returns.

The last chunk carries the usage of every request (as an unstreamed reply's `usage`) and the
extra `cotplan` field (`report_of` reads it): the chunk with the `finish_reason`, or, when the
call asked for ``stream_options={"include_usage": True}``, the usage chunk after it (empty
`choices`, as the SDK documents).

The call log's row is written when the stream ends, also when the caller stops early
(`close()`, leaving a `with` block, or dropping the stream: outcome ``stopped``) or the upstream
fails mid-stream (``error``); such a row holds what was seen, a phase cut short counted by its
chunks (one token each on llama.cpp and vLLM) since its usage never came.

One body of logic (a generator of `_Open`, `NEXT` and the chunks to hand on, as `_Steps` is for
unstreamed calls) serves both clients; `CappedStream` and `AsyncCappedStream` only send.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final

import openai
from openai.types.chat import ChatCompletionChunk

from cotplan.backends.base import Usage
from cotplan.production.answer_phase import answer_message, chat_logprobs
from cotplan.production.calls import CallArgs, CapReport, usage_body, usage_of
from cotplan.production.phases import OneRequest, TwoPhase
from cotplan.production.server_cap import (
    CloseFilter,
    ServerCap,
    counted_reasoning,
    is_answer,
    reasoning_of,
    reported_reasoning,
)
from cotplan.production.upstream import (
    check_stream_end,
    checked,
    stream_failure,
    text_of,
    tokenize,
    tokenize_async,
)

__all__ = [
    "NEXT",
    "AsyncCappedStream",
    "Call",
    "CappedStream",
    "Chunks",
    "Finish",
    "Marked",
    "StreamSteps",
    "Trim",
    "stream_steps",
]

#: What a streamed call's steps are told at their end: the report, the reply's id, and the
#: outcome (``complete``, ``stopped`` or ``error``).
Finish = Callable[[CapReport, str, str], None]


@dataclass(frozen=True)
class _Open:
    """Open a streamed upstream request (`endpoint`: ``completions`` or ``chat``)."""

    endpoint: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Call:
    """Make an upstream request unstreamed and send its whole response (the certified early
    exit's short requests, `cotplan.production.exiting`: it must read each probe whole)."""

    endpoint: str
    arguments: dict[str, Any]


class _Next:
    """Send the upstream's next chunk, or None when its stream has ended."""


NEXT: Final = _Next()

_Event = _Open | Call | _Next | ChatCompletionChunk
#: A streamed call as a generator: it yields `_Open` (the stream opens that request and sends
#: None), `Call` (it makes that request and sends the response), `NEXT` (it sends the
#: upstream's next chunk, None at its end) or a chunk to hand on.
StreamSteps = Generator[_Event, Any, None]


class _Done:
    pass


_DONE: Final = _Done()


@dataclass
class _Phase:
    """What one streamed upstream request has shown so far."""

    opened: bool = False
    text: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    pieces: int = 0
    id: str = ""
    #: Server-sent events read (any kind): none at all is a body that was not a stream.
    events: int = 0

    def seen(self) -> Usage | None:
        """Its usage; counted by chunks when it never came (a request cut short); None when
        it was never opened."""
        if not self.opened:
            return None
        return self.usage or self.counted()

    def counted(self) -> Usage:
        """The chunks seen, as a usage. A stream cut short (no finish yet) keeps what it
        showed; one that finished without the usage it was asked for is no measurement (its
        prompt was never counted): its counts are unknown, as an unstreamed reply's without
        `usage` are."""
        return Usage(completion_tokens=self.pieces, trusted=self.finish_reason is None)


class Trim:
    """Hands on streamed text without its leading and trailing whitespace: what it hands on
    adds up to the whole text `.strip()`ed, as an unstreamed reply's `content` is."""

    def __init__(self) -> None:
        self.started = False
        self.held = ""

    def __call__(self, text: str) -> str:
        if not self.started:
            text = text.lstrip()
            if not text:
                return ""
            self.started = True
        text = self.held + text
        kept = text.rstrip()
        self.held = text[len(kept) :]
        return kept


@dataclass(frozen=True)
class Chunks:
    """Chunks of one streamed reply: its id, time and model."""

    id: str
    created: int
    model: str

    def make(self, choices: list[dict[str, Any]], **extra: Any) -> ChatCompletionChunk:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            **extra,
        }
        return ChatCompletionChunk.model_validate(body)

    def delta(
        self, *, index: int = 0, logprobs: dict[str, Any] | None = None, **delta: Any
    ) -> ChatCompletionChunk:
        choice = {"index": index, "delta": delta, "finish_reason": None}
        if logprobs is not None:
            choice["logprobs"] = logprobs
        return self.make([choice])

    def last(
        self, finish_reason: str, report: CapReport, *, include_usage: bool, index: int = 0
    ) -> list[ChatCompletionChunk]:
        """The closing chunk(s): the finish, then the usage and the report (see the module)."""
        finish = [{"index": index, "delta": {}, "finish_reason": finish_reason}]
        extra = {"usage": usage_body(report), "cotplan": report.to_dict()}
        if include_usage:
            return [self.make(finish), self.make([], **extra)]
        return [self.make(finish, **extra)]


def _streamed(arguments: dict[str, Any]) -> dict[str, Any]:
    options = {**(arguments.get("stream_options") or {}), "include_usage": True}
    return {**arguments, "stream": True, "stream_options": options}


def _relay_text(
    request: dict[str, Any],
    phase: _Phase,
    hand_on: Callable[[str], ChatCompletionChunk | None],
    *,
    took: Callable[[object], None] | None = None,
) -> StreamSteps:
    """Stream one text completion, handing each piece of text on as a chunk; `took` is given
    each chunk's log-probabilities first (the answer phase's, when the client asked)."""
    yield _Open("completions", _streamed(request))
    phase.opened = True
    while (chunk := (yield NEXT)) is not None:
        phase.events += 1
        if chunk.usage is not None:
            phase.usage = usage_of(chunk.usage)
        for choice in chunk.choices or ():
            phase.finish_reason = choice.finish_reason or phase.finish_reason
            if took is not None and choice.logprobs is not None:
                took(choice.logprobs)
            if choice.text:
                phase.text += text_of(choice.text)
                phase.pieces += 1
                out = hand_on(choice.text)
                if out is not None:
                    yield out
    check_stream_end(phase.finish_reason, phase.events)


class Marked:
    """Hands on a streamed text answer as the unstreamed reply's `content` reads: the marker
    the forcing wrote (``Answer:``) before the model's first words, trailing whitespace held
    back (nothing at all for an answer that never begins)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.started = False
        self.held = ""

    def __call__(self, text: str) -> str:
        text = self.held + text
        if not self.started:
            if not text.strip():
                self.held = text
                return ""
            self.started = True
            text = self.marker + text
        kept = text.rstrip()
        self.held = text[len(kept) :]
        return kept


@dataclass
class _Choice:
    """One choice of a streamed two-phase call: its two phases, and whether the client's limit
    left its answer no room."""

    thinking: _Phase = field(default_factory=_Phase)
    answer: _Phase = field(default_factory=_Phase)
    no_room: bool = False

    def answered(self) -> bool:
        # Only a finished answer phase can be said to have written nothing.
        return bool(self.answer.text.strip()) or (
            not self.no_room and self.answer.finish_reason is None
        )


def _summed(usages: list[Usage | None]) -> Usage | None:
    known = [u for u in usages if u is not None]
    if not known:
        return None
    total = known[0]
    for usage in known[1:]:
        total = total + usage
    return total


def _template_steps(call: CallArgs, finish: Finish) -> StreamSteps:
    """Both phases for each of the call's `n` choices in turn, each choice's chunks under its
    own `index` (as OpenAI streams n > 1); with logprobs, each answer chunk carries the
    log-probabilities of the upstream tokens it hands on."""
    phases = TwoPhase(call)
    chunks = Chunks(f"chatcmpl-cotplan-{uuid.uuid4().hex}", int(time.time()), call.model)
    choices: list[_Choice] = []

    def report() -> CapReport:
        return phases.report(
            _summed([c.thinking.seen() for c in choices]),
            _summed([c.answer.seen() for c in choices]),
            cut=any(phases.cut(c.thinking.finish_reason) for c in choices),
            answered=all(c.answered() for c in choices),
            requests=sum(c.thinking.opened + c.answer.opened for c in choices),
        )

    outcome = "stopped"
    try:
        count = call.rest.get("n") or 1
        finish_reason = "stop"
        for index in range(count):
            one = _Choice()
            choices.append(one)
            finish_reason = yield from _template_choice(call, phases, chunks, one, index)
            if index < count - 1:
                yield chunks.make([{"index": index, "delta": {}, "finish_reason": finish_reason}])
        report_now = report()
        yield from chunks.last(
            finish_reason, report_now, include_usage=call.include_usage, index=count - 1
        )
        outcome = "complete"
    except GeneratorExit:
        raise
    except Exception:
        outcome = "error"
        raise
    finally:
        if any(c.thinking.opened or c.answer.opened for c in choices):
            finish(report(), chunks.id, outcome)


def _template_choice(
    call: CallArgs, phases: TwoPhase, chunks: Chunks, one: _Choice, index: int
) -> Generator[_Event, Any, str]:
    """One choice's two phases, streamed under `index`; returns its finish reason."""
    spec = phases.spec
    trim: Callable[[str], str] = Marked(call.words.marker) if spec.kind == "text" else Trim()
    pending: list[Any] = []  # log-probabilities not yet handed on with a chunk

    def took(raw: object) -> None:
        got = chat_logprobs(raw) if spec.logprobs is not None else None
        pending.extend((got or {}).get("content") or ())

    def answer_piece(text: str) -> ChatCompletionChunk | None:
        if spec.kind == "tools":  # a tool call is read whole, at the end
            return None
        kept = trim(text)
        if not kept:
            return None
        return chunks.delta(content=kept, index=index, logprobs=_taken(pending))

    yield chunks.delta(role="assistant", content="", index=index)
    request = phases.thinking_request()
    if request is not None:
        yield from _relay_text(
            request,
            one.thinking,
            lambda text: chunks.delta(reasoning_content=text, index=index),
        )
    second = phases.answer_request(
        one.thinking.text,
        cut=phases.cut(one.thinking.finish_reason),
        thought=phases.thought(one.thinking.finish_reason, one.thinking.usage),
    )
    if second is None:
        one.no_room = True
    else:
        yield from _relay_text(second, one.answer, answer_piece, took=took)
    finish_reason = one.answer.finish_reason or "stop"
    if not one.answer.text.strip():
        finish_reason = "length"
    elif spec.kind == "tools":
        message, finish_reason = answer_message(
            one.answer.text, spec, marker=call.words.marker, finish_reason=finish_reason
        )
        calls = [{"index": 0, **c} for c in message.get("tool_calls") or ()]
        yield chunks.delta(content=message["content"], tool_calls=calls or None, index=index)
    if pending:  # tokens whose text was held back (trailing whitespace) or never handed on
        yield chunks.delta(content="", index=index, logprobs=_taken(pending))
    return finish_reason


def _taken(pending: list[Any]) -> dict[str, Any] | None:
    """The pending log-probabilities in the chat shape, emptied (None: there are none)."""
    if not pending:
        return None
    out = {"content": list(pending)}
    pending.clear()
    return out


def _relay_chat(request: dict[str, Any], phase: _Phase, ident: str) -> StreamSteps:
    """Stream one chat request, handing its chunks on under the id `ident` (the first
    request's own when empty); the finish and usage are kept for the last chunk."""
    yield _Open("chat", _streamed(request))
    phase.opened = True
    while (chunk := (yield NEXT)) is not None:
        phase.events += 1
        phase.id = phase.id or chunk.id
        if chunk.usage is not None:
            phase.usage = usage_of(chunk.usage)
        if not chunk.choices:
            continue
        choices = []
        for choice in chunk.choices:
            phase.finish_reason = choice.finish_reason or phase.finish_reason
            if choice.delta.content:
                phase.text += text_of(choice.delta.content)
                phase.pieces += 1
            if choice.finish_reason and not any(choice.delta.model_dump().values()):
                continue  # only the finish: it comes in the last chunk
            choices.append(choice.model_copy(update={"finish_reason": None}))
        if choices:
            yield chunk.model_copy(update={"id": ident or chunk.id, "choices": choices})
    check_stream_end(phase.finish_reason, phase.events)


def _hidden_steps(call: CallArgs, provider: str, finish: Finish) -> StreamSteps:
    one = OneRequest(call, provider)
    first, retry = _Phase(), _Phase()
    forced = False

    def report() -> CapReport:
        usages = [u for u in (first.seen(), retry.seen()) if u is not None]
        bitten = forced or (first.opened and one.bitten(first.finish_reason, usages[0]))
        return one.report(usages, bitten=bitten, forced=forced)

    outcome = "stopped"
    try:
        yield from _relay_chat(one.request(), first, "")
        last = first
        if not first.text.strip():
            # The cap ran out inside the hidden reasoning (see `OneRequest.retry_request`).
            forced = True
            yield from _relay_chat(one.retry_request(), retry, first.id)
            last = retry
        chunks = Chunks(first.id or f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), call.model)
        yield from chunks.last(
            last.finish_reason or "stop", report(), include_usage=call.include_usage
        )
        outcome = "complete"
    except GeneratorExit:
        raise
    except Exception:
        outcome = "error"
        raise
    finally:
        if first.opened:
            finish(report(), first.id, outcome)


@dataclass
class _ServerSeen:
    """What a ``server``-mode stream has shown so far, and each chunk relayed (`relay`)."""

    phase: _Phase = field(default_factory=_Phase)
    close: str = "</think>"
    thinking: str = ""
    reported: int | None = None
    tools: bool = False
    #: The server's own usage (the last chunk's), passed on with the reasoning filled in.
    raw_usage: dict[str, Any] | None = None
    content: dict[int, str] = field(default_factory=dict)
    filters: dict[int, CloseFilter] = field(default_factory=dict)
    finishes: dict[int, str] = field(default_factory=dict)

    def relay(self, chunk: ChatCompletionChunk) -> ChatCompletionChunk | None:
        """The chunk to hand on (each choice's leaked close dropped, finishes kept for the
        last chunk), or None when nothing is left in it."""
        phase = self.phase
        phase.events += 1
        phase.id = phase.id or chunk.id
        if chunk.usage is not None:
            phase.usage = usage_of(chunk.usage)
            self.reported = reported_reasoning(chunk.usage)
            self.raw_usage = chunk.usage.model_dump(mode="json", warnings=False)
        choices = []
        for choice in chunk.choices or ():
            if choice.finish_reason:
                self.finishes[choice.index] = phase.finish_reason = choice.finish_reason
            delta = choice.delta
            piece = reasoning_of(delta)
            if piece:
                self.thinking += piece
                phase.pieces += 1
            if delta.content:
                close = self.filters.setdefault(choice.index, CloseFilter(self.close))
                kept = close(text_of(delta.content))
                self.content[choice.index] = self.content.get(choice.index, "") + kept
                delta = delta.model_copy(update={"content": kept})
                phase.pieces += 1
            self.tools = self.tools or bool(delta.tool_calls)
            if not any(delta.model_dump(exclude_none=True, warnings=False).values()):
                continue  # nothing left to say (a finish comes in the last chunk)
            choices.append(choice.model_copy(update={"delta": delta, "finish_reason": None}))
        return chunk.model_copy(update={"choices": choices}) if choices else None

    def held(self, chunks: Chunks) -> list[ChatCompletionChunk]:
        """Text still held back at the end (it was not the close), as chunks."""
        out = []
        for index, close in sorted(self.filters.items()):
            tail = close.flush()
            if tail:
                self.content[index] = self.content.get(index, "") + tail
                out.append(
                    chunks.make(
                        [{"index": index, "delta": {"content": tail}, "finish_reason": None}]
                    )
                )
        return out


def _server_steps(call: CallArgs, provider: str, finish: Finish) -> StreamSteps:
    """The ``server`` mode streamed (`cotplan.production.server_cap`): the server's chunks
    passed on, each choice's leaked close dropped, the finishes and the report last."""
    one = ServerCap(call, provider)
    seen = _ServerSeen(close=call.words.close.strip() or "</think>")
    reasoning = 0

    def report() -> CapReport:
        usage = seen.phase.usage or seen.phase.counted()
        counted = seen.reported is None and bool(seen.thinking)
        answered = seen.tools or any(is_answer(c, call.words) for c in seen.content.values())
        return one.report(usage, reasoning, answered=answered, counted=counted)

    outcome = "stopped"
    try:
        yield _Open("chat", _streamed(one.request()))
        seen.phase.opened = True
        while (chunk := (yield NEXT)) is not None:
            out = seen.relay(chunk)
            if out is not None:
                yield out
        check_stream_end(seen.phase.finish_reason, seen.phase.events)
        ident = seen.phase.id or f"chatcmpl-{uuid.uuid4().hex}"
        chunks = Chunks(ident, int(time.time()), call.model)
        yield from seen.held(chunks)
        reasoning = seen.reported or 0
        if seen.reported is None and seen.thinking:
            tokens = yield Call("tokenize", {"content": seen.thinking, "model": call.model})
            reasoning = counted_reasoning(tokens, seen.thinking, max(len(seen.finishes), 1))
        final = report()
        ends = [
            {"index": index, "delta": {}, "finish_reason": reason}
            for index, reason in sorted(seen.finishes.items())
        ]
        usage = usage_body(final)
        if seen.raw_usage is not None:  # the server's, as an unstreamed reply carries it
            details = {**(seen.raw_usage.get("completion_tokens_details") or {})}
            details["reasoning_tokens"] = final.reasoning_tokens
            usage = {**seen.raw_usage, "completion_tokens_details": details}
        extra = {"usage": usage, "cotplan": final.to_dict()}
        if call.include_usage:
            yield chunks.make(ends)
            yield chunks.make([], **extra)
        else:
            yield chunks.make(ends, **extra)
        outcome = "complete"
    except GeneratorExit:
        raise
    except Exception:
        outcome = "error"
        raise
    finally:
        if seen.phase.opened:
            finish(report(), seen.phase.id, outcome)


def stream_steps(call: CallArgs, *, provider: str, finish: Finish) -> StreamSteps:
    """The streamed call's steps for its mode; `finish` is told the report at the end."""
    if call.mode == "template":
        return _template_steps(call, finish)
    if call.mode == "server":
        return _server_steps(call, provider, finish)
    return _hidden_steps(call, provider, finish)


class _Driver:
    """What both streams share: the steps, the chunks ready to hand on, the current event."""

    def __init__(self, steps: StreamSteps) -> None:
        self._steps = steps
        self._ready: deque[ChatCompletionChunk] = deque()
        self._event: _Event | _Done = _DONE
        self._called = False  # a `Call` was made

    def _send(self, value: Any) -> _Event | _Done:
        try:
            return self._steps.send(value)
        except StopIteration:
            return _DONE
        except BaseException:
            self._event = _DONE
            raise

    def _throw(self, exc: Exception) -> _Event | _Done:
        # The steps log what was seen and raise it again: the caller gets the upstream's error.
        try:
            return self._steps.throw(exc)
        except StopIteration:
            return _DONE
        finally:
            self._event = _DONE

    def _waiting(self) -> bool:
        """Whether the steps wait on the upstream (primed: the first request is open, or the
        first `Call` made)."""
        return isinstance(self._event, _Next | _Done) or (
            self._called and isinstance(self._event, Call)
        )


class CappedStream(_Driver):
    """The stream of a capped call on an `openai.OpenAI` client (see the module)."""

    def __init__(self, client: openai.OpenAI, steps: StreamSteps) -> None:
        super().__init__(steps)
        self._client = client
        self._upstream: openai.Stream[Any] | None = None
        # Opened here, so that an upstream refusing the call raises from `create`.
        self._event = self._send(None)
        while not self._waiting():
            self._event = self._handle(self._event)

    def _handle(self, event: _Event | _Done) -> _Event | _Done:
        value: Any = None
        try:
            if isinstance(event, _Open):
                create = (
                    self._client.completions.create
                    if event.endpoint == "completions"
                    else self._client.chat.completions.create
                )
                self._upstream = create(**event.arguments)
            elif isinstance(event, Call) and event.endpoint == "tokenize":
                self._called = True
                value = tokenize(self._client, event.arguments)
            elif isinstance(event, Call):
                self._called = True
                if event.endpoint == "completions":
                    value = self._client.completions.create(**event.arguments)
                else:
                    value = self._client.chat.completions.create(**event.arguments)
                checked(event.endpoint, event.arguments, value)
            elif isinstance(event, _Next):
                assert self._upstream is not None
                value = next(self._upstream, None)
                if value is None:
                    self._upstream.close()
            elif isinstance(event, ChatCompletionChunk):
                self._ready.append(event)
        except Exception as exc:
            self._close_upstream()
            return self._throw(stream_failure(exc))
        return self._send(value)

    def __next__(self) -> ChatCompletionChunk:
        while not self._ready:
            if isinstance(self._event, _Done):
                raise StopIteration
            self._event = self._handle(self._event)
        return self._ready.popleft()

    def __iter__(self) -> CappedStream:
        return self

    def _close_upstream(self) -> None:
        if self._upstream is not None:
            self._upstream.close()

    def close(self) -> None:
        """Stop: the upstream request is closed and the call logged as far as it went."""
        self._close_upstream()
        self._steps.close()
        self._event = _DONE
        self._ready.clear()

    def __enter__(self) -> CappedStream:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncCappedStream(_Driver):
    """The stream of a capped call on an `openai.AsyncOpenAI` client: `async for`, `await
    close()`, `async with`. Built by `open`, which opens the first request."""

    def __init__(self, client: openai.AsyncOpenAI, steps: StreamSteps) -> None:
        super().__init__(steps)
        self._client = client
        self._upstream: openai.AsyncStream[Any] | None = None

    @classmethod
    async def open(cls, client: openai.AsyncOpenAI, steps: StreamSteps) -> AsyncCappedStream:
        stream = cls(client, steps)
        stream._event = stream._send(None)
        while not stream._waiting():
            stream._event = await stream._handle(stream._event)
        return stream

    async def _handle(self, event: _Event | _Done) -> _Event | _Done:
        value: Any = None
        try:
            if isinstance(event, _Open):
                if event.endpoint == "completions":
                    upstream: Any = await self._client.completions.create(**event.arguments)
                else:
                    upstream = await self._client.chat.completions.create(**event.arguments)
                self._upstream = upstream
            elif isinstance(event, Call) and event.endpoint == "tokenize":
                self._called = True
                value = await tokenize_async(self._client, event.arguments)
            elif isinstance(event, Call):
                self._called = True
                if event.endpoint == "completions":
                    value = await self._client.completions.create(**event.arguments)
                else:
                    value = await self._client.chat.completions.create(**event.arguments)
                checked(event.endpoint, event.arguments, value)
            elif isinstance(event, _Next):
                assert self._upstream is not None
                value = await anext(self._upstream, None)
                if value is None:
                    await self._upstream.close()
            elif isinstance(event, ChatCompletionChunk):
                self._ready.append(event)
        except Exception as exc:
            await self._close_upstream()
            return self._throw(stream_failure(exc))
        return self._send(value)

    async def __anext__(self) -> ChatCompletionChunk:
        while not self._ready:
            if isinstance(self._event, _Done):
                raise StopAsyncIteration
            self._event = await self._handle(self._event)
        return self._ready.popleft()

    def __aiter__(self) -> AsyncCappedStream:
        return self

    async def _close_upstream(self) -> None:
        if self._upstream is not None:
            await self._upstream.close()

    async def close(self) -> None:
        """Stop: the upstream request is closed and the call logged as far as it went."""
        await self._close_upstream()
        self._steps.close()
        self._event = _DONE
        self._ready.clear()

    async def __aenter__(self) -> AsyncCappedStream:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
