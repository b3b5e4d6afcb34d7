"""Test helpers that are part of the public API: a fault-injecting proxy for OpenAI-style servers.

`FaultProxy` sits on 127.0.0.1 in front of a real server (usually the embedded llama.cpp one) and,
at seeded rates, answers with a 500, a 429 with Retry-After, a response slower than the client's
timeout, a dropped connection, or a 200 whose JSON is cut short. Everything else is forwarded
unchanged. It counts what reached the real server per request body, so a test can prove that a
resumed run asked nothing twice.

    with LocalModel() as server, FaultProxy(server.base_url, rate=0.2, seed=1) as proxy:
        backend = OpenAICompatibleBackend(server.model_id, base_url=proxy.base_url)
        ...
        proxy.stats.faults  # {"500": 7, "429": 5, ...}

`ScriptedEndpoint` stands in for a server when a test needs answers no real one gives on demand
(a 200 with empty `choices`, an `{"error": ...}` body, negative usage): a function of each
request decides the status and body, and can be swapped to heal the endpoint mid-test.
`HangAfter` makes it a hung server: it answers a few requests, then accepts and never answers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx2 as httpx

from cotplan.backends.local import require_loopback
from cotplan.errors import InputError

__all__ = [
    "FAULT_KINDS",
    "Answer",
    "FaultProxy",
    "HangAfter",
    "ProxyStats",
    "ScriptedEndpoint",
    "echo_answer",
]

#: The faults the proxy can inject, in the order a draw picks them.
FAULT_KINDS = ("500", "429", "slow", "drop", "truncate")


@dataclass
class ProxyStats:
    """What the proxy saw: requests in, faults injected by kind, bodies forwarded upstream."""

    received: int = 0
    held: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    forwarded: Counter[str] = field(default_factory=Counter)

    @property
    def forwarded_total(self) -> int:
        return sum(self.forwarded.values())

    @property
    def max_forwards_of_one_request(self) -> int:
        return max(self.forwarded.values(), default=0)


def _gave_up(connection: socket.socket, seconds: float) -> bool:
    """Wait up to `seconds` for the client to close its connection; True if it did."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([connection], [], [], left)
        if not readable:
            break
        try:
            if connection.recv(1, socket.MSG_PEEK) == b"":
                return True
        except OSError:
            return True
        time.sleep(min(0.05, max(left, 0.0)))  # bytes of a next request: keep waiting
    return False


