"""A loopback reasoning server that thinks at realistic lengths: a load generator, not a model.

`LoopbackReasoner` speaks the chat-completions shape vLLM (`--reasoning-parser deepseek_r1`)
and llama.cpp return for an R1-style thinker: the thinking in `message.reasoning_content`
(`delta.reasoning_content` when streamed), the answer alone in `content`, usage with
`completion_tokens_details.reasoning_tokens`, chat logprobs with every generated token's string
(the raw output: `<think>`, the thinking, `</think>`, the answer), `max_tokens` as a hard cap,
and `continue_final_message` to continue an assistant turn whose `reasoning_content` carries
thinking cut short. It stands in for a vLLM cluster when what is measured is cotplan's own cost
(requests, memory, cache, wall time) as items and thinking lengths grow.

What it "thinks" is deterministic per question. A question ``What is A + B?`` (what
`arithmetic_items` writes) gets a thinking length drawn from a log-normal around
`mean_thinking` (seeded by the question), settles its answer after a share of it, then
re-checks until the length is reached, closes with `</think>` and answers ``Answer: A+B``. An
answer forced after thinking cut short is right only when the thinking reached the settle
point (else it is off by one). Thinking tokens are words (`" step17"`), so a thought's length
is its number of words plus the opener.

`UsageTally` is a forwarding proxy that adds up the tokens an upstream server generated, per
request (the usage it reported), for tests that check what a calibration made a server write.

    with LoopbackReasoner(mean_thinking=1500) as server:
        backend = connect("openai:loopback-r1", base_url=server.base_url, protocol="think")
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx

from cotplan.backends.local import require_loopback
from cotplan.tasks.item import TaskItem

__all__ = ["LoopbackReasoner", "LoopbackStats", "UsageTally", "arithmetic_items"]

_QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")
_OPEN, _CLOSE = "<think>", "</think>"


def arithmetic_items(count: int, *, n: int = 8, start: int = 0) -> list[TaskItem]:
    """`count` questions the loopback server answers (``What is A + B?``), ids from `start`."""
    return [
        TaskItem(
            id=f"loop-{n}-{i}",
            prompt=f"What is {i} + {n}?",
            answer=str(i + n),
            kind="integer",
            family="loopback",
            n=n,
        )
        for i in range(start, start + count)
    ]


@dataclass
class LoopbackStats:
    """What the server did: requests, tokens generated (thinking and answers), streamed ones."""

    requests: int = 0
    streamed: int = 0
    thinking_tokens: int = 0
    answer_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def generated(self) -> int:
        return self.thinking_tokens + self.answer_tokens


class LoopbackReasoner:
    """The server (see the module docstring). `mean_thinking` is the median thinking length
    in tokens, `spread` the log-normal's sigma, `settle` the share of its thinking after which
    an item's answer is right (the rest is over-thinking), `model` the name it answers to."""

    def __init__(
        self,
        *,
        mean_thinking: float = 1000.0,
        spread: float = 0.5,
        settle: float = 0.4,
        model: str = "loopback-r1",
    ) -> None:
        self.mean_thinking = float(mean_thinking)
        self.spread = float(spread)
        self.settle = float(settle)
        self.model = model
        self.stats = LoopbackStats()
        self._server: ThreadingHTTPServer | None = None

    # -- the "model" ---------------------------------------------------------------------------

    def _draw(self, question: str) -> tuple[int, int, str]:
        """(thinking words, settle point in words, the right answer) of a question."""
        digest = hashlib.sha256(question.encode()).digest()
        u1 = (int.from_bytes(digest[:8], "big") + 1) / 2.0**64
        u2 = int.from_bytes(digest[8:16], "big") / 2.0**64
        gauss = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
        words = max(4, round(self.mean_thinking * math.exp(self.spread * gauss)))
        match = _QUESTION.search(question)
        answer = str(int(match.group(1)) + int(match.group(2))) if match else "0"
        return words, max(1, round(words * self.settle)), answer

    @staticmethod
    def _thinking_tokens(words: int, salt: int) -> list[str]:
        tokens = []
        for i in range(words):
            lead = "\n" if i and i % 12 == 0 else " "
            tokens.append(f"{lead}step{(i * 7919 + salt) % 1000}")
        return tokens

    def _reply(self, body: dict[str, Any]) -> tuple[list[str], int, str]:
        """The raw tokens to send (before the cap), how many are thinking, and the question."""
        messages = body.get("messages") or []
        question = " ".join(
            str(m.get("content") or "") for m in messages if m.get("role") == "user"
        )
        words, settle, answer = self._draw(question)
        last = messages[-1] if messages else {}
        if body.get("continue_final_message") and last.get("role") == "assistant":
            # A forced answer after thinking cut short: right only past the settle point.
            thought = len(str(last.get("reasoning_content") or "").split())
            given = answer if thought >= settle else str(int(answer) + 1)
            return [f" {given}"], 0, question
        salt = int.from_bytes(hashlib.sha256(question.encode()).digest()[:4], "big")
        thinking = [_OPEN, "\n", *self._thinking_tokens(words, salt), "\n"]
        tokens = [*thinking, _CLOSE, "\n\n", "Answer:", f" {answer}"]
        return tokens, len(thinking), question

    def complete(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The chat completion for `body` (non-streamed) and its stream chunks."""
        tokens, thinking_count, _ = self._reply(body)
        cap = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1 << 30)
        sent = tokens[: max(cap, 0)]
        finish = "length" if len(sent) < len(tokens) else "stop"
        thought = sent[:thinking_count]
        rest = sent[thinking_count:]
        if thinking_count:
            reasoning = "".join(thought).removeprefix(_OPEN).strip()
            content = "".join(rest).removeprefix(_CLOSE).strip()
        else:
            reasoning, content = "", "".join(rest)
        with self.stats.lock:
            self.stats.requests += 1
            self.stats.streamed += bool(body.get("stream"))
            self.stats.thinking_tokens += len(thought)
            self.stats.answer_tokens += len(sent) - len(thought)
        prompt = sum(
            len(str(m.get("content") or "").split()) + 4 for m in body.get("messages") or []
        )
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": len(sent),
            "total_tokens": prompt + len(sent),
            "completion_tokens_details": {"reasoning_tokens": len(thought)},
        }
        logprobs: dict[str, Any] | None = None
        if body.get("logprobs"):
            logprobs = {
                "content": [
                    {"token": t, "logprob": -0.01, "bytes": None, "top_logprobs": []} for t in sent
                ]
            }
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            message["reasoning_content"] = reasoning
        reply = {
            "id": "loopback",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}
            ],
            "usage": usage,
        }
        chunks = []
        for i, token in enumerate(sent):
            key = "reasoning_content" if i < len(thought) else "content"
            chunks.append(self._chunk({key: token}, None))
        chunks.append(self._chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**self._chunk({}, None), "choices": [], "usage": usage})
        return reply, chunks

    def _chunk(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": "loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    # -- serving ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> LoopbackReasoner:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without this, Nagle's algorithm and the
            # client's delayed ACK hold every reply about 40 ms.
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                models = {"object": "list", "data": [{"id": server.model, "object": "model"}]}
                self._send(200, json.dumps(models).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "only chat completions"}}')
                    return
                reply, chunks = server.complete(body)
                if not body.get("stream"):
                    self._send(200, json.dumps(reply).encode())
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for data in _events(chunks):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.write(b"0\r\n\r\n")

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LoopbackReasoner:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _events(chunks: list[dict[str, Any]]) -> Iterator[bytes]:
    for chunk in chunks:
        yield b"data: " + json.dumps(chunk).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


class UsageTally:
    """A loopback proxy in front of `upstream` (an OpenAI-compatible base URL on loopback) that
    forwards every POST unchanged and records, per request, its `max_tokens`, whether it
    continued an assistant turn, and the completion tokens the upstream reported generating."""

    def __init__(self, upstream: str) -> None:
        require_loopback(upstream, field="upstream")
        self.upstream = upstream.rstrip("/")
        self.calls: list[tuple[int, bool, int]] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=600.0)
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def generated(self) -> int:
        return sum(c[2] for c in self.calls)

    def start(self) -> UsageTally:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without this, Nagle's algorithm and the
            # client's delayed ACK hold every reply about 40 ms.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                path = self.path.removeprefix("/v1")
                reply = proxy._client.post(
                    proxy.upstream + path,
                    content=raw,
                    headers={"content-type": "application/json"},
                )
                body = json.loads(raw or b"{}")
                try:
                    made = int((reply.json().get("usage") or {}).get("completion_tokens") or 0)
                except ValueError:
                    made = 0
                with proxy._lock:
                    proxy.calls.append(
                        (
                            int(body.get("max_tokens") or 0),
                            bool(body.get("continue_final_message")),
                            made,
                        )
                    )
                data = reply.content
                self.send_response(reply.status_code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._client.close()

    def __enter__(self) -> UsageTally:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
