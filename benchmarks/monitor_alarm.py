"""How the monitor's error alarm behaves: false alarms at ε, and labels to catch a drift.

`cotplan monitor --labels` tests "error ≤ ε" with a confidence sequence
(`cotplan.production.sequential`), read after every label. This simulates streams of labels
whose true error is a multiple of ε, each run an independent seeded stream of --labels labels,
and prints per error rate: the share of runs whose alarm fired at any label (at ε and below it
must be at most δ, however long the stream), and, among runs that alarmed, the median and the
90th percentile of the label at which it first fired.

    .venv/bin/python benchmarks/monitor_alarm.py                       # ε = 0.1, δ = 0.05
    .venv/bin/python benchmarks/monitor_alarm.py --eps 0.05 --labels 4000

Transcript: benchmarks/results/monitor_alarm.txt (the drift figure tests/test_production_monitor.py
states comes from it).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cotplan.production.sequential import prior_for, simulate_alarms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--labels", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.monotonic()
    a, b = prior_for(args.eps)
    print(
        f"ε = {args.eps:g}, δ = {args.delta:g}, {args.runs} runs of {args.labels} labels, "
        f"mixture prior Beta({a:g}, {b:g}), seeds {args.seed}..{args.seed + 4}"
    )
    print(f"{'error':>8} {'× ε':>5} {'alarmed':>8} {'median label':>13} {'90% by label':>13}")
    for i, factor in enumerate((0.5, 1.0, 1.5, 2.0, 3.0)):
        error = factor * args.eps
        first = simulate_alarms(
            error, args.eps, delta=args.delta, runs=args.runs, labels=args.labels,
            seed=args.seed + i,
        )  # fmt: skip
        fired = first[first > 0]
        share = fired.size / args.runs
        median = f"{np.median(fired):.0f}" if fired.size else "–"
        # The 90th percentile over ALL runs (a run that never fired counts as never): the label
        # by which 90% of streams had alarmed, when that many did.
        ninety = "–"
        if share >= 0.9:
            ninety = f"{np.percentile(np.where(first > 0, first, args.labels + 1), 90):.0f}"
        print(f"{error:8.3f} {factor:5.1f} {share:8.3f} {median:>13} {ninety:>13}")
    print(f"finished in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
