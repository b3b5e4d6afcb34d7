"""`cotplan serve`: an OpenAI-compatible endpoint on 127.0.0.1 that applies a plan's cap.

Any OpenAI SDK, in any language, points its `base_url` at ``http://127.0.0.1:PORT/v1``; each
``POST /v1/chat/completions`` is answered through the same code as `capped` (two-phase budget
forcing or the provider's own cap), against the `upstream` server, and logged to the same call
log. The item size n of a call comes in the body's ``size`` field (`extra_body={"size": 8}` in
the Python SDK), the ``X-Cotplan-Size`` header or ``metadata["cotplan_size"]``; a call with
none (or beyond the plan's reach) gets the plan's largest certified cap, with a note, unless
the gateway was started to refuse it (`size_policy="refuse"`). The reply is the usual chat
completion with the thinking in `message.reasoning_content` and the extra ``cotplan`` field
(`CapReport`).

With ``exit="certified"`` (`cotplan serve --exit certified`) each call is answered under the
certified early exit where the exit plan (exit.json beside the plan, or `exit_plan`)
certifies one, as `capped(..., exit="certified")` answers it (`cotplan.production.exiting`):
probe tokens count in the usage and the log, and the ``cotplan`` field says where it stopped.

Several plans, one per model, are served side by side: the call's `model` picks the plan
(or the ``X-Cotplan-Route`` header names one), and SIGHUP reloads every plan file without
dropping a call (`cotplan.production.routes`). Where the upstream caps the thinking itself
(asked once at start, `cotplan.production.detect`), each call is its own one request with the
cap added and every field passed on (`cotplan.production.server_cap`).

Also served: ``POST /v1/completions`` and ``/v1/embeddings``, passed on unchanged (no plan
applies to them; unstreamed), ``GET /v1/models`` (the plans' models), ``GET /health`` (the
process answers), ``GET /ready`` (the upstream answers too; 503 when it does not) and
``GET /metrics`` (Prometheus: calls, reasoning and answer tokens, cap bites, forced and
missing answers, errors and latency by route and model, `cotplan.production.metrics`).
docs/shipping.md walks a team through it.

Errors come back in OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``
(`cotplan.production.gateway_errors`): 400 with `param` naming the field for a request cotplan
refuses (a body that is not JSON, nested too deep, or with a field it cannot apply), 413 for a
body over the limit (`MAX_BODY_BYTES`), the upstream's own status for an upstream error, 504
when the upstream timed out, 502 when it cannot be reached or answers with something that is
not a completion (no `choices`, an ``error`` body, non-text content, a body or an event that
is not JSON: the response checks of the CLI path, `cotplan.production.upstream`), 500 for a
fault of the gateway itself. No message carries the upstream's key, even where the upstream
echoes it; the access log masks a key sent in the query string.

Streaming. A body with ``"stream": true`` is answered with server-sent events, as OpenAI's
API answers it: ``data: {chunk}`` per `ChatCompletionChunk` of the capped stream
(`cotplan.production.streaming`; the last carries the usage and the ``cotplan`` field), then
``data: [DONE]``. An error before the first chunk is an error reply as above; one mid-stream,
after the 200 has gone, is sent as ``data: {"error": {...}}`` (which the OpenAI SDKs raise as
an API error) and ends the stream, without ``[DONE]``: so is an upstream stream that is not one
(a JSON body, lines that are not events, a bad event, an end without a finish). A client that
hangs up ends the upstream request too; the call log records the call as far as it went.

It listens on the loopback interface only: it holds the upstream's key. With client keys
(`client_keys`, `cotplan serve --client-keys-file`) each ``/v1`` call must carry one as its
bearer token; they are the gateway's own, never the upstream's.

The server is uvicorn running a Starlette app (`make_app`); `Gateway` runs it in a thread (for
tests and notebooks), `serve` in the foreground (the CLI).
"""

from __future__ import annotations

import inspect
import json
import logging
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from cotplan.backends.keys import scrub_secrets
from cotplan.errors import CotplanError, InputError, LocalServerError
from cotplan.io import MAX_JSON_BYTES, parse_json
from cotplan.planner import SavedPlan
from cotplan.planner.exit_plan import ExitPlan
from cotplan.production.detect import Detected, detect_provider
from cotplan.production.gateway_errors import Failure, failure_of, logger
from cotplan.production.log import CallLog
from cotplan.production.metrics import CONTENT_TYPE_LATEST, GatewayMetrics
from cotplan.production.routes import ROUTE_HEADER, Routes
from cotplan.production.streaming import CappedStream
from cotplan.production.tags import TAGS_HEADER, with_header_tags
from cotplan.production.wrapper import CappedClient, capped

