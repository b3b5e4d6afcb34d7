"""The Responses API backend: request bodies field by field, recorded response bodies parsed into
the same completion record, and budgeted CoT through it.

Recorded bodies, read 2026-12-01:
- `COMPLETED`: the example response of "Create a model response" in OpenAI's API reference
  (https://platform.openai.com/docs/api-reference/responses/create), with its text shortened.
- `CUT`: the incomplete response in OpenAI's reasoning guide, "Allocating space for reasoning"
  (https://platform.openai.com/docs/guides/reasoning): `status: "incomplete"`,
  `incomplete_details.reason: "max_output_tokens"`, only a reasoning item in `output`.
- `REASONED`: the same shape completed, a reasoning item with a summary before the message, the
  hidden tokens in `usage.output_tokens_details.reasoning_tokens` (openai-python
  `types/responses/response.py`, `response_usage.py`, `response_reasoning_item.py`).
The loopback double answers `POST /v1/responses` with them through the real openai SDK.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from cotplan.backends import connect
from cotplan.backends.budgets import request_fields
from cotplan.backends.responses import OpenAIResponsesBackend, parse_response
from cotplan.errors import CapabilityError, InputError
from cotplan.generate import budgeted_answer
from cotplan.generate.budget_setup import resolve_mode
from cotplan.tasks import TaskItem

ITEM = TaskItem(id="q1", prompt="What is 3 + 4?", answer="7", kind="integer", n=2)

_USAGE = {
    "input_tokens": 36,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 87,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 123,
}

COMPLETED: dict[str, Any] = {
    "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "object": "response",
    "created_at": 1741476542,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "max_output_tokens": None,
    "model": "gpt-4.1-2025-04-14",
    "output": [
        {
            "type": "message",
            "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
            "status": "completed",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "In a peaceful grove beneath a silver moon, a unicorn named Lumina...",
                    "annotations": [],
                }
            ],
        }
    ],
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "reasoning": {"effort": None, "summary": None},
    "store": True,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}},
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
    "truncation": "disabled",
    "usage": _USAGE,
    "user": None,
    "metadata": {},
}

CUT: dict[str, Any] = {
    **COMPLETED,
    "id": "resp_123456",
    "created_at": 1741476777,
    "status": "incomplete",
    "incomplete_details": {"reason": "max_output_tokens"},
    "max_output_tokens": 80,
    "model": "o4-mini-2025-04-16",
    "output": [{"type": "reasoning", "id": "rs_123456", "summary": []}],
    "reasoning": {"effort": "low", "summary": None},
    "usage": {
        "input_tokens": 75,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 80,
        "output_tokens_details": {"reasoning_tokens": 80},
        "total_tokens": 155,
    },
}

REASONED: dict[str, Any] = {
    **COMPLETED,
    "model": "o4-mini-2025-04-16",
    "output": [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Add 3 and 4."}],
        },
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Answer: 7", "annotations": []}],
        },
    ],
    "usage": {
        "input_tokens": 40,
        "input_tokens_details": {"cached_tokens": 32},
        "output_tokens": 70,
        "output_tokens_details": {"reasoning_tokens": 64},
        "total_tokens": 110,
    },
}


def test_recorded_bodies_parse_into_the_completion_record() -> None:
    done = parse_response(COMPLETED, model="gpt-4.1")
    assert done.text.startswith("In a peaceful grove")
    assert done.finish_reason == "stop"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (36, 87)
    cut = parse_response(CUT, model="o4-mini")
    assert cut.text == ""
    assert cut.truncated  # incomplete_details.reason == "max_output_tokens"
    assert cut.usage.reasoning_tokens == 80
    reasoned = parse_response(REASONED, model="o4-mini")
    assert reasoned.text == "Answer: 7"
    assert reasoned.reasoning == "Add 3 and 4."
    assert reasoned.usage.reasoning_tokens == 64
    assert reasoned.usage.cached_tokens == 32


class _Server(BaseHTTPRequestHandler):
    replies: ClassVar[list[dict[str, Any]]] = []
    bodies: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        type(self).bodies.append((self.path, json.loads(self.rfile.read(length))))
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
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_connect_reaches_the_responses_api_both_ways() -> None:
    url = "http://127.0.0.1:9/v1"
    for backend in (
        connect("openai-responses:o4-mini", base_url=url, cache=None),
        connect("openai:o4-mini", base_url=url, cache=None, api="responses"),
    ):
        assert isinstance(backend, OpenAIResponsesBackend)
        assert backend.budget_rule == "openai-responses"
        assert resolve_mode(backend) == "hidden"
    chat = connect("openai-responses:gpt-4.1", base_url=url, cache=None)
    assert chat.budget_rule == "openai-responses-output"
    with pytest.raises(InputError, match="`api`: must be 'chat' or 'responses'"):
        connect("openai:o4-mini", base_url=url, cache=None, api="assistants")


def test_a_cut_inside_the_hidden_reasoning_is_answered_again(
    server: tuple[str, type[_Server]],
) -> None:
    url, handler = server
    handler.replies.extend([CUT, REASONED])
    with connect("openai-responses:o4-mini", base_url=url, cache=None) as model:
        answer = budgeted_answer(model, ITEM, 64, answer_tokens=16)
    (path, first), (_, second) = handler.bodies
    assert path == "/v1/responses"
    # Field by field: the budget as `request_fields` gives it (a level is not a token count:
    # `max_output_tokens` is the hard cap), the input, and nothing stored at OpenAI.
    fields = request_fields("openai-responses", "o4-mini", 64, answer_tokens=16)
    assert fields.params == {"reasoning": {"effort": "low"}, "max_output_tokens": 80}
    assert any("is a level, not a token count" in note for note in fields.notes)
    assert first == {
        "model": "o4-mini",
        "input": [
            {
                "role": "user",
                "content": 'What is 3 + 4?\nGive only the final answer, after "Answer:", '
                "with no explanation.",
            }
        ],
        "store": False,
        **fields.params,
    }
    assert second["max_output_tokens"] == 16
    assert "reasoning" not in second
    assert second["input"][-1] == {
        "role": "user",
        "content": 'Stop reasoning now. Give only the final answer, after "Answer:".',
    }
    assert answer.mode == "hidden"
    # Where the budget became a level, the answer says so.
    assert "is a level, not a token count" in answer.budget_note
    assert answer.truncated
    assert answer.forced
    assert answer.calls == 2
    assert answer.reasoning_tokens == 80 + 64
    assert not answer.cap_held
    assert answer.correct


def test_a_chat_model_sends_temperature_and_a_plain_cap(
    server: tuple[str, type[_Server]],
) -> None:
    url, handler = server
    handler.replies.append(COMPLETED)
    with connect("openai-responses:gpt-4.1", base_url=url, cache=None) as model:
        reply = model.generate("Tell me a story.", max_tokens=100, temperature=0.5)
    ((_, body),) = handler.bodies
    assert body == {
        "model": "gpt-4.1",
        "input": "Tell me a story.",
        "store": False,
        "max_output_tokens": 100,
        "temperature": 0.5,
    }
    assert reply.usage.completion_tokens == 87
    with pytest.raises(CapabilityError, match="stop"):
        model.generate("x", max_tokens=5, stop=["\n"])
