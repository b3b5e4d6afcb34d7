"""A loopback double of a llama.cpp server with its reasoning parser, on a real port, for the
gateway tests that need one (a gateway of its own reaches its upstream over HTTP): ``/props``
says it caps thinking, each chat completion is answered with a canned reply (after `delay`
seconds, so that calls can be under way while something else happens), and the requests it
got are kept. Raw asyncio in a thread: cheap to start, nothing to install."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from production_support import THINKER

REPLY: dict[str, Any] = {
    "id": "chatcmpl-up",
    "object": "chat.completion",
    "created": 1,
    "model": THINKER,
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": "Answer: 13",
                "reasoning_content": "I add 1 and 4, then 8.",
            },
        }
    ],
    "usage": {
        "prompt_tokens": 41,
        "completion_tokens": 14,
        "total_tokens": 55,
        "completion_tokens_details": {"reasoning_tokens": 4},
    },
}
PROPS = {
    "default_generation_settings": {"params": {}},
    "chat_template_caps": {"supports_preserve_reasoning": True},
}


def _answer(status: str, body: dict[str, Any]) -> bytes:
    raw = json.dumps(body).encode()
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(raw)}"
    return head.encode() + b"\r\n\r\n" + raw


class Loopback:
    """The server (see the module): `url` is its OpenAI base URL; `bodies` the JSON bodies
    of the chat completions it answered, by path."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Loopback:
        self._thread.start()
        if not self._ready.wait(10.0):
            raise RuntimeError("the loopback upstream did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=512)
        )
        self.port = int(server.sockets[0].getsockname()[1])
        self._ready.set()
        self._loop.run_forever()
        server.close()
        # The connections' handlers are still waiting for requests: end them, then the loop.
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    def reply_to(self, path: str, body: dict[str, Any]) -> bytes:
        if path == "/props":
            return _answer("200 OK", PROPS)
        if path == "/v1/chat/completions":
            return _answer("200 OK", REPLY)
        if path in ("/v1/completions", "/v1/embeddings", "/v1/responses"):
            return _answer("200 OK", {"object": path.rsplit("/", 1)[1], "echo": body})
        return _answer("404 Not Found", {"error": {"message": f"no {path}"}})

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                raw = await reader.readexactly(length) if length else b""
                body = json.loads(raw) if raw else {}
                if path != "/props":
                    self.bodies.append((path, body))
                if self.delay and path == "/v1/chat/completions":
                    await asyncio.sleep(self.delay)
                writer.write(self.reply_to(path, body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def wait_for(url: str, timeout: float = 60.0) -> None:
    """Until `url` answers (a gateway process starting)."""
    import httpx2

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer in {timeout:g} s")
