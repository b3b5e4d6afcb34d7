"""The gateway under upstream faults: every failure reaches the client as OpenAI's error object
(or, once a stream's 200 has gone, an error event), never a traceback, an empty success or the
upstream's key; and the gateway's own files and logs hold no secret."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import stat
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from production_support import THINKER, ask, make_plan, record, text_chunks, text_reply
from starlette.testclient import TestClient

from cotplan.production import CallLog, capped
from cotplan.production.gateway import check_port, make_app, scrub_access_log

#: The upstream's key, as a canary: it must appear in nothing a client sees.
KEY = "canary-7f3a9c21e8"

Reply = httpx2.Response | Exception | list[dict[str, Any]]


class Faults:
    """An upstream double that answers queued replies: a response, an exception to raise
    (a timeout, a reset), or a list of chunks sent as a good event stream."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, list):
            events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in reply)
            return httpx2.Response(
                200,
                content=(events + "data: [DONE]\n\n").encode(),
                headers={"content-type": "text/event-stream"},
            )
        return reply

    def app(self, tmp_path: Path, max_body_bytes: int = 4096) -> TestClient:
        client = openai.OpenAI(
            api_key=KEY,
            base_url="http://127.0.0.1:9/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )
        wrapped = capped(client, make_plan(THINKER), log=tmp_path / "log.sqlite")
        return TestClient(make_app(wrapped, max_body_bytes=max_body_bytes))


def echo(status: int) -> httpx2.Response:
    """An error that quotes the request's headers, key and all."""
    text = f"bad request; headers: {{'Authorization': 'Bearer {KEY}', 'X-Api-Key': '{KEY}'}}"
    return httpx2.Response(status, json={"error": {"message": text}})


def stream(*lines: str) -> httpx2.Response:
    return httpx2.Response(
        200, content="".join(lines).encode(), headers={"content-type": "text/event-stream"}
    )


def call(http: TestClient, **changes: Any) -> httpx2.Response:
    return http.post("/v1/chat/completions", json={**ask(), "size": 3, **changes})


def error_of(response: httpx2.Response) -> dict[str, Any]:
    """The OpenAI error object of a reply, checked to be well formed."""
    error = response.json()["error"]
    assert isinstance(error["message"], str)
    assert isinstance(error["type"], str)
    assert error["message"]
    assert error["type"]
    assert error["code"] == str(response.status_code)
    return dict(error)


def events_of(response: httpx2.Response) -> list[Any]:
    out: list[Any] = []
    for line in response.text.splitlines():
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


# -- finding 2: the upstream's key is never shown ---------------------------------------------


def test_an_upstream_error_quoting_the_key_reaches_the_client_without_it(
    tmp_path: Path,
) -> None:
    with Faults(echo(400)).app(tmp_path) as http:
        response = call(http)
    assert response.status_code == 400
    assert error_of(response)["type"] == "upstream_error"
    assert "bad request" in response.text
    assert KEY not in response.text


def test_a_streamed_calls_upstream_error_reaches_the_client_without_the_key(
    tmp_path: Path,
) -> None:
    # Refused on the first request: an error reply; on the second, after the 200: an event.
    with Faults(echo(401)).app(tmp_path) as http:
        first = call(http, stream=True)
    assert first.status_code == 401
    assert KEY not in first.text
    thinking = text_chunks(["Let", " me"], "length", completion=6)
    with Faults(thinking, echo(500)).app(tmp_path) as http:
        second = call(http, stream=True)
    assert second.status_code == 200
    last = events_of(second)[-1]
    assert last["error"]["type"] == "upstream_error"
    assert KEY not in second.text


# -- finding 3: a stream that is not one is an error event, not an empty success --------------


@pytest.mark.parametrize(
    "reply",
    [
        httpx2.Response(200, json={"id": "x", "choices": []}),  # a JSON body
        stream("hello\n", "world\n\n"),  # lines that are not events
        stream("data: {not json\n\n"),  # a bad event
        stream('data: {"choices": [{"index": 0, "text": "Let"}]}\n\n'),  # cut, no finish
    ],
    ids=["json-body", "garbage-lines", "bad-event", "no-finish"],
)
def test_a_stream_that_is_not_a_valid_stream_ends_in_an_error_event(
    tmp_path: Path, reply: httpx2.Response
) -> None:
    with Faults(reply).app(tmp_path) as http:
        response = call(http, stream=True)
    events = events_of(response)
    assert "[DONE]" not in events
    assert events[-1]["error"]["type"] == "upstream_error"
    assert events[-1]["error"]["message"].startswith("the upstream")
    rows = CallLog(tmp_path / "log.sqlite").records()
    assert [row.outcome for row in rows] == ["error"]


# -- finding 4: no traceback, whatever the upstream answers ----------------------------------


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (httpx2.Response(200, json={"id": "x"}), "`choices` is missing"),
        (httpx2.Response(200, json={"id": "x", "choices": []}), "`choices` is empty"),
        (httpx2.Response(200, json={"error": {"message": "overloaded"}}), "overloaded"),
        (
            httpx2.Response(
                200, json={"choices": [{"index": 0, "text": [1, 2], "finish_reason": "stop"}]}
            ),
            "not text",
        ),
        (
            httpx2.Response(
                200, content=b"{not json", headers={"content-type": "application/json"}
            ),
            "not JSON",
        ),
        (httpx2.Response(200, content=b"<html>", headers={"content-type": "text/html"}), "JSON"),
    ],
    ids=["no-choices", "empty-choices", "error-body", "non-text", "bad-json", "html"],
)
def test_an_unreadable_upstream_answer_is_a_502_in_openais_shape(
    tmp_path: Path, reply: httpx2.Response, said: str
) -> None:
    with Faults(reply).app(tmp_path) as http:
        response = call(http)
    assert response.status_code == 502
    error = error_of(response)
    assert error["type"] == "upstream_error"
    assert said in error["message"]


