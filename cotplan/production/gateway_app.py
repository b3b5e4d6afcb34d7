"""The gateway's HTTP app (`make_app`): what each route of `cotplan serve` does with a request.

The routes and their replies are described in `cotplan.production.gateway`, which runs the app.
A chat completion is answered on the event loop through an `AsyncCappedClient` (the gateway's
own: one pool of connections to the upstream, no thread per call), or through a team's sync
`CappedClient` in a worker thread (`make_app(capped(client, plan))`).
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx2
import openai
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from cotplan.errors import InputError, ResponseFormatError
from cotplan.io import MAX_JSON_BYTES, parse_json
from cotplan.production.calls import CapReport
from cotplan.production.gateway_errors import Failure, failure_of
from cotplan.production.metrics import CONTENT_TYPE_LATEST, GatewayMetrics
from cotplan.production.responses_cap import (
    CAPPED_HEADER,
    RESPONSES_CAP_FIELDS,
    RESPONSES_POLICIES,
    ResponsesCall,
    not_capped_message,
    responses_check_args,
)
from cotplan.production.responses_stream import open_responses_stream, responses_events
from cotplan.production.routes import ROUTE_HEADER, Capped, Routes
from cotplan.production.streaming import AsyncCappedStream, CappedStream
from cotplan.production.tags import TAGS_HEADER, with_header_tags
from cotplan.production.upstream import tokenize, tokenize_async
from cotplan.production.wrapper import AsyncCappedClient
from cotplan.validation import require_choice

__all__ = [
    "ANSWER_MISSING_HEADER",
    "MAX_BODY_BYTES",
    "SIZE_HEADER",
    "Lifespan",
    "make_app",
    "read_body",
]

#: What runs while the app serves (Starlette's lifespan: set up, yield, tear down).
Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]

#: The header that may carry a call's item size instead of the body.
SIZE_HEADER = "x-cotplan-size"
#: Set on a reply whose completion ended (max_tokens) before any answer.
ANSWER_MISSING_HEADER = "x-cotplan-answer-missing"


def _answer_headers(body: dict[str, Any]) -> dict[str, str] | None:
    """A reply's own headers: a missing answer said where a proxy in between can see it
    without reading the body."""
    missing = bool((body.get("cotplan") or {}).get("answer_missing"))
    return {ANSWER_MISSING_HEADER: "true"} if missing else None


#: The largest request body taken by default (a chat with long documents fits; a runaway
#: upload is refused before it is read whole, let alone forwarded).
MAX_BODY_BYTES = min(MAX_JSON_BYTES, 16 * 1024 * 1024)


def _error(status: int, message: str, *, kind: str, param: str | None = None) -> JSONResponse:
    return Failure(status, kind, message, param).response()


async def _no_route(request: Request, exc: Exception) -> Response:
    """A path or method the gateway does not serve, in OpenAI's error shape (an SDK reads the
    message from it; Starlette's default is a plain-text line)."""
    status = int(getattr(exc, "status_code", 404))
    what = "no such route" if status == 404 else "method not allowed on"
    return _error(
        status, f"{what} {request.method} {request.url.path}", kind="invalid_request_error"
    )


async def _events(
    stream: CappedStream, secrets: tuple[str, ...], done: Callable[..., None]
) -> AsyncIterator[str]:
    """The stream as server-sent events (see the module). The capped stream is synchronous (the
    team's own client is): each chunk is read in a worker thread. Whatever fails once the 200
    has gone ends the stream with an error event (`gateway_errors`), never a cut stream.
    `done` is told how the call ended (for the metrics)."""
    report = None
    try:
        while (chunk := await run_in_threadpool(next, stream, None)) is not None:
            body = chunk.model_dump(mode="json", warnings=False)
            report = body.get("cotplan", report)
            yield _event(body)
    except Exception as exc:
        failure = failure_of(exc, secrets)
        done(failure.status, report, failure.kind)
        yield failure.event()
        return
    finally:
        # Also when the client hung up (the task is cancelled here): the upstream request
        # stops and the call is logged as stopped.
        await run_in_threadpool(stream.close)
    done(200, report)
    yield "data: [DONE]\n\n"


