"""What the gateway adds to a call: calls/s and latency through `cotplan serve` against the
upstream alone, side by side in one run, at concurrency 1, 16 and 200.

The upstream is a fast loopback double of llama.cpp with its reasoning parser (its own process:
``/props`` says it caps thinking, each chat completion is answered at once with its reasoning
counted in the usage), so what is measured is the gateway's own work per call: reading and
checking the body, picking the plan, rewriting the request, the upstream request, the response
checks, the call log's row and the metrics. The gateway runs in a process of its own (uvicorn,
no access log); the load comes from this one (httpx, asyncio). Each level runs for
`--seconds` against the upstream, then through the gateway.

Targets (issue #42): at least 500 calls/s from one gateway process, and at most 3 ms added at
the median and 10 ms at p99, against a fast loopback upstream.

    .venv/bin/python benchmarks/gateway_overhead.py [--seconds 3] [--levels 1,16,200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
from _outcome import Outcome
from rich.console import Console
from rich.table import Table

MODEL = "smollm2-135m-thinking@0123456789ab"
HOST = "127.0.0.1"

_REPLY = {
    "id": "chatcmpl-up",
    "object": "chat.completion",
    "created": 1,
    "model": MODEL,
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": "Answer: 13",
                "reasoning_content": "I add 1 and 4, then 8.",
            },
        }
    ],
    "usage": {
        "prompt_tokens": 41,
        "completion_tokens": 14,
        "total_tokens": 55,
        "completion_tokens_details": {"reasoning_tokens": 10},
    },
}
_PROPS = {
    "default_generation_settings": {"params": {}},
    "chat_template_caps": {"supports_preserve_reasoning": True},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _run_upstream(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    body = json.dumps(_REPLY).encode()

    async def chat(request: Request) -> Response:
        await request.body()
        return Response(body, media_type="application/json")

    async def props(request: Request) -> JSONResponse:
        return JSONResponse(_PROPS)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/props", props, methods=["GET"]),
        ]
    )
    uvicorn.run(app, host=HOST, port=port, log_level="error", access_log=False)


def _run_gateway(port: int, upstream: str, folder: str) -> None:
    import uvicorn

    from cotplan.planner import SavedPlan
    from cotplan.planner.records import Budget
    from cotplan.planner.saved_plan import SCHEMA_VERSION
    from cotplan.production.gateway import Gateway

    budget = Budget(
        n=3,
        eps=0.1,
        k_star=48.0,
        low=48.0,
        high=48.0,
        tokens=48,
        log_base="e",
        c_in_base=1.0,
        formula="k*",
        baselines={},
    )
    plan = SavedPlan(
        eps=0.1,
        delta=0.05,
        law=None,
        status_="helps",
        verdict_="v",
        calibration="calibration.csv",
        budgets=(budget,),
        model=MODEL,
        schema_version=SCHEMA_VERSION,
    )
    gateway = Gateway(plan, upstream, log=Path(folder) / "production.sqlite")
    uvicorn.run(gateway.app(), host=HOST, port=port, log_level="error", access_log=False)


def _wait(url: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


async def _load(url: str, concurrency: int, seconds: float) -> tuple[int, list[float], int]:
    """Calls answered, their latencies (s) and failures, `concurrency` at a time."""
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}],
        "size": 3,
    }
    latencies: list[float] = []
    failures = 0
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(limits=limits, timeout=60.0) as client:
        stop = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal failures
            while time.perf_counter() < stop:
                started = time.perf_counter()
                response = await client.post(url, json=body)
                if response.status_code == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    failures += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return round(len(latencies) / elapsed), latencies, failures


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per level and side")
    parser.add_argument("--levels", default="1,16,200", help="concurrency levels")
    args = parser.parse_args()
    levels = [int(level) for level in args.levels.split(",")]

    context = multiprocessing.get_context("spawn")
    up_port, gw_port = _free_port(), _free_port()
    upstream_url = f"http://{HOST}:{up_port}/v1"
    with tempfile.TemporaryDirectory() as folder:
        upstream = context.Process(target=_run_upstream, args=(up_port,), daemon=True)
        upstream.start()
        _wait(f"http://{HOST}:{up_port}/props")
        gateway = context.Process(
            target=_run_gateway, args=(gw_port, upstream_url, folder), daemon=True
        )
        gateway.start()
        try:
            _wait(f"http://{HOST}:{gw_port}/health")
            rows = []
            for level in levels:
                direct = asyncio.run(_load(f"{upstream_url}/chat/completions", level, args.seconds))
                through = asyncio.run(
                    _load(f"http://{HOST}:{gw_port}/v1/chat/completions", level, args.seconds)
                )
                rows.append((level, direct, through))
            metrics = httpx2.get(f"http://{HOST}:{gw_port}/metrics").text
        finally:
            gateway.terminate()
            upstream.terminate()
            gateway.join(5)
            upstream.join(5)

    table = Table(title=f"Gateway overhead ({args.seconds:g} s a level and side)")
    for column in (
        "concurrency",
        "upstream calls/s",
        "gateway calls/s",
        "upstream p50 ms",
        "gateway p50 ms",
        "added p50 ms",
        "added p99 ms",
        "failed",
    ):
        table.add_column(column, justify="right")
    added: dict[int, tuple[float, float]] = {}
    best = 0
    for level, (d_rate, d_lat, d_fail), (g_rate, g_lat, g_fail) in rows:
        p50 = 1000 * (statistics.median(g_lat) - statistics.median(d_lat))
        p99 = 1000 * (_quantile(g_lat, 0.99) - _quantile(d_lat, 0.99))
        added[level] = (p50, p99)
        best = max(best, g_rate)
        table.add_row(
            str(level),
            str(d_rate),
            str(g_rate),
            f"{1000 * statistics.median(d_lat):.2f}",
            f"{1000 * statistics.median(g_lat):.2f}",
            f"{p50:.2f}",
            f"{p99:.2f}",
            str(d_fail + g_fail),
        )
    Console(width=120).print(table)
    counted = [line for line in metrics.splitlines() if line.startswith("cotplan_requests_total")]
    outcome.note("gateway /metrics: " + "; ".join(counted))
    outcome.check("no call failed", all(d[2] + g[2] == 0 for _, d, g in rows))
    outcome.target("at least 500 calls/s from one gateway process", best >= 500, f"{best}/s")
    if 1 in added:
        p50, p99 = added[1]
        outcome.target("at most 3 ms added at the median (concurrency 1)", p50 <= 3, f"{p50:.2f}")
        outcome.target("at most 10 ms added at p99 (concurrency 1)", p99 <= 10, f"{p99:.2f}")


if __name__ == "__main__":
    with Outcome("gateway_overhead") as outcome:
        main(outcome)