__all__ = [
    "HOST",
    "MAX_BODY_BYTES",
    "Gateway",
    "check_port",
    "check_upstream",
    "make_app",
    "scrub_access_log",
    "serve",
]

#: The only interface the gateway listens on (see the module docstring).
HOST = "127.0.0.1"

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


class _ScrubSecrets(logging.Filter):
    """Masks secrets in a log record's arguments (the access log's request line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                scrub_secrets(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def scrub_access_log() -> None:
    """Make uvicorn's access log write no secret: a key sent as ``?api_key=...`` (or any
    other key-shaped query parameter) is masked in each line. Idempotent."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _ScrubSecrets) for f in access.filters):
        access.addFilter(_ScrubSecrets())


def check_upstream(url: object) -> str:
    """`url` if it is an http(s) address with a host (`InputError` naming `upstream`)."""
    if not isinstance(url, str):
        raise InputError(f"must be an http(s) URL, got {url!r}", field="upstream")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"must be an http(s) URL such as http://127.0.0.1:8080/v1, got {url!r}",
            field="upstream",
        )
    return url.rstrip("/")


def check_port(port: object) -> int:
    """`port` if it is free on the loopback interface (0: any free port)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536:
        raise InputError(f"must be in 1..65535 (or 0 for any), got {port!r}", field="port")
    if port == 0:
        return 0
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the server itself binds: a port left in TIME_WAIT by a gateway just stopped is
        # free to serve again at once, not refused for a minute.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise InputError(
                f"{HOST}:{port} is already in use: pick another", field="port"
            ) from exc
    return port


def _error(status: int, message: str, *, kind: str, param: str | None = None) -> JSONResponse:
    return Failure(status, kind, message, param).response()


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
    body = parse_json(raw, source="request body")
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


def _create_arguments(client: openai.OpenAI) -> frozenset[str]:
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


def _forward(upstream: openai.OpenAI, path: str, raw: bytes) -> httpx2.Response:
    """A body posted to the upstream's `path` as it came (checked JSON, unstreamed); an error
    status raises the SDK's error (scrubbed and passed on by `gateway_errors`)."""
    body = parse_json(raw, source="request body")
    if not isinstance(body, dict):
        raise InputError("must be a JSON object", source="request body")
    if body.get("stream"):
        raise InputError("is not passed on streamed: send it unstreamed", field="stream")
    answer: httpx2.Response = upstream.post(path, body=body, cast_to=httpx2.Response)
    return answer


async def _health(request: Request) -> JSONResponse:
    """The process answers (``GET /health``; whether the upstream does is ``/ready``)."""
    return JSONResponse({"status": "ok"})


def _unready(upstream: openai.OpenAI, secrets: tuple[str, ...]) -> Failure | None:
    """Why the upstream is not ready (None: it answers). Any HTTP answer counts: a server
    with no `/models` answers 404, and is up."""
    try:
        upstream.get("/models", cast_to=object, options={"max_retries": 0, "timeout": 5.0})
    except openai.APIStatusError:
        return None
    except Exception as exc:
        return failure_of(exc, secrets)
    return None


