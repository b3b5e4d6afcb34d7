"""The certified early exit behind the capped client and the gateway (issue 29).

On doubles of the upstream: the requests probing makes, where it stops (the rule, the model's
own close, the ceiling), how the probes are counted in the usage, the report and the call log,
streaming and the async client, the fixed cap kept where the exit plan certifies nothing, and
every refusal naming its option. On the real embedded thinking model: a call stops before the
cap, counts its probes, and answers as `cotplan run --exit certified` answers the same item
(`answer_with_exit`, the library path it takes).
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionChunk
from production_support import THINKER, Upstream, ask, make_plan, record, text_reply
from starlette.testclient import TestClient

from cotplan.errors import InputError
from cotplan.generate.probing import ExitRule, StoppingRule
from cotplan.generate.protocols import resolve_protocol
from cotplan.planner.exit_plan import ExitPlan, answer_with_exit
from cotplan.production import CallLog, capped, report_of
from cotplan.production.gateway import Gateway, make_app
from cotplan.tasks import make_tasks

CAP = 48
RULE = ExitRule(ceiling=CAP, every=16, rule=StoppingRule(agree=2))


def plan_folder(
    folder: Path,
    *,
    model: str = THINKER,
    rule: ExitRule = RULE,
    size: int = 3,
    cap: int = CAP,
    bill_prompt: bool = False,
) -> Path:
    """plan.json (cap `cap` at n = 3, family count) and exit.json (`rule` at `size`)."""
    plan = replace(make_plan(model, tokens=cap, n=3), family="count")
    plan.save(folder / "plan.json")
    exits = ExitPlan(
        model=model, eps=plan.eps, delta=0.05, sizes={size: rule}, bill_prompt=bill_prompt
    )
    exits.save(folder / "exit.json")
    return folder / "plan.json"


def settles() -> Upstream:
    """Two chunks of thinking, probed "1" and "1": the rule fires at 32 tokens."""
    return Upstream(
        text_reply("I count one", "length", 16, prompt=40),
        text_reply(" 1", "stop", 2, prompt=60),
        text_reply(" then one more", "length", 16, prompt=56),
        text_reply(" 1", "stop", 2, prompt=76),
    )


@pytest.mark.parametrize("bill_prompt", [False, True])
def test_the_rule_stops_the_thinking_and_the_probes_are_paid_for(
    tmp_path: Path, bill_prompt: bool
) -> None:
    upstream = settles()
    log = CallLog(tmp_path / "log.sqlite")
    plan = plan_folder(tmp_path, bill_prompt=bill_prompt)
    client = capped(upstream.client(), plan, log=log, exit="certified")
    reply = client.chat.completions.create(**ask(), size=3)

    (_, chunk1), (_, probe1), (_, chunk2), (_, probe2) = upstream.requests
    assert {path for path, _ in upstream.requests} == {"/v1/completions"}
    assert chunk1["prompt"].endswith("<|im_start|>assistant\n<think>\n")
    assert (chunk1["max_tokens"], chunk1["stop"]) == (16, ["</think>", "<|im_end|>"])
    assert probe1["prompt"].endswith("<think>\nI count one\n</think>\n\nAnswer:")
    assert (probe1["max_tokens"], probe1["stop"]) == (16, ["\n", "<|im_end|>"])
    assert "logprobs" not in probe1  # the rule reads no probabilities
    # The thinking continues where it was; the next checkpoint is 16 tokens on.
    assert chunk2["prompt"] == chunk1["prompt"] + "I count one"
    assert chunk2["max_tokens"] == 16
    assert probe2["prompt"].endswith("I count one then one more\n</think>\n\nAnswer:")

    message = reply.choices[0].message
    assert message.content == "Answer: 1"  # the model's own form, as two-phase replies read
    assert message.model_extra == {"reasoning_content": "I count one then one more"}
    report = report_of(reply)
    billed = 56 + 60 if bill_prompt else 0  # the second chunk's and the first probe's prompts
    assert (report.exit_rule, report.stopped_by, report.stop_k) == (
        "same answer at 2 probes",
        "rule",
        32,
    )
    assert (report.probes, report.requests) == (2, 4)
    # The first probe's answer tokens are reasoning spent; the second probe is the answer.
    assert (report.reasoning_tokens, report.answer_tokens) == (32 + 2, 2)
    assert report.prompt_tokens == 40 + 76 + billed
    assert (report.probe_tokens, report.probe_prompt_tokens) == (2 + billed, 116)
    assert not report.cap_bitten
    assert report.answer_forced
    assert "stopped by rule at 32 of 48 thinking tokens" in report.note
    assert reply.usage is not None
    assert reply.usage.completion_tokens_details is not None
    assert reply.usage.completion_tokens_details.reasoning_tokens == 34
    assert (reply.usage.completion_tokens, reply.usage.prompt_tokens) == (36, 116 + billed)

    (row,) = log.records()
    assert (row.exit_rule, row.stopped_by, row.stop_k, row.probe_tokens) == (
        "same answer at 2 probes",
        "rule",
        32,
        2 + billed,
    )
    assert (row.reasoning_tokens, row.prompt_tokens, row.cap) == (34, 116 + billed, CAP)
    assert not row.cap_bitten


def test_without_agreement_the_thinking_stops_at_the_cap(tmp_path: Path) -> None:
    upstream = Upstream(
        text_reply("a", "length", 16),
        text_reply(" 1", "stop", 2),
        text_reply(" b", "length", 16),
        text_reply(" 2", "stop", 3),
        text_reply(" c", "length", 16),
        text_reply(" 3", "stop", 2),
    )
    client = capped(upstream.client(), plan_folder(tmp_path), log=False, exit="certified")
    report = report_of(client.chat.completions.create(**ask(), size=3))
    assert [body["max_tokens"] for _, body in upstream.requests[::2]] == [16, 16, 16]
    assert (report.stopped_by, report.stop_k, report.probes) == ("ceiling", CAP, 3)
    assert report.reasoning_tokens == CAP + 2 + 3  # never more thinking than the cap
    assert report.cap_bitten
    assert report.answer_forced


def test_thinking_the_model_ends_itself_is_answered_after_its_close(tmp_path: Path) -> None:
    upstream = Upstream(text_reply("One sun.", "stop", 9), text_reply(" 1", "stop", 2, prompt=60))
    client = capped(upstream.client(), plan_folder(tmp_path), log=False, exit="certified")
    reply = client.chat.completions.create(**ask(), size=3)
    (_, answer) = upstream.requests[1]
    assert answer["prompt"].endswith("<think>\nOne sun.\n</think>\n\nAnswer:")
    report = report_of(reply)
    assert (report.stopped_by, report.stop_k, report.probes, report.requests) == (
        "ended",
        9,
        0,
        2,
    )
    assert (report.reasoning_tokens, report.probe_tokens) == (9, 0)
    assert not report.answer_forced
    assert reply.choices[0].message.content == "Answer: 1"


def test_a_probability_rule_asks_for_logprobs(tmp_path: Path) -> None:
    rule = ExitRule(ceiling=CAP, every=16, rule=StoppingRule(min_prob=0.9))
    sure = text_reply(" 1", "stop", 1)
    sure["choices"][0]["logprobs"] = {"content": [{"token": " 1", "logprob": -0.01}]}
    upstream = Upstream(text_reply("one", "length", 16), sure)
    plan = plan_folder(tmp_path, rule=rule)
    client = capped(upstream.client(), plan, log=False, exit="certified")
    report = report_of(client.chat.completions.create(**ask(), size=3))
    assert upstream.requests[1][1]["logprobs"] == 1
    assert (report.stopped_by, report.stop_k, report.probes) == ("rule", 16, 1)


@pytest.mark.parametrize(
    ("size", "rule", "note"),
    [
        (4, RULE, "certified exit: none at n = 3 (certified sizes: 4); fixed cap 48"),
        (3, replace(RULE, ceiling=32), "its ceiling 32 at n = 3 is not the plan's cap 48"),
    ],
)
def test_where_the_exit_plan_certifies_nothing_the_fixed_cap_stays(
    tmp_path: Path, size: int, rule: ExitRule, note: str
) -> None:
    upstream = Upstream(text_reply("I count", "length", CAP), text_reply(" 1", "stop", 2))
    plan = plan_folder(tmp_path, size=size, rule=rule)
    client = capped(upstream.client(), plan, log=False, exit="certified")
    report = report_of(client.chat.completions.create(**ask(), size=3))
    assert upstream.requests[0][1]["max_tokens"] == CAP  # two-phase: one request to the cap
    assert note in report.note
    assert (report.exit_rule, report.stopped_by, report.stop_k) == ("", "", None)


def test_refusals_name_the_option(tmp_path: Path) -> None:
    client = Upstream().client()
    make_plan(THINKER).save(tmp_path / "plan.json")
    with pytest.raises(InputError, match="no exit plan at") as info:
        capped(client, tmp_path / "plan.json", exit="certified")
    assert info.value.field == "exit_plan"
    with pytest.raises(InputError, match=r"no folder to find exit\.json") as info:
        capped(client, make_plan(THINKER), exit="certified")
    assert info.value.field == "exit_plan"
    with pytest.raises(InputError) as info:
        capped(client, make_plan(THINKER), exit="maybe")
    assert info.value.field == "exit"
    with pytest.raises(InputError, match="read only with exit='certified'") as info:
        capped(client, make_plan(THINKER), exit_plan=tmp_path / "exit.json")
    assert info.value.field == "exit_plan"
    other = ExitPlan(model=THINKER, eps=0.3, delta=0.05, sizes={3: RULE})
    with pytest.raises(InputError, match=r"not the plan's 0\.1") as info:
        capped(client, make_plan(THINKER), exit="certified", exit_plan=other)
    assert info.value.field == "exit_plan"


def test_hidden_reasoning_cannot_be_probed(tmp_path: Path) -> None:
    hosted = Upstream().client("https://api.openai.com/v1")
    exits = ExitPlan(model="o3-mini", eps=0.1, delta=0.05, sizes={3: RULE})
    with pytest.raises(InputError, match="no thinking to probe") as info:
        capped(hosted, make_plan("o3-mini"), exit="certified", exit_plan=exits)
    assert info.value.field == "exit"


def chunks_text(chunks: list[ChatCompletionChunk], field: str) -> str:
    return "".join(
        (choice.delta.model_dump().get(field) or "") for chunk in chunks for choice in chunk.choices
    )


def test_a_stream_hands_on_the_thinking_chunk_by_chunk_then_the_answer(tmp_path: Path) -> None:
    plan = plan_folder(tmp_path)
    expected = capped(settles().client(), plan, log=False, exit="certified")
    reply = expected.chat.completions.create(**ask(), size=3)
    upstream = settles()
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(upstream.client(), plan, log=log, exit="certified")
    with client.chat.completions.create(**ask(), size=3, stream=True) as stream:
        assert len(upstream.requests) == 1  # `create` made the first request only
        chunks = list(stream)
    assert {body.get("stream") for _, body in upstream.requests} == {None}  # read whole
    assert [c.choices[0].delta.model_dump().get("reasoning_content") for c in chunks[1:3]] == [
        "I count one",
        " then one more",
    ]
    assert chunks_text(chunks, "content") == "Answer: 1"
    assert report_of(chunks[-1]) == report_of(reply)
    assert len({chunk.id for chunk in chunks}) == 1
    (row,) = log.records()
    assert (row.outcome, row.stopped_by, row.stop_k) == ("complete", "rule", 32)


def test_a_close_split_across_chunks_is_never_streamed(tmp_path: Path) -> None:
    upstream = Upstream(
        text_reply("One sun. </thi", "length", 16),
        text_reply(" 1", "stop", 2),
        text_reply("nk>\n\nAnswer: 1", "stop", 6),
        text_reply(" 1", "stop", 2),
    )
    client = capped(upstream.client(), plan_folder(tmp_path), log=False, exit="certified")
    chunks = list(client.chat.completions.create(**ask(), size=3, stream=True))
    assert chunks_text(chunks, "reasoning_content") == "One sun. "
    report = report_of(chunks[-1])
    assert (report.stopped_by, report.stop_k) == ("ended", 22)


def test_a_stream_closed_early_is_logged_as_far_as_it_went(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(settles().client(), plan_folder(tmp_path), log=log, exit="certified")
    stream = client.chat.completions.create(**ask(), size=3, stream=True)
    next(stream)
    stream.close()
    (row,) = log.records()
    assert (row.outcome, row.exit_rule, row.stopped_by, row.stop_k) == (
        "stopped",
        "same answer at 2 probes",
        "",
        None,
    )
    assert row.reasoning_tokens == 16


def test_the_async_client_makes_the_same_requests(tmp_path: Path) -> None:
    plan = plan_folder(tmp_path)
    sync = settles()
    reply = capped(sync.client(), plan, log=False, exit="certified").chat.completions.create(
        **ask(), size=3
    )
    plain_upstream, stream_upstream = settles(), settles()
    plain_client = capped(plain_upstream.async_client(), plan, log=False, exit="certified")
    stream_client = capped(stream_upstream.async_client(), plan, log=False, exit="certified")

    async def both() -> tuple[Any, list[ChatCompletionChunk]]:
        plain = await plain_client.chat.completions.create(**ask(), size=3)
        stream = await stream_client.chat.completions.create(**ask(), size=3, stream=True)
        return plain, [chunk async for chunk in stream]

    plain, streamed = asyncio.run(both())
    assert plain_upstream.requests == stream_upstream.requests == sync.requests
    assert report_of(plain) == report_of(streamed[-1]) == report_of(reply)
    assert chunks_text(streamed, "content") == plain.choices[0].message.content


def test_the_gateway_app_answers_under_the_exit(tmp_path: Path) -> None:
    log = tmp_path / "log.sqlite"
    plan = plan_folder(tmp_path)
    client = capped(settles().client(), plan, log=log, exit="certified", via="gateway")
    response = TestClient(make_app(client)).post("/v1/chat/completions", json={**ask(), "size": 3})
    assert response.status_code == 200
    body = response.json()
    assert body["cotplan"]["stopped_by"] == "rule"
    assert body["cotplan"]["stop_k"] == 32
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 34
    (row,) = CallLog(tmp_path / "log.sqlite").records()
    assert (row.via, row.stop_k) == ("gateway", 32)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--exit", "maybe"], "`exit`: must be one of none, certified, got 'maybe'"),
        (["--exit-plan", "exit.json"], "`exit_plan`: is read only with --exit certified"),
        (["--exit", "certified"], "no exit plan at"),
    ],
)
def test_serve_refuses_a_certified_exit_it_cannot_apply(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    named: str,
) -> None:
    from cotplan.cli import main

    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    make_plan(THINKER).save(tmp_path / "plan.json")
    args = ["serve", "--plan", str(tmp_path / "plan.json"), "--upstream", "http://127.0.0.1:9/v1"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, *options])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error:")
    assert named in " ".join(err.split())
    assert "Traceback" not in err


def test_serve_refuses_the_exit_where_the_provider_hides_the_reasoning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cotplan.cli import main

    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    plan = plan_folder(tmp_path, model="o3-mini")
    args = ["serve", "--plan", str(plan), "--upstream", "https://api.openai.com/v1"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--exit", "certified"])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "`exit`: certified cannot apply to 'o3-mini'" in " ".join(captured.err.split())
    assert "serving" not in captured.out  # refused before anything is said to be served


def test_a_log_from_before_the_exit_gains_its_columns(tmp_path: Path) -> None:
    from cotplan.production import log as log_module

    path = tmp_path / "log.sqlite"
    with sqlite3.connect(path) as db:
        for number, migrate in enumerate(log_module.MIGRATIONS[:3], start=1):
            migrate(db)
            db.execute(f"PRAGMA user_version = {number}")
        db.execute(
            "INSERT INTO calls (time, model, size, cap, basis, mode, reasoning_tokens, "
            "answer_tokens, prompt_tokens, cap_bitten, answer_forced, cost_usd, via) VALUES "
            "('t', 'm', 3, 6, 'certified', 'template', 6, 2, 90, 1, 1, NULL, 'wrapper')"
        )
    log = CallLog(path)
    log.append(record(exit_rule="same answer at 2 probes", stopped_by="rule", stop_k=4))
    old, new = log.records()
    assert (old.exit_rule, old.stopped_by, old.stop_k, old.probe_tokens) == ("", "", None, 0)
    assert (new.stopped_by, new.stop_k) == ("rule", 4)


# -- the real embedded thinking model -------------------------------------------------------

#: An item the thinking model settles on early: its probes at 16 and 32 tokens agree.
ITEM = make_tasks("count", n=3, count=4, seed=0)[3]
LIVE_CAP = 64
LIVE_RULE = ExitRule(ceiling=LIVE_CAP, every=16, rule=StoppingRule(agree=2))


def question() -> list[Any]:  # the SDK types each message by role
    return [{"role": "user", "content": str(ITEM.prompt)}]


def test_the_thinking_model_stops_early_counts_its_probes_and_answers_as_run_does(
    thinking_model: Any, thinking_backend: Any, tmp_path: Path
) -> None:
    plan = plan_folder(tmp_path, model=thinking_model.model_id, rule=LIVE_RULE, cap=LIVE_CAP)
    log = CallLog(tmp_path / "log.sqlite")
    sdk = openai.OpenAI(base_url=thinking_model.base_url, api_key="none")
    client = capped(sdk, plan, log=log, exit="certified")
    reply = client.chat.completions.create(
        model=thinking_model.model_id, messages=question(), size=3
    )
    report = report_of(reply)
    assert (report.mode, report.protocol) == ("template", "think")
    assert report.stopped_by == "rule"
    assert report.stop_k is not None
    assert report.stop_k < LIVE_CAP  # stopped before the cap
    assert report.probe_tokens > 0
    assert report.reasoning_tokens == report.stop_k + report.probe_tokens  # probes are spent
    assert reply.usage is not None
    assert reply.usage.completion_tokens_details is not None
    assert reply.usage.completion_tokens_details.reasoning_tokens == report.reasoning_tokens
    (row,) = log.records()
    assert (row.stop_k, row.probe_tokens, row.reasoning_tokens) == (
        report.stop_k,
        report.probe_tokens,
        report.reasoning_tokens,
    )

    # What `cotplan run --exit certified` answers for the same item: the same rule, probes,
    # stop and answer.
    exits = ExitPlan(model=thinking_model.model_id, eps=0.1, delta=0.05, sizes={3: LIVE_RULE})
    run = answer_with_exit(thinking_backend, ITEM, exits, n=3)
    assert (run.stopped_by, run.stop_k, run.probes) == (
        report.stopped_by,
        report.stop_k,
        report.probes,
    )
    marker = resolve_protocol(thinking_model.model_id, "think")[1].marker
    assert reply.choices[0].message.content == (marker + run.answer_text).rstrip()
    assert (report.probe_tokens, report.answer_tokens) == (
        run.probe_answer_tokens,
        run.answer_tokens,
    )


@pytest.mark.slow
def test_the_gateway_streams_the_certified_exit_from_the_thinking_model(
    thinking_model: Any, tmp_path: Path
) -> None:
    plan = plan_folder(tmp_path, model=thinking_model.model_id, rule=LIVE_RULE, cap=LIVE_CAP)
    log = CallLog(tmp_path / "log.sqlite")
    with Gateway(plan, thinking_model.base_url, log=log, exit="certified") as gateway:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key="none")
        asked: dict[str, Any] = {
            "model": thinking_model.model_id,
            "messages": question(),
            "extra_body": {"size": 3},
        }
        reply = sdk.chat.completions.create(**asked)
        chunks = list(sdk.chat.completions.create(**asked, stream=True))
    assert reply.model_extra is not None
    assert reply.model_extra["cotplan"]["stopped_by"] == "rule"
    assert chunks_text(chunks, "content") == reply.choices[0].message.content
    assert (
        chunks_text(chunks, "reasoning_content")
        == reply.choices[0].message.model_extra["reasoning_content"]
    )
    assert chunks[-1].model_extra is not None
    assert chunks[-1].model_extra["cotplan"] == reply.model_extra["cotplan"]
    assert [row.via for row in log.records()] == ["gateway", "gateway"]
