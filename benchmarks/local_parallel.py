"""Is the embedded model reproducible, and what does it cost? Slots and prompt batching.

Settings: `LocalModel(parallel=1 or 2, reproducible=True or False)`. For each, the same small
calibration (8 items x budgets 0, 16, 32; greedy) runs `--runs` times on one server, alternating
the item order; the table counts the distinct results (answers, token counts and answer
probabilities to 12 digits) and times the runs, a short martingale run and one 400-word prompt.

Why: llama.cpp's logits depend on how the tokens were batched. With two slots, concurrent
requests share a batch; with the prompt cache, the split of a prompt depends on what the server
saw before. `reproducible=True` evaluates prompts one token at a time; one slot is the default.

    .venv/bin/python benchmarks/local_parallel.py [--runs 4]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from _outcome import Outcome
from rich.console import Console
from rich.table import Table

from cotplan import calibrate
from cotplan.backends.local import LocalModel
from cotplan.research.experiments import MARTINGALE_QUICK, BackendPredictor, martingale_gap
from cotplan.tasks import make_tasks

SETTINGS = ((1, True), (1, False), (2, False))
WORDS = ("apple", "river", "stone", "cloud", "green")


def measure(slots: int, reproducible: bool, runs: int) -> tuple[int, float, float, float]:
    items = make_tasks("count", n=3, count=4, seed=0) + make_tasks("arithmetic", n=2, count=4)
    results, seconds = set(), []
    with LocalModel(parallel=slots, reproducible=reproducible) as model:
        backend = model.backend(cache=None)
        for run in range(runs):
            ordered = items if run % 2 == 0 else items[::-1]
            started = time.perf_counter()
            frame = calibrate(backend, ordered, [0, 16, 32], progress=False).frame
            seconds.append(time.perf_counter() - started)
            frame = frame.sort_values(["item", "k"])
            results.add(
                tuple(frame["extracted"].astype(str))
                + tuple(frame["reasoning_tokens"])
                + tuple(frame["answer_prob"].round(12))
            )
        started = time.perf_counter()
        martingale_gap(BackendPredictor(backend), **{**MARTINGALE_QUICK, "n_sequences": 5})
        martingale_s = time.perf_counter() - started
        long_prompt = " ".join(WORDS[(i * 7 + i // 3) % 5] for i in range(400))
        started = time.perf_counter()
        backend.generate(long_prompt, max_tokens=1)
        prompt_s = time.perf_counter() - started
    return len(results), sum(seconds) / len(seconds), martingale_s, prompt_s


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("COTPLAN_HOME", tempfile.mkdtemp(prefix="cotplan-bench-"))
    table = Table(title=f"embedded model reproducibility ({os.cpu_count()} cores)")
    columns = ("slots", "reproducible", "distinct results", "calibration (mean s)")
    for column in (*columns, "martingale (s)", "400-word prompt (s)"):
        table.add_column(column, justify="right")
    for slots, reproducible in SETTINGS:
        distinct, calibration_s, martingale_s, prompt_s = measure(slots, reproducible, args.runs)
        if (slots, reproducible) == (1, True):  # LocalModel's default: its docstring's promise
            outcome.check("the default (1 slot, reproducible) gives one result every run",
                          distinct == 1, f"{distinct} distinct of {args.runs}")  # fmt: skip
        table.add_row(
            str(slots),
            str(reproducible),
            f"{distinct} of {args.runs}",
            f"{calibration_s:.1f}",
            f"{martingale_s:.1f}",
            f"{prompt_s:.2f}",
        )
    Console().print(table)


if __name__ == "__main__":
    with Outcome("local_parallel") as outcome:
        main(outcome)
