"""The capped client, its log and the gateway app, on doubles of the upstream: the requests
each mode makes, what the reply and the log say, and every refusal naming its field. (What the
real embedded model does under the cap is in test_production_model.py.)"""

from __future__ import annotations

import asyncio
import math
import sqlite3
from pathlib import Path
from typing import Any

import openai
import pytest
from production_support import (
    PLAIN,
    THINKER,
    Upstream,
    ask,
    chat_reply,
    make_plan,
    record,
    text_reply,
)
from starlette.testclient import TestClient

import cotplan
from cotplan.errors import CacheError, InputError
from cotplan.production import CallLog, capped, report_of
from cotplan.production.gateway import check_port, check_upstream, make_app
from cotplan.production.log import LOG_COLUMNS, MIGRATIONS
from cotplan.production.wrapper import AsyncCappedClient, provider_of


def test_a_cut_thought_is_closed_the_protocols_way_and_the_answer_forced(tmp_path: Path) -> None:
    upstream = Upstream(
        text_reply("Let me add 1 and 4", "length", 6),
        text_reply(" 13", "stop", 2, prompt=50),
    )
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(upstream.client(), make_plan(THINKER), log=log)
    reply = client.chat.completions.create(**ask(), size=3)

    (path1, first), (path2, second) = upstream.requests
    assert path1 == path2 == "/v1/completions"
    assert first["prompt"].endswith(
        "What is 1 + 4 + 8?<|im_end|>\n<|im_start|>assistant\n<think>\n"
    )
    assert first["max_tokens"] == 6
    assert "</think>" in first["stop"]
    assert first["temperature"] == 0.0  # greedy, as the calibration was
    # The cut thought is closed before the answer marker, so no answer lands inside <think>.
    assert second["prompt"].endswith("<think>\nLet me add 1 and 4\n</think>\n\nAnswer:")
    assert second["max_tokens"] == 16

    assert isinstance(reply, openai.types.chat.ChatCompletion)
    message = reply.choices[0].message
    # The model's answer as it reads after its thinking: the marker the forcing wrote for it,
    # then its words, unchanged.
    assert message.content == "Answer: 13"
    assert message.model_extra == {"reasoning_content": "Let me add 1 and 4"}
    assert reply.model == THINKER
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 8
    assert reply.usage.prompt_tokens == 90
    assert reply.usage.completion_tokens_details is not None
    assert reply.usage.completion_tokens_details.reasoning_tokens == 6
    report = report_of(reply)
    assert (report.cap, report.reasoning_tokens, report.answer_tokens) == (6, 6, 2)
    assert report.cap_bitten
    assert report.answer_forced
    assert report.mode == "template"
    assert report.protocol == "think"
    assert report.requests == 2

    (row,) = log.records()
    assert (row.model, row.size, row.cap, row.reasoning_tokens, row.answer_tokens) == (
        THINKER,
        3.0,
        6,
        6,
        2,
    )
    assert row.cap_bitten
    assert row.answer_forced
    assert row.via == "wrapper"


def test_the_async_client_makes_the_same_requests(tmp_path: Path) -> None:
    replies = (text_reply("Let me add 1 and 4", "length", 6), text_reply(" 13", "stop", 2))
    sync_upstream, async_upstream = Upstream(*replies), Upstream(*replies)
    plan = make_plan(THINKER)
    log = CallLog(tmp_path / "log.sqlite")
    expected = capped(sync_upstream.client(), plan, log=False).chat.completions.create(
        **ask(), size=3
    )
    async_client = capped(async_upstream.async_client(), plan, log=log)
    assert isinstance(async_client, AsyncCappedClient)
    reply = asyncio.run(async_client.chat.completions.create(**ask(), size=3))
    assert async_upstream.requests == sync_upstream.requests
    assert reply.choices[0].message.content == expected.choices[0].message.content
    assert report_of(reply) == report_of(expected)
    assert len(log.records()) == 1


def test_a_thought_that_ends_in_time_is_not_forced(tmp_path: Path) -> None:
    upstream = Upstream(text_reply("1 + 4 + 8 = 13.", "stop", 5), text_reply(" 13", "stop", 2))
    client = capped(upstream.client(), make_plan(THINKER), log=False)
    report = report_of(client.chat.completions.create(**ask(), size=3))
    assert not report.cap_bitten
    assert not report.answer_forced
    assert upstream.requests[1][1]["prompt"].endswith("1 + 4 + 8 = 13.\n</think>\n\nAnswer:")