def make_app(
    routes: Routes | CappedClient,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    client_keys: Collection[str] = (),
    metrics: GatewayMetrics | None = None,
) -> Starlette:
    """The Starlette app answering OpenAI-compatible chat completions through `routes` (one
    capped client, or several plans routed by model, `cotplan.production.routes`).

    A body over `max_body_bytes` is refused (413) before it is read further. With
    `client_keys`, a call to ``/v1/...`` must carry one of them as its bearer token (401
    otherwise); they are the gateway's own keys, never the upstream's. `metrics` counts every
    call (``GET /metrics``; a fresh `GatewayMetrics` when None). ``GET /health`` says the
    process answers; ``GET /ready`` whether the upstream does (503 when it does not).
    """
    table = routes if isinstance(routes, Routes) else Routes.of(routes)
    known = _create_arguments(table.first.client)
    # Never shown to a client, whatever an upstream echoes back (`gateway_errors`).
    secrets = (str(table.first.client.api_key or ""),)
    keys = frozenset(k for k in client_keys if k)
    counts = metrics if metrics is not None else GatewayMetrics()

    def refused(request: Request) -> Response | None:
        if keys and _bearer(request) not in keys:
            failure = Failure(401, "invalid_request_error", "a valid gateway key is required")
            return failure.response()
        return None

    async def chat_completions(request: Request) -> Response:
        started = time.perf_counter()
        if (denied := refused(request)) is not None:
            return denied
        raw = await _body(request, max_body_bytes)
        if isinstance(raw, Response):
            return raw
        route, model = "-", "-"

        def done(status: int, report: object = None, error: str | None = None) -> None:
            seconds = time.perf_counter() - started
            got = report if isinstance(report, dict) else None
            counts.observe(route, model, status=status, seconds=seconds, report=got, error=error)

        try:
            arguments = with_header_tags(
                _arguments(raw, request.headers.get(SIZE_HEADER), known),
                request.headers.get(TAGS_HEADER),
            )
            model = str(arguments.get("model", "-"))[:200]
            client = table.pick(arguments.get("model"), request.headers.get(ROUTE_HEADER))
            route = client.plan.model or "default"
            # The wrapper is synchronous (the team's own client is): a worker thread keeps
            # the event loop free for other calls meanwhile.
            reply = await run_in_threadpool(client.chat.completions.create, **arguments)
        except Exception as exc:
            failure = failure_of(exc, secrets)
            done(failure.status, error=failure.kind)
            return failure.response()
        if isinstance(reply, CappedStream):
            events = _events(reply, secrets, done)
            return StreamingResponse(events, media_type="text/event-stream")
        body = reply.model_dump(mode="json", warnings=False)
        done(200, body.get("cotplan"))
        return JSONResponse(body, headers=_answer_headers(body))

    async def models(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "cotplan"}
            for name in table.names
        ]
        return JSONResponse({"object": "list", "data": data})

    async def passthrough(request: Request) -> Response:
        """`/v1/completions` and `/v1/embeddings`: sent on as they came (no plan applies to
        them), with the upstream's key, unstreamed; their errors as a chat call's are."""
        if (denied := refused(request)) is not None:
            return denied
        raw = await _body(request, max_body_bytes)
        if isinstance(raw, Response):
            return raw
        try:
            path = request.url.path.removeprefix("/v1")
            answer = await run_in_threadpool(_forward, table.first.client, path, raw)
        except Exception as exc:
            return failure_of(exc, secrets).response()
        media = answer.headers.get("content-type", "application/json")
        return Response(answer.content, status_code=answer.status_code, media_type=media)

    async def ready(request: Request) -> JSONResponse:
        failure = await run_in_threadpool(_unready, table.first.client, secrets)
        if failure is not None:
            body = {"status": "upstream unreachable", **failure.body()}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ready", "routes": table.names})

    async def metrics_page(request: Request) -> Response:
        return Response(counts.render(), media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/completions", passthrough, methods=["POST"]),
            Route("/v1/embeddings", passthrough, methods=["POST"]),
            Route("/health", _health, methods=["GET"]),
            Route("/ready", ready, methods=["GET"]),
            Route("/metrics", metrics_page, methods=["GET"]),
        ]
    )


#: One plan, or several (routed by model, `cotplan.production.routes`).
Plans = SavedPlan | str | Path | Sequence[SavedPlan | str | Path]


