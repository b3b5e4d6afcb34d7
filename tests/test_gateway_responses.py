"""The Responses API through the gateway: capped in the one request where the upstream takes
the cap on a Responses body (llama.cpp), with the reasoning tokens in the Responses usage and
the report; refused with an OpenAI error where it cannot be capped, or passed on uncapped
(and flagged) only where the operator asked for that."""

from __future__ import annotations

import json
from collections.abc import Iterator
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


def sse(events: list[dict[str, Any]]) -> list[bytes]:
    """Each event as a llama.cpp server writes it (its type as the event name)."""
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def streamed(reply: dict[str, Any], *, final: str = "response.completed") -> list[dict[str, Any]]:
    """The events of `reply` streamed (OpenAI's names and order), `final` the last one's type."""
    reasoning, message = reply["output"]
    text = message["content"][0]["text"]
    started = {**reply, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {
            "type": "response.reasoning_text.delta",
            "item_id": "rs-1",
            "output_index": 0,
            "content_index": 0,
            "delta": reasoning["content"][0]["text"],
        },
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": message},
    ]
    for piece in (text[:6], text[6:]):
        delta = {"item_id": "msg-1", "output_index": 1, "content_index": 0, "delta": piece}
        events.append({"type": "response.output_text.delta", **delta})
    events += [
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        {"type": final, "response": reply},
    ]
    return [{**e, "sequence_number": number} for number, e in enumerate(events)]


class Upstream:
    """A double of a server's `/v1/responses` (and `/tokenize`), recording each request: a
    streamed request gets `stream` (the events' bytes, or an exception raised among them)."""

    def __init__(
        self, reply: dict[str, Any], stream: list[bytes | Exception] | None = None
    ) -> None:
        self.reply = reply
        self.stream = stream if stream is not None else sse(streamed(reply))
        self.requests: list[tuple[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.url.path, body))
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": list(range(len(body["content"].split())))})
        if body.get("stream"):
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, content=self.events())
        return httpx2.Response(200, json=self.reply)

    def async_client(self) -> openai.AsyncOpenAI:
        """The gateway's own kind of client (its stream read on the event loop)."""

        async def answer(request: httpx2.Request) -> httpx2.Response:
            got = self(request)
            return httpx2.Response(got.status_code, headers=got.headers, content=got.read())

        return openai.AsyncOpenAI(
            api_key="k",
            base_url="http://127.0.0.1:9/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)),
        )

    def events(self) -> Iterator[bytes]:
        for part in self.stream:
            if isinstance(part, Exception):
                raise part
            yield part

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


def test_a_responses_call_for_another_model_or_without_input_is_refused() -> None:
    upstream = Upstream(responses_reply())
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        other = http.post("/v1/responses", json={**ask(size=3), "model": "someone-else"})
        no_input = http.post("/v1/responses", json={"model": THINKER, "input": 3, "size": 3})
    assert (other.status_code, other.json()["error"]["param"]) == (400, "model")
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


# -- streamed ----------------------------------------------------------------------------------


def sdk(http: TestClient) -> openai.OpenAI:
    """The raw `openai` client, talking to the gateway `http` serves."""
    return openai.OpenAI(api_key="none", base_url="http://testserver/v1", http_client=http)


def test_a_streamed_responses_call_is_capped_and_relayed_as_the_upstream_sent_it(
    tmp_path: Path,
) -> None:
    upstream = Upstream(responses_reply())
    metrics = GatewayMetrics()
    log = tmp_path / "log.sqlite"
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=log)
    with TestClient(make_app(client, metrics=metrics)) as http:
        stream = sdk(http).responses.create(
            model=THINKER, input="What is 1 + 4 + 8?", stream=True, extra_body={"size": 3}
        )
        events = list(stream)
        raw = http.post("/v1/responses", json=ask(size=3, stream=True))
    [(path, sent), _] = upstream.requests
    assert path == "/v1/responses"
    assert (sent["thinking_budget_tokens"], sent["stream"]) == (6, True)
    assert "size" not in sent
    assert [e.type for e in events] == [e["type"] for e in streamed(responses_reply())]
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Answer: 13"  # the model's, unchanged
    final = events[-1].response
    assert final.usage is not None
    assert final.usage.output_tokens_details.reasoning_tokens == 4
    report = (final.model_extra or {})["cotplan"]
    assert (report["cap"], report["mode"], report["reasoning_tokens"]) == (6, "server", 4)
    assert (report["answer_tokens"], report["requests"]) == (10, 1)
    # Every event before the last goes on byte for byte as the upstream wrote it.
    assert raw.headers["content-type"].startswith("text/event-stream")
    got = raw.text.split("\n\n")
    assert got[:-2] == [part.decode().removesuffix("\n\n") for part in upstream.stream[:-1]]
    assert got[-2].startswith("event: response.completed\ndata: ")
    rows = CallLog(log).records()
    assert [(r.reasoning_tokens, r.cap, r.mode, r.outcome) for r in rows] == [
        (4, 6, "server", "complete")
    ] * 2
    labels = f'model="{THINKER}",route="{THINKER}"'
    assert f"cotplan_reasoning_tokens_total{{{labels}}} 8.0" in metrics.render().decode()


