"""Parsing and error paths of the OpenAI-compatible client, without a model.

Responses under tests/data/responses were recorded from the real embedded llama.cpp server,
except `legacy_completions_logprobs.json` and `openai_reasoning_chat.json`, which follow the
shapes in the OpenAI API reference (vLLM returns the legacy shape too).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cotplan.backends.base import NextTokenProbs, Usage, validate_prompt
from cotplan.backends.cache import CallCache
from cotplan.backends.openai_compat import (
    OpenAICompatibleBackend,
    is_reasoning_model,
    parse_completion,
    parse_prompt_logprobs,
)
from cotplan.errors import (
    APIStatusError,
    CapabilityError,
    InputError,
    MissingKeyError,
    RateLimitError,
    ResponseFormatError,
    ServerUnreachableError,
)

DATA = Path(__file__).parent / "data" / "responses"


def load(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / name).read_text()))


def test_llamacpp_completions_shape_gives_top_alternatives() -> None:
    completion = parse_completion(load("llamacpp_completions_logprobs.json"), model="m")
    assert completion.logprobs is not None
    first = completion.logprobs[0]
    assert first.token == completion.text
    tokens = [t for t, _ in first.top]
    assert {"0", "1"} <= set(tokens)
    probs = NextTokenProbs.from_logprobs(first.top, ["0", "1"])
    assert math.isclose(sum(probs.probs.values()), 1.0)
    assert 0.0 < probs.covered_mass <= 1.0


def test_chat_shape_and_usage() -> None:
    completion = parse_completion(load("llamacpp_chat_logprobs.json"), model="m")
    assert completion.logprobs is not None
    assert len(completion.logprobs) == completion.usage.completion_tokens
    assert completion.text.startswith(completion.logprobs[0].token)
    assert completion.truncated == (completion.finish_reason == "length")


def test_legacy_completions_shape() -> None:
    completion = parse_completion(load("legacy_completions_logprobs.json"), model="m")
    assert completion.logprobs is not None
    probs = NextTokenProbs.from_logprobs(completion.logprobs[0].top, ["0", "1"])
    expected_covered = math.exp(-0.2) + math.exp(-1.8)
    assert probs.covered_mass == pytest.approx(expected_covered)
    assert probs.probs["1"] == pytest.approx(math.exp(-0.2) / expected_covered)


def test_reasoning_and_cached_tokens_are_read() -> None:
    completion = parse_completion(load("openai_reasoning_chat.json"), model="o4-mini")
    assert completion.usage == Usage(120, 530, 512, 64)
    assert completion.logprobs is None


def test_malformed_response_is_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="unexpected response shape"):
        parse_completion({"choices": []}, model="m")


def test_no_candidate_mass_is_an_input_error() -> None:
    with pytest.raises(InputError, match="none of the candidates"):
        NextTokenProbs.from_logprobs([("a", -0.1), ("b", -2.0)], ["0", "1"])


def test_missing_candidate_is_reported() -> None:
    probs = NextTokenProbs.from_logprobs([("0", -0.1), ("b", -2.0)], ["0", "1"])
    assert probs.missing == ("1",)
    assert probs.probs == {"0": 1.0, "1": 0.0}


@given(
    st.lists(st.floats(0.01, 10.0), min_size=4, max_size=4),
    st.floats(0.0, 10.0),
    st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_renormalised_probs_sum_to_one(
    weights: list[float], elsewhere: float, shown: list[bool]
) -> None:
    # A valid next-token distribution over "0", "1", "2", "x" plus mass on unlisted tokens;
    # the endpoint shows only some of the alternatives.
    total = sum(weights) + elsewhere
    top = [
        (token, math.log(w / total))
        for token, w, keep in zip(["0", "1", "2", "x"], weights, shown, strict=True)
        if keep
    ]
    candidates = ["0", "1"]
    if not any(token in candidates for token, _ in top):
        with pytest.raises(InputError):
            NextTokenProbs.from_logprobs(top, candidates)
        return
    probs = NextTokenProbs.from_logprobs(top, candidates)
    assert math.isclose(sum(probs.probs.values()), 1.0, rel_tol=1e-9)
    assert 0.0 < probs.covered_mass <= 1.0 + 1e-9
    assert set(probs.missing) == {c for c in candidates if c not in dict(top)}


def test_probabilities_over_one_are_a_format_error() -> None:
    with pytest.raises(ResponseFormatError, match="add up to"):
        NextTokenProbs.from_logprobs([("0", 0.0), ("1", 0.0)], ["0", "1"])


@pytest.mark.parametrize(
    ("prompt", "match"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ([], "non-empty string or list"),
        ([{"role": "user"}], "`role` and `content`"),
        ([{"role": "robot", "content": "x"}], "unknown role"),
        ([{"role": "user", "content": " "}], "all messages are empty"),
    ],
)
def test_bad_prompts_are_rejected(prompt: Any, match: str) -> None:
    with pytest.raises(InputError, match=match):
        validate_prompt(prompt)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        OpenAICompatibleBackend("gpt-4o-mini")


def test_reasoning_models_get_max_completion_tokens() -> None:
    assert is_reasoning_model("o4-mini")
    assert is_reasoning_model("gpt-5")
    assert not is_reasoning_model("gpt-4o")
    assert not is_reasoning_model("gpt-5-chat-latest")
    reasoning = OpenAICompatibleBackend("o4-mini", api_key="k")
    _, params = reasoning._request_params(
        "hi", max_tokens=50, temperature=0.0, stop=None, seed=None, logprobs=0
    )
    assert params["max_completion_tokens"] == 50
    assert "max_tokens" not in params
    assert "temperature" not in params
    assert reasoning.supports_logprobs is False
    chat = OpenAICompatibleBackend("gpt-4o", api_key="k")
    _, params = chat._request_params(
        "hi", max_tokens=50, temperature=0.0, stop=None, seed=None, logprobs=3
    )
    assert params["max_tokens"] == 50
    assert params["top_logprobs"] == 3
    assert params["messages"] == [{"role": "user", "content": "hi"}]


def test_candidates_must_be_single_tokens_for_known_tokenizers() -> None:
    backend = OpenAICompatibleBackend("gpt-4o", api_key="k")
    with pytest.raises(InputError, match="2 tokens"):
        backend._check_candidates(["Yes", "maybe not"])
    with pytest.raises(InputError, match="duplicates"):
        backend._check_candidates(["Yes", "Yes"])


def test_unreachable_server_is_a_clear_error() -> None:
    backend = OpenAICompatibleBackend(
        "m", base_url="http://127.0.0.1:9/v1", max_retries=0, connect_timeout=1.0
    )
    with pytest.raises(
        ServerUnreachableError, match=re.escape("cannot reach http://127.0.0.1:9/v1")
    ):
        backend.generate("hello", max_tokens=1)


# -- a scripted HTTP endpoint for status-code paths ----------------------------------------------


class _Scripted(BaseHTTPRequestHandler):
    script: ClassVar[list[tuple[int, dict[str, str], dict[str, Any]]]] = []
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length))
        type(self).seen.append({"body": body, "auth": self.headers.get("authorization")})
        status, headers, payload = type(self).script.pop(0)
        data = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[tuple[str, type[_Scripted]]]:
    handler = type("Handler", (_Scripted,), {"script": [], "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    server.shutdown()


OK = load("llamacpp_completions_logprobs.json")


def test_retry_after_is_honoured_and_counted(scripted: tuple[str, type[_Scripted]]) -> None:
    url, handler = scripted
    handler.script = [
        (429, {"retry-after": "0"}, {"error": {"message": "slow down"}}),
        (500, {}, {"error": {"message": "boom"}}),
        (200, {}, OK),
    ]
    backend = OpenAICompatibleBackend("m", base_url=url, max_retries=3)
    completion = backend.generate("0 1 ", max_tokens=1)
    assert completion.text == OK["choices"][0]["text"]
    assert backend.stats.requests == 1
    assert backend.stats.retries == 2


def test_persistent_429_is_a_rate_limit_error(scripted: tuple[str, type[_Scripted]]) -> None:
    url, handler = scripted
    handler.script = [(429, {"retry-after": "0"}, {"error": {"message": "no"}})] * 2
    backend = OpenAICompatibleBackend("m", base_url=url, max_retries=1)
    with pytest.raises(RateLimitError, match="429"):
        backend.generate("x", max_tokens=1)


def test_400_is_not_retried_and_shows_the_server_message(
    scripted: tuple[str, type[_Scripted]],
) -> None:
    url, handler = scripted
    handler.script = [(400, {}, {"error": {"message": "context too long"}})]
    backend = OpenAICompatibleBackend("m", base_url=url, max_retries=3, api_key="sk-secret-1")
    with pytest.raises(APIStatusError, match="400: context too long") as info:
        backend.generate("x", max_tokens=1)
    assert info.value.status_code == 400
    assert backend.stats.retries == 0
    assert "sk-secret-1" not in str(info.value)
    assert "sk-secret-1" not in repr(backend)


def test_extra_request_fields_reach_the_wire_and_key_the_cache(
    scripted: tuple[str, type[_Scripted]], tmp_path: Path
) -> None:
    url, handler = scripted
    handler.script = [(200, {}, OK), (200, {}, OK)]
    cache = CallCache(tmp_path / "cache.sqlite")
    backend = OpenAICompatibleBackend("m", base_url=url, max_retries=0, cache=cache)
    backend.generate("x", max_tokens=1, extra={"reasoning_effort": "low"})
    assert handler.seen[0]["body"]["reasoning_effort"] == "low"
    backend.generate("x", max_tokens=1, extra={"reasoning_effort": "low"})  # from the cache
    backend.generate("x", max_tokens=1, extra={"reasoning_effort": "high"})
    assert [seen["body"].get("reasoning_effort") for seen in handler.seen] == ["low", "high"]
    with pytest.raises(InputError, match="mapping of request fields"):
        backend.generate("x", max_tokens=1, extra=["low"])  # type: ignore[arg-type]


# -- vLLM prompt_logprobs ----------------------------------------------------------------------


def _vllm_prompt_scores() -> dict[str, Any]:
    """The shape vLLM's /v1/completions returns with prompt_logprobs=2, return_token_ids=True,
    for the prompt "0 1" tokenised as BOS, "0", " ", "1"."""

    def lp(token: str, logprob: float, rank: int) -> dict[str, Any]:
        return {"logprob": logprob, "rank": rank, "decoded_token": token}

    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "text": " ",
                "finish_reason": "length",
                "prompt_token_ids": [1, 15, 220, 16],
                "prompt_logprobs": [
                    None,
                    {"15": lp("0", -0.9, 1), "16": lp("1", -1.1, 2)},
                    {"220": lp(" ", -0.01, 1), "11": lp(",", -5.0, 2)},
                    # The prompt's token is listed even outside the top 2.
                    {"15": lp("0", -0.2, 1), "17": lp("2", -3.0, 2), "16": lp("1", -4.5, 3)},
                ],
            }
        ],
        "usage": {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5},
    }


def test_vllm_prompt_logprobs_are_read_per_position() -> None:
    rows = parse_prompt_logprobs(_vllm_prompt_scores(), "0 1")
    assert [text for text, _ in rows] == ["", "0", " ", "1"]
    assert rows[0][1] == {}
    assert rows[1][1] == {"0": -0.9, "1": -1.1}
    assert rows[3][1]["1"] == -4.5


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda r: r["choices"][0].pop("prompt_logprobs"), "no prompt_logprobs"),
        (lambda r: r["choices"][0].pop("prompt_token_ids"), "prompt_token_ids"),
        (lambda r: r["choices"][0]["prompt_logprobs"][2].pop("220"), "position 2"),
    ],
)
def test_malformed_prompt_logprobs_are_format_errors(
    mutate: Callable[[dict[str, Any]], object], match: str
) -> None:
    raw = _vllm_prompt_scores()
    mutate(raw)
    with pytest.raises(ResponseFormatError, match=match):
        parse_prompt_logprobs(raw, "0 1")


def test_prompt_scoring_asks_vllm_for_every_position(
    scripted: tuple[str, type[_Scripted]],
) -> None:
    url, handler = scripted
    handler.script = [(200, {}, _vllm_prompt_scores())]
    backend = OpenAICompatibleBackend("m", base_url=url, max_retries=0, prompt_logprobs=True)
    rows = backend.prompt_logprobs("0 1", top_logprobs=2)
    body = handler.seen[0]["body"]
    assert body["prompt_logprobs"] == 2
    assert body["return_token_ids"] is True
    assert body["max_tokens"] == 1
    assert len(rows) == 4


def test_prompt_scoring_must_be_declared() -> None:
    backend = OpenAICompatibleBackend("m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(CapabilityError, match="prompt_logprobs=True"):
        backend.prompt_logprobs("0 1", top_logprobs=2)
