"""The Responses API through the gateway: capped in the one request where the upstream takes
the cap on a Responses body (llama.cpp), with the reasoning tokens in the Responses usage and
the report; refused with an OpenAI error where it cannot be capped, or passed on uncapped
(and flagged) only where the operator asked for that."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from production_support import THINKER, make_plan
from starlette.testclient import TestClient

from cotplan.errors import InputError
from cotplan.production import CallLog, capped
from cotplan.production.gateway import make_app
from cotplan.production.metrics import GatewayMetrics
from cotplan.production.serve_setup import serve_gateway

TOOLS = [{"type": "function", "name": "add", "parameters": {"type": "object", "properties": {}}}]


def responses_reply(reasoning_tokens: int | None = 4, text: str = "Answer: 13") -> dict[str, Any]:
    details = {} if reasoning_tokens is None else {"reasoning_tokens": reasoning_tokens}
    return {
        "id": "resp-up",
        "object": "response",
        "status": "completed",
        "model": THINKER,
        "output": [
            {
                "type": "reasoning",
                "id": "rs-1",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "I add 1 and 4 then 8"}],
            },
            {
                "type": "message",
                "id": "msg-1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        ],
        "usage": {
            "input_tokens": 41,
            "output_tokens": 14,
            "total_tokens": 55,
            "output_tokens_details": details,
        },
    }


class Upstream:
    """A double of a server's `/v1/responses` (and `/tokenize`), recording each request."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.requests: list[tuple[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.url.path, body))
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": list(range(len(body["content"].split())))})
        return httpx2.Response(200, json=self.reply)

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(
            api_key="k",
            base_url="http://127.0.0.1:9/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
        )


def ask(**more: Any) -> dict[str, Any]:
    return {"model": THINKER, "input": "What is 1 + 4 + 8?", **more}


def test_a_server_that_caps_gets_the_responses_body_with_its_cap_field(tmp_path: Path) -> None:
    upstream = Upstream(responses_reply())
    metrics = GatewayMetrics()
    log = tmp_path / "log.sqlite"
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=log)
    tags = {"feature": "f"}
    body = ask(size=3, tools=TOOLS, max_output_tokens=300, metadata={"team": "a"}, tags=tags)
    with TestClient(make_app(client, metrics=metrics)) as http:
        answer = http.post("/v1/responses", json=body)
    assert answer.status_code == 200, answer.text
    [(path, sent)] = upstream.requests
    assert path == "/v1/responses"
    assert sent["thinking_budget_tokens"] == 6  # the plan's cap at size 3, the server's field
    assert (sent["tools"], sent["max_output_tokens"]) == (TOOLS, 300)
    assert sent["metadata"] == {"team": "a"}
    assert not {"size", "tags"} & set(sent)  # the gateway's own fields
    got = answer.json()
    assert got["output"][1]["content"][0]["text"] == "Answer: 13"  # the model's, unchanged
    assert got["usage"]["output_tokens_details"]["reasoning_tokens"] == 4
    report = got["cotplan"]
    assert (report["cap"], report["mode"], report["reasoning_tokens"]) == (6, "server", 4)
    assert (report["answer_tokens"], report["requests"]) == (10, 1)
    assert "x-cotplan-capped" not in answer.headers
    [row] = CallLog(log).records()
    assert (row.reasoning_tokens, row.cap, row.mode, row.via) == (4, 6, "server", "wrapper")
    labels = f'model="{THINKER}",route="{THINKER}"'
    assert f"cotplan_reasoning_tokens_total{{{labels}}} 4.0" in metrics.render().decode()


def test_reasoning_tokens_the_server_leaves_out_are_counted_by_its_tokenizer() -> None:
    upstream = Upstream(responses_reply(reasoning_tokens=None))
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        got = http.post("/v1/responses", json=ask(), headers={"x-cotplan-size": "3"}).json()
    assert [path for path, _ in upstream.requests] == ["/v1/responses", "/tokenize"]
    # Seven words by the double's tokenizer, plus the line break after the open marker.
    assert got["usage"]["output_tokens_details"]["reasoning_tokens"] == 8
    assert got["cotplan"]["reasoning_tokens"] == 8
    assert "counted by the server's tokenizer" in got["cotplan"]["note"]


def test_a_leaked_close_is_dropped_from_the_answer() -> None:
    upstream = Upstream(responses_reply(text="</think>\n\nAnswer: 13"))
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        got = http.post("/v1/responses", json=ask(size=3)).json()
    assert got["output"][1]["content"][0]["text"] == "Answer: 13"


def test_a_cut_with_no_answer_is_flagged() -> None:
    upstream = Upstream(responses_reply(text=""))
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        answer = http.post("/v1/responses", json=ask(size=3))
    assert answer.json()["cotplan"]["answer_missing"] is True
    assert answer.headers["x-cotplan-answer-missing"] == "true"


def test_an_upstream_that_cannot_cap_a_responses_call_is_refused_unless_asked() -> None:
    upstream = Upstream(responses_reply())
    client = capped(upstream.client(), make_plan(THINKER), provider="openai-compatible", log=False)
    with TestClient(make_app(client)) as http:
        refused = http.post("/v1/responses", json=ask(size=3))
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", "model")
    assert "cannot be capped" in error["message"]
    assert "--responses-uncapped" in error["message"]
    assert upstream.requests == []  # nothing was sent on
    with TestClient(make_app(client, responses="uncapped")) as http:
        passed = http.post("/v1/responses", json=ask(size=3))
    assert passed.status_code == 200
    assert passed.headers["x-cotplan-capped"] == "false"
    [(_, sent)] = upstream.requests
    assert "thinking_budget_tokens" not in sent
    assert "cotplan" not in passed.json()


def test_a_responses_call_for_another_model_or_streamed_is_refused() -> None:
    upstream = Upstream(responses_reply())
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        other = http.post("/v1/responses", json={**ask(size=3), "model": "someone-else"})
        streamed = http.post("/v1/responses", json=ask(size=3, stream=True))
        no_input = http.post("/v1/responses", json={"model": THINKER, "input": 3, "size": 3})
    assert (other.status_code, other.json()["error"]["param"]) == (400, "model")
    assert (streamed.status_code, streamed.json()["error"]["param"]) == (400, "stream")
    assert (no_input.status_code, no_input.json()["error"]["param"]) == (400, "input")
    assert upstream.requests == []
    with pytest.raises(InputError, match="responses"):
        make_app(client, responses="sometimes")


def test_serve_passes_uncappable_responses_on_only_when_asked(tmp_path: Path) -> None:
    plan = make_plan(THINKER).save(tmp_path / "plan.json")
    options: dict[str, Any] = {
        "port": 0,
        "provider": "openai-compatible",
        "log": tmp_path / "log.sqlite",
    }
    asked = serve_gateway([plan], "http://127.0.0.1:9/v1", responses_uncapped=True, **options)
    default = serve_gateway([plan], "http://127.0.0.1:9/v1", **options)
    assert (asked.gateway.responses, default.gateway.responses) == ("uncapped", "refuse")
