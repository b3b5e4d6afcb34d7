"""A loopback fault server for the adversarial rerun (tests/test_adversarial.py).

It speaks OpenAI's chat and text completions, streamed (server-sent events) and not, on
127.0.0.1, with a good answer that depends only on the request, so two runs agree. `fault`
names what it does instead of answering well, for the first `times` requests that reach it
(then it answers well: a transient fault), or for every request (`times=None`). It records
what a client paid for: `paid` counts, per request body, the good answers it sent, so a test
can prove a rerun asked nothing twice; `seen_keys` holds every Authorization header it got,
so a test can check that the key it was sent appears nowhere else.

Unlike `cotplan.backends.testing.ScriptedEndpoint` (JSON only), it can send what a broken
server sends on the wire: a reset connection, a stream of garbage, a status with any
Retry-After header, and an error that echoes the request's own headers, key and all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["CLIENT_FAULTS", "STREAM_FAULTS", "FaultServer", "good_reply"]

#: Faults on any request: (status, headers, body) or a named wire behaviour.
CLIENT_FAULTS = (
    "429-retry-after-nan",
    "429-retry-after-inf",
    "429-retry-after-huge",
    "500",
    "502",
    "503",
    "reset",
    "slow",
    "cut-json",
    "not-json",
    "no-choices",
    "empty-choices",
    "choice-not-object",
    "error-body",
    "content-not-text",
    "no-usage",
    "negative-usage",
    "huge-answer",
    "echo-headers",
    # Grown for the 224 cases: each a fault of its own on the wire or in the body.
    "huge-answer-20mb",
    "usage-null",
    "string-usage",
    "absurd-usage",
    "reasoning-over-completion",
    "401-echo",
    "404",
    "empty-200",
    "html-500",
    "429-retry-after-negative",
    "503-retry-after-date",
    "message-missing",
)
#: Faults that only a streamed request can meet.
STREAM_FAULTS = (
    "stream-as-json",
    "stream-garbage",
    "stream-bad-event",
    "stream-no-finish",
    "stream-empty",
    "stream-done-only",
    "stream-error-echo",
)


def good_reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The well-formed answer to a request: a function of the request alone."""
    chat = path.rstrip("/").endswith("chat/completions")
    asked = body.get("messages") if chat else body.get("prompt")
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
    text = " Answer: " + str(int(digest[:4], 16) % 10)
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "logprobs": None}
    if chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    return {
        "id": "cmpl-fault-server",
        "object": "chat.completion" if chat else "text_completion",
        "created": 0,
        "model": str(body.get("model", "")),
        "choices": [choice],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


def _stream_events(reply: dict[str, Any], chat: bool) -> bytes:
    choice = reply["choices"][0]
    text = choice["message"]["content"] if chat else choice["text"]
    delta: dict[str, Any] = {"content": text} if chat else {}
    first: dict[str, Any] = {"index": 0, "finish_reason": None}
    first["delta" if chat else "text"] = delta if chat else text
    last: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
    last["delta" if chat else "text"] = {} if chat else ""
    kind = "chat.completion.chunk" if chat else "text_completion"
    chunks = [
        {"id": reply["id"], "object": kind, "created": 0, "model": reply["model"], "choices": [c]}
        for c in (first, last)
    ]
    if "usage" in reply:  # a server that sends no usage sends no usage chunk either
        chunks.append({**chunks[-1], "choices": [], "usage": reply["usage"]})
    events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
    return (events + "data: [DONE]\n\n").encode()


class FaultServer:
    """The server (see the module doc). Set `fault` (and `times`) between runs; `heal()`
    makes every later answer good."""

    def __init__(
        self,
        fault: str = "",
        *,
        times: int | None = None,
        slow_s: float = 3.0,
        hold_after: int | None = None,
    ) -> None:
        self.fault = fault
        self.times = times
        self.slow_s = slow_s
        # Once this many answers were paid for, every later request waits, unanswered, until
        # `release()`: a test can then kill its client at a known point.
        self.hold_after = hold_after
        self.held = 0
        self.admitted = 0
        self._gate = threading.Event()
        self.received = 0
        self.faulted = 0
        self.paid: Counter[str] = Counter()
        self.seen_keys: set[str] = set()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fault server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def heal(self) -> None:
        with self._lock:
            self.fault = ""

    def release(self) -> None:
        """Stop holding: held requests get a 503 (their client is gone), later ones answers."""
        with self._lock:
            self.hold_after = None
        self._gate.set()

    def _hold(self) -> bool:
        """Wait while holding; True when the request was held (and must not be answered)."""
        with self._lock:
            # Admissions are counted here, not when the answer is paid: requests arriving
            # together must not all pass the check before the first of them is paid for.
            if self.hold_after is None or self.admitted < self.hold_after:
                self.admitted += 1
                return False
            self.held += 1
        self._gate.wait()
        return True

    def _draw(self) -> str:
        with self._lock:
            self.received += 1
            if not self.fault or (self.times is not None and self.faulted >= self.times):
                return ""
            self.faulted += 1
            return self.fault

    def _paid(self, path: str, raw: bytes) -> None:
        with self._lock:
            self.paid[hashlib.sha256(path.encode() + raw).hexdigest()] += 1

    def start(self) -> FaultServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # `/models`: what provider detection asks
                self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                key = self.headers.get("authorization")
                if key:
                    with server._lock:
                        server.seen_keys.add(key)
                body = json.loads(raw or b"{}")
                if server._hold():
                    self._send(503, {"error": {"message": "released after its client left"}})
                    return
                chat = self.path.rstrip("/").endswith("chat/completions")
                fault = server._draw()
                reply = good_reply(self.path, body)
                if fault and self._fault(fault, reply, chat, body):
                    return
                if body.get("stream"):
                    self._raw(200, _stream_events(reply, chat), "text/event-stream")
                else:
                    self._send(200, reply)
                server._paid(self.path, raw)

            def _fault(self, fault: str, reply: dict[str, Any], chat: bool, body: Any) -> bool:
                """Send the fault; False when it is a change to a good answer sent as usual."""
                choice = reply["choices"][0]
                if fault.startswith(("429-retry-after-", "503-retry-after-")):
                    wait = {
                        "nan": "nan",
                        "inf": "inf",
                        "huge": "100000",
                        "negative": "-1",
                        "date": "Wed, 21 Oct 2015 07:28:00 GMT",
                    }[fault.rsplit("-", 1)[1]]
                    status = int(fault[:3])
                    self._send(status, {"error": {"message": "slow down"}}, {"retry-after": wait})
                elif fault in {"500", "502", "503"}:
                    self._send(int(fault), {"error": {"message": f"injected {fault}"}})
                elif fault == "reset":
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                        )
                        self.connection.close()
                elif fault == "slow":
                    time.sleep(server.slow_s)
                    self.close_connection = True
                elif fault == "cut-json":
                    data = json.dumps(reply).encode()
                    self._raw(200, data[: len(data) // 2], "application/json")
                elif fault == "not-json":
                    self._raw(200, b"<html>502 Bad Gateway</html>", "text/html")
                elif fault == "no-choices":
                    self._send(200, {k: v for k, v in reply.items() if k != "choices"})
                elif fault == "empty-choices":
                    self._send(200, {**reply, "choices": []})
                elif fault == "choice-not-object":
                    self._send(200, {**reply, "choices": ["text"]})
                elif fault == "error-body":
                    self._send(200, {"error": {"message": "the model is overloaded"}})
                elif fault == "content-not-text":
                    if chat:
                        choice["message"]["content"] = [1, 2]
                    else:
                        choice["text"] = {"a": 1}
                    self._send(200, reply)
                elif fault in {"no-usage", "negative-usage"}:
                    if fault == "no-usage":
                        del reply["usage"]
                    else:
                        reply["usage"]["completion_tokens"] = -5
                    return False  # a good answer with bad counts: paid for
                elif fault == "huge-answer":
                    text = "word " * 400_000  # 2 MB to a request capped at a few tokens
                    if chat:
                        choice["message"]["content"] = text
                    else:
                        choice["text"] = text
                    reply["usage"]["completion_tokens"] = 419_430
                    self._send(200, reply)
                elif fault in {"echo-headers", "401-echo"}:
                    echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
                    status = 400 if fault == "echo-headers" else 401
                    self._send(status, {"error": {"message": f"bad request; headers: {echoed}"}})
                elif fault == "huge-answer-20mb":
                    text = "word " * 4_194_304  # 20 MB, as the pass sent to a 16-token request
                    if chat:
                        choice["message"]["content"] = text
                    else:
                        choice["text"] = text
                    reply["usage"]["completion_tokens"] = 4_194_307
                    self._send(200, reply)
                elif fault in {
                    "usage-null",
                    "string-usage",
                    "absurd-usage",
                    "reasoning-over-completion",
                }:
                    usage = reply["usage"]
                    if fault == "usage-null":
                        reply["usage"] = None
                    elif fault == "string-usage":
                        usage["prompt_tokens"] = "seven"
                    elif fault == "absurd-usage":
                        usage["prompt_tokens"] = 10**12
                    else:
                        usage["completion_tokens_details"] = {"reasoning_tokens": 99}
                    return False  # a good answer with counts that cannot be right: paid for
                elif fault == "404":
                    self._send(404, {"error": {"message": "no such model", "type": "not_found"}})
                elif fault == "empty-200":
                    self._raw(200, b"", "application/json")
                elif fault == "html-500":
                    self._raw(500, b"<html><body>Internal Server Error</body></html>", "text/html")
                elif fault == "message-missing":
                    choice.pop("message" if chat else "text")
                    self._send(200, reply)
                elif fault == "stream-empty":
                    self._raw(200, b"", "text/event-stream")
                elif fault == "stream-done-only":
                    self._raw(200, b"data: [DONE]\n\n", "text/event-stream")
                elif fault == "stream-error-echo":
                    echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
                    first = _stream_events(reply, chat).split(b"\n\n")[0] + b"\n\n"
                    error = {"error": {"message": f"slot died; headers: {echoed}"}}
                    self._raw(
                        200, first + f"data: {json.dumps(error)}\n\n".encode(), "text/event-stream"
                    )
                elif fault == "stream-as-json":
                    self._send(200, reply)
                elif fault == "stream-garbage":
                    self._raw(200, b"hello\nworld\n\n", "text/event-stream")
                elif fault == "stream-bad-event":
                    self._raw(200, b"data: {not json\n\n", "text/event-stream")
                elif fault == "stream-no-finish":
                    events = _stream_events(reply, chat).split(b"\n\n")[0] + b"\n\n"
                    self._raw(200, events, "text/event-stream")
                else:
                    raise ValueError(f"unknown fault {fault!r}")
                return True

            def _send(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                self._raw(status, json.dumps(payload).encode(), "application/json", headers)

            def _raw(
                self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
            ) -> None:
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.release()  # no handler may wait forever
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
