"""A gateway call's chat completion reaches the upstream as the SDK's `create` would send it,
whether it takes the plain-JSON path (posted as it is) or the SDK's own (any argument that is
not plain JSON): the same body, headers and key, the same reply, the same errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import openai
import pytest
from gateway_loopback import REPLY

from cotplan.errors import ResponseFormatError
from cotplan.production.upstream import plain_chat, send_async

ARGUMENTS: dict[str, Any] = {
    "model": "m",
    "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}],
    "temperature": 0.0,
    "tools": [{"type": "function", "function": {"name": "add", "parameters": {}}}],
    "response_format": {"type": "json_object"},
    "extra_body": {"thinking_budget_tokens": 6, "nvext": {"a": 1}},
    "extra_headers": {"x-team": "acme"},
}


def sent_by(arguments: dict[str, Any], reply: Any = REPLY) -> tuple[list[Any], Any]:
    seen: list[Any] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.url.path, request.headers, request.content))
        if isinstance(reply, int):
            return httpx2.Response(reply, json={"error": {"message": "no"}})
        return httpx2.Response(200, json=reply)

    client = openai.AsyncOpenAI(
        api_key="up-key",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )

    async def both() -> Any:
        return await send_async(client.chat.completions.create, "chat", dict(arguments))

    return seen, asyncio.run(both())


def test_plain_arguments_are_sent_as_the_sdk_sends_them() -> None:
    create = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1").chat.completions
    taken = plain_chat(create.create, dict(ARGUMENTS))
    assert taken is not None  # the plain path is the one under test
    taken.close()  # type: ignore[attr-defined]  # a coroutine never awaited
    assert plain_chat(create.create, {**ARGUMENTS, "stop": ("\n",)}) is None
    plain, reply = sent_by(ARGUMENTS)
    # A tuple is not plain JSON: this call goes through the SDK's own `create`.
    through_sdk, reply_sdk = sent_by({**ARGUMENTS, "stop": ("\n",)})
    (path, headers, content), (path_sdk, headers_sdk, content_sdk) = plain[0], through_sdk[0]
    assert path == path_sdk == "/v1/chat/completions"
    body, body_sdk = json.loads(content), json.loads(content_sdk)
    assert body == {k: v for k, v in body_sdk.items() if k != "stop"}
    assert body["thinking_budget_tokens"] == 6  # extra_body merged, as the SDK merges it
    for name in ("authorization", "x-team", "content-type"):
        assert headers[name] == headers_sdk[name]
    assert reply.model_dump() == reply_sdk.model_dump()


def test_the_plain_path_raises_what_the_sdk_raises() -> None:
    with pytest.raises(openai.APIStatusError) as failed:
        sent_by(ARGUMENTS, reply=429)
    assert failed.value.status_code == 429
    with pytest.raises(ResponseFormatError):
        sent_by(ARGUMENTS, reply={"choices": []})
