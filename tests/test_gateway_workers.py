"""Operating the gateway under load: a plan file changed on disk is served from the next call
on while calls under way finish under the old one (none dropped), and several worker
processes share one port, one call log and one /metrics."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from gateway_loopback import Loopback, wait_for
from production_support import THINKER, ask, make_plan

from cotplan.errors import InputError
from cotplan.production.gateway import Gateway
from cotplan.production.gateway_workers import check_workers
from cotplan.production.log import CallLog


def call(base: str, **extra: Any) -> httpx2.Response:
    return httpx2.post(f"{base}/chat/completions", json={**ask(), "size": 3, **extra}, timeout=30)


def test_a_changed_plan_file_is_served_without_dropping_calls_under_way(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    make_plan(THINKER, tokens=6).save(path)
    with Loopback(delay=0.6) as upstream:
        gateway = Gateway(
            [path], upstream.url, provider="llama.cpp-thinking", log=tmp_path / "log.sqlite"
        )
        gateway.watch = 0.05
        with gateway, ThreadPoolExecutor(8) as pool:
            under_way = [pool.submit(call, gateway.base_url) for _ in range(8)]
            deadline = time.monotonic() + 20
            while len(upstream.bodies) < 8 and time.monotonic() < deadline:
                time.sleep(0.01)  # until every call has reached the upstream, which holds it
            make_plan(THINKER, tokens=12).save(path)
            first = [future.result() for future in under_way]
            deadline = time.monotonic() + 10
            while gateway.client.plan.budgets[0].tokens != 12 and time.monotonic() < deadline:
                time.sleep(0.05)
            after = call(gateway.base_url)
    assert [r.status_code for r in first] == [200] * 8
    assert {r.json()["cotplan"]["cap"] for r in first} == {6}  # the plan they started with
    assert after.json()["cotplan"]["cap"] == 12
    sent = [body["thinking_budget_tokens"] for path, body in upstream.bodies]
    assert sent == [6] * 8 + [12]
    assert len(CallLog(tmp_path / "log.sqlite").records()) == 9


def test_a_broken_plan_file_on_disk_keeps_the_old_plan_serving(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    make_plan(THINKER, tokens=6).save(path)
    with Loopback() as upstream:
        gateway = Gateway(
            [path], upstream.url, provider="llama.cpp-thinking", log=tmp_path / "log.sqlite"
        )
        gateway.watch = 0.05
        with gateway:
            path.write_text("{half a plan")
            time.sleep(0.5)
            reply = call(gateway.base_url)
    assert reply.status_code == 200
    assert reply.json()["cotplan"]["cap"] == 6


def test_workers_must_be_a_whole_number() -> None:
    assert check_workers(4) == 4
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InputError, match="`workers`"):
            check_workers(bad)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_two_workers_share_the_port_the_call_log_and_the_metrics(tmp_path: Path) -> None:
    plan = make_plan(THINKER).save(tmp_path / "plan.json")
    log = tmp_path / "log.sqlite"
    port = free_port()
    with Loopback() as upstream:
        script = (
            "import sys; from cotplan.production.gateway import serve; "
            f"sys.exit(serve({str(plan)!r}, {upstream.url!r}, port={port}, log={str(log)!r}, "
            "provider='llama.cpp-thinking', workers=2))"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        server = subprocess.Popen([sys.executable, "-c", script], env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(f"{base}/health", timeout=240)  # imports take a while on a busy machine
            with ThreadPoolExecutor(8) as pool:
                replies = list(pool.map(lambda _: call(f"{base}/v1"), range(24)))
            scrapes = [httpx2.get(f"{base}/metrics").text for _ in range(6)]
        finally:
            server.send_signal(signal.SIGTERM)
            code = server.wait(30)
    assert [r.status_code for r in replies] == [200] * 24
    counted = {
        float(m.group(1))
        for text in scrapes
        for m in re.finditer(r'cotplan_requests_total\{[^}]*status="200"[^}]*\} (\S+)', text)
    }
    assert counted == {24.0}  # whichever worker answers, the sum over both
    assert code == 0
    assert len(CallLog(log).records()) == 24  # every worker's rows, written at its stop


def test_the_gateway_passes_completions_and_embeddings_on_and_caps_responses(
    tmp_path: Path,
) -> None:
    bodies = {
        "/completions": {"model": "m", "prompt": "x", "max_tokens": 3},
        "/embeddings": {"model": "e", "input": "x"},
        "/responses": {"model": THINKER, "input": "What is 1 + 4 + 8?", "reasoning": {}},
    }
    with Loopback() as upstream:
        gateway = Gateway(
            [make_plan(THINKER)],
            upstream.url,
            provider="llama.cpp-thinking",
            log=tmp_path / "log.sqlite",
        )
        with gateway:
            replies = {
                path: httpx2.post(f"{gateway.base_url}{path}", json=body)
                for path, body in bodies.items()
            }
    for path, body in bodies.items():
        assert replies[path].status_code == 200
        # As it came, but for the Responses call's cap (llama.cpp's field, the largest cap).
        capped = {"thinking_budget_tokens": 6} if path == "/responses" else {}
        assert replies[path].json()["echo"] == {**body, **capped}
    assert [path for path, _ in upstream.bodies] == [f"/v1{path}" for path in bodies]
    [row] = CallLog(tmp_path / "log.sqlite").records()  # only the capped call: the Responses one
    assert (row.cap, row.mode) == (6, "server")
