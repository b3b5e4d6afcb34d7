"""The LiteLLM callback (`cotplan[litellm]`): the request fields it sets and the log rows it
writes, then through LiteLLM itself (`litellm.acompletion` with the callback registered, after
the proxy's pre-call hook) against the real embedded llama.cpp server, with every connection
off the loopback interface refused."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest

# LiteLLM fetches its price map at import unless told to use the copy it ships.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
litellm = pytest.importorskip("litellm", reason="the litellm extra: pip install .[litellm]")

from litellm.caching.dual_cache import DualCache  # noqa: E402
from litellm.proxy._types import UserAPIKeyAuth  # noqa: E402
from production_support import PLAIN, make_plan  # noqa: E402

from cotplan.errors import InputError  # noqa: E402
from cotplan.production import CallLog  # noqa: E402
from cotplan.production.litellm_hook import CotplanCallback  # noqa: E402

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuse every address but the loopback one, and record what was asked for."""
    asked: list[str] = []
    resolve = socket.getaddrinfo

    def only_loopback(host: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(str(host))
        if str(host) not in LOOPBACK:
            raise OSError(f"test: no network ({host})")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", only_loopback)
    return asked


def body(model: str = f"openai/{PLAIN}", **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "api_base": "http://127.0.0.1:9/v1",
        "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}],
        **extra,
    }


def test_the_pre_call_hook_sets_the_plans_fields(tmp_path: Path) -> None:
    hook = CotplanCallback(make_plan(PLAIN), log=False, allow_cut_answers=True)
    data = asyncio.run(
        hook.async_pre_call_hook(
            UserAPIKeyAuth(), DualCache(), body(size=3, max_tokens=500), "completion"
        )
    )
    assert data["max_tokens"] == make_plan(PLAIN).request_fields(3)["max_tokens"]
    assert "size" not in data  # not sent on to the provider
    assert data["metadata"]["cotplan"]["cap"] == 6


def test_hosted_reasoning_gets_the_providers_budget_fields() -> None:
    hook = CotplanCallback(make_plan("o3-mini", tokens=64), log=False)
    data = hook.capped_request({**body("openai/o3-mini", size=3), "api_base": None})
    assert data["reasoning_effort"] == "low"
    assert data["max_completion_tokens"] == 64 + 16


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (body(f"openai/{PLAIN}-other", size=3), "model"),
        (body(), "size"),
        (body(size=7), "size"),
        (body(size=3, tools=[{"type": "function"}]), "tools"),
        ({"messages": []}, "model"),
    ],
)
def test_a_call_it_cannot_cap_is_refused_naming_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        CotplanCallback(make_plan(PLAIN), log=False, allow_cut_answers=True).capped_request(data)
    assert info.value.field == field


def test_the_success_hook_writes_the_wrappers_row(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    hook = CotplanCallback(make_plan(PLAIN), log=log, allow_cut_answers=True)
    data = hook.capped_request(body(size=3))
    reply = litellm.ModelResponse(
        id="chatcmpl-x",
        choices=[
            {
                "index": 0,
                "finish_reason": "length",
                "message": {"role": "assistant", "content": "1 + 4"},
            }
        ],
        usage={"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36},
    )
    hook.log_success_event({"litellm_params": {"metadata": data["metadata"]}}, reply, None, None)
    hook.log_success_event({"litellm_params": {"metadata": {}}}, reply, None, None)  # not ours
    (row,) = log.records()
    assert (row.model, row.size, row.cap, row.mode, row.via, row.call_id) == (
        PLAIN, 3.0, 6, "fields", "litellm", "chatcmpl-x",
    )  # fmt: skip
    assert row.cap_bitten
    assert not row.answer_forced
    assert (row.prompt_tokens, row.answer_tokens) == (30, 6)


@pytest.mark.model
def test_through_litellm_against_the_embedded_server(
    local_model: Any, tmp_path: Path, offline: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    hook = CotplanCallback(make_plan(local_model.model_id), log=log, allow_cut_answers=True)
    # LiteLLM copies `callbacks` into internal lists on first use: an earlier test's hook would
    # otherwise still receive this call's success event.
    litellm.logging_callback_manager._reset_all_callbacks()
    monkeypatch.setattr(litellm, "callbacks", [hook])
    request = {
        "model": f"openai/{local_model.model_id}",
        "api_base": local_model.base_url,
        "api_key": "none",
        "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}],
        "size": 3,
        "temperature": 0.0,
    }

    async def call() -> Any:
        data = await hook.async_pre_call_hook(UserAPIKeyAuth(), DualCache(), request, "acompletion")
        reply = await litellm.acompletion(**data)
        for _ in range(1200):  # LiteLLM logs success in a task of its own, after returning
            if log.records():
                break
            await asyncio.sleep(0.05)
        return reply

    reply = asyncio.run(call())
    assert reply.usage.completion_tokens <= 6  # the plan's cap, set by the hook, held
    assert reply.choices[0].finish_reason == "length"
    (row,) = log.records()
    assert (row.call_id, row.cap, row.via) == (reply.id, 6, "litellm")
    assert row.cap_bitten
    assert row.answer_tokens == reply.usage.completion_tokens
    assert all(host in LOOPBACK for host in offline)


def test_a_visible_thinker_on_a_server_that_cannot_cap_is_refused_at_start_up() -> None:
    with pytest.raises(InputError, match="cotplan serve") as info:
        CotplanCallback(make_plan(PLAIN), log=False)
    assert info.value.field == "provider"
    # Hidden reasoning the provider caps, or a server that ends the thinking itself: accepted.
    CotplanCallback(make_plan("o3-mini", tokens=64), log=False)
    hook = CotplanCallback(make_plan(PLAIN), log=False, provider="llama.cpp-thinking")
    data = hook.capped_request(body(size=3))
    assert data["thinking_budget_tokens"] == 6


def test_a_nim_upstream_gets_its_own_cap_field() -> None:
    hook = CotplanCallback(make_plan(PLAIN), log=False, provider="nim-thinking")
    data = hook.capped_request(body(size=3))
    assert data["nvext"] == {"max_thinking_tokens": 6}
    assert data["max_tokens"] > 6  # room for the close and the answer


def test_reasoning_the_usage_leaves_out_is_counted_from_the_thinking(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    hook = CotplanCallback(make_plan(PLAIN), log=log, provider="llama.cpp-thinking")
    data = hook.capped_request(body(size=3))
    reply = litellm.ModelResponse(
        id="chatcmpl-y",
        choices=[
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "Answer: 13",
                    "reasoning_content": "1 + 4 = 5, 5 + 8",  # 16 characters: about 4 tokens
                },
            }
        ],
        usage={"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
    )
    hook.log_success_event({"litellm_params": {"metadata": data["metadata"]}}, reply, None, None)
    (row,) = log.records()
    assert (row.reasoning_tokens, row.answer_tokens) == (4, 5)