async def _async_events(
    stream: AsyncCappedStream, secrets: tuple[str, ...], done: Callable[..., None]
) -> AsyncIterator[str]:
    """`_events` for the async capped stream (the gateway's own client): no worker thread."""
    report = None
    try:
        async for chunk in stream:
            body = chunk.model_dump(mode="json", warnings=False)
            report = body.get("cotplan", report)
            yield _event(body)
    except Exception as exc:
        failure = failure_of(exc, secrets)
        done(failure.status, report, failure.kind)
        yield failure.event()
        return
    finally:
        await stream.close()
    done(200, report)
    yield "data: [DONE]\n\n"


def _event(body: object) -> str:
    return f"data: {json.dumps(body, separators=(',', ':'))}\n\n"


class _TooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (`_TooLarge`) past `limit` bytes before more is read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise _TooLarge
        parts.append(part)
    return b"".join(parts)


def _arguments(raw: bytes, size_header: str | None, known: frozenset[str]) -> dict[str, Any]:
    """The `create` arguments of a request body (`InputError` naming what is wrong): fields
    the SDK's `create` takes by name go by name, the rest in `extra_body`, as a direct call
    with `extra_body` would send them."""
    body = parse_json(raw, source="request body", allow_nan=False)
    if not isinstance(body, dict):
        raise InputError("must be a JSON object", source="request body")
    if body.get("size") is None and size_header is not None:
        try:
            body["size"] = float(size_header)
        except ValueError:
            raise InputError(f"must be a number, got {size_header!r}", field=SIZE_HEADER) from None
    arguments = {k: v for k, v in body.items() if k in known or k in ("size", "tags")}
    extra = {k: v for k, v in body.items() if k not in arguments}
    if extra:
        given = body.get("extra_body") or {}
        if not isinstance(given, dict):
            raise InputError("must be a JSON object", field="extra_body")
        arguments["extra_body"] = {**given, **extra}
    return arguments


def _create_arguments(client: openai.OpenAI | openai.AsyncOpenAI) -> frozenset[str]:
    """The keyword arguments the SDK's `chat.completions.create` takes; any other body field
    is sent on as it is (`extra_body`), as a direct call with `extra_body` would send it."""
    names = inspect.signature(client.chat.completions.create).parameters
    return frozenset(names) - {"extra_body"}


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization") or ""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def _body(request: Request, limit: int) -> bytes | Response:
    """The request's body, or the reply that ends the call: 413 past `limit` bytes, nothing
    for a client that hung up mid-body (no one is left to answer, and nothing failed here)."""
    try:
        return await read_body(request, limit)
    except ClientDisconnect:
        return Response(status_code=499)
    except _TooLarge:
        return _error(
            413,
            f"the body is larger than the {limit:,} bytes this gateway takes",
            kind="invalid_request_error",
        )


def _responses_body(raw: bytes, size_header: str | None) -> dict[str, Any]:
    """A Responses call's body (streamed or not), its size from the header where the body
    has none."""
    body = _forwarded(raw, streamed=True)
    if body.get("size") is None and size_header is not None:
        try:
            body["size"] = float(size_header)
        except ValueError:
            raise InputError(f"must be a number, got {size_header!r}", field=SIZE_HEADER) from None
    return body


def _forwarded(raw: bytes, *, streamed: bool = False) -> dict[str, Any]:
    """A pass-through body, checked: JSON, an object, unstreamed (unless `streamed`)."""
    body = parse_json(raw, source="request body", allow_nan=False)
    if not isinstance(body, dict):
        raise InputError("must be a JSON object", source="request body")
    if body.get("stream") and not streamed:
        raise InputError("is not passed on streamed: send it unstreamed", field="stream")
    return body


