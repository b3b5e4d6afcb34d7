"""One shared async client for a live calibration's requests, at most `slots` of them in flight.

A self-hosted engine (vLLM, SGLang, llama.cpp) runs as many requests at once as it has slots
(vLLM's ``--max-num-seqs``, llama.cpp's ``--parallel``) and queues the rest. `AsyncSender`
sends every request of a live calibration through one `openai.AsyncOpenAI` client on one event
loop (its own daemon thread), one connection pool, and an `asyncio.Semaphore` of the server's
`slots` bounds the requests in flight from this client, however many items are worked on
(`cotplan.planner.in_flight.async_requests` turns it on).

The items' own logic (`cotplan.generate.budgeted.budgeted_answers`, which decides each next
request from the last answer) stays as it is and runs on the map's threads, which only wait on
the loop; each request is the one the sync client sends (same fields, same checks, same cache
key), so the answers are the same, row for row.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import httpx2 as httpx
import openai

__all__ = ["AsyncSender"]

#: The attempts of the request the current task sends (the hook counts into it).
_ATTEMPTS: ContextVar[list[int] | None] = ContextVar("cotplan_attempts", default=None)


class AsyncSender:
    """One `openai.AsyncOpenAI` client on its own event loop; `send` blocks the calling thread
    until the request (with the SDK's retries) is answered, never more than `slots` at once."""

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        slots: int,
        on_attempt: Callable[[], None] = lambda: None,
    ) -> None:
        self.slots = max(1, slots)
        self.sent = 0
        self.peak = 0
        self._running = 0
        self._on_attempt = on_attempt
        # Requests waited on from the map's threads; on close each still waiting is cancelled,
        # so no thread waits forever on a loop that has stopped (an interrupted run would then
        # hang at exit, joining it).
        self._waiting: set[concurrent.futures.Future[Any]] = set()
        self._closed = False
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="cotplan-async-requests", daemon=True
        )
        self._thread.start()

        async def count(request: httpx.Request) -> None:
            counter = _ATTEMPTS.get()
            if counter is not None:
                counter[0] += 1
            self._on_attempt()

        async def build() -> tuple[httpx.AsyncClient, openai.AsyncOpenAI, asyncio.Semaphore]:
            # Built on the loop: the semaphore and the connection pool belong to it.
            http = httpx.AsyncClient(
                timeout=client.timeout,
                limits=httpx.Limits(max_connections=max(8, 2 * self.slots)),
                event_hooks={"request": [count]},
            )
            shared = openai.AsyncOpenAI(
                api_key=client.api_key,
                base_url=client.base_url,
                max_retries=client.max_retries,
                timeout=client.timeout,
                http_client=http,
            )
            return http, shared, asyncio.Semaphore(self.slots)

        self._http, self._client, self._slots = self._run(build())

    def _run(self, coroutine: Any) -> Any:
        with self._lock:
            if self._closed:
                coroutine.close()
                raise concurrent.futures.CancelledError("the calibration's requests were closed")
            future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
            self._waiting.add(future)
        try:
            return future.result()
        finally:
            with self._lock:
                self._waiting.discard(future)

    def send(self, operation: str, params: dict[str, Any], attempts: list[int]) -> Any:
        """The SDK's response to one request (`operation` "chat" or "completions", `params`
        the sync client's keyword arguments); its attempts are counted into `attempts[0]`."""
        return self._run(self._send(operation, params, attempts))

    async def _send(self, operation: str, params: dict[str, Any], attempts: list[int]) -> Any:
        _ATTEMPTS.set(attempts)
        async with self._slots:
            self._running += 1
            self.peak = max(self.peak, self._running)
            try:
                if operation == "completions":
                    return await self._client.completions.create(**params)
                return await self._client.chat.completions.create(**params)
            finally:
                self._running -= 1
                self.sent += 1

    async def _shutdown(self) -> None:
        # Requests still in flight (the run was interrupted) are cancelled and their errors
        # collected here, so none is logged as an exception nobody retrieved.
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._client.close()

    def close(self) -> None:
        with self._lock:
            if self._closed or self._loop.is_closed():
                return
            # From here no request is sent; those already submitted are scheduled on the loop
            # before the shutdown below (the loop runs callbacks in order), so it cancels them.
            self._closed = True
        try:
            shutdown = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            # A request that ignores its cancellation: the loop stops regardless.
            with contextlib.suppress(TimeoutError):
                shutdown.result(timeout=10.0)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5.0)
            with self._lock:
                for future in self._waiting:
                    future.cancel()
            if not self._thread.is_alive():
                self._loop.close()
