"""Server-side thinking caps as one request: the request each server documents, its reply parsed
into the same answer record, the cap checked, and a cap that ate the answer reported.

A loopback double stands in for each server (none of them runs offline here). It serves
response bodies shaped as each server documents them, read 2026-12-01:

- vLLM: docs/features/reasoning_outputs.md (`message.reasoning`, formerly `reasoning_content`;
  `thinking_token_budget` with `--reasoning-config`); https://docs.vllm.ai
- llama.cpp: tools/server/README.md (`message.reasoning_content` with the reasoning format on;
  `thinking_budget_tokens`); https://github.com/ggml-org/llama.cpp
- SGLang: docs.sglang.io advanced_features/separate_reasoning and thinking_budget
  (`reasoning_content`; `custom_params.thinking_budget` with `--enable-strict-thinking`); the
  cap that ate the answer is sgl-project/sglang issue #25536 (reasoning used every token,
  `content: null`, `finish_reason: "length"`)
- OpenRouter: openrouter.ai/docs/use-cases/reasoning-tokens (`message.reasoning`,
  `reasoning.max_tokens`, `usage.completion_tokens_details.reasoning_tokens`)

The fallback, two-phase forcing where the server cannot cap, runs on the real embedded server
in test_generate_budget_paths_model.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from cotplan.backends import connect
from cotplan.generate import budgeted_answer
from cotplan.tasks import TaskItem

ITEM = TaskItem(id="q1", prompt="What is 3 + 4?", answer="7", kind="integer", n=2)


class _Server(BaseHTTPRequestHandler):
    replies: ClassVar[list[dict[str, Any]]] = []
    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        payload = json.dumps(type(self).replies.pop(0)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Server]]]:
    handler = type("Handler", (_Server,), {"replies": [], "bodies": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def _chat(message: dict[str, Any], finish: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1764547200,
        "model": "Qwen/Qwen3-8B",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
    }


THINKING = "The user asks 3 + 4. Three plus four is seven."


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize(
    ("provider", "message", "usage", "cap_fields"),
    [
        (
            "vllm-thinking",
            {"role": "assistant", "reasoning": THINKING, "content": "Answer: 7", "tool_calls": []},
            {"prompt_tokens": 18, "completion_tokens": 16, "total_tokens": 34},
            {"thinking_token_budget": 64, "max_tokens": 88},
        ),
        (
            "llama.cpp-thinking",
            {"role": "assistant", "reasoning_content": THINKING, "content": "Answer: 7"},
            {"prompt_tokens": 18, "completion_tokens": 16, "total_tokens": 34},
            {"thinking_budget_tokens": 64, "max_tokens": 88},
        ),
        (
            "sglang-thinking",
            {"role": "assistant", "reasoning_content": THINKING, "content": "Answer: 7"},
            {"prompt_tokens": 18, "completion_tokens": 16, "total_tokens": 34},
            {"custom_params": {"thinking_budget": 64}, "max_tokens": 88},
        ),
    ],
)
def test_each_server_cap_is_one_request_and_its_reply_one_record(
    server: tuple[str, type[_Server]],
    provider: str,
    message: dict[str, Any],
    usage: dict[str, Any],
    cap_fields: dict[str, Any],
) -> None:
    url, handler = server
    handler.replies.append(_chat(message, "stop", usage))
    with connect(
        "openai:Qwen/Qwen3-8B", base_url=url, cache=None, provider=provider, tokenizer=_words
    ) as model:
        answer = budgeted_answer(model, ITEM, 64, answer_tokens=16)
    (body,) = handler.bodies
    assert body == {
        "model": "Qwen/Qwen3-8B",
        "messages": [{"role": "user", "content": "What is 3 + 4?"}],
        "temperature": 0.0,
        **cap_fields,
    }
    assert answer.path == "one-request"
    assert answer.calls == 1
    assert answer.mode == "chat"
    assert answer.protocol == "qwen3"
    assert answer.reasoning == THINKING
    assert answer.answer_text == "Answer: 7"
    # No reasoning count in these servers' usage: the model's tokenizer counts the thinking.
    assert answer.reasoning_tokens == _words(THINKING)
    assert answer.answer_tokens == 16 - _words(THINKING)
    assert answer.cap_held
    assert not answer.answer_lost
    assert answer.correct


def test_openrouter_reports_the_reasoning_tokens_itself(server: tuple[str, type[_Server]]) -> None:
    url, handler = server
    usage = {
        "prompt_tokens": 18,
        "completion_tokens": 70,
        "total_tokens": 88,
        "completion_tokens_details": {"reasoning_tokens": 66},
    }
    message = {"role": "assistant", "content": "Answer: 7", "reasoning": THINKING}
    handler.replies.append(_chat(message, "stop", usage))
    with connect(
        "openai:deepseek/deepseek-r1", base_url=url, cache=None, provider="openrouter"
    ) as m:
        answer = budgeted_answer(m, ITEM, 64, answer_tokens=16)
    (body,) = handler.bodies
    assert body["reasoning"] == {"max_tokens": 64}
    assert body["max_tokens"] == 80
    assert answer.reasoning_tokens == 66
    assert answer.answer_tokens == 4
    # OpenRouter's budget is soft: two tokens over is reported, not hidden.
    assert not answer.cap_held
    assert answer.overrun == 2
    assert answer.correct


def test_a_cap_that_ate_the_answer_is_reported_not_scored(
    server: tuple[str, type[_Server]],
) -> None:
    url, handler = server
    message = {"role": "assistant", "content": None, "reasoning_content": THINKING * 3}
    usage = {"prompt_tokens": 18, "completion_tokens": 88, "total_tokens": 106}
    handler.replies.append(_chat(message, "length", usage))
    with connect(
        "openai:Qwen/Qwen3-8B",
        base_url=url,
        cache=None,
        provider="sglang-thinking",
        tokenizer=_words,
    ) as model:
        answer = budgeted_answer(model, ITEM, 64, answer_tokens=16)
    assert answer.answer_lost
    assert answer.extracted is None
    assert not answer.correct
    assert "the cap ate the answer" in answer.budget_note
    assert answer.path == "one-request"


def test_a_thinking_left_in_the_content_is_split_by_the_protocol(
    server: tuple[str, type[_Server]],
) -> None:
    # vLLM without `--reasoning-parser` returns the thinking inside the content.
    url, handler = server
    message = {"role": "assistant", "content": f"{THINKING}\n</think>\n\nAnswer: 7"}
    usage = {"prompt_tokens": 18, "completion_tokens": 16, "total_tokens": 34}
    handler.replies.append(_chat(message, "stop", usage))
    with connect(
        "openai:Qwen/Qwen3-8B", base_url=url, cache=None, provider="vllm-thinking"
    ) as model:
        answer = budgeted_answer(model, ITEM, 64, answer_tokens=16)
    assert answer.reasoning == THINKING
    assert answer.answer_text == "Answer: 7"
    # Qwen's tokenizer is not known here: the count is the reply's share, and says so.
    assert 0 < answer.reasoning_tokens < 16
    assert "share by characters" in answer.budget_note
