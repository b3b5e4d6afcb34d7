"""cotplan's client overhead against the raw `openai` SDK, on the same embedded llama.cpp server.

Both clients send the same 1-token /v1/completions requests (with top-20 logprobs, as
`next_token_probs` does) to one server; rounds alternate between the two so that machine noise
hits both alike. Target: cotplan within 5% of the raw SDK.

    .venv/bin/python benchmarks/backend_overhead.py [--requests 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import openai
from _outcome import Outcome
from rich.console import Console
from rich.table import Table

from cotplan.backends.cache import CallCache
from cotplan.backends.local import LocalModel


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    prompts = [" ".join("01"[(i >> b) & 1] for b in range(12)) + " " for i in range(64)]

    with LocalModel(parallel=1) as server:
        backend = server.backend(cache=None)
        raw = openai.OpenAI(base_url=server.base_url, api_key="no-key-needed")

        def run_raw() -> float:
            started = time.perf_counter()
            for i in range(args.requests):
                response = raw.completions.create(
                    model=server.model_id,
                    prompt=prompts[i % len(prompts)],
                    max_tokens=1,
                    temperature=0.0,
                    logprobs=20,
                )
                response.model_dump()
            return time.perf_counter() - started

        def run_cotplan() -> float:
            started = time.perf_counter()
            for i in range(args.requests):
                backend.next_token_probs(prompts[i % len(prompts)], ["0", "1"])
            return time.perf_counter() - started

        run_raw(), run_cotplan()  # warm the server's prompt cache and both connection pools
        raw_times, cotplan_times = [], []
        for _ in range(args.rounds):
            raw_times.append(run_raw())
            cotplan_times.append(run_cotplan())

        # Replay from the call cache: what a rerun of a calibration costs.
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            cached = server.backend(cache=CallCache(Path(tmp) / "c.sqlite"))
            for p in prompts:
                cached.next_token_probs(p, ["0", "1"])
            started = time.perf_counter()
            for i in range(args.requests):
                cached.next_token_probs(prompts[i % len(prompts)], ["0", "1"])
            replay = time.perf_counter() - started

    raw_rps = args.requests / statistics.median(raw_times)
    cotplan_rps = args.requests / statistics.median(cotplan_times)
    overhead = raw_rps / cotplan_rps - 1.0
    table = Table(title=f"Backend overhead ({args.rounds} rounds x {args.requests} requests)")
    for column in ("client", "requests/s (median)", "ms/request", "vs raw SDK"):
        table.add_column(column, justify="right")
    table.add_row("raw openai SDK", f"{raw_rps:.1f}", f"{1000 / raw_rps:.2f}", "")
    table.add_row(
        "cotplan next_token_probs",
        f"{cotplan_rps:.1f}",
        f"{1000 / cotplan_rps:.2f}",
        f"{overhead:+.1%}",
    )
    table.add_row(
        "cotplan, call-cache replay",
        f"{args.requests / replay:.1f}",
        f"{1000 * replay / args.requests:.2f}",
        "",
    )
    Console().print(table)
    outcome.target("cotplan within 5% of the raw SDK", overhead <= 0.05, f"{overhead:+.1%}")


if __name__ == "__main__":
    with Outcome("backend_overhead") as outcome:
        main(outcome)