def test_a_zero_cap_answers_after_an_empty_thought(tmp_path: Path) -> None:
    upstream = Upstream(text_reply(" 13", "stop", 2))
    client = capped(upstream.client(), make_plan(THINKER, tokens=0), log=False)
    reply = client.chat.completions.create(**ask(), size=3)
    ((_, only),) = upstream.requests
    assert only["prompt"].endswith("<|im_start|>assistant\n<think>\n</think>\n\nAnswer:")
    assert report_of(reply).reasoning_tokens == 0


def test_the_plain_protocol_adds_the_calibrations_instruction() -> None:
    upstream = Upstream(text_reply("1 + 4 is 5.", "length", 6), text_reply(" 13", "stop", 2))
    client = capped(upstream.client(), make_plan(PLAIN), size=lambda messages: 3, log=False)
    client.chat.completions.create(**ask(PLAIN), max_tokens=40, stop=["."])
    first, second = (body for _, body in upstream.requests)
    assert (
        'What is 1 + 4 + 8?\nThink step by step, then give the final answer after "Answer:".'
        in (first["prompt"])
    )
    assert first["stop"][0] == "Answer:"
    # The client's max_tokens bounds thinking and answer together: 40 - 6 thought.
    assert first["max_tokens"] == 6
    assert second["max_tokens"] == 34
    assert second["stop"] == ["\n", "<|im_end|>", "."]


def test_hidden_reasoning_is_capped_by_the_providers_own_fields(tmp_path: Path) -> None:
    upstream = Upstream(chat_reply("Answer: 13", "stop", completion=30, reasoning=26))
    client = capped(
        upstream.client("https://api.openai.com/v1"),
        make_plan("o3-mini", tokens=64),
        log=tmp_path / "log.sqlite",
    )
    reply = client.chat.completions.create(**ask("o3-mini"), size=3)
    ((path, body),) = upstream.requests
    assert path == "/v1/chat/completions"
    assert body["max_completion_tokens"] == 64 + 16
    assert body["reasoning_effort"] == "low"
    report = report_of(reply)
    assert report.mode == "hidden"
    assert (report.reasoning_tokens, report.answer_tokens) == (26, 4)
    assert not report.cap_bitten
    assert not report.answer_forced
    assert reply.choices[0].message.content == "Answer: 13"


def test_a_hidden_cap_that_ate_the_answer_asks_for_it_once_more() -> None:
    upstream = Upstream(
        chat_reply("", "length", completion=80, reasoning=80),
        chat_reply("Answer: 13", "stop", completion=4, reasoning=0),
    )
    client = capped(
        upstream.client("https://api.openai.com/v1"), make_plan("o3-mini", 64), log=False
    )
    reply = client.chat.completions.create(**ask("o3-mini"), size=3)
    assert upstream.requests[1][1]["messages"][-1]["content"].startswith("Stop reasoning now.")
    assert upstream.requests[1][1]["max_completion_tokens"] == 16
    report = report_of(reply)
    assert report.cap_bitten
    assert report.answer_forced
    assert report.requests == 2
    assert reply.choices[0].message.content == "Answer: 13"


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({**ask(PLAIN), "size": 3}, "model", "made for model"),
        ({**ask(), "size": None}, "size", "give the item size"),
        ({**ask(), "size": 0}, "size", "positive number"),
        ({**ask(), "size": 7}, "size", "no cap for n = 7"),
        ({**ask(), "size": 3, "stop": 5}, "stop", "list of strings"),
        ({**ask(), "size": 3, "stream": "yes"}, "stream", "true or false"),
        ({**ask(), "size": 3, "stream_options": {}}, "stream_options", "only for a streamed"),
        ({**ask(), "size": 3, "n": 0}, "n", "whole number"),
        ({**ask(), "size": 3, "functions": []}, "functions", "writes the chat out as text"),
        ({**ask(), "size": 3, "tools": [{"type": "retrieval"}]}, "tools", "type 'function'"),
        ({**ask(), "size": 3, "response_format": {"type": "yaml"}}, "response_format", "json"),
        ({**ask(), "size": 3, "top_logprobs": 2}, "top_logprobs", "logprobs=True"),
        ({**ask(), "size": 3, "max_tokens": 0}, "max_tokens", "≥ 1"),
        ({**ask(), "size": 3, "temperature": "hot"}, "temperature", "number"),
        ({"model": THINKER, "messages": [], "size": 3}, "messages", "non-empty"),
        ({"messages": [{"role": "user", "content": "hi"}], "size": 3}, "model", "model name"),
    ],
)
def test_a_call_it_cannot_cap_is_refused_naming_the_field(
    arguments: dict[str, Any], field: str, message: str
) -> None:
    upstream = Upstream()
    # Refusing a missing or unreachable size, as an operator may ask (tests/test_gateway_sizes.py
    # has the default, the plan's largest cap).
    client = capped(upstream.client(), make_plan(THINKER), log=False, size_policy="refuse")
    with pytest.raises(InputError, match=message) as info:
        client.chat.completions.create(**arguments)
    assert info.value.field == field
    assert upstream.requests == []  # refused before anything was sent


