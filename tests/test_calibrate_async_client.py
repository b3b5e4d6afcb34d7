"""A live calibration sends its requests through one shared async client, at most the server's
slots in flight, and its table is the one threads over the sync client build, row for row."""

from __future__ import annotations

import warnings
from typing import Any

import openai
import pandas as pd
import pytest

from cotplan.backends import connect
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import ServerUnreachableError
from cotplan.loopback import LoopbackReasoner, arithmetic_items
from cotplan.planner.calibrate import calibrate
from cotplan.planner.in_flight import async_requests

ITEMS = arithmetic_items(4, n=8)


def _per_thread_clients(backend: OpenAICompatibleBackend) -> None:
    """Make `backend` one whose requests go through a client per thread (as the embedded
    model's replicas do): it keeps the map's threads over the sync client."""

    class PerThread(type(backend)):  # type: ignore[misc]
        def _client_for_this_thread(self) -> openai.OpenAI:
            return self._client

    backend.__class__ = PerThread


def _backend(server: LoopbackReasoner) -> OpenAICompatibleBackend:
    backend = connect("openai:loopback-r1", base_url=server.base_url, protocol="think")
    assert isinstance(backend, OpenAICompatibleBackend)
    backend.cache = None
    return backend


def _calibrate(backend: Any, concurrency: int) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no price for the loopback model
        return calibrate(
            backend, ITEMS, uncapped_tokens=512, concurrency=concurrency, progress=False
        )


def test_the_async_client_gives_the_threads_table_row_for_row_within_the_slots() -> None:
    with LoopbackReasoner(mean_thinking=40) as server:
        backend = _backend(server)
        with async_requests(backend, 3) as items_at_once:
            sender = backend.sender
            assert sender is not None
            via_async = _calibrate(backend, 3)
        assert backend.sender is None
        threaded = _backend(server)
        _per_thread_clients(threaded)
        with async_requests(threaded, 3):
            assert threaded.sender is None  # per-thread clients: left to the threads
        via_threads = _calibrate(threaded, 3)

    assert items_at_once == 3
    assert sender.sent == via_async.requests > len(ITEMS)
    assert 1 < sender.peak <= 3
    assert backend.stats.attempts == via_async.requests  # the hook counted each attempt
    pd.testing.assert_frame_equal(
        via_async.frame.drop(columns=["latency_s"]), via_threads.frame.drop(columns=["latency_s"])
    )


def test_an_error_through_the_async_client_is_translated_with_its_attempts() -> None:
    gone = OpenAICompatibleBackend(
        "m", base_url="http://127.0.0.1:9/v1", api_key="none", max_retries=1, cache=None
    )
    with async_requests(gone, 2), pytest.raises(ServerUnreachableError, match=r"127\.0\.0\.1:9"):
        gone.generate("hi", max_tokens=4)
    assert gone.stats.attempts == 2
    gone.close()
