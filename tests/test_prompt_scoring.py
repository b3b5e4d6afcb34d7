"""The vLLM-shaped prompt-scoring proxy in front of a llama.cpp server (`cotplan.prompt_scoring`).

The unit tests put a double of llama.cpp's native endpoints behind the proxy (one character a
token, a known log-probability per forced token) and read the proxy through the client cotplan
uses for vLLM: the reply's shape, the values, the cache, forwarding and the error paths. The
model tests run it on the embedded thinking model: the forced reading equals llama.cpp's own
top-list value, and the k* study takes its logprob path end to end.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan import connect
from cotplan.cli import app
from cotplan.errors import BackendError
from cotplan.prompt_scoring import PromptScoringProxy
from cotplan.research.lab.reasoning.kstar_served import gold_logprob

runner = CliRunner()


def fake_logprob(prefix_length: int, token: int) -> float:
    """The double's log-probability of `token` after `prefix_length` tokens."""
    return -0.01 * prefix_length - 0.001 * (token % 97)


class FakeLlamaCpp:
    """llama.cpp's /tokenize, /completion and /v1/completions, one character a token."""

    def __init__(self, *, disobey: bool = False) -> None:
        self.disobey = disobey  # answer with another token than the forced one
        self.completions: list[dict[str, Any]] = []
        self.forwarded: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path == "/tokenize":
                    tokens = [{"id": ord(c), "piece": c} for c in body["content"]]
                    reply: dict[str, Any] = {"tokens": tokens}
                elif self.path == "/completion":
                    fake.completions.append(body)
                    reply = fake.complete(body)
                else:
                    fake.forwarded.append(body)
                    reply = {"choices": [{"index": 0, "text": "ok", "finish_reason": "stop"}]}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        prefix = body["prompt"]
        if "logit_bias" not in body:
            return {"content": "z"}
        token = int(body["logit_bias"][0][0]) + (1 if self.disobey else 0)
        top = {"id": ord("z"), "token": "z", "logprob": -0.05}
        chosen = {"id": token, "token": chr(token), "logprob": fake_logprob(len(prefix), token)}
        return {"completion_probabilities": [{**chosen, "top_logprobs": [top]}]}


@pytest.fixture
def fake() -> Iterator[FakeLlamaCpp]:
    server = FakeLlamaCpp()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_prompt_logprobs_come_back_in_vllms_shape_with_the_forced_values(
    fake: FakeLlamaCpp,
) -> None:
    with PromptScoringProxy(fake.base_url) as proxy:
        backend = connect("openai:m", base_url=proxy.base_url, prompt_logprobs=True, cache=None)
        prompt, gold = "Q: 2+2? Answer:", " 4"
        rows = backend.prompt_logprobs(prompt + gold, top_logprobs=1)  # type: ignore[attr-defined]
        assert "".join(text for text, _ in rows) == prompt + gold
        assert rows[0] == ("Q", {})  # the first token has no context, as in vLLM
        for j, (text, alternatives) in enumerate(rows[1:], start=1):
            assert alternatives[text] == pytest.approx(fake_logprob(j, ord(text)))
        # Every position after the first was forced, each its own one-token request.
        forced = [body["logit_bias"][0][0] for body in fake.completions if "logit_bias" in body]
        assert forced == [ord(c) for c in (prompt + gold)[1:]]
        expected = sum(fake_logprob(len(prompt) + i, ord(c)) for i, c in enumerate(gold))
        assert gold_logprob(rows, prompt) == pytest.approx(expected)
        assert proxy.stats.positions_computed == len(prompt + gold) - 1

        # A second prompt sharing the prefix reads the shared positions from the cache.
        backend.prompt_logprobs(prompt + " 5", top_logprobs=1)  # type: ignore[attr-defined]
        assert proxy.stats.positions_cached == len(prompt)
        assert proxy.stats.positions_computed == len(prompt + gold)


def test_requests_without_prompt_logprobs_are_forwarded_unchanged(fake: FakeLlamaCpp) -> None:
    with PromptScoringProxy(fake.base_url) as proxy:
        backend = connect("openai:m", base_url=proxy.base_url, cache=None)
        completion = backend.generate("Q: 2+2?", max_tokens=3)
        assert completion.text == "ok"
        assert fake.forwarded[0]["prompt"] == "Q: 2+2?"
        assert fake.forwarded[0]["max_tokens"] == 3
        assert not fake.completions  # nothing scored
        assert proxy.stats.forwarded == 1


