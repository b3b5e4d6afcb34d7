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
(or the ``X-Cotplan-Route`` header names one), and SIGHUP (or a file changed) reloads every
plan file and the model map without dropping a call (`cotplan.production.routes`,
`cotplan.production.model_map`). Where the upstream caps the thinking itself
(asked once at start, `cotplan.production.detect`), each call is its own one request with the
cap added and every field passed on (`cotplan.production.server_cap`).

``POST /v1/responses`` is capped as a chat call is where the upstream takes its cap on a
Responses body (llama.cpp), with the reasoning tokens in
`usage.output_tokens_details.reasoning_tokens`, the ``cotplan`` report, the call log and the
metrics; streamed, the upstream's events are relayed and the final response carries them
(`cotplan.production.responses_stream`). Elsewhere it is refused with an error that says so,
or, unstreamed, passed on uncapped with the header ``X-Cotplan-Capped: false`` where the
operator asked for that (`responses="uncapped"`, `cotplan serve --responses-uncapped`;
`cotplan.production.responses_cap`).
Also served: ``POST /v1/completions`` and ``/v1/embeddings``, passed on unchanged (unstreamed):
a text completion has no chat to cap. And ``GET /v1/models`` (the plans' models), ``GET
/health`` (the process answers), ``GET /ready`` (the upstream answers too; 503 when it does
not) and ``GET /metrics`` (Prometheus: calls, reasoning and answer tokens, cap bites, forced
and missing answers, errors and latency by route and model, `cotplan.production.metrics`).
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

import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Collection, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool

# Imported at start rather than on the first call, which would wait for it: each reply's
# report prices the call with it.
import cotplan.generate.call_cost  # noqa: F401
from cotplan.backends.keys import scrub_secrets
from cotplan.errors import CotplanError, InputError, LocalServerError
from cotplan.planner import SavedPlan
from cotplan.planner.exit_plan import ExitPlan
from cotplan.production.call_prices import price_row
from cotplan.production.detect import Detected, detect_provider
from cotplan.production.gateway_app import MAX_BODY_BYTES, make_app
from cotplan.production.gateway_errors import logger
from cotplan.production.gateway_workers import check_workers, serve_workers
from cotplan.production.log import CallLog
from cotplan.production.log_writer import BatchedCallLog
from cotplan.production.metrics import GatewayMetrics
from cotplan.production.model_map import load_model_map, reload_model_map
from cotplan.production.routes import Capped, Routes
from cotplan.production.wrapper import AsyncCappedClient, capped

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

#: Connections kept to the upstream: as many as calls a busy gateway has under way.
_POOL = 1000


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


def _stamp(path: Path | None) -> tuple[int, int]:
    """A file's modification time and size, to notice a change ((0, 0): none, or missing)."""
    if path is None:
        return (0, 0)
    try:
        stat = path.stat()
    except OSError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)


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
    `responses` is what a Responses call the upstream cannot cap gets (`make_app`);
    `model_map` a model map file declaring the team's own model names
    (`cotplan.production.model_map`). `reload()` reads the model map and the plan files again
    (`cotplan serve` does on SIGHUP); while serving, a plan file or model map that changes is
    read again within `watch` seconds (0: only on `reload()`).
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
        access_log: bool = True,
        watch: float = 1.0,
        responses: str = "refuse",
        model_map: str | os.PathLike[str] | None = None,
    ) -> None:
        self.port = check_port(port)
        # The team's own model names, declared before any plan is applied to them (and read
        # again with the plans: `reload`).
        self.model_map = None if model_map is None else Path(model_map)
        self._mapped: list[str] = []
        self._map_seen = _stamp(self.model_map)
        if self.model_map is not None:
            self._mapped = [family.prefix for family in load_model_map(self.model_map)]
        self._access_log = access_log
        self.upstream = check_upstream(upstream)
        # A local server needs no key; the SDK insists on one.
        self._api_key = api_key or "no-key-needed"
        self._timeout = timeout
        if provider == "detect":  # once for every plan, and kept across reloads
            asker = openai.OpenAI(base_url=self.upstream, api_key=self._api_key, timeout=timeout)
            self.detected: Detected | None = detect_provider(asker)
            provider = self.detected.provider
        else:
            self.detected = None
        # Rows are written by a thread of their own, in batches (`log_writer`): no commit on
        # the event loop. The same file as the caller's `CallLog`.
        if isinstance(log, BatchedCallLog):
            call_log = log
        else:
            call_log = BatchedCallLog(log.path if isinstance(log, CallLog) else log)
        self.log = call_log
        #: What a worker process builds its own gateway from (`run(workers=...)`).
        self._spec: dict[str, Any] = {
            "plan": plan,
            "upstream": self.upstream,
            "api_key": api_key,
            "log": call_log.path,
            "allow_other_model": allow_other_model,
            "timeout": timeout,
            "exit": exit,
            "exit_plan": exit_plan,
            "provider": provider,
            "client_keys": tuple(client_keys),
            "max_body_bytes": max_body_bytes,
            "size_policy": size_policy,
            "watch": watch,
            "responses": responses,
            "model_map": self.model_map,
        }
        # One client, one pool of kept-alive connections to the upstream, for every call
        # (made again for a second start: its connections belong to the first's event loop).
        self._upstream_client = self._new_client()
        self._served = False
        plans = list(plan) if isinstance(plan, Sequence) and not isinstance(plan, str) else [plan]
        if len(plans) > 1 and exit_plan is not None:
            raise InputError(
                "is one plan's: with several plans, put each beside its plan", field="exit_plan"
            )

        def build(source: SavedPlan | str | Path) -> AsyncCappedClient:
            return capped(
                self._upstream_client,
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
        for name in self.routes.names:  # each model's price row, found now (`call_prices`)
            with contextlib.suppress(InputError):
                price_row(name)
        self.client_keys = tuple(client_keys)
        self.max_body_bytes = max_body_bytes
        self.responses = responses
        self.metrics = GatewayMetrics()
        self.start_timeout = start_timeout
        self.watch = watch
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def _new_client(self) -> openai.AsyncOpenAI:
        limits = httpx2.Limits(max_connections=_POOL, max_keepalive_connections=_POOL)
        return openai.AsyncOpenAI(
            base_url=self.upstream,
            api_key=self._api_key,
            timeout=self._timeout,
            http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=self._timeout),
        )

    @property
    def client(self) -> Capped:
        """The first plan's capped client."""
        return self.routes.first

    def app(self) -> Starlette:
        """The app to serve (once per start: see `_new_client`)."""
        if self._served:
            self._upstream_client = self._new_client()
            error = self.routes.reload()
            if error is not None:
                raise error
        self._served = True
        client = self._upstream_client

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            watcher = asyncio.create_task(self._watch()) if self.watch > 0 else None
            try:
                yield
            finally:
                if watcher is not None:
                    watcher.cancel()
                await client.close()
                # The rows still queued are written now (SIGTERM and Ctrl-C come here too).
                await run_in_threadpool(self.log.flush)

        return make_app(
            self.routes,
            max_body_bytes=self.max_body_bytes,
            client_keys=self.client_keys,
            metrics=self.metrics,
            lifespan=lifespan,
            responses=self.responses,
        )

    async def _watch(self) -> None:
        """Reload when a plan file changes (a stat per file every `watch` seconds); the
        reload itself runs in a worker thread, off the event loop."""
        while True:
            await asyncio.sleep(self.watch)
            if self.routes.changed() or _stamp(self.model_map) != self._map_seen:
                await run_in_threadpool(self.reload)

    def reload(self) -> CotplanError | None:
        """Read the model map and every plan file again and serve the new plans from the next
        call on; calls under way finish under the plans they started with. On failure the old
        model map and plans keep serving and the error is logged and returned."""
        error = self._reload_model_map()
        if error is not None:
            logger.error("the model map was not reloaded (still serving the old one): %s", error)
            return error
        error = self.routes.reload()
        if error is None:
            logger.warning("reloaded the plans: %s", ", ".join(self.routes.names))
        else:
            logger.error("the plans were not reloaded (still serving the old ones): %s", error)
        return error

    def _reload_model_map(self) -> CotplanError | None:
        if self.model_map is None:
            return None
        self._map_seen = _stamp(self.model_map)
        try:
            declared = reload_model_map(self.model_map, self._mapped)
        except CotplanError as exc:
            return exc
        self._mapped = [family.prefix for family in declared]
        return None

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
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="on")
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

    def run(self, workers: int = 1, *, access_log: bool | None = None) -> int:
        """Serve in the foreground until interrupted (`serve`, the CLI): the same app and
        client as `start`, with uvicorn's own signal handling and its access log (unless
        `access_log`, or the gateway's own, is False), whose lines are scrubbed of secrets
        (a client's ``?api_key=`` never reaches the log). With `workers` > 1, that many
        processes serve the port (`cotplan.production.gateway_workers`). Returns the exit
        status (0: stopped)."""
        workers = check_workers(workers)
        if access_log is not None:
            self._access_log = access_log
        sock = self._bind()
        if workers == 1:
            self.serve_on(sock)
            return 0
        # Each worker builds its own gateway from the same arguments, the upstream's kind as
        # found here (asked once, not once per worker).
        factory = functools.partial(Gateway, **self._spec, access_log=self._access_log)
        return serve_workers(factory, sock, workers)

    def serve_on(self, sock: socket.socket) -> None:
        """Serve on a bound socket until SIGTERM or Ctrl-C (one worker of `run`)."""
        config = uvicorn.Config(
            self.app(), log_level="info", lifespan="on", access_log=self._access_log
        )
        scrub_access_log()  # after the Config: it sets up uvicorn's loggers
        if hasattr(signal, "SIGHUP"):  # reload the plans, as servers do on SIGHUP
            signal.signal(signal.SIGHUP, lambda *_: self.reload())
        try:
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            self.log.close()

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        self._server = None
        self._thread = None
        self.log.flush()

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
    workers: int = 1,
    responses: str = "refuse",
    model_map: str | os.PathLike[str] | None = None,
) -> int:
    """Serve until interrupted (what `cotplan serve` runs). `plan` is a `SavedPlan` or a path,
    or several (one per model); `upstream` the OpenAI-compatible base URL the calls go to;
    `api_key` the upstream's key (None: none needed); `log` the call log (None: the default
    file); `allow_other_model` applies the plan to a model it was not made for; `timeout`
    bounds each upstream request; `exit` and `exit_plan` as in `capped` (the certified early
    exit); `provider` as in `capped` (by default asked of the upstream once: a server that
    caps thinking itself answers each call in one request); `client_keys` the gateway's own
    keys (see `Gateway`); `size_policy` what a call without a size gets (`capped`); `workers`
    how many processes serve the port (`Gateway.run`); `responses` what a Responses call the
    upstream cannot cap gets (`make_app`); `model_map` the team's model map file. SIGHUP, or a
    plan file or the model map changed, reloads them. Returns the exit status."""
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
        responses=responses,
        model_map=model_map,
    )
    return gateway.run(workers)
