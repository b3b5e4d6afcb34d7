"""The server mode with doubles of the upstream: a server that caps thinking itself gets the
client's own request, every field passed on, with the cap added, in one request; the reply is
the server's, with its reasoning tokens and the report. Detection reads each server's own
endpoint once. (tests/test_gateway_server_cap_model.py runs the same on the embedded model.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import openai
import pytest
from production_support import THINKER, ask, make_plan
from starlette.testclient import TestClient

from cotplan.production import capped, report_of
from cotplan.production.detect import detect_provider
from cotplan.production.gateway import make_app
from cotplan.production.server_cap import CloseFilter

PROPS = {
    "default_generation_settings": {"params": {}},
    "chat_template_caps": {"supports_preserve_reasoning": True},
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "add", "parameters": {"type": "object", "properties": {}}},
    }
]


def reply(content: str | None, reasoning: str, completion: int, **usage: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "reasoning_content": reasoning,
    }
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion",
        "created": 1,
        "model": THINKER,
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {
            "prompt_tokens": 41,
            "completion_tokens": completion,
            "total_tokens": 41 + completion,
            **usage,
        },
    }


class Server:
    """A double of a llama.cpp server with its reasoning parser: `/props`, `/tokenize`, and
    queued chat replies; records each request as (method, path, body)."""

    def __init__(self, *replies: dict[str, Any] | list[str], props: object = PROPS) -> None:
        self.replies = list(replies)
        self.props = props
        self.requests: list[tuple[str, str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.url.path, body))
        if request.url.path == "/props":
            if self.props is None:
                return httpx2.Response(404, json={"error": {"message": "File Not Found"}})
            return httpx2.Response(200, json=self.props)
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": list(range(len(body["content"].split())))})
        if request.url.path in ("/version", "/get_server_info"):
            return httpx2.Response(404, json={"error": {"message": "File Not Found"}})
        answer = self.replies.pop(0)
        if isinstance(answer, list):
            events = "".join(f"data: {line}\n\n" for line in answer) + "data: [DONE]\n\n"
            return httpx2.Response(
                200, content=events.encode(), headers={"content-type": "text/event-stream"}
            )
        return httpx2.Response(200, json=answer)

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(
            api_key="k",
            base_url="http://127.0.0.1:9/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )

    def chats(self) -> list[Any]:
        return [body for _, path, body in self.requests if path == "/v1/chat/completions"]


def test_a_server_that_caps_gets_the_clients_request_with_the_cap_added() -> None:
    server = Server(reply("Answer: 13", "I add 1 and 4, then 8", 14))
    client = capped(server.client(), make_plan(THINKER, tokens=6), provider="detect", log=False)
    schema = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}
    answer = client.chat.completions.create(
        **ask(),
        size=3,
        tools=TOOLS,
        tool_choice="auto",
        response_format=schema,
        logprobs=True,
        top_logprobs=2,
        stop=["\n\n"],
        seed=7,
        n=1,
        user="u1",
        metadata={"team": "search"},
        max_tokens=60,
        extra_body={"cache_prompt": True},
    )
    (sent,) = server.chats()
    assert sent["thinking_budget_tokens"] == 6
    assert sent["max_tokens"] == 60  # the client's: it bounds the whole completion
    for name in ("tools", "tool_choice", "response_format", "logprobs", "top_logprobs"):
        assert name in sent
    assert (sent["stop"], sent["seed"], sent["user"]) == (["\n\n"], 7, "u1")
    assert sent["metadata"] == {"team": "search"}
    assert sent["cache_prompt"] is True
    assert sent["messages"] == ask()["messages"]  # the prompt is the client's own
    assert answer.choices[0].message.content == "Answer: 13"  # unchanged
    # The double's /tokenize counts 7 words; the line break after <think> is one more.
    assert answer.usage is not None
    assert answer.usage.completion_tokens_details is not None
    assert answer.usage.completion_tokens_details.reasoning_tokens == 8
    report = report_of(answer)
    assert (report.mode, report.requests, report.cap) == ("server", 1, 6)
    assert report.cap_bitten


def test_the_servers_own_reasoning_count_is_kept_and_n_passes() -> None:
    counted = {"completion_tokens_details": {"reasoning_tokens": 3}}
    server = Server(reply("Answer: 13", "I add", 9, **counted), props=PROPS)
    client = capped(server.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    answer = client.chat.completions.create(**ask(), size=3, n=2)
    assert server.chats()[0]["n"] == 2
    assert [path for _, path, _ in server.requests] == ["/v1/chat/completions"]  # no /tokenize
    assert report_of(answer).reasoning_tokens == 3
    assert report_of(answer).answer_tokens == 6


@pytest.mark.parametrize(("content", "missing"), [("", True), ("<", True), ("Answer: 1", False)])
def test_a_completion_that_ended_before_any_answer_is_flagged(
    content: str, *, missing: bool
) -> None:
    server = Server(reply(content, "", 1))
    client = capped(server.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    answer = client.chat.completions.create(**ask(), size=3, max_tokens=1)
    assert answer.choices[0].message.content == content
    assert report_of(answer).answer_missing is missing


def test_a_tool_call_is_an_answer() -> None:
    body = reply(None, "I call add", 9)
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    body["choices"][0]["message"]["tool_calls"] = [call]
    body["choices"][0]["finish_reason"] = "tool_calls"
    server = Server(body)
    client = capped(server.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    answer = client.chat.completions.create(**ask(), size=3, tools=TOOLS)
    assert answer.choices[0].message.tool_calls is not None
    assert not report_of(answer).answer_missing


def test_a_leaked_close_is_dropped_from_the_stream_and_the_report_comes_last(
    tmp_path: Any,
) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": THINKER}
        return json.dumps({**body, "choices": [choice], **extra})

    usage = {"prompt_tokens": 41, "completion_tokens": 9, "total_tokens": 50}
    lines = [
        chunk({"role": "assistant"}),
        chunk({"reasoning_content": "I add"}),
        chunk({"content": "</"}),
        chunk({"content": "think>"}),
        chunk({"content": "\n\n"}),
        chunk({"content": "Answer"}),
        chunk({"content": ": 13"}),
        chunk({}, "stop", usage=usage),
    ]
    server = Server(lines)
    wrapped = capped(server.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(wrapped)) as http:
        response = http.post("/v1/chat/completions", json={**ask(), "size": 3, "stream": True})
    events = [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")
    ]
    content = "".join(
        (choice["delta"].get("content") or "") for event in events for choice in event["choices"]
    )
    assert content == "Answer: 13"
    assert events[-1]["cotplan"]["mode"] == "server"
    assert events[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 3
    assert response.text.endswith("data: [DONE]\n\n")


def test_the_async_client_makes_the_same_request() -> None:
    server = Server(reply("Answer: 13", "I add", 9))
    client = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(server)),
    )
    wrapped = capped(client, make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    answer = asyncio.run(wrapped.chat.completions.create(**ask(), size=3, seed=2))
    assert server.chats()[0]["seed"] == 2
    assert report_of(answer).reasoning_tokens == 3


@pytest.mark.parametrize(
    ("answers", "provider"),
    [
        ({"/props": PROPS}, "llama.cpp-thinking"),
        (
            {"/props": {**PROPS, "chat_template_caps": {"supports_preserve_reasoning": False}}},
            "openai-compatible",
        ),
        ({"/version": {"version": "0.21.1"}}, "vllm-thinking"),
        ({"/version": {"version": "0.11.0"}}, "openai-compatible"),
        # A NIM (vLLM inside, its own /v1/version first) takes nvext.max_thinking_tokens.
        (
            {"/v1/version": {"release": "2.1.6", "api": "1.0.0"}, "/version": {"version": "0.9"}},
            "nim-thinking",
        ),
        (
            {
                "/get_server_info": {
                    "tp_size": 1,
                    "enable_strict_thinking": True,
                    "reasoning_parser": "qwen3",
                }
            },
            "sglang-thinking",
        ),
        ({}, "openai-compatible"),
    ],
)
def test_detection_reads_each_servers_own_endpoint(answers: dict[str, Any], provider: str) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        found = answers.get(request.url.path)
        if found is None:
            return httpx2.Response(404, json={"error": {"message": "no"}})
        return httpx2.Response(200, json=found)

    client = openai.OpenAI(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    assert detect_provider(client).provider == provider


@pytest.mark.parametrize(
    ("pieces", "out"),
    [
        (["</", "think>", "\n\n", "Answer", ": 1"], "Answer: 1"),
        (["Answer: 1"], "Answer: 1"),
        (["<", "b>bold"], "<b>bold"),
        (["\n", "x"], "\nx"),
        (["</think>"], ""),
    ],
)
def test_the_close_filter_drops_only_a_leaked_close(pieces: list[str], out: str) -> None:
    close = CloseFilter()
    assert "".join(close(piece) for piece in pieces) + close.flush() == out


def test_an_in_house_model_name_gets_the_plans_own_protocol() -> None:
    from dataclasses import replace

    plan = replace(make_plan("acme-reasoner-v2"), protocol="think")
    server = Server(reply("Answer: 13", "I add", 9))
    client = capped(server.client(), plan, provider="llama.cpp-thinking", log=False)
    answer = client.chat.completions.create(**ask("acme-reasoner-v2"), size=3)
    report = report_of(answer)
    assert (report.protocol, report.mode) == ("think", "server")
    assert server.chats()[0]["thinking_budget_tokens"] == 6
