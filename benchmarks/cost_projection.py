"""Time a one-year spend projection with 10^6 Monte Carlo draws on one CPU core.

The projection is `project_costs` on a growing workload (12 months), lognormal token
distributions with estimation uncertainty, cache hits and a batch share. Threads are limited to
one and the process is pinned to one core before numpy loads. One small warm-up run comes
first (imports, first-call allocations); then each repeat is timed. Target: under 1 second.

    .venv/bin/python benchmarks/cost_projection.py [--draws 1000000] [--repeats 5]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import argparse  # noqa: E402  (the thread limits above must be set before numpy is imported)
import statistics  # noqa: E402
import time  # noqa: E402
from datetime import date  # noqa: E402

from cotplan.pricing import ParametricTokens, Workload, price_table, project_costs  # noqa: E402

TARGET_S = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--draws", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default="gpt-6.2-sol")
    args = parser.parse_args()

    table = price_table()
    workload = Workload(queries_per_day=10_000, growth_rate=0.03, start=date(2027, 1, 1))
    tokens = ParametricTokens(1_500, 600, 300, 150, 2_000, 1_500, n_observed=200)

    def run(draws: int) -> tuple[float, float]:
        started = time.perf_counter()
        projection = project_costs(
            args.model, workload, tokens, cache_hit_rate=0.2, batch_share=0.3, draws=draws,
            seed=0, table=table, today=date(2026, 11, 29),
        )  # fmt: skip
        elapsed = time.perf_counter() - started
        return elapsed, float(projection.frame.iloc[-1]["p50_usd"])

    run(10_000)
    times = []
    for i in range(args.repeats):
        elapsed, p50 = run(args.draws)
        times.append(elapsed)
        print(f"run {i + 1}: {elapsed:.3f} s (annual P50 ${p50:,.0f})")
    median = statistics.median(times)
    verdict = "met" if median < TARGET_S else "MISSED"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(
        f"{args.draws:,}-draw one-year projection ({args.model}, 12 months) on {cores} core: "
        f"median {median:.3f} s, best {min(times):.3f} s over {args.repeats} runs; "
        f"target < {TARGET_S:.0f} s: {verdict}"
    )


if __name__ == "__main__":
    main()
