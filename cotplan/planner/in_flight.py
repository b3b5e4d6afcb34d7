"""A live calibration's requests through one shared async client (`AsyncSender`), sized by
the server's slots: `async_requests` is where `cotplan.planner.calibrate` turns it on.

`concurrency` (the server's slots where it says them, `cotplan calibrate --concurrency`, else
the backend's default) is the semaphore's size, and as many items are worked on at once. (Twice
as many items, so that an item between two requests leaves no slot idle, was measured slower on
a 2-core machine where the client's CPU is the limit: `benchmarks/calibration_scale.py
--concurrency --quick`, 2026-12-05.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cotplan.backends.async_sender import AsyncSender
from cotplan.backends.base import Backend
from cotplan.backends.openai_compat import OpenAICompatibleBackend

__all__ = ["async_requests"]


@contextmanager
def async_requests(backend: Backend, concurrency: int | None) -> Iterator[int | None]:
    """Send `backend`'s requests through one `AsyncSender` of `concurrency` slots (default:
    the backend's) while the block runs, and give the number of items to work on at once (the
    slots); a backend that cannot (not one OpenAI-compatible client) is left as it is and
    `concurrency` comes back unchanged, and one already sending this way keeps its sender."""
    own_client = isinstance(backend, OpenAICompatibleBackend) and (
        type(backend)._client_for_this_thread is OpenAICompatibleBackend._client_for_this_thread
    )
    if not isinstance(backend, OpenAICompatibleBackend) or not own_client:
        yield concurrency
        return
    if backend.sender is not None:
        yield backend.sender.slots
        return
    slots = max(1, concurrency or backend.default_concurrency)
    sender = AsyncSender(backend._client, slots=slots, on_attempt=backend.count_async_attempt)
    backend.sender = sender
    try:
        yield slots
    finally:
        backend.sender = None
        sender.close()
