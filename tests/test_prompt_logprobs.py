"""`--prompt-logprobs`: a sequence's every position from one vLLM request, on a loopback double.

The double serves /v1/completions as vLLM does, for one made-up character-level model:

- a plain request (``max_tokens=1``, ``logprobs=k``) gets the legacy completions shape,
  ``choices[0].logprobs.top_logprobs[0]`` = ``{token: logprob}`` for the next token;
- a request with ``prompt_logprobs=k`` (and ``return_token_ids``) also gets
  ``choices[0].prompt_logprobs``: a list with None for the first prompt token, then per prompt
  position a dict keyed by token id (as a string) of ``{"logprob", "rank", "decoded_token"}``
  holding the top-k alternatives and the prompt's own token, beside ``prompt_token_ids``.

That shape is vLLM's as documented (read 2026-12-01): docs.vllm.ai, api/vllm/logprobs
(``PromptLogprobs = list[Optional[dict[int, Logprob]]]``, ``Logprob(logprob, rank,
decoded_token)``, "logprob of first prompt token is None" in v1/engine/logprobs) and
api/vllm/entrypoints/openai/completion/protocol (`CompletionRequest` takes ``prompt_logprobs``
as an extra body field; the choice carries ``prompt_logprobs`` and, with ``return_token_ids``,
``prompt_token_ids``). No live vLLM server is reachable from the test machines; the double
checks the protocol and the bookkeeping, not vLLM itself.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan import connect
from cotplan.cli import app, main
from cotplan.research.experiments import MARTINGALE_QUICK, BackendPredictor

runner = CliRunner()

INSTRUCTION = "Bits:\n"
BOS_ID = 1


def p_one(bits: str) -> float:
    """The double's P(next = 1 | bits): deterministic, order-dependent, never 0 or 1."""
    t, ones = len(bits), bits.count("1")
    return min(0.98, max(0.02, (ones + 0.5 + 0.3 * math.sin(t)) / (t + 1.0)))


def next_char(context: str) -> dict[str, float]:
    """The double's next-character distribution after `context` (probabilities)."""
    if context.startswith(INSTRUCTION):
        body = context[len(INSTRUCTION) :]
        if body == "" or body.endswith(" "):  # a bit comes next
            p = p_one(body.replace(" ", ""))
            # 10% elsewhere, so the client must renormalise "0" and "1".
            return {"1": 0.9 * p, "0": 0.9 * (1.0 - p), "x": 0.1}
        return {" ": 0.95, "\n": 0.05}
    return {INSTRUCTION[len(context)]: 0.9, "?": 0.1} if len(context) < len(INSTRUCTION) else {}


def token_id(char: str) -> int:
    return 100 + ord(char)


