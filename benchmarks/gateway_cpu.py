"""The gateway's own CPU time per call, in one process: what `benchmarks/gateway_overhead.py`
measures in wall-clock time, without the scheduler.

On a machine whose cores are shared with other work, the wall-clock rates and latencies of
`gateway_overhead.py` (three processes on loopback) mostly measure waiting for a core. This
drives the gateway's app itself (`make_app` with the async capped client the gateway builds)
in-process through httpx's ASGI transport, against an upstream double that answers each chat
completion at once (httpx's mock transport, the same canned reply), with the call log's
batched writer, and reports the main thread's CPU time per call (`time.thread_time`, best of
five rounds): the body read and checked, the plan picked, the request rewritten, the SDK's
request and reply, the response checks, the report (priced), the metrics, the log row queued
and the reply's JSON. The ASGI client's own work is in it too (uvicorn's HTTP parsing is not).

    .venv/bin/python benchmarks/gateway_cpu.py [--calls 400]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
from _outcome import Outcome

from cotplan.planner import SavedPlan
from cotplan.planner.records import Budget
from cotplan.planner.saved_plan import SCHEMA_VERSION
from cotplan.production import capped
from cotplan.production.gateway_app import make_app
from cotplan.production.log_writer import BatchedCallLog

MODEL = "smollm2-135m-thinking@0123456789ab"
REPLY: dict[str, Any] = {
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
BODY = {
    "model": MODEL,
    "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}],
    "size": 3,
}


def _plan() -> SavedPlan:
    budget = Budget(
        n=3,
        eps=0.1,
        k_star=6.0,
        low=6.0,
        high=6.0,
        tokens=6,
        log_base="e",
        c_in_base=1.0,
        formula="k*",
        baselines={},
    )
    return SavedPlan(
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


async def _measure(calls: int, folder: Path) -> tuple[float, float]:
    """Best main-thread CPU ms per call over five rounds, and the calls/s of that round."""
    raw = json.dumps(REPLY).encode()

    def upstream(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=raw, headers={"content-type": "application/json"})

    sdk = openai.AsyncOpenAI(
        api_key="-",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(upstream)),
    )
    log = BatchedCallLog(folder / "log.sqlite")
    client = capped(sdk, _plan(), provider="llama.cpp-thinking", log=log, via="gateway")
    transport = httpx2.ASGITransport(app=make_app(client))
    best_cpu, best_rate = float("inf"), 0.0
    async with httpx2.AsyncClient(transport=transport, base_url="http://gateway") as http:
        for _ in range(100):  # warm-up: imports, the price row, pools
            answer = await http.post("/v1/chat/completions", json=BODY)
            answer.raise_for_status()
        for _ in range(5):
            cpu, wall = time.thread_time(), time.perf_counter()
            for _ in range(calls):
                await http.post("/v1/chat/completions", json=BODY)
            cpu_ms = (time.thread_time() - cpu) / calls * 1000
            if cpu_ms < best_cpu:
                best_cpu, best_rate = cpu_ms, calls / (time.perf_counter() - wall)
    log.close()
    return best_cpu, best_rate


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="calls per round (five rounds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cpu_ms, rate = asyncio.run(_measure(args.calls, Path(folder)))
    print(f"gateway CPU per call, in-process: {cpu_ms:.2f} ms (best of 5 rounds of {args.calls})")
    print(f"that round's in-process rate: {rate:.0f} calls/s")
    outcome.note(
        f"one core at this CPU time allows {1000 / cpu_ms:.0f} calls/s before uvicorn's HTTP "
        "parsing and the sockets, which `gateway_overhead.py` adds"
    )


if __name__ == "__main__":
    with Outcome("gateway_cpu") as outcome:
        main(outcome)
