"""One llama.cpp process or one per core: the embedded model's calibration time, and its answers.

Calibrates the demo's family (count, n = 3 and 6) on the thinking model with `--replicas`
processes of one thread each, the call cache off, and checks that every count gives the same
calibration, answer for answer and token for token: each answer is a function of its prompt
alone (micro-batch 1), so the count changes the time only. `--busy N` starts N busy-looping
processes first, as other work on a shared machine would. This is the measurement behind
`LocalModel`'s default replicas.

    .venv/bin/python benchmarks/local_replicas.py [--replicas 1,2] [--items 8] [--busy 1]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
from _outcome import Outcome
from local_threads import busy_processes
from rich.console import Console
from rich.table import Table

from cotplan.backends.local import LocalModel
from cotplan.planner.calibrate import calibrate
from cotplan.tasks.families import make_tasks

BUDGETS = [0, 16, 32, 64, 128]
COMPARED = ["item", "k", "extracted", "correct", "reasoning_tokens", "answer_tokens", "answer_prob"]


def measure(replicas: int, items_per_size: int) -> tuple[float, pd.DataFrame]:
    items = [
        item for n in (3, 6) for item in make_tasks("count", n=n, count=items_per_size, seed=7)
    ]
    with LocalModel("thinking", threads=1, replicas=replicas) as model:
        backend = model.backend(cache=None)
        backend.generate("warm up", max_tokens=2)
        started = time.perf_counter()
        calibration = calibrate(backend, items, BUDGETS, progress=False)
        seconds = time.perf_counter() - started
    frame = calibration.frame[COMPARED].sort_values(["item", "k"])
    return seconds, frame.reset_index(drop=True)


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", default="1,2", help="process counts to compare")
    parser.add_argument("--items", type=int, default=8, help="items per size (n = 3 and 6)")
    parser.add_argument("--busy", type=int, default=0, help="busy processes to start first")
    args = parser.parse_args()
    counts = [int(r) for r in args.replicas.split(",")]
    with busy_processes(args.busy):
        table = Table(
            title=f"thinking model, count n = 3 and 6, {2 * args.items} items x "
            f"{len(BUDGETS)} budgets, {args.busy} busy process(es) alongside"
        )
        for column in ("replicas (1 thread each)", "calibration (s)", "items / min"):
            table.add_column(column, justify="right")
        frames = []
        for replicas in counts:
            seconds, frame = measure(replicas, args.items)
            frames.append(frame)
            table.add_row(str(replicas), f"{seconds:.1f}", f"{60 * 2 * args.items / seconds:.1f}")
        Console().print(table)
    same = all(frame.equals(frames[0]) for frame in frames[1:])
    outcome.check("every replica count gives the same calibration, token for token", same)


if __name__ == "__main__":
    with Outcome("local_replicas") as outcome:
        main(outcome)