def test_another_models_plan_applies_only_when_allowed() -> None:
    upstream = Upstream(text_reply("1 + 4", "length", 6), text_reply(" 13", "stop", 2))
    client = capped(upstream.client(), make_plan(THINKER), allow_other_model=True, log=False)
    reply = client.chat.completions.create(**ask(PLAIN), size=3)
    assert "not certified for this model" in report_of(reply).note


def test_a_model_without_a_known_template_is_refused() -> None:
    client = capped(Upstream().client(), make_plan("mystery-7b"), log=False)
    with pytest.raises(InputError, match="neither capped by the provider") as info:
        client.chat.completions.create(**ask("mystery-7b"), size=3)
    assert info.value.field == "model"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"client": object()}, "client"),
        ({"plan": 3}, "plan"),
        ({"size": -1}, "size"),
        ({"protocol": "nonesuch"}, "protocol"),
        ({"provider": "acme"}, "provider"),
        ({"log": 3}, "log"),
    ],
)
def test_capped_checks_its_arguments(arguments: dict[str, Any], field: str) -> None:
    given: dict[str, Any] = {"client": Upstream().client(), "plan": make_plan(THINKER)}
    given.update(arguments)
    with pytest.raises(InputError) as info:
        capped(given.pop("client"), given.pop("plan"), **given)
    assert info.value.field == field


def test_capped_loads_a_plan_file_and_is_the_public_name(tmp_path: Path) -> None:
    path = make_plan(THINKER).save(tmp_path / "plan.json")
    client = cotplan.capped(Upstream().client(), path, log=False)
    assert client.plan.model == THINKER
    assert client.models is client.client.models  # everything else is the client's own


def test_upstream_errors_are_the_clients_own() -> None:
    client = capped(Upstream(500).client(), make_plan(THINKER), log=False)
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(**ask(), size=3)


def test_a_reply_without_a_report_is_named() -> None:
    with pytest.raises(InputError, match="not a capped reply"):
        report_of(openai.types.chat.ChatCompletion.model_validate(chat_reply("x", "stop", 1, 0)))


def test_the_provider_comes_from_the_address() -> None:
    assert provider_of("https://api.openai.com/v1") == "openai"
    assert provider_of("https://api.anthropic.com/v1/") == "anthropic"
    assert provider_of("http://127.0.0.1:8080/v1") == "openai-compatible"


# -- the log ----------------------------------------------------------------------------------


