"""The batch file format, the batch folder and batch prices, without a model.

Output lines are written here by hand in OpenAI's documented shape (the one double of this file:
what a provider sends back); the model-backed round trip is tests/test_planner_batch_model.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from cotplan.backends.parsing import parse_completion
from cotplan.errors import InputError
from cotplan.planner.batch import CostEstimate, batch_priced, batch_status
from cotplan.planner.batch_format import BatchRequest, read_output, request_lines
from cotplan.planner.batch_state import BatchFolder

CHAT = BatchRequest(
    "chat",
    {
        "model": "o4-mini",
        "messages": [{"role": "user", "content": "Is 1011 odd?"}],
        "max_completion_tokens": 64,
        "extra_body": {"reasoning_effort": "low"},
    },
)
TEXT = BatchRequest("completions", {"model": "m", "prompt": "2+2=", "max_tokens": 4})
REQUESTS = {CHAT.custom_id: CHAT, TEXT.custom_id: TEXT}


def _answer(content: str | None, *, usage: bool = True) -> dict[str, object]:
    body: dict[str, object] = {
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": 12,
            "completion_tokens": 30,
            "completion_tokens_details": {"reasoning_tokens": 28},
        }
    return body


def _line(custom_id: str, body: object, status: int = 200, error: object = None) -> str:
    response = {"status_code": status, "request_id": "r", "body": body}
    return json.dumps({"id": "x", "custom_id": custom_id, "response": response, "error": error})


def test_a_request_line_is_the_documented_shape_with_extra_fields_in_the_body() -> None:
    (line,) = [json.loads(t) for t in request_lines([CHAT]).splitlines()]
    assert line == {
        "custom_id": CHAT.custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "o4-mini",
            "messages": [{"role": "user", "content": "Is 1011 odd?"}],
            "max_completion_tokens": 64,
            "reasoning_effort": "low",
        },
    }
    assert TEXT.line()["url"] == "/v1/completions"


def test_the_custom_id_is_the_request_so_a_rebuilt_request_keeps_it() -> None:
    again = BatchRequest("chat", json.loads(json.dumps(dict(CHAT.params))))
    assert again.custom_id == CHAT.custom_id
    other = BatchRequest("chat", {**CHAT.params, "max_completion_tokens": 65})
    assert other.custom_id != CHAT.custom_id


def test_output_lines_are_judged_as_live_answers() -> None:
    text = "\n".join(
        [
            _line(CHAT.custom_id, _answer("Yes", usage=False)),
            _line(TEXT.custom_id, {"error": {"message": "overloaded"}}, status=503),
            _line("cp-someone-else", _answer("no")),
        ]
    )
    read = read_output(text, REQUESTS, source="out.jsonl")
    assert set(read.answers) == {CHAT.custom_id}
    assert read.unknown == 1
    assert "status 503" in read.failures[TEXT.custom_id]
    # Missing usage is kept, and read as untrusted, exactly as a live answer's would be.
    completion = parse_completion(read.answers[CHAT.custom_id], model="o4-mini")
    assert not completion.usage_trusted
    assert completion.text == "Yes"


def test_a_missing_answer_is_no_answer_and_a_body_without_choices_is_a_failure() -> None:
    text = "\n".join([_line(CHAT.custom_id, _answer(None)), _line(TEXT.custom_id, {"choices": []})])
    read = read_output(text, REQUESTS, source="out.jsonl")
    assert parse_completion(read.answers[CHAT.custom_id], model="o4-mini").no_answer
    assert "`choices` is empty" in read.failures[TEXT.custom_id]
    errors = json.dumps(
        {"custom_id": TEXT.custom_id, "response": None, "error": {"message": "expired"}}
    )
    assert "expired" in read_output(errors, REQUESTS, source="e").failures[TEXT.custom_id]


def test_an_unreadable_output_line_names_its_line() -> None:
    text = _line(CHAT.custom_id, _answer("Yes")) + "\n{not json\n"
    with pytest.raises(InputError, match="line 2"):
        read_output(text, REQUESTS, source="out.jsonl")
    with pytest.raises(InputError, match="custom_id"):
        read_output('{"response": {}}', REQUESTS, source="out.jsonl")


def test_the_folder_keeps_answers_and_survives_a_line_cut_by_a_kill(tmp_path: Path) -> None:
    folder = BatchFolder(tmp_path)
    folder.bind("o4-mini", "https://api.openai.com/v1")
    entry = folder.new_entry(request_lines([CHAT, TEXT]), 2, "openai")
    entry.input_file_id, entry.id = "file-1", "batch-1"
    folder.save()
    folder.add_results({CHAT.custom_id: _answer("Yes")})
    folder.add_failures({TEXT.custom_id: "status 503"}, "batch-1")
    with (folder.path / "results.jsonl").open("a") as handle:
        handle.write('{"custom_id": "cp-half')  # killed mid-write
    again = BatchFolder(tmp_path)
    assert again.entries[0].id == "batch-1"
    assert again.input_ids(again.entries[0]) == [CHAT.custom_id, TEXT.custom_id]
    assert set(again.results()) == {CHAT.custom_id}
    assert again.failure_counts() == {TEXT.custom_id: 1}
    status = batch_status(tmp_path)
    assert (status.answered, status.failed, status.in_flight) == (1, 1, 2)
    assert status.to_frame().loc[0, "id"] == "batch-1"
    with pytest.raises(InputError, match="holds batches of 'o4-mini'"):
        again.bind("gpt-6-luna", "x")
    with pytest.raises(InputError, match="no batch calibration"):
        batch_status(tmp_path / "elsewhere")


def test_the_table_is_priced_at_batch_rates_and_the_estimate_says_both() -> None:
    frame = pd.DataFrame(
        {
            "model": ["o4-mini", "o4-mini", "o4-mini"],
            "prompt_tokens": [1000, 1000, 0],
            "reasoning_tokens": [500, 500, 0],
            "answer_tokens": [500, 500, 0],
            "cost_usd": [0.0055, math.nan, 0.0],
        }
    )
    priced = batch_priced(frame)
    assert priced["cost_usd"].iloc[0] == pytest.approx(0.00275)  # o4-mini's batch price: half
    assert math.isnan(priced["cost_usd"].iloc[1])
    assert priced["cost_usd"].iloc[2] == 0.0
    estimate = CostEstimate("o4-mini", 2, 100, 128, 0.002, 0.001)
    assert "USD 0.0010 at batch rates (USD 0.0020 live: USD 0.0010 saved)" in str(estimate)
    assert "no price known" in str(CostEstimate("mine", 1, 1, 1, math.nan, math.nan))


def test_a_responses_line_goes_to_its_endpoint_and_its_reasoning_count_is_read() -> None:
    from cotplan.backends.responses import OpenAIResponsesBackend, parse_response

    backend = OpenAIResponsesBackend("o4-mini", base_url="http://127.0.0.1:9/v1", api_key="k")
    body = backend.request_body("2+2?", max_tokens=64, extra={"reasoning": {"effort": "low"}})
    request = BatchRequest("responses", body)
    assert request.line() == {
        "custom_id": request.custom_id,
        "method": "POST",
        "url": "/v1/responses",
        "body": {
            "model": "o4-mini",
            "input": "2+2?",
            "store": False,
            "max_output_tokens": 64,
            "reasoning": {"effort": "low"},
        },
    }
    answer = {
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "reasoning", "summary": []}],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 64,
            "output_tokens_details": {"reasoning_tokens": 64},
        },
    }
    failed = {**answer, "status": "failed", "error": {"message": "server broke"}}
    other = BatchRequest("responses", {**body, "input": "3+3?"})
    text = _line(request.custom_id, answer) + "\n" + _line(other.custom_id, failed)
    read = read_output(text, {r.custom_id: r for r in (request, other)}, source="out")
    cut = parse_response(read.answers[request.custom_id], model="o4-mini")
    assert (cut.finish_reason, cut.usage.reasoning_tokens, cut.text) == ("length", 64, "")
    assert "server broke" in read.failures[other.custom_id]
