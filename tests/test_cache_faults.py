"""Nothing poisoned: bad 200 answers are never cached, damaged rows are never replayed.

A `ScriptedEndpoint` on 127.0.0.1 sends each bad answer a misbehaving OpenAI-compatible server
has been seen to send (issue 30). For each: the call is retried, then fails with a
`ResponseFormatError` naming the field, nothing is recorded, the healed endpoint is asked on the
next run, and that run's results equal a clean run's (a third run replays them with 0 requests).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cotplan.backends.cache import CallCache, DamagedCacheWarning, endpoint_namespace
from cotplan.backends.openai_compat import OpenAICompatibleBackend, check_recorded_row
from cotplan.backends.testing import Answer, ScriptedEndpoint, echo_answer
from cotplan.errors import ResponseFormatError

# The openai SDK's models warn when they serialise the wrong types these tests send on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

PROMPTS = ["2 + 2 =", "the capital of France is", "0 1 1 0 1"]
Reply = tuple[str, int, int]


def _spoil(change: Callable[[dict[str, Any]], object]) -> Callable[[str, dict[str, Any]], Answer]:
    """An endpoint that answers like `echo_answer`, then changes the body with `change`."""

    def answer(path: str, body: dict[str, Any]) -> Answer:
        status, payload = echo_answer(path, body)
        change(payload)
        return status, payload

    return answer


#: Each bad answer, and the words the error must contain (the field it names). Token counts
#: that cannot be right are no bad answer: the answer is kept and its usage flagged
#: (tests/test_faults.py).
BAD_ANSWERS: dict[str, tuple[Callable[[str, dict[str, Any]], Answer], str]] = {
    "empty choices": (_spoil(lambda p: p.update(choices=[])), "`choices` is empty"),
    "no choices": (_spoil(lambda p: p.pop("choices")), "`choices` is missing"),
    "200 with an error": (
        lambda path, body: (200, {"error": {"message": "model overloaded", "code": 503}}),
        "`error` instead of a completion: model overloaded",
    ),
    "choice not an object": (_spoil(lambda p: p.update(choices=["x"])), "`choices[0]`"),
    "body cut short": (lambda path, body: (200, b'{"choices": [{"te'), "cannot parse"),
}


@pytest.fixture
def endpoint() -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint() as server:
        yield server


def _backend(url: str, cache: CallCache, *, chat: bool = False) -> OpenAICompatibleBackend:
    # One retry keeps each failing call to two requests and one 0.25 s backoff.
    return OpenAICompatibleBackend(
        "scripted", base_url=url, cache=cache, max_retries=1, text_completions=not chat
    )


def _run(backend: OpenAICompatibleBackend) -> list[Reply]:
    replies = [backend.generate(prompt, max_tokens=8) for prompt in PROMPTS]
    return [(r.text, r.usage.prompt_tokens, r.usage.completion_tokens) for r in replies]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, list[Reply]]:
    """What a clean run gives, through text completions (False) and chat (True)."""
    folder = tmp_path_factory.mktemp("clean")
    with ScriptedEndpoint() as server:
        return {
            chat: _run(_backend(server.base_url, CallCache(folder / f"{chat}.sqlite"), chat=chat))
            for chat in (False, True)
        }


@pytest.mark.parametrize("chat", [False, True], ids=["completions", "chat"])
@pytest.mark.parametrize("kind", list(BAD_ANSWERS))
def test_a_bad_answer_is_retried_reported_and_never_cached(
    kind: str,
    chat: bool,
    endpoint: ScriptedEndpoint,
    tmp_path: Path,
    clean: dict[bool, list[Reply]],
) -> None:
    bad, names = BAD_ANSWERS[kind]
    endpoint.answer = bad
    cache = CallCache(tmp_path / "cache.sqlite")
    expected = f"{re.escape(names)}.*2 attempts; nothing was cached"
    with pytest.raises(ResponseFormatError, match=expected):
        _run(_backend(endpoint.base_url, cache, chat=chat))
    assert endpoint.requests == 2  # the first attempt and its one retry
    assert len(cache) == 0

    endpoint.answer = echo_answer  # the endpoint recovers: the next run asks it
    healed = _backend(endpoint.base_url, cache, chat=chat)
    assert _run(healed) == clean[chat]
    assert (healed.stats.requests, healed.stats.cache_hits) == (len(PROMPTS), 0)
    assert endpoint.requests == 2 + len(PROMPTS)

    replay = _backend(endpoint.base_url, cache, chat=chat)  # and the answers it gave are kept
    assert _run(replay) == clean[chat]
    assert (replay.stats.requests, endpoint.requests) == (0, 2 + len(PROMPTS))


def test_a_bad_answer_once_is_retried_within_the_call(
    endpoint: ScriptedEndpoint, tmp_path: Path, clean: dict[bool, list[Reply]]
) -> None:
    seen: list[int] = []

    def flaky(path: str, body: dict[str, Any]) -> Answer:
        seen.append(1)
        return (
            BAD_ANSWERS["empty choices"][0](path, body)
            if len(seen) == 1
            else echo_answer(path, body)
        )

    endpoint.answer = flaky
    cache = CallCache(tmp_path / "cache.sqlite")
    backend = _backend(endpoint.base_url, cache)
    assert _run(backend) == clean[False]
    assert (backend.stats.requests, backend.stats.retries) == (len(PROMPTS), 1)
    assert len(cache) == len(PROMPTS)


# -- damaged rows ----------------------------------------------------------------------------


def _recorded(tmp_path: Path, endpoint: ScriptedEndpoint) -> tuple[CallCache, list[Reply]]:
    cache = CallCache(tmp_path / "cache.sqlite")
    replies = _run(_backend(endpoint.base_url, cache))
    assert len(cache) == len(PROMPTS)
    return cache, replies


def _edit_first_row(cache: CallCache, sql: str, *args: object) -> None:
    with sqlite3.connect(cache.path) as conn:
        key = conn.execute("SELECT key FROM calls ORDER BY created LIMIT 1").fetchone()[0]
        conn.execute(f"{sql} WHERE key = ?", (*args, key))


@pytest.mark.parametrize(
    ("sql", "args"),
    [
        # Digits changed in place: the answer and its token count differ, the JSON is valid.
        ("UPDATE calls SET response = replace(replace(response, '2', '3'), 'a', 'b')", ()),
        ("UPDATE calls SET response = substr(response, 1, 20)", ()),  # bad JSON
        ("UPDATE calls SET checksum = NULL", ()),  # written by something that does not seal
        ("UPDATE calls SET model = ?", ("another-model",)),
    ],
    ids=["digits changed", "bad JSON", "no checksum", "model changed"],
)
def test_a_tampered_row_is_discarded_with_a_warning_and_asked_again(
    sql: str, args: tuple[object, ...], endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    cache, first = _recorded(tmp_path, endpoint)
    _edit_first_row(cache, sql, *args)
    assert not cache.verify().ok
    backend = _backend(endpoint.base_url, cache)
    with pytest.warns(DamagedCacheWarning, match="discarded and the call is asked again"):
        replies = _run(backend)
    assert replies == first
    assert (backend.stats.requests, backend.stats.cache_hits) == (1, len(PROMPTS) - 1)
    assert cache.verify().ok
    assert len(cache) == len(PROMPTS)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"latency_s": 0.1}, "no `response`"),
        ({"response": {"choices": []}, "latency_s": 0.1}, "`choices` is empty"),
        ({"response": {"error": {"message": "busy"}}}, "`error`"),
    ],
    ids=["lacks response", "empty choices", "error"],
)
def test_a_sealed_but_bad_answer_is_not_replayed(
    entry: dict[str, Any], reason: str, endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    """Rows an older cotplan recorded before it checked answers carry a valid checksum."""
    cache, first = _recorded(tmp_path, endpoint)
    row = next(iter(cache.rows()))
    cache.clear()
    cache.put(
        row.key,
        model=row.model,
        operation=row.operation,
        request=json.loads(row.request),
        response=entry,
    )
    report = cache.verify(check_recorded_row)
    assert [row.reason for row in report.damaged if reason in row.reason]
    backend = _backend(endpoint.base_url, cache)
    with pytest.warns(DamagedCacheWarning, match=reason):
        assert _run(backend) == first
    assert backend.stats.requests == len(PROMPTS)  # the bad row and the two cleared ones
    assert cache.verify(check_recorded_row).ok


def test_verify_discards_what_it_finds(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    cache, _ = _recorded(tmp_path, endpoint)
    _edit_first_row(cache, "UPDATE calls SET response = replace(response, 'answer', 'ANSWER')")
    report = cache.verify(check_recorded_row, discard=True)
    assert (report.checked, len(report.damaged), report.discarded) == (len(PROMPTS), 1, 1)
    assert "checksum" in report.damaged[0].reason
    assert len(cache) == len(PROMPTS) - 1
    assert cache.verify(check_recorded_row).ok


def test_a_version_1_cache_is_sealed_on_open_and_replayed(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    cache, first = _recorded(tmp_path, endpoint)
    with sqlite3.connect(cache.path) as conn:  # what cotplan wrote before checksums
        rows = conn.execute("SELECT key, model, operation, request, response, created FROM calls")
        saved = rows.fetchall()
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as conn:
        conn.execute(
            "CREATE TABLE calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, operation TEXT NOT "
            "NULL, request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)"
        )
        conn.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?, ?)", saved)
        conn.execute("PRAGMA user_version = 1")
    reopened = CallCache(old)
    assert reopened.verify(check_recorded_row).ok
    backend = _backend(endpoint.base_url, reopened)
    assert _run(backend) == first
    assert backend.stats.requests == 0


# -- one endpoint, one namespace ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "same_as"),
    [
        ("http://localhost:8000/v1/", "http://127.0.0.1:8000/v1"),
        ("HTTP://LocalHost:8000/v1//", "http://127.0.0.1:8000/v1"),
        ("http://[::1]:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://[0:0:0:0:0:0:0:1]:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://api.openai.com:443/v1/", "https://api.openai.com/v1"),
        ("http://gateway.example:80/v1", "http://gateway.example/v1"),
        ("http://user:secret@127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("local:smollm2-135m-instruct", "local:smollm2-135m-instruct"),
    ],
)
def test_spellings_of_one_endpoint_share_a_namespace(url: str, same_as: str) -> None:
    assert endpoint_namespace(url) == same_as
    assert endpoint_namespace(same_as) == same_as


@pytest.mark.parametrize(
    ("url", "other"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"),
        ("http://127.0.0.1:8000/v1", "https://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.2:8000/v1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v2"),
    ],
)
def test_different_endpoints_keep_apart(url: str, other: str) -> None:
    assert endpoint_namespace(url) != endpoint_namespace(other)


def test_url_variants_replay_the_same_answers(endpoint: ScriptedEndpoint, tmp_path: Path) -> None:
    cache, first = _recorded(tmp_path, endpoint)
    for url in (
        f"http://localhost:{endpoint.port}/v1/",
        f"http://127.0.0.1:{endpoint.port}/v1/",
        f"HTTP://LOCALHOST:{endpoint.port}/v1",
    ):
        backend = _backend(url, cache)
        assert _run(backend) == first
        assert backend.stats.requests == 0, url
    assert endpoint.requests == len(PROMPTS)


def test_an_error_that_echoes_the_key_is_scrubbed(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    endpoint.answer = lambda path, body: (
        200,
        {"error": {"message": "bad header Authorization: Bearer sk-canary-123"}},
    )
    backend = OpenAICompatibleBackend(
        "m", base_url=endpoint.base_url, api_key="sk-canary-123", max_retries=0
    )
    with pytest.raises(ResponseFormatError, match=r"Bearer \*\*\*") as info:
        backend.generate("x", max_tokens=1)
    assert "canary" not in str(info.value)
