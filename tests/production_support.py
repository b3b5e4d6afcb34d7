"""What the production tests share: a one-size plan, doubles of an upstream server and of
its replies, and log records (tests/test_production_*.py import it by name; pytest puts this
folder on the path)."""

from __future__ import annotations

import json
import math
from typing import Any

import httpx2
import openai
import pytest

from cotplan.planner import SavedPlan
from cotplan.planner.records import Budget
from cotplan.planner.saved_plan import SCHEMA_VERSION
from cotplan.production import LogRecord

THINKER = "smollm2-135m-thinking@0123456789ab"
PLAIN = "smollm2-135m-instruct@0123456789ab"
LOCAL = "http://127.0.0.1:9/v1"


def make_plan(model: str, tokens: int = 6, n: int = 3, *, eps: float = 0.1) -> SavedPlan:
    """A plan for `model` with one budget, `tokens` at size `n` (a version-2 file with no law:
    `cap(n)` answers only at `n`)."""
    budget = Budget(
        n=n,
        eps=eps,
        k_star=float(tokens),
        low=float(tokens),
        high=float(tokens),
        tokens=tokens,
        log_base="e",
        c_in_base=1.0,
        formula="k*",
        baselines={},
    )
    return SavedPlan(
        eps=eps,
        delta=0.05,
        law=None,
        status_="helps",
        verdict_="v",
        calibration="calibration.csv",
        budgets=(budget,),
        model=model,
        schema_version=SCHEMA_VERSION,
    )


def text_reply(text: str, finish: str, completion: int, prompt: int = 40) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "served",
        "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def chat_reply(content: str, finish: str, completion: int, reasoning: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "o3-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": completion,
            "total_tokens": 20 + completion,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


class Upstream:
    """A double of the upstream server: answers queued replies and records the requests.
    A reply that is a list of strings is sent as a server-sent event stream of those texts."""

    def __init__(self, *replies: dict[str, Any] | int | list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append((request.url.path, json.loads(request.content)))
        reply = self.replies.pop(0)
        if isinstance(reply, int):
            return httpx2.Response(reply, json={"error": {"message": "upstream broke"}})
        if isinstance(reply, list):
            events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in reply)
            return httpx2.Response(
                200,
                content=(events + "data: [DONE]\n\n").encode(),
                headers={"content-type": "text/event-stream"},
            )
        return httpx2.Response(200, json=reply)

    def client(self, base_url: str = LOCAL) -> openai.OpenAI:
        transport = httpx2.MockTransport(self)
        return openai.OpenAI(
            api_key="test",
            base_url=base_url,
            max_retries=0,
            http_client=httpx2.Client(transport=transport),
        )

    def async_client(self, base_url: str = LOCAL) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key="test",
            base_url=base_url,
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self)),
        )


def ask(model: str = THINKER) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}]}


def record(**changes: Any) -> LogRecord:
    """A log row (a template-mode call at n = 3, cap 6, bitten and forced), with `changes`."""
    values: dict[str, Any] = {
        "time": "2026-12-01T00:00:00+00:00",
        "model": PLAIN,
        "size": 3.0,
        "cap": 6,
        "basis": "certified",
        "mode": "template",
        "reasoning_tokens": 6,
        "answer_tokens": 2,
        "prompt_tokens": 90,
        "cap_bitten": True,
        "answer_forced": True,
        "cost_usd": math.nan,
        "via": "gateway",
    }
    values.update(changes)
    return LogRecord(**values)


def text_chunks(
    pieces: list[str], finish: str, *, prompt: int = 40, completion: int | None = None
) -> list[dict[str, Any]]:
    """A streamed text completion as llama.cpp sends it: one chunk a piece, then one with the
    finish and the usage (`completion`: the pieces' count unless given)."""
    base = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "served"}
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "text": piece, "finish_reason": None}]}
        for piece in pieces
    ]
    tokens = len(pieces) if completion is None else completion
    usage = {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}
    last = {"index": 0, "text": "", "finish_reason": finish}
    return [*chunks, {**base, "choices": [last], "usage": usage}]


def chat_chunks(
    pieces: list[str], finish: str, *, completion: int, reasoning: int, ident: str = "chatcmpl-1"
) -> list[dict[str, Any]]:
    """A streamed chat completion as OpenAI sends it with `include_usage`: the role, a chunk a
    piece, the finish, then the usage with empty `choices`."""
    base = {"id": ident, "object": "chat.completion.chunk", "created": 1, "model": "o3-mini"}

    def choice(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    usage = {
        "prompt_tokens": 20,
        "completion_tokens": completion,
        "total_tokens": 20 + completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    return [
        choice({"role": "assistant", "content": ""}),
        *(choice({"content": piece}) for piece in pieces),
        choice({}, finish),
        {**base, "choices": [], "usage": usage},
    ]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the cotplan CLI in-process: its exit code and what it printed."""
    from cotplan.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out = capsys.readouterr()
    code = exit_info.value.code
    return int(code) if isinstance(code, int) else 0, out.out + out.err