class Gateway:
    """The gateway in a background thread, on a free loopback port unless `port` is given:

        with Gateway("plan.json", "http://127.0.0.1:8080/v1") as gateway:
            openai.OpenAI(base_url=gateway.base_url, api_key="-").chat.completions.create(...)

    The arguments are those of `serve`: `plan` is one plan or several (one per model, routed
    by the call's model); `exit="certified"` the certified early exit; `provider` what the
    upstream is, asked of it once by default (`capped`'s ``"detect"``); `client_keys` the
    gateway's own keys, one of which each call must carry (none: no authentication).
    `reload()` reads the plan files again (`cotplan serve` does on SIGHUP).
    """

    def __init__(
        self,
        plan: Plans,
        upstream: str,
        *,
        port: int = 0,
        api_key: str | None = None,
        log: CallLog | str | Path | None = None,
        allow_other_model: bool = False,
        timeout: float = 120.0,
        start_timeout: float = 10.0,
        exit: str = "none",
        exit_plan: ExitPlan | str | Path | None = None,
        provider: str | None = "detect",
        client_keys: Collection[str] = (),
        max_body_bytes: int = MAX_BODY_BYTES,
        size_policy: str = "largest",
    ) -> None:
        self.port = check_port(port)
        upstream_client = openai.OpenAI(
            base_url=check_upstream(upstream),
            # A local server needs no key; the SDK insists on one.
            api_key=api_key or "no-key-needed",
            timeout=timeout,
        )
        if provider == "detect":  # once for every plan, and kept across reloads
            self.detected: Detected | None = detect_provider(upstream_client)
            provider = self.detected.provider
        else:
            self.detected = None
        call_log = log if isinstance(log, CallLog) else CallLog(log)
        plans = list(plan) if isinstance(plan, Sequence) and not isinstance(plan, str) else [plan]
        if len(plans) > 1 and exit_plan is not None:
            raise InputError(
                "is one plan's: with several plans, put each beside its plan", field="exit_plan"
            )

        def build(source: SavedPlan | str | Path) -> CappedClient:
            return capped(
                upstream_client,
                source,
                log=call_log,
                allow_other_model=allow_other_model,
                via="gateway",
                exit=exit,
                exit_plan=exit_plan,
                provider=provider,
                size_policy=size_policy,
            )

        self.routes = Routes(build, plans)
        self.client_keys = tuple(client_keys)
        self.max_body_bytes = max_body_bytes
        self.metrics = GatewayMetrics()
        self.start_timeout = start_timeout
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def client(self) -> CappedClient:
        """The first plan's capped client."""
        return self.routes.first

    def app(self) -> Starlette:
        return make_app(
            self.routes,
            max_body_bytes=self.max_body_bytes,
            client_keys=self.client_keys,
            metrics=self.metrics,
        )

    def reload(self) -> CotplanError | None:
        """Read every plan file again and serve the new plans from the next call on; calls
        under way finish under the plans they started with. On failure the old plans keep
        serving and the error is logged and returned."""
        error = self.routes.reload()
        if error is None:
            logger.warning("reloaded the plans: %s", ", ".join(self.routes.names))
        else:
            logger.error("the plans were not reloaded (still serving the old ones): %s", error)
        return error

    @property
    def base_url(self) -> str:
        """The OpenAI base URL to give any SDK."""
        if self._server is None:
            raise LocalServerError("the gateway is not started")
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> Gateway:
        """Start serving; returns once the port answers."""
        if self._server is not None:
            return self
        sock = self._bind()
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="cotplan-gateway", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + self.start_timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise LocalServerError(f"the gateway did not start on {HOST}:{self.port}")
            time.sleep(0.02)
        return self

    def _bind(self) -> socket.socket:
        # Binding the socket here, rather than letting uvicorn do it, gives port 0 its number
        # before the server starts, and fails in the caller's thread if the port is taken.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, self.port))
        except OSError as exc:
            sock.close()
            raise InputError(
                f"{HOST}:{self.port} is already in use: pick another", field="port"
            ) from exc
        self.port = int(sock.getsockname()[1])
        return sock

    def run(self) -> None:
        """Serve in the foreground until interrupted (`serve`, the CLI): the same app and
        client as `start`, with uvicorn's own signal handling and its access log, whose
        lines are scrubbed of secrets (a client's ``?api_key=`` never reaches the log)."""
        sock = self._bind()
        config = uvicorn.Config(self.app(), log_level="info", lifespan="off")
        scrub_access_log()  # after the Config: it sets up uvicorn's loggers
        if hasattr(signal, "SIGHUP"):  # reload the plans, as servers do on SIGHUP
            signal.signal(signal.SIGHUP, lambda *_: self.reload())
        uvicorn.Server(config).run(sockets=[sock])

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        self._server = None
        self._thread = None

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(
    plan: Plans,
    upstream: str,
    *,
    port: int = 8000,
    api_key: str | None = None,
    log: CallLog | str | Path | None = None,
    allow_other_model: bool = False,
    timeout: float = 120.0,
    exit: str = "none",
    exit_plan: ExitPlan | str | Path | None = None,
    provider: str | None = "detect",
    client_keys: Collection[str] = (),
    size_policy: str = "largest",
) -> None:
    """Serve until interrupted (what `cotplan serve` runs). `plan` is a `SavedPlan` or a path,
    or several (one per model); `upstream` the OpenAI-compatible base URL the calls go to;
    `api_key` the upstream's key (None: none needed); `log` the call log (None: the default
    file); `allow_other_model` applies the plan to a model it was not made for; `timeout`
    bounds each upstream request; `exit` and `exit_plan` as in `capped` (the certified early
    exit); `provider` as in `capped` (by default asked of the upstream once: a server that
    caps thinking itself answers each call in one request); `client_keys` the gateway's own
    keys (see `Gateway`); `size_policy` what a call without a size gets (`capped`). SIGHUP
    reloads the plan files."""
    gateway = Gateway(
        plan,
        upstream,
        port=port,
        api_key=api_key,
        log=log,
        allow_other_model=allow_other_model,
        timeout=timeout,
        exit=exit,
        exit_plan=exit_plan,
        provider=provider,
        client_keys=client_keys,
        size_policy=size_policy,
    )
    gateway.run()
