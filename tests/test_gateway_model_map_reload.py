"""The model map is read again as the plans are: on SIGHUP (`Gateway.reload`) and when its file
changes, without dropping the calls under way; a map that fails to load keeps the old one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from gateway_loopback import Loopback
from production_support import make_plan

from cotplan.backends.known_models import REGISTERED, family_of
from cotplan.errors import InputError
from cotplan.production.gateway import Gateway
from cotplan.production.model_map import load_model_map, reload_model_map

ACME = "acme-reasoner-v2"


@pytest.fixture(autouse=True)
def forget() -> Iterator[None]:
    before = dict(REGISTERED)
    yield
    REGISTERED.clear()
    REGISTERED.update(before)


def write_map(path: Path, server: str, *, protocol: str = "think", more: str = "") -> None:
    path.write_text(
        f'[models.{ACME}]\nprotocol = "{protocol}"\ntemplate = "chatml"\n'
        f'server = "{server}"\n{more}'
    )


def call(base: str) -> httpx2.Response:
    body: dict[str, Any] = {
        "model": ACME,
        "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}],
        "size": 3,
    }
    return httpx2.post(f"{base}/chat/completions", json=body, timeout=30)


def test_a_reload_declares_the_map_anew_and_a_broken_map_keeps_the_old(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    write_map(path, "llama.cpp-thinking", more='[models.acme-small]\nprotocol = "plain"\n')
    before = [family.prefix for family in load_model_map(path)]
    assert family_of("acme-small") is not None
    write_map(path, "nim-thinking")
    reload_model_map(path, before)
    family = family_of(ACME)
    assert family is not None
    assert family.server == "nim-thinking"
    assert family_of("acme-small") is None  # no longer in the file: forgotten
    write_map(path, "vllm-thinking", protocol="nonesuch")
    with pytest.raises(InputError, match="protocol"):
        reload_model_map(path, [ACME])
    assert family_of(ACME) == family  # nothing of the broken file was declared


def test_a_changed_model_map_is_served_without_dropping_calls_under_way(tmp_path: Path) -> None:
    models, plan = tmp_path / "models.toml", tmp_path / "plan.json"
    write_map(models, "llama.cpp-thinking")
    make_plan(ACME, tokens=6).save(plan)
    with Loopback(delay=0.3) as upstream:
        gateway = Gateway(
            [plan],
            upstream.url,
            provider="openai-compatible",  # declared; the map says what serves ACME
            log=tmp_path / "log.sqlite",
            model_map=models,
            watch=0.05,
        )
        with gateway, ThreadPoolExecutor(4) as pool:
            under_way = [pool.submit(call, gateway.base_url) for _ in range(4)]
            deadline = time.monotonic() + 20
            while len(upstream.bodies) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)  # every call has reached the upstream, which holds it
            write_map(models, "nim-thinking")
            first = [future.result() for future in under_way]
            deadline = time.monotonic() + 10
            while gateway.client.provider_for(ACME) != "nim-thinking" and (
                time.monotonic() < deadline
            ):
                time.sleep(0.05)
            assert gateway.client.provider_for(ACME) == "nim-thinking"  # the changed map read
            after = call(gateway.base_url)
            write_map(models, "vllm-thinking", protocol="nonesuch")  # broken: old map stays
            time.sleep(0.3)
            still = call(gateway.base_url)
            assert gateway.reload() is not None  # as SIGHUP would: refused, and said
    assert [r.status_code for r in first] == [200] * 4
    assert (after.status_code, still.status_code) == (200, 200)
    sent = [body for _, body in upstream.bodies]
    assert [body.get("thinking_budget_tokens") for body in sent[:4]] == [6] * 4
    assert [body.get("nvext") for body in sent[4:]] == [{"max_thinking_tokens": 6}] * 2
