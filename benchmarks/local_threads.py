"""How many llama.cpp threads the embedded model should use, idle and with the CPU contended.

For each thread count: 20 one-token `next_token_probs` requests and one 64-token generation.
`--busy N` starts N busy-looping processes first, as other work on a shared machine would.
This is why `LocalModel` leaves one core free by default.

    .venv/bin/python benchmarks/local_threads.py [--busy 1] [--threads 1,2] [--model thinking]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import time
from collections.abc import Iterator

from _outcome import Outcome
from rich.console import Console
from rich.table import Table

from cotplan.backends.local import LocalModel


def _burn() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """`count` busy-looping processes for the duration, as other work on a shared machine."""
    burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(count)]
    for burner in burners:
        burner.start()
    try:
        yield
    finally:
        for burner in burners:
            burner.terminate()


def measure(threads: int, model_name: str) -> tuple[float, float]:
    with LocalModel(model_name, threads=threads, parallel=1) as model:
        backend = model.backend(cache=None)
        backend.generate("warm up", max_tokens=2)
        started = time.perf_counter()
        for i in range(20):
            prompt = " ".join("01"[(i >> j) & 1] for j in range(12)) + " "
            backend.next_token_probs(prompt, ["0", "1"])
        probs_s = time.perf_counter() - started
        started = time.perf_counter()
        backend.generate("Write a story about a cat:", max_tokens=64)
        return probs_s, time.perf_counter() - started


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=0, help="busy processes to start first")
    parser.add_argument("--threads", default="1,2", help="thread counts to compare")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="e.g. thinking")
    args = parser.parse_args()
    outcome.note("no target: the table is the measurement behind LocalModel's default threads")
    with busy_processes(args.busy):
        table = Table(
            title=f"llama.cpp threads, {args.model}, {args.busy} busy process(es) alongside"
        )
        for column in ("threads", "20 next_token_probs (s)", "64-token generation (s)"):
            table.add_column(column, justify="right")
        for threads in (int(t) for t in args.threads.split(",")):
            probs_s, generate_s = measure(threads, args.model)
            table.add_row(str(threads), f"{probs_s:.2f}", f"{generate_s:.2f}")
        Console().print(table)


if __name__ == "__main__":
    with Outcome("local_threads") as outcome:
        main(outcome)
