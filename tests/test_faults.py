"""The fault matrix of issue 30 that the call cache alone does not settle.

A loopback server sends what misbehaving OpenAI-compatible servers have been seen to send:
usage that cannot be right, ``content: null``, a `Retry-After` nobody should wait for, a 400
that echoes the request's Authorization header. For each: what the client keeps, flags, retries
and prints. (Bad 200s that are no answer at all are in tests/test_cache_faults.py.)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Usage
from cotplan.backends.cache import CallCache
from cotplan.backends.keys import scrub_secrets
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.parsing import read_usage
from cotplan.backends.testing import Answer, ScriptedEndpoint, echo_answer
from cotplan.errors import (
    APIStatusError,
    RateLimitError,
    ResponseFormatError,
    ServerUnreachableError,
)
from cotplan.permutation.scoring import sample_prompt

# The openai SDK's models warn when they serialise the wrong types these tests send on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")

CANARY = "sk-cotplan-canary-9b1e4d7a2c"
PROMPTS = ["2 + 2 =", "the capital of France is"]


@pytest.fixture
def endpoint() -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint() as server:
        yield server


def _spoil(change: Callable[[dict[str, Any]], object]) -> Callable[[str, dict[str, Any]], Answer]:
    def answer(path: str, body: dict[str, Any]) -> Answer:
        status, payload = echo_answer(path, body)
        assert isinstance(payload, dict)
        change(payload)
        return status, payload

    return answer


def _usage(**fields: object) -> Callable[[dict[str, Any]], object]:
    return lambda payload: payload["usage"].update(fields)


# -- usage that cannot be trusted is flagged, kept and never counted -------------------------

#: Each usage fault, and the field its note must name.
UNTRUSTED_USAGE: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "no usage": (lambda p: p.pop("usage"), "no `usage`"),
    "usage null": (lambda p: p.update(usage=None), "no `usage`"),
    "usage not an object": (lambda p: p.update(usage=[1, 2]), "`usage` is not an object"),
    "completion tokens missing": (
        lambda p: p["usage"].pop("completion_tokens"),
        "`usage.completion_tokens` is missing",
    ),
    "negative completion tokens": (
        _usage(completion_tokens=-5),
        "`usage.completion_tokens` = -5 is negative",
    ),
    "string prompt tokens": (
        _usage(prompt_tokens="many"),
        "`usage.prompt_tokens` = 'many' is not a whole number",
    ),
    "fractional completion tokens": (
        _usage(completion_tokens=2.5),
        "`usage.completion_tokens` = 2.5 is not a whole number",
    ),
    "negative reasoning tokens": (
        _usage(completion_tokens_details={"reasoning_tokens": -1}),
        "`usage.completion_tokens_details.reasoning_tokens` = -1 is negative",
    ),
    "details not an object": (
        _usage(prompt_tokens_details="x"),
        "`usage.prompt_tokens_details` is not an object",
    ),
    "far over the cap": (
        _usage(completion_tokens=100_000),
        "`usage.completion_tokens` = 100000 is far above the cap of 8",
    ),
    "absurd prompt tokens": (
        _usage(prompt_tokens=10**12),
        "`usage.prompt_tokens` = 1000000000000 is more than any call can use",
    ),
    "reasoning over completion": (
        _usage(completion_tokens_details={"reasoning_tokens": 50}),
        "reasoning_tokens` = 50 is more than `usage.completion_tokens` = 2",
    ),
    "cached over prompt": (
        _usage(prompt_tokens_details={"cached_tokens": 10**6}),
        "cached_tokens` = 1000000 is more than `usage.prompt_tokens`",
    ),
}


def _backend(url: str, cache: CallCache | None = None, **options: Any) -> OpenAICompatibleBackend:
    options.setdefault("max_retries", 1)
    return OpenAICompatibleBackend("scripted", base_url=url, cache=cache, **options)


def _texts(backend: Backend) -> list[Completion]:
    return [backend.generate(prompt, max_tokens=8) for prompt in PROMPTS]


@pytest.mark.parametrize("chat", [False, True], ids=["completions", "chat"])
@pytest.mark.parametrize("kind", list(UNTRUSTED_USAGE))
def test_untrusted_usage_is_flagged_kept_and_replayed_without_paying_again(
    kind: str, chat: bool, endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    clean = [c.text for c in _texts(_backend(endpoint.base_url, text_completions=not chat))]
    endpoint.requests = 0
    change, note = UNTRUSTED_USAGE[kind]
    endpoint.answer = _spoil(change)
    cache = CallCache(tmp_path / "cache.sqlite")
    first = _texts(_backend(endpoint.base_url, cache, text_completions=not chat))
    assert [c.text for c in first] == clean  # the answer is good; only its counts are not
    assert endpoint.requests == len(PROMPTS)  # not retried: asking again would pay twice
    for completion in first:
        assert not completion.usage_trusted
        assert not completion.usage.trusted
        assert any(note in line for line in completion.notes), completion.notes
        assert not completion.no_answer
        # No count the server got wrong reads as a measurement: 0, flagged untrusted.
        assert min(completion.usage.prompt_tokens, completion.usage.completion_tokens) >= 0

    replay = _texts(_backend(endpoint.base_url, cache, text_completions=not chat))
    assert endpoint.requests == len(PROMPTS)  # replayed, and flagged again
    assert [(c.text, c.usage, c.notes) for c in replay] == [
        (c.text, c.usage, c.notes) for c in first
    ]
    assert all(c.from_cache for c in replay)


def test_clean_usage_is_trusted_and_has_no_notes(endpoint: ScriptedEndpoint) -> None:
    for completion in _texts(_backend(endpoint.base_url)):
        assert completion.usage_trusted
        assert completion.notes == ()
        assert completion.usage.completion_tokens == 2


def test_a_sum_is_trusted_only_when_every_part_is() -> None:
    good = Usage(prompt_tokens=3, completion_tokens=4)
    assert (good + good).trusted
    total = good + Usage(trusted=False) + good
    assert (total.trusted, total.prompt_tokens, total.completion_tokens) == (False, 6, 8)


@pytest.mark.parametrize(
    ("raw", "cap", "trusted"),
    [
        ({"prompt_tokens": 5, "completion_tokens": 10}, 8, True),  # an overshoot of a few
        ({"prompt_tokens": 5, "completion_tokens": 33}, 8, False),
        ({"prompt_tokens": 5, "completion_tokens": 0}, 8, True),  # an empty answer is real
        ({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": -1}, None, False),
        # A bool is an int to Python, not a count (the SDK makes it 1 before we see it).
        ({"prompt_tokens": True, "completion_tokens": 1}, None, False),
    ],
)
def test_read_usage_judges_counts_against_the_cap_and_each_other(
    raw: dict[str, int], cap: int | None, trusted: bool
) -> None:
    usage, notes = read_usage(raw, cap=cap)
    assert usage.trusted is trusted
    assert bool(notes) is not trusted


# -- content: null is no answer, not a wrong one ---------------------------------------------


def _null_content(path: str, body: dict[str, Any]) -> Answer:
    status, payload = echo_answer(path, body)
    assert isinstance(payload, dict)
    choice = payload["choices"][0]
    if "message" in choice:
        choice["message"]["content"] = None
    else:
        choice["text"] = None
    return status, payload


@pytest.mark.parametrize("chat", [False, True], ids=["completions", "chat"])
def test_content_null_is_no_answer_and_not_retried(endpoint: ScriptedEndpoint, chat: bool) -> None:
    endpoint.answer = _null_content
    completion = _backend(endpoint.base_url, text_completions=not chat).generate("x", max_tokens=8)
    assert completion.no_answer
    assert completion.text == ""
    assert any("content: null" in note for note in completion.notes)
    assert completion.usage_trusted  # its counts are fine: the call was paid for
    assert endpoint.requests == 1


def test_content_of_another_type_is_a_bad_answer(endpoint: ScriptedEndpoint) -> None:
    endpoint.answer = _spoil(lambda p: p["choices"][0].update(text=["a", "b"]))
    with pytest.raises(ResponseFormatError, match=r"not text.*2 attempts; nothing was cached"):
        _backend(endpoint.base_url).generate("x", max_tokens=8)


class _Samples(Backend):
    """Samples from a script: None is a ``content: null`` answer."""

    model = "scripted"
    supports_logprobs = False

    def __init__(self, answers: list[str | None]) -> None:
        self.answers = list(answers)

    def generate(self, prompt: Any, *, max_tokens: int, **options: Any) -> Completion:
        text = self.answers.pop(0)
        return Completion(
            text=text or "",
            finish_reason="stop",
            usage=Usage(prompt_tokens=1, completion_tokens=1),
            model=self.model,
            no_answer=text is None,
        )

    def next_token_probs(self, prompt: Any, candidates: Any) -> NextTokenProbs:
        raise NotImplementedError


def test_sampling_leaves_no_answer_out_of_the_shares() -> None:
    scored = sample_prompt(
        _Samples([" A", None, " B", None, " A", " zebra"]),
        "Q:",
        ["A", "B"],
        seeds=range(6),
        smoothing=0.0,
    )
    assert scored.no_answers == 2
    assert scored.unmatched == (" zebra",)  # a wrong answer stays one; no answer is not
    np.testing.assert_allclose(scored.raw, [2 / 4, 1 / 4])
    assert scored.covered_mass == pytest.approx(3 / 4)
    np.testing.assert_allclose(scored.probs, [2 / 3, 1 / 3])


# -- Retry-After, and error lines that tell the truth and no secret --------------------------


class _Server:
    """A loopback server whose every POST gets `respond(headers, body)` -> (status, headers,
    body); it records the requests' headers."""

    def __init__(
        self, respond: Callable[[dict[str, str], bytes], tuple[int, dict[str, str], bytes]]
    ) -> None:
        self.respond = respond
        self.seen: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = dict(self.headers)
                server.seen.append(headers)
                status, extra, payload = server.respond(headers, body)
                self.send_response(status)
                for name, value in {"content-type": "application/json", **extra}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., _Server]]:
    servers: list[_Server] = []

    def start(
        respond: Callable[[dict[str, str], bytes], tuple[int, dict[str, str], bytes]],
    ) -> _Server:
        servers.append(_Server(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _error(status: int, message: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return status, headers, json.dumps({"error": {"message": message}}).encode()


def _good(body: bytes) -> tuple[int, dict[str, str], bytes]:
    _, payload = echo_answer("/v1/completions", json.loads(body))
    assert isinstance(payload, dict)
    return 200, {}, json.dumps(payload).encode()


@pytest.mark.parametrize(
    ("status", "error"), [(429, RateLimitError), (503, APIStatusError)], ids=["429", "503"]
)
def test_a_retry_after_past_the_budget_is_not_retried_and_says_so(
    serve: Callable[..., _Server], status: int, error: type[Exception]
) -> None:
    server = serve(lambda headers, body: _error(status, "slow down", **{"Retry-After": "100000"}))
    backend = _backend(server.base_url, max_retries=3)
    with pytest.raises(error) as info:
        backend.generate("x", max_tokens=8)
    message = str(info.value)
    assert len(server.seen) == 1
    assert "100000 s (Retry-After)" in message
    assert "not retried (1 attempt)" in message
    assert "after retries" not in message
    assert "attempts" not in message
    assert backend.stats.retries == 0


def test_a_short_retry_after_is_honoured(
    serve: Callable[..., _Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [_error(429, "busy", **{"Retry-After": "1"})]
    server = serve(lambda headers, body: answers.pop(0) if answers else _good(body))
    backend = _backend(server.base_url, max_retries=2)
    # What the SDK asks to sleep, not how long it took: the wait it chose is the fact under
    # test, and a measured duration would depend on the machine's load.
    sleeps: list[float] = []
    monkeypatch.setattr(openai._base_client.time, "sleep", sleeps.append)
    completion = backend.generate("x", max_tokens=8)
    assert completion.text.startswith("answer ")
    assert len(server.seen) == 2
    assert backend.stats.retries == 1
    assert sleeps == [1.0]  # the server's second, not the SDK's half-second backoff


def test_a_status_retried_to_the_end_says_how_many_attempts(serve: Callable[..., _Server]) -> None:
    server = serve(lambda headers, body: _error(429, "busy", **{"Retry-After": "0.05"}))
    with pytest.raises(RateLimitError, match=r"429 \(rate limited\); after 3 attempts"):
        _backend(server.base_url, max_retries=2).generate("x", max_tokens=8)
    assert len(server.seen) == 3


def test_no_retries_asked_is_one_attempt(serve: Callable[..., _Server]) -> None:
    server = serve(lambda headers, body: _error(429, "busy"))
    with pytest.raises(RateLimitError, match=r"not retried \(1 attempt\)"):
        _backend(server.base_url, max_retries=0).generate("x", max_tokens=8)
    assert len(server.seen) == 1


def _echo_headers(
    status: int,
) -> Callable[[dict[str, str], bytes], tuple[int, dict[str, str], bytes]]:
    """An upstream that quotes the request back, headers and all, in its error."""

    def respond(headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        return _error(status, f"bad request; you sent {headers!r} with key {CANARY}")

    return respond


@pytest.mark.parametrize("status", [400, 422, 500])
def test_an_upstream_error_that_echoes_the_key_never_shows_it(
    serve: Callable[..., _Server], status: int
) -> None:
    server = serve(_echo_headers(status))
    backend = _backend(server.base_url, api_key=CANARY, max_retries=0)
    with pytest.raises(APIStatusError) as info:
        backend.generate("x", max_tokens=8)
    assert any(CANARY in str(headers) for headers in server.seen)  # it was sent, and echoed
    message = str(info.value)
    assert f"answered {status}: bad request" in message
    assert CANARY not in message
    assert "canary" not in message
    assert "Bearer ***" in message


def test_a_key_another_shape_is_masked_too(serve: Callable[..., _Server]) -> None:
    """A key that does not look like one (no `sk-`) is still the client's, so it is masked."""
    key = "plain-token-41c9"
    server = serve(lambda headers, body: _error(400, f"key {key} is not allowed for this model"))
    with pytest.raises(APIStatusError) as info:
        _backend(server.base_url, api_key=key, max_retries=0).generate("x", max_tokens=8)
    assert key not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{CANARY}@127.0.0.1:9/v1",
        f"http://127.0.0.1:9/v1?api_key={CANARY}",
        f"http://127.0.0.1:9/v1?key={CANARY}&x=1",
    ],
    ids=["password", "api_key", "key"],
)
def test_a_key_in_the_url_is_not_on_the_error_line(url: str) -> None:
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    backend = OpenAICompatibleBackend("m", base_url=url, max_retries=0, connect_timeout=2.0)
    with pytest.raises(ServerUnreachableError) as info:
        backend.generate("x", max_tokens=8)
    assert "canary" not in str(info.value)
    assert "127.0.0.1" in str(info.value)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Authorization: Bearer sk-abc123", "Authorization: Bearer ***"),
        ("{'authorization': 'Bearer xyz.abc'}", "{'authorization': 'Bearer ***'}"),
        ('{"api-key": "zzz"}', '{"api-key": "***"}'),
        ("x-api-key: qq11", "x-api-key: ***"),
        ("GET /v1?api_key=abc&x=1", "GET /v1?api_key=***&x=1"),
        ("https://me:pw@host/v1", "https://***@host/v1"),
        ("Authorization: Basic dXNlcjpw", "Authorization: Basic ***"),
        ("the monkey=5 ran", "the monkey=5 ran"),  # a word that ends in "key" is no key
    ],
)
def test_scrub_secrets_masks_every_shape(text: str, masked: str) -> None:
    assert scrub_secrets(text) == masked
