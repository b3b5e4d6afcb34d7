"""The capped client and `cotplan serve` with the raw `openai` client against the real embedded
model (SmolLM2-135M under llama.cpp): the cap holds, the answer arrives after the forced close,
the log records it, and the answer and token counts are `budgeted_answer`'s own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from production_support import make_plan

from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.generate import budgeted_answer
from cotplan.production import CallLog, capped, report_of
from cotplan.production.gateway import Gateway
from cotplan.tasks import make_tasks

pytestmark = pytest.mark.model

SIZE = 3
ITEM = make_tasks("addition", n=SIZE, count=1, seed=0)[0]
# make_plan's cap at n = 3: far too few tokens for this model to reach "Answer:" on its own.
CAP = 6


def question() -> list[Any]:  # the SDK types each message by role
    return [{"role": "user", "content": str(ITEM.prompt)}]


def test_the_wrapper_caps_forces_logs_and_answers_as_budgeted_answer(
    local_model: LocalModel, local_backend: LocalBackend, tmp_path: Path
) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(
        openai.OpenAI(base_url=local_model.base_url, api_key="none"),
        make_plan(local_model.model_id),
        log=log,
    )
    reply = client.chat.completions.create(
        model=local_model.model_id, messages=question(), size=SIZE
    )
    report = report_of(reply)
    assert reply.usage is not None
    assert reply.usage.completion_tokens_details is not None
    assert reply.usage.completion_tokens_details.reasoning_tokens == report.reasoning_tokens
    assert report.reasoning_tokens <= CAP  # the cap holds
    assert report.cap_bitten
    assert report.answer_forced
    assert reply.choices[0].message.content  # the answer arrived after the forced close
    assert reply.choices[0].finish_reason in ("stop", "length")

    (row,) = log.records()
    assert (row.cap, row.size, row.reasoning_tokens, row.answer_tokens) == (
        CAP,
        float(SIZE),
        report.reasoning_tokens,
        report.answer_tokens,
    )
    assert row.cap_bitten
    assert row.answer_forced
    assert row.cost_usd == 0.0  # the embedded model is priced at a deliberate zero

    direct = budgeted_answer(local_backend, ITEM, CAP)
    assert reply.choices[0].message.content == ("Answer:" + direct.answer_text).rstrip()
    assert reply.choices[0].message.model_extra == {"reasoning_content": direct.reasoning}
    assert (report.reasoning_tokens, report.answer_tokens, report.prompt_tokens) == (
        direct.reasoning_tokens,
        direct.answer_tokens,
        direct.prompt_tokens,
    )


def test_the_gateway_answers_any_openai_sdk_through_the_same_code(
    local_model: LocalModel, tmp_path: Path
) -> None:
    # In-process (a uvicorn thread) rather than `cotplan serve` in a subprocess: the same app
    # and server, without paying a second interpreter's imports on a loaded machine; the CLI's
    # option checks are tested in test_production_wrapper.py.
    plan = make_plan(local_model.model_id).save(tmp_path / "plan.json")
    log = tmp_path / "gateway.sqlite"
    with Gateway(plan, local_model.base_url, log=log) as gateway:
        sdk = openai.OpenAI(base_url=gateway.base_url, api_key="none")
        reply = sdk.chat.completions.create(
            model=local_model.model_id, messages=question(), extra_body={"size": SIZE}
        )
    direct = capped(
        openai.OpenAI(base_url=local_model.base_url, api_key="none"),
        make_plan(local_model.model_id),
        log=False,
    ).chat.completions.create(model=local_model.model_id, messages=question(), size=SIZE)
    report = report_of(reply)
    assert report.reasoning_tokens <= CAP
    assert report.answer_forced
    assert reply.choices[0].message.content == direct.choices[0].message.content
    assert report == report_of(direct)
    (row,) = CallLog(log).records()
    assert row.via == "gateway"
    assert row.cap == CAP
    assert row.answer_forced


def test_the_thinking_models_cut_thought_is_closed_before_the_forced_answer(
    thinking_model: LocalModel, thinking_backend: LocalBackend
) -> None:
    # The embedded thinking model writes <think>...</think> (protocol `think`): a cut thought
    # must be closed before the answer, or the answer would land inside the thinking.
    client = capped(
        openai.OpenAI(base_url=thinking_model.base_url, api_key="none"),
        make_plan(thinking_model.model_id),
        log=False,
    )
    reply = client.chat.completions.create(
        model=thinking_model.model_id, messages=question(), size=SIZE
    )
    report = report_of(reply)
    assert report.protocol == "think"
    assert report.reasoning_tokens <= CAP
    assert report.answer_forced
    direct = budgeted_answer(thinking_backend, ITEM, CAP)
    assert "</think>\n\nAnswer:" in direct.answer_prompt
    assert reply.choices[0].message.content == ("Answer:" + direct.answer_text).rstrip()
    assert (report.reasoning_tokens, report.answer_tokens) == (
        direct.reasoning_tokens,
        direct.answer_tokens,
    )
