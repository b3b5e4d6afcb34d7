"""What the gateway adds to a call: calls/s and latency through `cotplan serve` against the
upstream alone, side by side in one run, at concurrency 1, 16 and 200, then through several
worker processes (`cotplan serve --workers N`) at the highest level.

The upstream is a loopback double of llama.cpp with its reasoning parser, in its own process:
raw asyncio that answers each request at once with a canned body (``/props`` says it caps
thinking; each chat completion carries its reasoning in the usage), so that what is measured
is the gateway's own work per call: reading and checking the body, picking the plan,
rewriting the request, the upstream request over its pool of kept-alive connections, the
response checks, the call log's row (queued for the batch writer) and the metrics. The gateway
runs in a process of its own (uvicorn, no access log); the load comes from this one (raw
asyncio, one kept-alive connection per concurrent caller, after a warm-up). Each level runs
for `--seconds` against the upstream, then through the gateway.

Besides wall-clock rates and latencies, the table gives the gateway process's CPU time per
call (from /proc): on a machine whose cores are shared with other work, the wall-clock
numbers include waiting for a core, the CPU time does not.

Targets (issue #42): at least 500 calls/s from one gateway process, at most 3 ms added at the
median and 10 ms at p99 (concurrency 1), against a fast loopback upstream; with 4 workers on
4 cores, at least 3 times one process's calls/s.

    .venv/bin/python benchmarks/gateway_overhead.py [--seconds 3] [--levels 1,16,200] [--workers 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

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


class _Upstream(asyncio.Protocol):
    """A loopback server that answers each request at once with a canned body: HTTP/1.1 kept
    alive, parsed no further than the request line and its length, so that the upstream
    side of the table costs next to nothing and what is measured is the gateway."""

    def __init__(self, replies: dict[bytes, bytes]) -> None:
        self.replies = replies
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end].lower()
            length = 0
            if (at := head.find(b"content-length:")) >= 0:
                stop = head.find(b"\r\n", at)
                length = int(head[at + 15 : stop if stop >= 0 else None])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            path = head.split(b" ", 2)[1]
            assert self.transport is not None
            self.transport.write(self.replies.get(path, _NOT_FOUND))


_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"


def _answer(body: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )


def _run_upstream(port: int) -> None:
    replies = {
        b"/v1/chat/completions": _answer(json.dumps(_REPLY).encode()),
        b"/props": _answer(json.dumps(_PROPS).encode()),
    }

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Upstream(replies), HOST, port, backlog=1024)
        await server.serve_forever()

    asyncio.run(main())


def _run_gateway(port: int, upstream: str, folder: str, workers: int = 1) -> None:
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
    log = Path(folder) / "production.sqlite"
    if workers == 1:
        gateway = Gateway(plan, upstream, log=log)
        uvicorn.run(gateway.app(), host=HOST, port=port, log_level="error", access_log=False)
    else:  # as `cotplan serve --workers N` runs them
        Gateway(plan, upstream, port=port, log=log, access_log=False).run(workers)


def _wait(url: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def _request(port: int, path: str) -> bytes:
    body = json.dumps(
        {
            "model": MODEL,
            "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}],
            "size": 3,
        }
    ).encode()
    return (
        f"POST {path} HTTP/1.1\r\nhost: {HOST}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _load(
    port: int, path: str, concurrency: int, seconds: float
) -> tuple[int, list[float], int, int]:
    """Calls answered a second, their latencies (s), failures and every call made (with the
    warm-up's), `concurrency` at a time, each on a
    kept-alive connection of its own. The client is raw asyncio streams (it reads the status
    and the length, no more), so that the load costs the 2 cores as little as it can."""
    request = _request(port, path)
    latencies: list[float] = []
    failures = made = 0

    async def worker(stop: float, record: bool) -> None:
        nonlocal failures, made
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            while time.perf_counter() < stop:
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                at = head.lower().find(b"content-length:")
                length = int(head[at + 15 : head.find(b"\r\n", at)])
                await reader.readexactly(length)
                made += 1
                if not record:
                    continue
                if head.startswith(b"HTTP/1.1 200"):
                    latencies.append(time.perf_counter() - started)
                else:
                    failures += 1
        finally:
            writer.close()

    # Warm up first (connections opened, first-call imports done), then measure.
    warm = time.perf_counter() + min(1.0, seconds / 2)
    await asyncio.gather(*(worker(warm, False) for _ in range(concurrency)))
    started = time.perf_counter()
    await asyncio.gather(*(worker(started + seconds, True) for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return round(len(latencies) / elapsed), latencies, failures, made


def _cpu_seconds(pid: int | None) -> float:
    """CPU seconds (user + system) process `pid` has used so far, from /proc (Linux): what a
    call costs the gateway whatever else the machine runs (the latencies above are wall time,
    and on a shared machine they include waiting for a core)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _several(
    upstream_url: str, folder: str, workers: int, level: int, seconds: float
) -> tuple[int, list[float], int, int]:
    """The gateway load at `level` through `workers` worker processes on one port."""
    port = _free_port()
    # Not a daemon: the gateway's parent starts the workers (it stops them on SIGTERM).
    parent = multiprocessing.get_context("spawn").Process(
        target=_run_gateway, args=(port, upstream_url, folder, workers)
    )
    parent.start()
    try:
        _wait(f"http://{HOST}:{port}/health", timeout=420.0)  # N imports on busy cores
        time.sleep(5.0)  # every worker up, not only the first
        return asyncio.run(_load(port, "/v1/chat/completions", level, seconds))
    finally:
        parent.terminate()
        parent.join(30)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per level and side")
    parser.add_argument("--levels", default="1,16,200", help="concurrency levels")
    parser.add_argument(
        "--workers",
        type=int,
        default=4,
        help="worker processes for the last case, at the highest level (0: skip it)",
    )
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
                path = "/v1/chat/completions"
                direct = asyncio.run(_load(up_port, path, level, args.seconds))
                before = _cpu_seconds(gateway.pid)
                through = asyncio.run(_load(gw_port, path, level, args.seconds))
                spent = _cpu_seconds(gateway.pid) - before
                rows.append((level, direct, through, spent))
            metrics = httpx2.get(f"http://{HOST}:{gw_port}/metrics").text
            gateway.terminate()
            gateway.join(10)
            several = None
            if args.workers > 1:
                several = _several(upstream_url, folder, args.workers, max(levels), args.seconds)
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
        "gateway CPU ms/call",
        "failed",
    ):
        table.add_column(column, justify="right")
    added: dict[int, tuple[float, float]] = {}
    best = 0
    cpu_rate = 0.0
    for level, (d_rate, d_lat, d_fail, _), (g_rate, g_lat, g_fail, made), spent in rows:
        p50 = 1000 * (statistics.median(g_lat) - statistics.median(d_lat))
        p99 = 1000 * (_quantile(g_lat, 0.99) - _quantile(d_lat, 0.99))
        added[level] = (p50, p99)
        best = max(best, g_rate)
        cpu_rate = max(cpu_rate, made / spent if spent > 0 else 0.0)
        table.add_row(
            str(level),
            str(d_rate),
            str(g_rate),
            f"{1000 * statistics.median(d_lat):.2f}",
            f"{1000 * statistics.median(g_lat):.2f}",
            f"{p50:.2f}",
            f"{p99:.2f}",
            f"{1000 * spent / max(made, 1):.2f}",
            str(d_fail + g_fail),
        )
    Console(width=120).print(table)
    counted = [line for line in metrics.splitlines() if line.startswith("cotplan_requests_total")]
    outcome.note("gateway /metrics: " + "; ".join(counted))
    outcome.note(
        f"the gateway's own CPU time allows {cpu_rate:.0f} calls/s on one core (calls made / "
        "CPU seconds the gateway process used, at its best level): the wall-clock rates above "
        f"are what {os.cpu_count()} cores shared with the load, the upstream and anything else "
        "running gave it"
    )
    failures = sum(d[2] + g[2] for _, d, g, _ in rows)
    if several is not None:
        one = next(g[0] for level, _, g, _ in rows if level == max(levels))
        ratio = several[0] / one if one else 0.0
        print(
            f"{args.workers} workers at concurrency {max(levels)}: {several[0]} calls/s "
            f"(one process: {one}/s, {ratio:.2f} times), p50 "
            f"{1000 * statistics.median(several[1]):.2f} ms, {several[2]} failed"
        )
        failures += several[2]
        cores = os.cpu_count() or 1
        if cores >= 4 and args.workers >= 4:
            outcome.target(
                f"{args.workers} workers at least 3 times one process's calls/s",
                ratio >= 3,
                f"{ratio:.2f}",
            )
        else:
            outcome.note(
                f"the machine's limit: {cores} cores for the load, the upstream and "
                f"{args.workers} workers together, so the workers cannot scale past what "
                "those cores give (the 3-times target is for 4 cores)"
            )
    outcome.check("no call failed", failures == 0)
    outcome.target("at least 500 calls/s from one gateway process", best >= 500, f"{best}/s")
    if 1 in added:
        p50, p99 = added[1]
        outcome.target("at most 3 ms added at the median (concurrency 1)", p50 <= 3, f"{p50:.2f}")
        outcome.target("at most 10 ms added at p99 (concurrency 1)", p99 <= 10, f"{p99:.2f}")


if __name__ == "__main__":
    with Outcome("gateway_overhead") as outcome:
        main(outcome)