def test_a_streamed_call_counts_reasoning_the_usage_leaves_out() -> None:
    upstream = Upstream(responses_reply(reasoning_tokens=None))
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        stream = sdk(http).responses.create(
            model=THINKER, input="What is 1 + 4 + 8?", stream=True, extra_body={"size": 3}
        )
        final = list(stream)[-1]
    assert [path for path, _ in upstream.requests] == ["/v1/responses", "/tokenize"]
    assert final.type == "response.completed"
    assert final.response.usage.output_tokens_details.reasoning_tokens == 8
    assert (final.response.model_extra or {})["cotplan"]["reasoning_tokens"] == 8


def test_a_streamed_call_cut_by_max_output_tokens_ends_with_its_incomplete_response() -> None:
    reply = {**responses_reply(text=""), "status": "incomplete"}
    upstream = Upstream(reply, sse(streamed(reply, final="response.incomplete")))
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        stream = sdk(http).responses.create(
            model=THINKER, input="What is 1 + 4 + 8?", stream=True, extra_body={"size": 3}
        )
        final = list(stream)[-1]
    assert final.type == "response.incomplete"
    assert (final.response.model_extra or {})["cotplan"]["answer_missing"] is True


@pytest.mark.parametrize(
    ("fault", "status"),
    [
        (httpx2.ReadError("reset by peer"), "502"),
        (httpx2.ReadTimeout("slow"), "504"),
        (None, "502"),
    ],
)
def test_an_upstream_failure_mid_stream_is_an_error_event(
    tmp_path: Path, fault: Exception | None, status: str
) -> None:
    parts: list[bytes | Exception] = [*sse(streamed(responses_reply()))[:4]]
    if fault is not None:  # else the stream just ends, no final response
        parts.append(fault)
    upstream = Upstream(responses_reply(), parts)
    log = tmp_path / "log.sqlite"
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=log)
    with TestClient(make_app(client)) as http:
        stream = sdk(http).responses.create(
            model=THINKER, input="What is 1 + 4 + 8?", stream=True, extra_body={"size": 3}
        )
        seen = []
        with pytest.raises(openai.APIError) as raised:
            seen.extend(event.type for event in stream)
        raw = http.post("/v1/responses", json=ask(size=3, stream=True))
    assert seen == [e["type"] for e in streamed(responses_reply())[:4]]
    assert raised.value.body["code"] == status  # type: ignore[index]
    name, data = raw.text.split("\n\n")[-2].split("\n")
    error = json.loads(data.removeprefix("data: "))
    assert name == "event: error"
    assert (error["type"], error["code"], error["sequence_number"]) == ("error", status, 4)
    assert error["error"]["type"] in ("upstream_error", "upstream_timeout")
    assert [row.outcome for row in CallLog(log).records()] == ["error"] * 2


def test_a_streamed_call_the_upstream_cannot_cap_is_refused_naming_stream() -> None:
    upstream = Upstream(responses_reply())
    client = capped(upstream.client(), make_plan(THINKER), provider="openai-compatible", log=False)
    for policy in ("refuse", "uncapped"):
        with TestClient(make_app(client, responses=policy)) as http:
            refused = http.post("/v1/responses", json=ask(size=3, stream=True))
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == "stream"
        assert "cannot be capped" in refused.json()["error"]["message"]
    assert upstream.requests == []


def test_a_streamed_call_through_the_gateways_async_client(tmp_path: Path) -> None:
    upstream = Upstream(responses_reply())
    log = tmp_path / "log.sqlite"
    plan = make_plan(THINKER)
    client = capped(upstream.async_client(), plan, provider="llama.cpp-thinking", log=log)
    with TestClient(make_app(client)) as http:
        stream = sdk(http).responses.create(
            model=THINKER, input="What is 1 + 4 + 8?", stream=True, extra_body={"size": 3}
        )
        events = list(stream)
    assert [e.type for e in events] == [e["type"] for e in streamed(responses_reply())]
    assert (events[-1].response.model_extra or {})["cotplan"]["reasoning_tokens"] == 4
    [(_, sent)] = upstream.requests
    assert sent["thinking_budget_tokens"] == 6
    [row] = CallLog(log).records()
    assert (row.reasoning_tokens, row.outcome) == (4, "complete")


def test_a_leaked_close_is_dropped_from_the_streamed_answer() -> None:
    reply = responses_reply(text="</think>\n\nAnswer: 13")
    events = streamed(reply)
    # llama.cpp streams the leaked close in pieces of its own
    events[6:8] = [
        {**events[6], "delta": "</th"},
        {**events[6], "delta": "ink>\n\n"},
        {**events[6], "delta": "Answer: 13"},
    ]
    events = [{**e, "sequence_number": number} for number, e in enumerate(events)]
    upstream = Upstream(reply, sse(events))
    client = capped(upstream.client(), make_plan(THINKER), provider="llama.cpp-thinking", log=False)
    with TestClient(make_app(client)) as http:
        stream = sdk(http).responses.create(
            model=THINKER, input="What is 1 + 4 + 8?", stream=True, extra_body={"size": 3}
        )
        got = list(stream)
    assert [e.type for e in got] == [e["type"] for e in events]  # none dropped or added
    deltas = [e.delta for e in got if e.type == "response.output_text.delta"]
    assert deltas == ["", "", "Answer: 13"]
    done = next(e for e in got if e.type == "response.output_item.done" and e.output_index == 1)
    assert done.item.content[0].text == "Answer: 13"
    assert got[-1].response.output[1].content[0].text == "Answer: 13"
