"""Time a one-year spend projection with 10^6 Monte Carlo draws on one CPU core.

The projection is `project_costs` on a growing workload (12 months), lognormal token
distributions with estimation uncertainty, cache hits, cache writes and a batch share, for a
model of each price source: cotplan's own row (gpt-6.2-sol) and genai-prices' bundled data
(gpt-4o-mini at OpenAI). Threads are limited to one and the process is pinned to one core
before numpy loads. One small warm-up run comes first (imports, first-call allocations); then
each repeat is timed, in CPU seconds of this process (the work done on its one core, which
other jobs on a shared machine do not inflate) and in wall seconds. Target: a median under 1
CPU second for every model; the load average is printed beside the wall times. A check inside: the
projected cost per call equals the float of `call_cost` on the mean tokens within 1%.

Exits 1 when a model misses the target or the check fails. The transcript is written to
benchmarks/results/cost_projection.txt (``cost_projection_<arguments>.txt`` when run with
arguments; ``--no-save`` to skip), with the command, date and load average on top.

    .venv/bin/python benchmarks/cost_projection.py [--draws 1000000] [--repeats 5]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import argparse  # noqa: E402  (the thread limits above must be set before numpy is imported)
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import date  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from _outcome import Outcome  # noqa: E402

from cotplan.pricing import (  # noqa: E402
    ParametricTokens,
    Workload,
    call_cost,
    price_table,
    project_costs,
)

TARGET_S = 1.0
MODELS = ("gpt-6.2-sol", "openai/gpt-4o-mini")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--draws", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", action="append", help="model to time (repeatable)")
    parser.add_argument("--no-save", action="store_true", help="do not write the transcript")
    args = parser.parse_args()
    transcript = Path(os.devnull) if args.no_save else None
    with Outcome("cost_projection", transcript=transcript) as outcome:
        run_models(args, outcome)
    return 0


def run_models(args: argparse.Namespace, outcome: Outcome) -> None:
    table = price_table()
    today = date(2026, 11, 29)
    workload = Workload(queries_per_day=10_000, growth_rate=0.03, start=date(2027, 1, 1))
    tokens = ParametricTokens(1_500, 600, 300, 150, 2_000, 1_500, n_observed=200)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"cotplan cost projection benchmark: {args.draws:,} draws, 12 months, {cores} core, "
          f"prices of {today}, {platform.python_version()}, numpy {np.__version__}")  # fmt: skip
    for model in args.model or MODELS:

        def run(draws: int, model: str = model) -> tuple[float, float, Any]:
            cpu, wall = time.process_time(), time.perf_counter()
            projection = project_costs(
                model, workload, tokens, cache_hit_rate=0.2, cache_write_rate=0.05,
                batch_share=0.3, draws=draws, seed=0, table=table, today=today,
            )  # fmt: skip
            return time.process_time() - cpu, time.perf_counter() - wall, projection

        run(10_000)
        times, walls = [], []
        for i in range(args.repeats):
            elapsed, wall, projection = run(args.draws)
            times.append(elapsed)
            walls.append(wall)
            print(f"  {model} run {i + 1}: {elapsed:.3f} CPU s, {wall:.3f} wall s "
                  f"(annual P50 ${float(projection.frame.iloc[-1]['p50_usd']):,.0f})")  # fmt: skip
        median = statistics.median(times)
        # The check: the mean cost per call matches call_cost on the mean tokens, give or take
        # the nonlinearity of the long-context rule and the lognormal sampling (within 1%).
        a = projection.assumptions
        prompt = round(a["mean_prompt_tokens_per_call"])
        exact = call_cost(
            model, prompt_tokens=prompt, cached_tokens=round(0.2 * prompt),
            cache_write_tokens=round(0.05 * prompt),
            completion_tokens=round(a["mean_answer_tokens_per_call"])
            + round(a["mean_reasoning_tokens_per_call"]),
            reasoning_tokens=round(a["mean_reasoning_tokens_per_call"]), on=today, table=table,
        )  # fmt: skip
        expected = float(exact.usd) * (
            1 - 0.3 * float(table.lookup(model, on=today).batch_discount)
        )
        check = abs(a["usd_per_call"] / expected - 1) < 0.01
        met = median < TARGET_S
        print(f"{args.draws:,}-draw one-year projection ({model}, price: {a['price_source']}) on "
              f"{cores} core: median {median:.3f} CPU s, best {min(times):.3f} CPU s over "
              f"{args.repeats} runs (median {statistics.median(walls):.3f} wall s, load average "
              f"{os.getloadavg()[0]:.1f}); target < {TARGET_S:.0f} s: "
              f"{'met' if met else 'MISSED'}; cost per call "
              f"${a['usd_per_call']:.6f} vs call_cost on the mean tokens ${expected:.6f}: "
              f"{'ok' if check else 'FAILED'}")  # fmt: skip
        outcome.target(f"{model}: median under {TARGET_S:.0f} CPU s", met, f"{median:.3f} CPU s")
        outcome.check(
            f"{model}: cost per call equals call_cost on the mean tokens within 1%",
            check,
            f"${a['usd_per_call']:.6f} vs ${expected:.6f}",
        )


if __name__ == "__main__":
    sys.exit(main())