async def _forward(
    upstream: openai.OpenAI | openai.AsyncOpenAI, path: str, raw: bytes
) -> httpx2.Response:
    """A body posted to the upstream's `path` as it came (checked JSON, unstreamed); an error
    status raises the SDK's error (scrubbed and passed on by `gateway_errors`)."""
    return await _post(upstream, path, _forwarded(raw))


async def _post(
    upstream: openai.OpenAI | openai.AsyncOpenAI, path: str, body: dict[str, Any]
) -> httpx2.Response:
    """`body` posted to the upstream's `path` (see `_forward`)."""
    if isinstance(upstream, openai.AsyncOpenAI):
        answer: httpx2.Response = await upstream.post(path, body=body, cast_to=httpx2.Response)
        return answer
    sent: httpx2.Response = await run_in_threadpool(
        upstream.post, path, body=body, cast_to=httpx2.Response
    )
    return sent


def _reply_json(answer: httpx2.Response) -> dict[str, Any]:
    """An upstream's 200 as the JSON object it must be (`ResponseFormatError`: a 502)."""
    try:
        body = json.loads(answer.content)
    except ValueError as exc:
        raise ResponseFormatError("the upstream answered 200 with a body that is not JSON") from exc
    if not isinstance(body, dict):
        raise ResponseFormatError("the upstream answered 200 with JSON that is not an object")
    return body


async def _health(request: Request) -> JSONResponse:
    """The process answers (``GET /health``; whether the upstream does is ``/ready``)."""
    return JSONResponse({"status": "ok"})


async def _unready(
    upstream: openai.OpenAI | openai.AsyncOpenAI, secrets: tuple[str, ...]
) -> Failure | None:
    """Why the upstream is not ready (None: it answers). Any HTTP answer counts: a server
    with no `/models` answers 404, and is up."""
    options: Any = {"max_retries": 0, "timeout": 5.0}
    try:
        if isinstance(upstream, openai.AsyncOpenAI):
            await upstream.get("/models", cast_to=object, options=options)
        else:
            await run_in_threadpool(upstream.get, "/models", cast_to=object, options=options)
    except openai.APIStatusError:
        return None
    except Exception as exc:
        return failure_of(exc, secrets)
    return None


