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
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args()
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
