"""How long a planner fit takes, and how much of it the item bootstrap is.

`BudgetPlanner().fit` does three things whose cost grows with the data: the multi-start fits of
every law, the cross-validated choice between laws, and the item bootstrap (200 resamples by
default), whose refits start from every optimum the full-data fit found plus scout starts on
the resample. The bootstrap makes the intervals honest and is the slow part; this benchmark
prints what it costs on calibrations of every shape in `cotplan.planner.shapes.SHAPES`
(n = 4, 8, 16 on a 0..5n grid of 41 budgets, `--items` items a size), each fitted `--repeats`
times with no bootstrap and with the default 200 resamples, on one process.

Target: a default fit of 60 items a size takes at most 60 s (median over repeats) for every
shape on this 2-core machine; a user calibrating interactively should not wait longer. The
script exits non-zero when it is missed and writes its transcript to
benchmarks/results/planner_fit_time.txt.

    python benchmarks/planner_fit_time.py     # a few minutes on 2 cores
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _outcome import Outcome

from cotplan.planner import BudgetPlanner
from cotplan.planner.shapes import SHAPES

SIZES = (4, 8, 16)
TARGET_SECONDS = 60.0


def fit_seconds(shape_name: str, items: int, bootstrap: int, repeats: int) -> list[float]:
    shape = SHAPES[shape_name]
    times = []
    for seed in range(repeats):
        frame = shape.calibration(SIZES, items, seed)
        started = time.perf_counter()
        BudgetPlanner(n_bootstrap=bootstrap, random_state=seed).fit(frame)
        times.append(time.perf_counter() - started)
    return times


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=60, help="items a size")
    parser.add_argument("--repeats", type=int, default=3, help="calibrations per shape")
    args = parser.parse_args()
    print(
        f"sizes n = {', '.join(map(str, SIZES))}; {args.items} items a size; 41 budgets a "
        f"size; {args.repeats} calibrations per shape (seeds 0..{args.repeats - 1}); load "
        f"average at start {os.getloadavg()[0]:.2f}"
    )
    header = (
        f"{'shape':<14} {'no bootstrap (s)':>18} {'200 resamples (s)':>19} {'bootstrap share':>16}"
    )
    print(header)
    print("-" * len(header))
    slowest = 0.0
    for name in SHAPES:
        plain = statistics.median(fit_seconds(name, args.items, 0, args.repeats))
        full = statistics.median(fit_seconds(name, args.items, 200, args.repeats))
        slowest = max(slowest, full)
        share = 1 - plain / full if full > 0 else 0.0
        print(f"{name:<14} {plain:>18.2f} {full:>19.2f} {share:>15.0%}")
    print(
        f"(medians over {args.repeats} calibrations; load average at end {os.getloadavg()[0]:.2f})"
    )
    outcome.target(
        f"a default fit takes at most {TARGET_SECONDS:.0f} s for every shape",
        slowest <= TARGET_SECONDS,
        f"slowest median {slowest:.1f} s",
    )


if __name__ == "__main__":
    with Outcome("planner_fit_time") as outcome:
        main(outcome)