class _Handlers:
    """The routes of one app (see `make_app`)."""

    def __init__(
        self,
        table: Routes,
        *,
        max_body_bytes: int,
        client_keys: Collection[str],
        metrics: GatewayMetrics,
        responses: str,
    ) -> None:
        self.table = table
        self.responses = responses
        self.limit = max_body_bytes
        self.known = _create_arguments(table.first.client)
        # Never shown to a client, whatever an upstream echoes back (`gateway_errors`).
        self.secrets = (str(table.first.client.api_key or ""),)
        self.keys = frozenset(k for k in client_keys if k)
        self.counts = metrics

    def refused(self, request: Request) -> Response | None:
        if self.keys and _bearer(request) not in self.keys:
            failure = Failure(401, "invalid_request_error", "a valid gateway key is required")
            return failure.response()
        return None

    async def chat_completions(self, request: Request) -> Response:
        started = time.perf_counter()
        if (denied := self.refused(request)) is not None:
            return denied
        raw = await _body(request, self.limit)
        if isinstance(raw, Response):
            return raw
        route, model = "-", "-"

        def done(status: int, report: object = None, error: str | None = None) -> None:
            seconds = time.perf_counter() - started
            got = report if isinstance(report, dict) else None
            self.counts.observe(
                route, model, status=status, seconds=seconds, report=got, error=error
            )

        try:
            arguments = with_header_tags(
                _arguments(raw, request.headers.get(SIZE_HEADER), self.known),
                request.headers.get(TAGS_HEADER),
            )
            model = str(arguments.get("model", "-"))[:200]
            client = self.table.pick(arguments.get("model"), request.headers.get(ROUTE_HEADER))
            route = client.plan.model or "default"
            reply: Any
            if isinstance(client, AsyncCappedClient):
                reply = await client.chat.completions.create(**arguments)
            else:
                # A synchronous client (a team's own): a worker thread keeps the event loop
                # free for other calls meanwhile.
                reply = await run_in_threadpool(client.chat.completions.create, **arguments)
        except Exception as exc:
            failure = failure_of(exc, self.secrets)
            done(failure.status, error=failure.kind)
            return failure.response()
        if isinstance(reply, AsyncCappedStream):
            events = _async_events(reply, self.secrets, done)
            return StreamingResponse(events, media_type="text/event-stream")
        if isinstance(reply, CappedStream):
            events = _events(reply, self.secrets, done)
            return StreamingResponse(events, media_type="text/event-stream")
        body = reply.model_dump(mode="json", warnings=False)
        done(200, body.get("cotplan"))
        return JSONResponse(body, headers=_answer_headers(body))

    async def responses_api(self, request: Request) -> Response:
        """``POST /v1/responses``: capped where the upstream can, else refused or passed on
        uncapped as the operator chose (`cotplan.production.responses_cap`)."""
        started = time.perf_counter()
        if (denied := self.refused(request)) is not None:
            return denied
        raw = await _body(request, self.limit)
        if isinstance(raw, Response):
            return raw
        route, model = "-", "-"

        def done(status: int, report: object = None, error: str | None = None) -> None:
            seconds = time.perf_counter() - started
            got = report if isinstance(report, dict) else None
            self.counts.observe(
                route, model, status=status, seconds=seconds, report=got, error=error
            )

        try:
            body = _responses_body(raw, request.headers.get(SIZE_HEADER))
            model = str(body.get("model", "-"))[:200]
            client = self.table.pick(body.get("model"), request.headers.get(ROUTE_HEADER))
            route = client.plan.model or "default"
            check = with_header_tags(responses_check_args(body), request.headers.get(TAGS_HEADER))
            call = client.checked(check)
            provider = client.provider_for(call.model)
            if call.mode != "server" or provider not in RESPONSES_CAP_FIELDS:
                if body.get("stream"):  # streamed only where capped
                    why = not_capped_message(call.model, provider)
                    raise InputError(f"is taken only where the cap holds: {why}", field="stream")
                if self.responses != "uncapped":
                    raise InputError(not_capped_message(call.model, provider), field="model")
                answer = await _post(client.client, "/responses", body)
                done(answer.status_code)
                media = answer.headers.get("content-type", "application/json")
                return Response(
                    answer.content,
                    status_code=answer.status_code,
                    media_type=media,
                    headers={CAPPED_HEADER: "false"},
                )
            one = ResponsesCall(call, body, provider)
            if body.get("stream"):
                return await self.responses_stream(client, one, done)
            reply = _reply_json(await _post(client.client, "/responses", one.request()))
            counted = None
            if text := one.reasoning_text(reply):
                asked = {"content": text, "model": call.model}
                if isinstance(client.client, openai.AsyncOpenAI):
                    counted = await tokenize_async(client.client, asked)
                else:
                    counted = await run_in_threadpool(tokenize, client.client, asked)
            report = one.finish(reply, counted)
            client.record(call.model, report, str(reply.get("id", "")), tags=call.tags)
        except Exception as exc:
            failure = failure_of(exc, self.secrets)
            done(failure.status, error=failure.kind)
            return failure.response()
        done(200, reply["cotplan"])
        return JSONResponse(reply, headers=_answer_headers(reply))

    async def responses_stream(
        self, client: Capped, one: ResponsesCall, done: Callable[..., None]
    ) -> StreamingResponse:
        """A capped Responses call streamed (`cotplan.production.responses_stream`): the
        upstream's stream opened here, so that its refusal is a plain error reply."""
        opened = await open_responses_stream(client.client, one.request())
        call = one.call

        def record(report: CapReport, call_id: str, outcome: str) -> None:
            client.record(call.model, report, call_id, tags=call.tags, outcome=outcome)

        events = responses_events(
            one, client.client, opened, secrets=self.secrets, done=done, record=record
        )
        return StreamingResponse(events, media_type="text/event-stream")

    async def models(self, request: Request) -> Response:
        if (denied := self.refused(request)) is not None:
            return denied
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "cotplan"}
            for name in self.table.names
        ]
        return JSONResponse({"object": "list", "data": data})

    async def passthrough(self, request: Request) -> Response:
        """`/v1/completions` and `/v1/embeddings`: sent on as they came (no plan applies to
        them: see `cotplan.production.gateway`), with the upstream's key, unstreamed; their
        errors as a chat call's are."""
        if (denied := self.refused(request)) is not None:
            return denied
        raw = await _body(request, self.limit)
        if isinstance(raw, Response):
            return raw
        try:
            path = request.url.path.removeprefix("/v1")
            answer = await _forward(self.table.first.client, path, raw)
        except Exception as exc:
            return failure_of(exc, self.secrets).response()
        media = answer.headers.get("content-type", "application/json")
        return Response(answer.content, status_code=answer.status_code, media_type=media)

    async def ready(self, request: Request) -> JSONResponse:
        failure = await _unready(self.table.first.client, self.secrets)
        if failure is not None:
            body = {"status": "upstream unreachable", **failure.body()}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ready", "routes": self.table.names})

    async def metrics_page(self, request: Request) -> Response:
        return Response(self.counts.render(), media_type=CONTENT_TYPE_LATEST)


