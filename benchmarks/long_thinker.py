"""The long-thinking embedded model, measured: accuracy, how long it thinks, how it over-thinks.

`local:thinking-long` is SmolLM2-135M plus a second shipped adapter trained on traces of
hundreds to thousands of tokens (`cotplan models train-thinking --preset long`). For each family
and size below, held-out items (seed 7, outside the training seeds) are answered uncapped
(greedy, budgeted CoT with the `think` protocol and a budget above any trace it was taught).
The script prints per family and size: accuracy with its Wilson 95% interval; the median and
90th percentile of thinking tokens; the mean tokens the answer needed (the reference trace up
to where its answer stops changing, counted by the model's tokenizer); and their ratio. Then
the same over all items, judged against issue 41's goals:

- uncapped accuracy at least 0.8;
- median thinking at least 400 tokens and 90th percentile at least 1,000;
- thinking at least twice the tokens the answer needs.

    .venv/bin/python benchmarks/long_thinker.py --count 6        # about 15 minutes on 2 cores
    .venv/bin/python benchmarks/long_thinker.py --count 2        # a smoke run
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _outcome import Outcome

from cotplan.backends import connect
from cotplan.generate import budgeted_answer
from cotplan.planner.run import wilson_interval
from cotplan.tasks import make_tasks
from cotplan.tasks.item import TaskItem
from cotplan.thinking.traces import work_lines

#: Families and sizes: the long thinker's training ranges, at their ends and middle.
SIZES = {
    "count": (10, 40, 80),
    "find": (10, 40, 80),
    "addition": (10, 40),
    "parity": (10, 60),
}
#: Above the longest trace the model was taught (about 2,500 tokens).
UNCAPPED = 4096


def needed_text(item: TaskItem) -> str:
    """The reference thinking up to the step after which the answer no longer changes."""
    work = work_lines(item)
    final, step = work.states[-1], len(work.states) - 1
    while step > 0 and work.states[step - 1] == final:
        step -= 1
    return "\n".join([work.heading, *work.steps[:step]])


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--backend", default="local:thinking-long")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--count", type=int, default=6, help="items per family and size")
    parser.add_argument("--families", nargs="*", default=list(SIZES))
    args = parser.parse_args()
    started = time.perf_counter()
    spent_all: list[int] = []
    needed_all: list[int] = []
    right_all = 0
    with connect(args.backend, base_url=args.base_url) as backend:
        print(f"long thinker: {backend.model}; uncapped = {UNCAPPED} tokens; greedy")
        header = (
            f"{'family':<9} {'n':>3} {'items':>5} {'accuracy [Wilson 95%]':<22}"
            f"{'median':>7} {'p90':>6} {'needed':>7} {'ratio':>6}"
        )
        print(header)
        print("-" * len(header))
        for family in args.families:
            for n in SIZES[family]:
                items = make_tasks(family, n=n, count=args.count, seed=7)
                answers = backend.map(lambda it: budgeted_answer(backend, it, UNCAPPED), items)
                spent = [int(a.reasoning_tokens or 0) for a in answers]
                needed = [backend.count_tokens(needed_text(it)) for it in items]
                right = sum(a.correct for a in answers)
                spent_all += spent
                needed_all += needed
                right_all += right
                interval = wilson_interval(right, len(answers))
                print(
                    f"{family:<9} {n:>3} {len(answers):>5} {right / len(answers):.2f} "
                    f"[{interval.low:.2f}, {interval.high:.2f}]{'':<8}"
                    f"{np.median(spent):>7.0f} {np.percentile(spent, 90):>6.0f} "
                    f"{np.mean(needed):>7.1f} {np.mean(spent) / np.mean(needed):>6.2f}"
                )
    total = len(spent_all)
    accuracy = right_all / total
    interval = wilson_interval(right_all, total)
    median, p90 = float(np.median(spent_all)), float(np.percentile(spent_all, 90))
    ratio = float(np.mean(spent_all) / np.mean(needed_all))
    print(
        f"all {total} items: accuracy {accuracy:.2f} [{interval.low:.2f}, {interval.high:.2f}], "
        f"thinking median {median:.0f}, p90 {p90:.0f}, {ratio:.2f} x what the answer needs"
    )
    outcome.target(
        "uncapped accuracy at least 0.8",
        accuracy >= 0.8,
        f"{accuracy:.2f} [{interval.low:.2f}, {interval.high:.2f}] on {total} items",
    )
    outcome.target("median thinking at least 400 tokens", median >= 400, f"{median:.0f}")
    outcome.target("90th percentile of thinking at least 1,000 tokens", p90 >= 1000, f"{p90:.0f}")
    outcome.target("thinking at least twice what the answer needs", ratio >= 2.0, f"{ratio:.2f}")
    print(f"finished in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    with Outcome("long_thinker") as outcome:
        main(outcome)