class _VLLM(BaseHTTPRequestHandler):
    """/v1/completions as vLLM answers it, one character a token, a BOS token first."""

    lock: ClassVar[threading.Lock]
    plain: ClassVar[list[str]]  # prompts of one-position requests
    scored: ClassVar[list[str]]  # prompts of prompt_logprobs requests

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length))
        prompt = str(body["prompt"])
        assert body["max_tokens"] == 1
        if "prompt_logprobs" in body:
            assert body["return_token_ids"] is True
            with self.lock:
                type(self).scored.append(prompt)
            payload = self._scored(prompt, int(body["prompt_logprobs"]))
        else:
            with self.lock:
                type(self).plain.append(prompt)
            payload = self._plain(prompt, int(body["logprobs"]))
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _plain(prompt: str, k: int) -> dict[str, Any]:
        dist = sorted(next_char(prompt).items(), key=lambda kv: -kv[1])[:k]
        top = {char: math.log(p) for char, p in dist}
        first = dist[0][0]
        return {
            "id": "cmpl-plain",
            "object": "text_completion",
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "text": first,
                    "finish_reason": "length",
                    "logprobs": {
                        "text_offset": [len(prompt)],
                        "tokens": [first],
                        "token_logprobs": [top[first]],
                        "top_logprobs": [top],
                    },
                }
            ],
            "usage": {"prompt_tokens": len(prompt) + 1, "completion_tokens": 1},
        }

    @staticmethod
    def _scored(prompt: str, k: int) -> dict[str, Any]:
        entries: list[dict[str, dict[str, Any]] | None] = [None]  # BOS: no context
        for i, char in enumerate(prompt):
            dist = next_char(prompt[:i])
            ranked = sorted(dist.items(), key=lambda kv: -kv[1])
            entry = {
                str(token_id(c)): {"logprob": math.log(p), "rank": r, "decoded_token": c}
                for r, (c, p) in enumerate(ranked[:k], start=1)
            }
            # vLLM lists the prompt's own token at every position, in the top k or not.
            if str(token_id(char)) not in entry:
                p = dist.get(char, 1e-6)
                rank = 1 + sum(q > p for q in dist.values())
                entry[str(token_id(char))] = {
                    "logprob": math.log(p),
                    "rank": rank,
                    "decoded_token": char,
                }
            entries.append(entry)
        return {
            "id": "cmpl-scored",
            "object": "text_completion",
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "text": "x",
                    "finish_reason": "length",
                    "logprobs": None,
                    "prompt_logprobs": entries,
                    "prompt_token_ids": [BOS_ID, *(token_id(c) for c in prompt)],
                }
            ],
            "usage": {"prompt_tokens": len(prompt) + 1, "completion_tokens": 1},
        }

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, type[_VLLM]]]:
    monkeypatch.setenv("COTPLAN_CACHE", "off")  # every prediction is a request to count
    handler = type("Handler", (_VLLM,), {"lock": threading.Lock(), "plain": [], "scored": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    server.shutdown()
    server.server_close()


def _predictor(url: str, *, scored: bool) -> BackendPredictor:
    backend = connect("openai:test-model", base_url=url, prompt_logprobs=scored, cache=None)
    return BackendPredictor(backend, instruction=INSTRUCTION)


def test_one_request_per_sequence_gives_the_per_position_probabilities(
    vllm: tuple[str, type[_VLLM]],
) -> None:
    url, handler = vllm
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2, size=(5, 12)).astype(np.int8)
    lengths = [0, 3, 7, 11, 12]

    per_position = _predictor(url, scored=False)
    q_plain = per_position.prefix_probs(bits, lengths)
    assert len(handler.plain) == 5 * len(lengths)
    assert not handler.scored

    one_request = _predictor(url, scored=True)
    q_scored = one_request.prefix_probs(bits, lengths)
    assert len(handler.scored) == 5  # one per sequence
    assert len(handler.plain) == 5 * len(lengths)  # no one-position request added
    assert one_request.requests_made == 5
    assert per_position.requests_made == 5 * len(lengths)

    np.testing.assert_allclose(q_scored, q_plain, rtol=0, atol=1e-12)
    expected = [[p_one("".join(map(str, row[:t]))) for t in lengths] for row in bits.tolist()]
    np.testing.assert_allclose(q_scored, expected, rtol=0, atol=1e-12)
    # Both read the same 10% outside "0" and "1", at every position.
    assert one_request.mean_covered_mass == pytest.approx(0.9)
    assert per_position.mean_covered_mass == pytest.approx(0.9)


def _experiment(command: str, url: str, out: Path, *extra: str) -> Any:
    args = [
        "experiment",
        command,
        "--backend",
        "openai:test-model",
        "--base-url",
        url,
        "--instruction",
        INSTRUCTION,
        "--quick",
        "--no-charts",
        "-o",
        str(out),
        *extra,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result


def test_the_martingale_command_makes_one_request_per_sequence(
    vllm: tuple[str, type[_VLLM]], tmp_path: Path
) -> None:
    url, handler = vllm
    _experiment("martingale", url, tmp_path / "plain")
    plain = len(handler.plain)
    assert plain == 10 * 32
    assert not handler.scored

    result = _experiment("martingale", url, tmp_path / "scored", "--prompt-logprobs")
    assert len(handler.scored) == MARTINGALE_QUICK["n_sequences"]
    assert len(handler.plain) == plain
    assert f"{MARTINGALE_QUICK['n_sequences']} model requests" in result.output

    # The same distributions, so the same gaps, sequence by sequence.
    a = pd.read_csv(tmp_path / "plain" / "martingale_per_sequence.csv")
    b = pd.read_csv(tmp_path / "scored" / "martingale_per_sequence.csv")
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9, atol=1e-12)


def test_entropy_routes_through_prompt_scoring(
    vllm: tuple[str, type[_VLLM]], tmp_path: Path
) -> None:
    url, handler = vllm
    _experiment("entropy", url, tmp_path / "entropy", "--prompt-logprobs")
    assert len(handler.scored) == 8
    assert not handler.plain


def test_report_routes_through_prompt_scoring(
    vllm: tuple[str, type[_VLLM]], tmp_path: Path
) -> None:
    url, handler = vllm
    _experiment("report", url, tmp_path / "report", "--prompt-logprobs", "--only", "martingale")
    assert len(handler.scored) == 10
    assert not handler.plain


def test_order_says_the_flag_changes_nothing_there(
    vllm: tuple[str, type[_VLLM]], tmp_path: Path
) -> None:
    url, handler = vllm
    result = _experiment("order", url, tmp_path / "order", "--prompt-logprobs")
    assert "--prompt-logprobs changes nothing here: order reads one position" in result.output
    assert len(handler.plain) == 64
    assert not handler.scored


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["martingale", "-b", "local"], "embedded llama.cpp server does not return"),
        (["entropy", "-b", "laplace"], "exact reference"),
        (["martingale", "-b", "pe:rope"], "in-process model"),
        (["martingale", "-b", "openai:gpt-4o-mini"], "OpenAI's own API"),
        (
            ["martingale", "-b", "openai-responses:m", "--base-url", "http://127.0.0.1:9/v1"],
            "'openai-responses' backends",
        ),
        (["falck", "-b", "lab:parity"], "'lab' backends"),
        (["report", "-b", "local", "--only", "martingale"], "llama.cpp"),
        (["debias", "--from", "somewhere"], "--from reuses saved gaps"),
    ],
)
def test_backends_that_cannot_score_prompts_are_refused_first(
    argv: list[str], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "never"
    with pytest.raises(SystemExit) as exit_info:
        main(["experiment", *argv, "--quick", "--prompt-logprobs", "-o", str(out)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    # One message (the console folds it at the terminal's width), no traceback.
    assert err.startswith("error: `prompt_logprobs`:"), err
    assert err.count("error:") == 1, err
    assert why in " ".join(err.split())
    assert "Traceback" not in err
    assert not out.exists()  # refused before a report folder or a model was started
