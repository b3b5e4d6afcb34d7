"""Closing the shared async client frees every thread waiting on it (an interrupted calibration
must exit, not wait at exit for a request the server never answers)."""

from __future__ import annotations

import concurrent.futures
import socket
import threading
import time

import openai
import pytest

from cotplan.backends.async_sender import AsyncSender


def _silent_server() -> tuple[socket.socket, list[socket.socket]]:
    """A server that accepts connections and never answers (a request held by the server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    return server, held


def test_closing_cancels_the_requests_waited_on_and_refuses_new_ones() -> None:
    server, held = _silent_server()
    port = server.getsockname()[1]
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=60
    )
    sender = AsyncSender(client, slots=2)
    outcomes: list[BaseException | None] = []

    def wait_on_one() -> None:
        try:
            sender.send("chat", {"model": "m", "messages": []}, [0])
            outcomes.append(None)
        except BaseException as exc:  # the outcome is what is checked
            outcomes.append(exc)

    threads = [threading.Thread(target=wait_on_one) for _ in range(3)]  # one more than slots
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(held) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(held) == 2  # two in flight at the server, the third waiting for a slot
    sender.close()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)  # none waits on the stopped loop
    assert len(outcomes) == 3
    assert all(isinstance(o, concurrent.futures.CancelledError) for o in outcomes), outcomes
    with pytest.raises(concurrent.futures.CancelledError):
        sender.send("chat", {"model": "m", "messages": []}, [0])
    server.close()
    for connection in held:
        connection.close()
