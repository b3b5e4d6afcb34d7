"""The live calibration's default concurrency is the server's own number where it says one
(llama.cpp's /props total_slots), and the backend's default otherwise."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.planner.batch_concurrency import server_concurrency


@pytest.fixture
def props() -> Iterator[tuple[str, dict[str, Any]]]:
    """A server answering GET /props with `answer["body"]` (the shape llama.cpp sends)."""
    answer: dict[str, Any] = {"body": {"total_slots": 6, "default_generation_settings": {}}}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path != "/props" or answer["body"] is None:
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(answer["body"]).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", answer
    finally:
        server.shutdown()
        server.server_close()


def test_the_servers_slots_are_the_default_concurrency(props: tuple[str, dict[str, Any]]) -> None:
    url, answer = props
    backend = OpenAICompatibleBackend("served", base_url=url, api_key="none")
    assert server_concurrency(backend) == 6
    for said in ({"total_slots": 0}, {"total_slots": "6"}, {"total_slots": 10_000}, None):
        answer["body"] = said
        assert server_concurrency(backend) is None


def test_a_hosted_api_or_no_server_says_nothing() -> None:
    hosted = OpenAICompatibleBackend("o4-mini", api_key="sk-x")
    assert server_concurrency(hosted) is None
    gone = OpenAICompatibleBackend("m", base_url="http://127.0.0.1:9/v1", api_key="none")
    assert server_concurrency(gone, timeout=0.5) is None