def test_a_token_the_upstream_did_not_take_is_an_error_not_a_value() -> None:
    server = FakeLlamaCpp(disobey=True)
    try:
        with PromptScoringProxy(server.base_url) as proxy:
            reply = httpx.post(
                f"{proxy.base_url}/completions",
                json={"model": "m", "prompt": "ab", "max_tokens": 1, "prompt_logprobs": 1},
            )
            assert reply.status_code == 502
            assert "did not take the forced token" in reply.json()["error"]["message"]
            backend = connect(
                "openai:m", base_url=proxy.base_url, prompt_logprobs=True, cache=None, max_retries=0
            )
            with pytest.raises(BackendError):
                backend.prompt_logprobs("ab", top_logprobs=1)  # type: ignore[attr-defined]
    finally:
        server.server.shutdown()
        server.server.server_close()


@pytest.mark.parametrize("top", [True, -1, "2"])
def test_a_malformed_prompt_logprobs_field_is_refused(fake: FakeLlamaCpp, top: object) -> None:
    with PromptScoringProxy(fake.base_url) as proxy:
        reply = httpx.post(
            f"{proxy.base_url}/completions",
            json={"model": "m", "prompt": "ab", "max_tokens": 1, "prompt_logprobs": top},
        )
        assert reply.status_code == 400
        assert "`prompt_logprobs`" in reply.json()["error"]["message"]
        assert not fake.completions


def test_the_upstream_must_be_on_loopback() -> None:
    from cotplan.errors import InputError

    with pytest.raises(InputError, match="`upstream`"):
        PromptScoringProxy("http://example.com/v1")


@pytest.mark.model
def test_the_forced_reading_is_the_models_own_log_probability(thinking_model: Any) -> None:
    with PromptScoringProxy(thinking_model.base_url) as proxy:
        pieces = proxy.tokens("Add up these 3 numbers: 4, 5, 6. What is their sum? Answer: 15")
        ids = [token_id for token_id, _ in pieces]
        forced = proxy.position(pieces, len(ids) - 1, 20)[str(ids[-1])]["logprob"]
        listed = httpx.post(
            f"{proxy.root}/completion",
            json={"prompt": ids[:-1], "n_predict": 1, "n_probs": 20, "temperature": 0.0},
            timeout=120,
        ).json()["completion_probabilities"][0]["top_logprobs"]
        values = {int(a["id"]): float(a["logprob"]) for a in listed}
        assert ids[-1] in values  # "5" after "Answer: 1" is among the model's top 20
        assert forced == pytest.approx(values[ids[-1]], abs=1e-4)


@pytest.mark.model
@pytest.mark.slow
def test_the_k_star_study_reads_b_from_prompt_logprobs_end_to_end(
    tmp_path: Path, thinking_model: Any
) -> None:
    out = tmp_path / "kstar"
    with PromptScoringProxy(thinking_model.base_url) as proxy:
        argv = ["kstar", "study", "--backend", "openai:smollm2-135m-thinking"]
        served = ["--base-url", proxy.base_url, "--prompt-logprobs", "--measure", "logprob"]
        small = ["--sizes", "2,3", "--items", "5", "--seeds", "1", "--budget-points", "3"]
        caps = ["--min-tokens", "16", "--tokens-per-input", "4", "--eps", "0.5,0.3"]
        result = runner.invoke(app, [*argv, *served, *small, *caps, "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert proxy.stats.scored_prompts == 2 * 5 * 3  # one per forced answer
    protocol = json.loads((out / "protocol.json").read_text(encoding="utf-8"))
    assert protocol["measure_used"] == "logprob"
    answers = pd.read_csv(out / "logloss_answers.csv")
    assert len(answers) == 2 * 5 * 3
    assert ((answers["p_correct"] > 0) & (answers["p_correct"] <= 1)).all()
    for p, loss in zip(answers["p_correct"], answers["loss"], strict=True):
        assert loss == pytest.approx(-math.log(p))
    # A probability, not the 0/1 error again: B carries information the error does not.
    assert not answers["loss"].isin([0.0, 1.0]).all()
    assert "teacher-forced" in result.output