class FaultProxy:
    """A loopback HTTP proxy that injects faults at a seeded rate.

    Parameters
    ----------
    upstream:
        The real server's base URL, e.g. ``http://127.0.0.1:8080/v1``; must be on loopback.
    rate:
        Probability that a request gets a fault instead of a faithful answer.
    kinds:
        Which faults to draw from (uniformly); default all of `FAULT_KINDS`.
    seed:
        Seeds the fault draws, so a failing run can be replayed.
    slow_seconds:
        How long a "slow" fault waits before answering (set it above the client's timeout).
        A client that gives up meanwhile gets nothing and its request is never forwarded, so
        the server does no work nobody will read.
    hold_after:
        Once this many requests were forwarded, hold every further request (unforwarded)
        until `release()`; `stats.held` counts them. A test can then kill its client at a
        known point: every answer it received was complete.
    """

    def __init__(
        self,
        upstream: str,
        *,
        rate: float = 0.2,
        kinds: tuple[str, ...] = FAULT_KINDS,
        seed: int = 0,
        slow_seconds: float = 3.0,
        retry_after: float = 0.0,
        hold_after: int | None = None,
    ) -> None:
        require_loopback(upstream, field="upstream")
        parts = urlsplit(upstream)
        if not 0.0 <= rate <= 1.0:
            raise InputError(f"must be in [0, 1], got {rate!r}", field="rate")
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown or not kinds:
            raise InputError(f"must be a non-empty subset of {FAULT_KINDS}", field="kinds")
        self.upstream_origin = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/")
        self.rate = rate
        self.kinds = kinds
        self.slow_seconds = slow_seconds
        self.retry_after = retry_after
        self.hold_after = hold_after
        self.stats = ProxyStats()
        self._gate = threading.Event()
        self._gate.set()
        self._discard_held = False
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=5.0))

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    def release(self) -> None:
        """Stop holding: requests held so far are dropped unforwarded (their client is
        presumed gone), later ones go through."""
        with self._lock:
            self.hold_after = None
            self._discard_held = True
        self._gate.set()

    def _held(self) -> bool:
        """Wait while holding; True when the request must be dropped."""
        with self._lock:
            if self.hold_after is None or self.stats.forwarded_total < self.hold_after:
                return False
            self._gate.clear()
            self.stats.held += 1
        self._gate.wait()
        return self._discard_held

    def _draw(self) -> str | None:
        with self._lock:
            self.stats.received += 1
            if self._random.random() >= self.rate:
                return None
            kind = self._random.choice(self.kinds)
            self.stats.faults[kind] += 1
            return kind

    def _forward(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Any:
        digest = hashlib.sha256(method.encode() + path.encode() + body).hexdigest()
        with self._lock:
            self.stats.forwarded[digest] += 1
        return self._client.request(
            method, self.upstream_origin + path, content=body, headers=headers
        )

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                if proxy._held():
                    self.close_connection = True
                    return
                fault = proxy._draw()
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault in {"500", "429"}:
                    payload = b'{"error": {"message": "injected fault"}}'
                    self.send_response(int(fault))
                    if fault == "429":
                        self.send_header("retry-after", f"{proxy.retry_after:g}")
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault == "slow" and _gave_up(self.connection, proxy.slow_seconds):
                    # Never forwarded: a one-slot server must not spend its only slot on an
                    # answer nobody reads while the client's retry waits behind it.
                    self.close_connection = True
                    return
                forward_headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in {"content-type", "accept", "authorization"}
                }
                try:
                    upstream = proxy._forward(self.command, self.path, body, forward_headers)
                except httpx.HTTPError:
                    # The client may have given up already (a slow fault past its timeout).
                    with contextlib.suppress(OSError):
                        self.send_error(502, "upstream unreachable")
                    return
                content = upstream.content
                if fault == "truncate":
                    content = content[: max(1, len(content) // 2)]
                self.send_response(upstream.status_code)
                self.send_header("content-type", upstream.headers.get("content-type", "text/plain"))
                self.send_header("content-length", str(len(content)))
                self.end_headers()
                # A client that gave up on a slow answer has closed the socket: that is the point.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(content)

            do_GET = do_POST = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.release()  # no handler thread may wait forever on the gate
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._client.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# -- a scripted endpoint for answers no real server gives on demand --------------------------

#: What `ScriptedEndpoint` answers: an HTTP status and a JSON-able body, or raw bytes to send
#: as they are (a body that is not JSON).
Answer = tuple[int, Any]


def echo_answer(path: str, body: dict[str, Any]) -> Answer:
    """A valid OpenAI-style completion that depends only on the request (so two runs agree)."""
    chat = path.rstrip("/").endswith("chat/completions")
    prompt = json.dumps(body.get("messages") if chat else body.get("prompt"), sort_keys=True)
    text = "answer " + hashlib.sha256(prompt.encode()).hexdigest()[:8]
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "logprobs": None}
    if chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": 2}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return 200, {
        "id": "cmpl-scripted",
        "object": "chat.completion" if chat else "text_completion",
        "created": 0,
        "model": str(body.get("model", "")),
        "choices": [choice],
        "usage": usage,
    }


class ScriptedEndpoint:
    """A loopback OpenAI-style endpoint whose answers a test decides.

    Every POST's path and JSON body go to `answer` (default `echo_answer`), which returns the
    status and body to send; assign another function to `answer` at any time, e.g. to heal a
    misbehaving endpoint between two runs. `requests` counts the POSTs that arrived.

        with ScriptedEndpoint(lambda path, body: (200, {"choices": []})) as endpoint:
            backend = OpenAICompatibleBackend("m", base_url=endpoint.base_url)
    """

    def __init__(self, answer: Callable[[str, dict[str, Any]], Answer] = echo_answer) -> None:
        self.answer = answer
        self.requests = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the endpoint is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedEndpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with endpoint._lock:
                    endpoint.requests += 1
                status, payload = endpoint.answer(self.path, body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                # A client that gave up (a hung request released after it left) is gone.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        # Dual-stack is not needed: clients reach it as 127.0.0.1 or localhost (IPv4 first).
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedEndpoint:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class HangAfter:
    """An `answer` for `ScriptedEndpoint`: the first `after` requests get `answer`'s reply, every
    later one is accepted and never answered (a hung server) until `release()`.

    `hung` counts the requests left hanging. A released request gets a 503, which a client
    still waiting would retry; tests release only after their client is gone.

        hang = HangAfter(3)
        with ScriptedEndpoint(hang) as endpoint:
            ...  # the 4th request and every later one waits forever
    """

    def __init__(
        self, after: int = 0, answer: Callable[[str, dict[str, Any]], Answer] = echo_answer
    ) -> None:
        if after < 0:
            raise InputError(f"must be at least 0, got {after!r}", field="after")
        self.after = after
        self.answer = answer
        self.seen = 0
        self.hung = 0
        self._lock = threading.Lock()
        self._released = threading.Event()

    def __call__(self, path: str, body: dict[str, Any]) -> Answer:
        with self._lock:
            self.seen += 1
            hang = self.seen > self.after
            if hang:
                self.hung += 1
        if not hang:
            return self.answer(path, body)
        self._released.wait()
        return 503, {"error": {"message": "released by the test"}}

    def release(self) -> None:
        """Let every hanging request (and every later one) end with a 503."""
        self._released.set()