def make_app(
    routes: Routes | Capped,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    client_keys: Collection[str] = (),
    metrics: GatewayMetrics | None = None,
    lifespan: Lifespan | None = None,
    responses: str = "refuse",
) -> Starlette:
    """The Starlette app answering OpenAI-compatible chat completions through `routes` (one
    capped client, or several plans routed by model, `cotplan.production.routes`): each an
    `AsyncCappedClient` (answered on the event loop) or a `CappedClient` (in a worker thread).

    A body over `max_body_bytes` is refused (413) before it is read further. With
    `client_keys`, a call to ``/v1/...`` must carry one of them as its bearer token (401
    otherwise); they are the gateway's own keys, never the upstream's. `metrics` counts every
    call (``GET /metrics``; a fresh `GatewayMetrics` when None). ``GET /health`` says the
    process answers; ``GET /ready`` whether the upstream does (503 when it does not).
    `lifespan` is the app's lifespan (what starts with the server and stops with it).
    `responses` is what a ``/v1/responses`` call the upstream cannot cap gets: ``refuse``
    (an OpenAI error saying so) or ``uncapped`` (passed on, flagged by `CAPPED_HEADER`).
    """
    require_choice(responses, "responses", RESPONSES_POLICIES)
    table = routes if isinstance(routes, Routes) else Routes.of(routes)
    handlers = _Handlers(
        table,
        max_body_bytes=max_body_bytes,
        client_keys=client_keys,
        metrics=metrics if metrics is not None else GatewayMetrics(),
        responses=responses,
    )

    return Starlette(
        lifespan=lifespan,
        exception_handlers={404: _no_route, 405: _no_route},
        routes=[
            Route("/v1/chat/completions", handlers.chat_completions, methods=["POST"]),
            Route("/v1/models", handlers.models, methods=["GET"]),
            Route("/v1/completions", handlers.passthrough, methods=["POST"]),
            Route("/v1/embeddings", handlers.passthrough, methods=["POST"]),
            Route("/v1/responses", handlers.responses_api, methods=["POST"]),
            Route("/health", _health, methods=["GET"]),
            Route("/ready", handlers.ready, methods=["GET"]),
            Route("/metrics", handlers.metrics_page, methods=["GET"]),
        ],
    )
