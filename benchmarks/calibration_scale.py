"""What a calibration costs cotplan itself as the work grows: items and thinking lengths.

A loopback reasoning server (`cotplan.loopback.LoopbackReasoner`: the chat-completions shape
of vLLM or llama.cpp with `reasoning_content`, thinking of log-normal length whose 95th
percentile is the target top budget; a load generator, not a model) stands in for a vLLM
cluster. Each configuration runs `calibrate_to_file` with the auto grid (each item's uncapped
run serves every budget; rows streamed to disk) in a fresh Python process, with the call cache
on, and reports its wall time, peak resident memory, the call cache's size on disk, the
requests sent, and the thinking tokens the server generated per item. Growth exponents are the
slopes of log(metric) on log(items) at a fixed top budget, and on log(top) at a fixed item
count: memory should not grow with items (exponent near 0), requests should grow linearly
(exponent 1).

    .venv/bin/python benchmarks/calibration_scale.py --quick   # items 10..40, top 128..2,048
    .venv/bin/python benchmarks/calibration_scale.py           # items 100..10,000, top 128..16,384

Throughput against concurrency (``--concurrency``): the loopback server sits behind a proxy
that serves at most `limit` requests at once, each holding its slot for a fixed time (an
engine's step, not this machine's CPU), the rest waiting in its queue, as vLLM's
``--max-num-seqs`` does. The same live calibration runs at each `concurrency`; requests per
second should rise with it until the server's limit, and stay there past it.

    .venv/bin/python benchmarks/calibration_scale.py --concurrency --quick
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

#: Log-normal sigma of the server's thinking lengths: p95 / median = exp(1.645 · sigma).
SPREAD = 0.5

PRESETS = {
    "quick": {"items": [10, 20, 40], "top_at": 256, "tops": [128, 512, 2048], "items_at": 10},
    "full": {
        "items": [100, 1000, 10_000],
        "top_at": 1024,
        "tops": [128, 1024, 16_384],
        "items_at": 100,
    },
}


#: The concurrency case: the server's limit, the time each request holds a slot, the levels.
CONCURRENCY = {
    "quick": {"items": 12, "top": 64, "limit": 8, "hold_s": 0.08, "levels": [1, 2, 4, 8, 16]},
    "full": {"items": 48, "top": 256, "limit": 16, "hold_s": 0.08, "levels": [1, 4, 8, 16, 32]},
}


class LimitedServer:
    """A proxy in front of `upstream` that serves at most `limit` requests at once, each for
    at least `hold_s` seconds; the others wait their turn (an engine's running-sequence cap)."""

    def __init__(self, upstream: str, *, limit: int, hold_s: float) -> None:
        import threading

        self.upstream = upstream.removesuffix("/v1")
        self.slots = threading.BoundedSemaphore(limit)
        self.hold_s = hold_s
        self.peak = 0
        self._running = 0
        self._lock = threading.Lock()
        self._server: Any = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> LimitedServer:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        import httpx

        owner = self
        client = httpx.Client(timeout=600.0)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with owner.slots:
                    with owner._lock:
                        owner._running += 1
                        owner.peak = max(owner.peak, owner._running)
                    started = time.perf_counter()
                    reply = client.post(
                        owner.upstream + self.path,
                        content=body,
                        headers={"content-type": "application/json"},
                    )
                    time.sleep(max(0.0, owner.hold_s - (time.perf_counter() - started)))
                    with owner._lock:
                        owner._running -= 1
                self.send_response(reply.status_code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def throughput(preset: str) -> None:
    """The concurrency case: requests per second of one live calibration at each level."""
    from _outcome import Outcome

    from cotplan.backends import connect
    from cotplan.loopback import LoopbackReasoner, arithmetic_items
    from cotplan.planner.calibrate import calibrate

    case = CONCURRENCY[preset]
    with Outcome("calibration_scale") as outcome:
        print(
            f"preset {preset}; {case['items']} items, top budget {case['top']}; the server runs "
            f"at most {case['limit']} requests at once, {case['hold_s'] * 1000:.0f} ms each"
        )
        print(f"{'concurrency':>11} {'requests':>8} {'wall s':>7} {'req/s':>7} {'server peak':>11}")
        rates: dict[int, float] = {}
        peaks: dict[int, int] = {}
        for level in case["levels"]:
            median = case["top"] / math.exp(1.645 * SPREAD)
            with (
                LoopbackReasoner(mean_thinking=median, spread=SPREAD) as server,
                LimitedServer(server.base_url, limit=case["limit"], hold_s=case["hold_s"]) as gate,
            ):
                os.environ["COTPLAN_HOME"] = tempfile.mkdtemp(prefix="calibration-conc-")
                backend = connect("openai:loopback-r1", base_url=gate.base_url, protocol="think")
                began = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = calibrate(
                        backend,
                        arithmetic_items(case["items"], n=8),
                        uncapped_tokens=8 * case["top"],
                        concurrency=level,
                        progress=False,
                    )
                wall = time.perf_counter() - began
                backend.close()
            rates[level] = result.requests / wall
            peaks[level] = gate.peak
            print(
                f"{level:>11} {result.requests:>8} {wall:>7.1f} {rates[level]:>7.1f} "
                f"{gate.peak:>11}"
            )
        levels = case["levels"]
        limit = case["limit"]
        below = [lv for lv in levels if lv <= limit]
        rising = all(rates[b] > rates[a] * 1.2 for a, b in itertools.pairwise(below))
        outcome.target(
            f"throughput rises with concurrency up to the server's limit ({limit})",
            rising,
            " -> ".join(f"{rates[lv]:.1f}" for lv in below) + " req/s",
        )
        past = [lv for lv in levels if lv > limit]
        if past:
            # Past the limit the server queues the rest: more in flight on the client's side
            # can still fill the slots more of the time (throughput creeps toward the server's
            # capacity), but never puts more than `limit` requests on the server at once.
            capacity = limit / case["hold_s"]
            held = all(peaks[lv] <= limit and rates[lv] <= capacity * 1.05 for lv in past)
            outcome.target(
                f"and past it the server is never asked for more: at most {limit} in flight, "
                f"at most its capacity ({capacity:.0f} req/s)",
                held,
                ", ".join(
                    f"{peaks[lv]} in flight and {rates[lv]:.1f} req/s at {lv}" for lv in past
                ),
            )


def one(items: int, top: int, base_url: str, home: str) -> dict[str, float]:
    """One configuration, in this (fresh) process: the calibration and what it cost."""
    os.environ["COTPLAN_HOME"] = home
    from cotplan.backends import connect
    from cotplan.loopback import arithmetic_items
    from cotplan.planner.calibrate import CostUnknownWarning, calibrate_to_file

    chosen = arithmetic_items(items, n=8)
    backend = connect("openai:loopback-r1", base_url=base_url, protocol="think")
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CostUnknownWarning)
        result = calibrate_to_file(
            backend,
            chosen,
            Path(home) / "calibration.csv",
            uncapped_tokens=8 * top,
            progress=False,
            concurrency=4,
        )
    wall = time.perf_counter() - start
    backend.close()
    cache = sum(p.stat().st_size for p in Path(home).glob("cache.sqlite*"))
    (profile,) = result.thinking
    return {
        "items": items,
        "top": top,
        "grid_top": profile.top,
        "p95": profile.quantile(0.95),
        "budgets": len(profile.budgets),
        "rows": result.rows,
        "wall_s": wall,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cache_mb": cache / 2**20,
        "requests": result.requests,
    }


def _slope(x: list[float], y: list[float]) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small preset (minutes)")
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument(
        "--concurrency", action="store_true", help="throughput against concurrency only"
    )
    args = parser.parse_args()
    if args.concurrency:
        throughput("quick" if args.quick else "full")
        return
    if args.one:
        items, top, url, home = args.one
        print(json.dumps(one(int(items), int(top), url, home)))
        return
    from cotplan.loopback import LoopbackReasoner

    preset = PRESETS["quick" if args.quick else "full"]
    configs = {(n, preset["top_at"]) for n in preset["items"]}
    configs |= {(preset["items_at"], t) for t in preset["tops"]}
    results: list[dict[str, float]] = []
    began = time.perf_counter()
    print(f"preset {'quick' if args.quick else 'full'}; thinking log-normal, sigma {SPREAD}")
    header = (
        f"{'items':>6} {'top':>6} {'grid top':>8} {'budgets':>7} {'rows':>7} {'wall s':>7} "
        f"{'peak MB':>8} {'cache MB':>8} {'requests':>8} {'thinking/item':>13}"
    )
    print(header)
    for items, top in sorted(configs):
        median = top / math.exp(1.645 * SPREAD)
        with LoopbackReasoner(mean_thinking=median, spread=SPREAD) as server:
            home = tempfile.mkdtemp(prefix="calibration-scale-")
            done = subprocess.run(
                [sys.executable, __file__, "--one", str(items), str(top), server.base_url, home],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["thinking_per_item"] = server.stats.thinking_tokens / items
        results.append(row)
        print(
            f"{row['items']:>6} {row['top']:>6} {row['grid_top']:>8} {row['budgets']:>7} "
            f"{row['rows']:>7} {row['wall_s']:>7.1f} {row['peak_mb']:>8.1f} "
            f"{row['cache_mb']:>8.1f} {row['requests']:>8} {row['thinking_per_item']:>13.0f}"
        )
    by_items = [r for r in results if r["top"] == preset["top_at"]]
    by_top = [r for r in results if r["items"] == preset["items_at"]]
    print("growth exponents (slope of log metric on log size):")
    for name in ("wall_s", "peak_mb", "cache_mb", "requests"):
        e_items = _slope([r["items"] for r in by_items], [r[name] for r in by_items])
        e_top = _slope([r["top"] for r in by_top], [r[name] for r in by_top])
        print(f"  {name:>9}: items {e_items:+.2f}, top budget {e_top:+.2f}")
    print(f"finished in {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