def test_the_log_keeps_rows_in_order_with_null_for_no_price(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    log.append(record())
    log.append(record(cost_usd=0.5, cap_bitten=False))
    first, second = log.records()
    assert math.isnan(first.cost_usd)
    assert first.cap_bitten
    assert second.cost_usd == 0.5
    assert not second.cap_bitten
    with sqlite3.connect(log.path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert db.execute("SELECT cost_usd FROM calls ORDER BY id").fetchall() == [(None,), (0.5,)]
    assert list(log.to_frame().columns) == list(LOG_COLUMNS)


def test_a_log_from_a_newer_cotplan_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(CacheError, match="newer cotplan"):
        CallLog(path).append(record())


def test_the_log_takes_only_records(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        CallLog(tmp_path / "log.sqlite").append({"model": "x"})  # type: ignore[arg-type]
    assert info.value.field == "record"


# -- the gateway app --------------------------------------------------------------------------


def gateway(upstream: Upstream, tmp_path: Path) -> TestClient:
    client = capped(upstream.client(), make_plan(THINKER), log=tmp_path / "log.sqlite")
    return TestClient(make_app(client))


def test_the_gateway_answers_in_openais_shape(tmp_path: Path) -> None:
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2))
    with gateway(upstream, tmp_path) as http:
        response = http.post(
            "/v1/chat/completions",
            json={**ask(), "seed": 1, "cache_prompt": True},
            headers={"X-Cotplan-Size": "3"},
        )
    assert response.status_code == 200
    body = response.json()
    assert body["choices"][0]["message"]["content"] == "Answer: 13"
    assert body["cotplan"]["cap"] == 6
    assert body["cotplan"]["answer_forced"] is True
    first = upstream.requests[0][1]
    assert first["seed"] == 1
    assert first["cache_prompt"] is True  # a field the SDK does not know is sent on as it is
    assert [r.via for r in CallLog(tmp_path / "log.sqlite").records()] == ["wrapper"]


@pytest.mark.parametrize(
    ("body", "headers", "status", "param"),
    [
        (None, {}, 400, None),
        ({**ask()}, {"X-Cotplan-Size": "big"}, 400, "x-cotplan-size"),
        ({**ask(), "size": 3, "stream": "yes"}, {}, 400, "stream"),
    ],
)
def test_the_gateway_refuses_in_openais_error_shape(
    tmp_path: Path,
    body: dict[str, Any] | None,
    headers: dict[str, str],
    status: int,
    param: str | None,
) -> None:
    with gateway(Upstream(), tmp_path) as http:
        if body is None:
            response = http.post("/v1/chat/completions", content=b"{not json", headers=headers)
        else:
            response = http.post("/v1/chat/completions", json=body, headers=headers)
    assert response.status_code == status
    assert response.json()["error"]["param"] == param


def test_the_gateway_passes_on_the_upstreams_status(tmp_path: Path) -> None:
    with gateway(Upstream(503), tmp_path) as http:
        response = http.post("/v1/chat/completions", json={**ask(), "size": 3})
    assert response.status_code == 503
    assert response.json()["error"]["type"] == "upstream_error"


def test_the_gateway_lists_the_plans_model(tmp_path: Path) -> None:
    with gateway(Upstream(), tmp_path) as http:
        assert http.get("/v1/models").json()["data"][0]["id"] == THINKER
        assert http.get("/health").json() == {"status": "ok"}


def test_the_gateways_options_are_checked() -> None:
    assert check_upstream("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1"
    with pytest.raises(InputError) as info:
        check_upstream("127.0.0.1:8080")
    assert info.value.field == "upstream"
    with pytest.raises(InputError) as info:
        check_port(70000)
    assert info.value.field == "port"


# -- the command line -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--upstream", "http://127.0.0.1:9/v1"], "`plan`: no such file"),
        (["--upstream", "localhost:9"], "`upstream`"),
        (["--upstream", "http://127.0.0.1:9/v1", "--port", "70000"], "`port`"),
        (["--upstream", "http://127.0.0.1:9/v1", "--timeout", "0"], "`timeout`"),
        (["--upstream", "http://127.0.0.1:9/v1", "--api-key-env", "NO_SUCH_KEY_VAR"], "NO_SUCH"),
    ],
)
def test_serve_checks_every_option_before_it_starts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    named: str,
) -> None:
    from cotplan.cli import main

    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    plan = tmp_path / "plan.json"
    if "plan" not in named:
        make_plan(THINKER).save(plan)
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--plan", str(plan), *options])
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "production.sqlite").exists()


def test_a_reply_without_usage_is_costed_as_unknown_not_free() -> None:
    from cotplan.backends.base import Usage
    from cotplan.production.calls import cost_of_requests, usage_of

    assert not usage_of(None).trusted
    cost, note = cost_of_requests("gpt-6.1-terra", [Usage(prompt_tokens=10), usage_of(None)])
    assert math.isnan(cost)
    assert "usage not trusted" in note