def test_an_upstream_timeout_is_a_504(tmp_path: Path) -> None:
    with Faults(httpx2.ReadTimeout("slow")).app(tmp_path) as http:
        response = call(http)
    assert response.status_code == 504
    assert error_of(response)["type"] == "upstream_timeout"


def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    with Faults(httpx2.ConnectError("refused")).app(tmp_path) as http:
        response = call(http)
    assert response.status_code == 502
    assert "unreachable" in error_of(response)["message"]


def test_a_body_nested_100000_deep_is_a_400_not_a_recursion_error(tmp_path: Path) -> None:
    faults = Faults()
    body = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with faults.app(tmp_path, max_body_bytes=len(body)) as http:
        response = http.post("/v1/chat/completions", content=body)
    assert response.status_code == 400
    error = error_of(response)
    assert error["type"] == "invalid_request_error"
    assert "nested more than" in error["message"]
    assert faults.requests == 0


def test_a_body_over_the_limit_is_refused_before_it_is_forwarded(tmp_path: Path) -> None:
    faults = Faults()
    padding = "x" * 5000
    with faults.app(tmp_path) as http:
        response = call(http, user=padding)
    assert response.status_code == 413
    assert error_of(response)["type"] == "invalid_request_error"
    assert faults.requests == 0


def test_a_client_that_hangs_up_mid_body_leaves_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    faults = Faults()
    app = faults.app(tmp_path).app
    messages = [
        {"type": "http.request", "body": b'{"model": "m", ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    with caplog.at_level(logging.DEBUG):
        for _ in range(3):
            messages[:] = [
                {"type": "http.request", "body": b'{"model": "m", ', "more_body": True},
                {"type": "http.disconnect"},
            ]
            asyncio.run(app(scope, receive, send))
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert faults.requests == 0


# -- finding 7: files and logs ----------------------------------------------------------------


def test_a_key_in_the_query_string_is_not_written_to_the_access_log() -> None:
    scrub_access_log()
    access = logging.getLogger("uvicorn.access")
    line = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/v1/models?api_key={KEY}&x=1", "1.1", 200),
        None,
    )
    assert access.filter(line)
    assert KEY not in line.getMessage()
    assert "/v1/models?" in line.getMessage()  # the line itself is kept


def test_the_call_log_is_created_readable_by_its_owner_alone(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        log = CallLog(tmp_path / "production.sqlite")
        log.append(record())
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "production.sqlite").stat().st_mode) == 0o600


def _time_wait_port() -> int:
    """A loopback port a server (binding as uvicorn does) just closed a connection on: the
    connection waits out TIME_WAIT there."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = int(listener.getsockname()[1])
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()  # the server closes first: its side waits
    client.close()
    listener.close()
    return port


def test_a_port_a_gateway_just_left_can_be_served_again_at_once() -> None:
    port = _time_wait_port()
    assert check_port(port) == port


def test_a_good_call_still_answers(tmp_path: Path) -> None:
    faults = Faults(
        httpx2.Response(200, json=text_reply("Let me add", "length", 6)),
        httpx2.Response(200, json=text_reply(" 13", "stop", 2)),
    )
    with faults.app(tmp_path) as http:
        response = call(http)
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "Answer: 13"
