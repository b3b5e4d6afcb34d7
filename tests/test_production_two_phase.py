"""Two-phase forcing keeps OpenAI's semantics and carries what the client asks of the answer,
on doubles of the upstream: `max_tokens` bounds thinking and answer together, a cut that
leaves no answer is flagged, a JSON schema, tools, logprobs and n > 1 reach the answer phase
and come back in the chat shape. (The embedded model does it in
test_production_two_phase_model.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from production_support import THINKER, Upstream, ask, make_plan, text_chunks, text_reply

from cotplan.production import capped, report_of
from cotplan.production.answer_phase import chat_logprobs

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
        },
    }
]


def client(upstream: Upstream) -> Any:
    return capped(upstream.client(), make_plan(THINKER), log=False)


def test_max_tokens_bounds_thinking_and_answer_together() -> None:
    upstream = Upstream(
        text_reply("Let me add 1 and 4", "length", 6), text_reply(" 13", "length", 2)
    )
    reply = client(upstream).chat.completions.create(**ask(), size=3, max_tokens=8)
    first, second = (body for _, body in upstream.requests)
    assert (first["max_tokens"], second["max_tokens"]) == (6, 2)
    assert reply.usage is not None
    assert reply.usage.completion_tokens <= 8
    assert reply.choices[0].finish_reason == "length"
    assert reply.choices[0].message.content == "Answer: 13"


def test_a_limit_below_the_cap_lowers_the_thinking_and_is_not_a_cap_bite() -> None:
    upstream = Upstream(text_reply("Let me add", "length", 5))
    reply = client(upstream).chat.completions.create(**ask(), size=3, max_tokens=5)
    ((_, first),) = upstream.requests
    assert first["max_tokens"] == 5
    report = report_of(reply)
    assert not report.cap_bitten
    assert report.answer_missing


def test_the_answer_gets_what_the_thinking_left() -> None:
    upstream = Upstream(text_reply("1+4+8=13.", "stop", 3), text_reply(" 13", "stop", 2))
    client(upstream).chat.completions.create(**ask(), size=3, max_tokens=5)
    first, second = (body for _, body in upstream.requests)
    assert (first["max_tokens"], second["max_tokens"]) == (5, 2)


def test_a_cut_that_leaves_no_answer_is_flagged_never_an_empty_answer() -> None:
    upstream = Upstream(text_reply("Let", "length", 1))
    reply = client(upstream).chat.completions.create(**ask(), size=3, max_tokens=1)
    assert len(upstream.requests) == 1  # no room for an answer: none asked for
    choice = reply.choices[0]
    assert (choice.finish_reason, choice.message.content) == ("length", "")
    report = report_of(reply)
    assert report.answer_missing
    assert "no answer" in report.note
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 1


def test_an_answer_phase_that_writes_nothing_is_flagged() -> None:
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply("", "stop", 1))
    reply = client(upstream).chat.completions.create(**ask(), size=3)
    assert reply.choices[0].finish_reason == "length"
    assert reply.choices[0].message.content == ""
    assert report_of(reply).answer_missing


def test_a_json_schema_is_the_answers_and_its_text_comes_back_unchanged() -> None:
    answer = '{"answer": 13}'
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply(answer, "stop", 7))
    form = {"type": "json_schema", "json_schema": {"name": "sum", "schema": SCHEMA}}
    reply = client(upstream).chat.completions.create(**ask(), size=3, response_format=form)
    first, second = (body for _, body in upstream.requests)
    assert "json_schema" not in first  # the thinking is free
    assert second["json_schema"] == SCHEMA  # llama.cpp's field
    assert second["response_format"]["json_schema"]["schema"] == SCHEMA  # vLLM's
    assert "\n" not in second["stop"]  # JSON may span lines
    assert reply.choices[0].message.content == answer
    assert json.loads(reply.choices[0].message.content or "") == {"answer": 13}


def test_json_object_mode_asks_for_an_object() -> None:
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply('{"a": 1}', "stop", 5))
    client(upstream).chat.completions.create(
        **ask(), size=3, response_format={"type": "json_object"}
    )
    assert upstream.requests[1][1]["json_schema"] == {"type": "object"}


def test_a_tool_call_is_the_answer_and_comes_back_as_tool_calls() -> None:
    call = '{"tool_call": {"name": "add", "arguments": {"a": 13}}}'
    upstream = Upstream(text_reply("I should add", "length", 6), text_reply(call, "stop", 12))
    reply = client(upstream).chat.completions.create(
        **ask(), size=3, tools=TOOLS, tool_choice="required"
    )
    first, second = (body for _, body in upstream.requests)
    # The model thinks knowing the tools: they are in the system turn of both phases.
    assert '"name": "add"' in first["prompt"]
    assert "You are a helpful AI assistant named SmolLM" in first["prompt"]
    assert second["prompt"].startswith(first["prompt"])
    names = second["json_schema"]["properties"]["tool_call"]["anyOf"][0]["properties"]["name"]
    assert names == {"const": "add"}
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (made,) = choice.message.tool_calls or []
    assert made.function.name == "add"  # type: ignore[union-attr]
    assert json.loads(made.function.arguments) == {"a": 13}  # type: ignore[union-attr]
    assert report_of(reply).reasoning_tokens == 6


def test_tool_choice_auto_may_answer_in_text_and_earlier_tool_turns_are_written_out() -> None:
    reply_text = '{"response": "It is 13."}'
    upstream = Upstream(text_reply("Adding", "stop", 3), text_reply(reply_text, "stop", 9))
    messages: list[Any] = [
        *ask()["messages"],
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 13}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "13"},
    ]
    reply = client(upstream).chat.completions.create(
        model=THINKER, messages=messages, size=3, tools=TOOLS
    )
    prompt = upstream.requests[0][1]["prompt"]
    assert '{"tool_call": {"name": "add", "arguments": {"a": 13}}}' in prompt
    assert "<|im_start|>tool\n13<|im_end|>" in prompt
    assert "anyOf" in upstream.requests[1][1]["json_schema"]
    assert reply.choices[0].message.content == "It is 13."
    assert reply.choices[0].finish_reason == "stop"


def test_logprobs_of_the_answer_come_back_in_the_chat_shape() -> None:
    answer = text_reply(" 13", "stop", 2)
    answer["choices"][0]["logprobs"] = {
        "tokens": [" 1", "3"],
        "token_logprobs": [-0.1, -0.2],
        "top_logprobs": [{" 1": -0.1, " 2": -2.0}, {"3": -0.2}],
    }
    upstream = Upstream(text_reply("Let me add", "length", 6), answer)
    reply = client(upstream).chat.completions.create(**ask(), size=3, logprobs=True, top_logprobs=2)
    assert upstream.requests[1][1]["logprobs"] == 2
    logprobs = reply.choices[0].logprobs
    assert logprobs is not None
    assert logprobs.content is not None
    assert [t.token for t in logprobs.content] == [" 1", "3"]
    assert [t.token for t in logprobs.content[0].top_logprobs] == [" 1", " 2"]


def test_llamacpps_own_logprobs_shape_passes_as_it_is() -> None:
    content = [{"token": "1", "logprob": -0.2, "bytes": [49], "top_logprobs": []}]
    assert chat_logprobs({"content": content, "tokens": None}) == {"content": content}
    assert chat_logprobs(None) is None


def test_n_answers_are_n_runs_of_both_phases() -> None:
    upstream = Upstream(
        text_reply("Let me add", "length", 6),
        text_reply(" 13", "stop", 2),
        text_reply("Adding up", "length", 6),
        text_reply(" 12", "stop", 2),
    )
    reply = client(upstream).chat.completions.create(**ask(), size=3, n=2, temperature=0.7)
    assert [c.message.content for c in reply.choices] == ["Answer: 13", "Answer: 12"]
    assert [c.index for c in reply.choices] == [0, 1]
    report = report_of(reply)
    assert (report.requests, report.reasoning_tokens, report.answer_tokens) == (4, 12, 4)


def test_a_streamed_tool_call_arrives_whole_after_the_thinking() -> None:
    call = '{"tool_call": {"name": "add", "arguments": {"a": 13}}}'
    upstream = Upstream(
        text_chunks(["I should", " add"], "length", completion=6),
        text_chunks([call[:20], call[20:]], "stop"),
    )
    chunks = list(
        client(upstream).chat.completions.create(
            **ask(), size=3, tools=TOOLS, tool_choice="required", stream=True
        )
    )
    calls = [tc for chunk in chunks for c in chunk.choices for tc in (c.delta.tool_calls or [])]
    (made,) = calls
    assert made.function is not None
    assert made.function.name == "add"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_streamed_text_answer_reads_as_the_unstreamed_one() -> None:
    upstream = Upstream(
        text_chunks(["Let me", " add"], "length", completion=6),
        text_chunks([" ", "1", "3", "\n"], "stop"),
    )
    chunks = list(client(upstream).chat.completions.create(**ask(), size=3, stream=True))
    content = "".join(c.delta.content or "" for chunk in chunks for c in chunk.choices)
    assert content == "Answer: 13"


def test_the_gateway_says_an_answer_is_missing_in_a_header(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from cotplan.production.gateway import make_app

    upstream = Upstream(text_reply("Let", "length", 1), text_reply("Let me", "length", 6))
    upstream.replies.append(text_reply(" 13", "stop", 2))
    with TestClient(make_app(capped(upstream.client(), make_plan(THINKER), log=False))) as http:
        cut = http.post("/v1/chat/completions", json={**ask(), "size": 3, "max_tokens": 1})
        whole = http.post("/v1/chat/completions", json={**ask(), "size": 3})
    assert cut.headers["x-cotplan-answer-missing"] == "true"
    assert cut.json()["choices"][0]["finish_reason"] == "length"
    assert "x-cotplan-answer-missing" not in whole.headers
