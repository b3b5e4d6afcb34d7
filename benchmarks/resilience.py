"""Does a flaky endpoint change results? A calibration and a quick martingale run, clean and
through the fault proxy, on the embedded model.

The proxy (`cotplan.backends.testing.FaultProxy`, loopback only) injects 500s, 429s with
Retry-After, responses slower than the client's timeout, dropped connections and truncated JSON,
each at an equal share of `--rate`, seeded. For each workload this prints the fault rate, the
requests the run counted, the faults injected, the client's retries, the wall time against the clean
run, and whether the results matched the clean run exactly. The calibration is 8 items (count n = 3,
arithmetic n = 2) at budgets 0, 16, 32; the martingale run is the quick preset.

    .venv/bin/python benchmarks/resilience.py [--rate 0.2] [--seed 7] [--timeout 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _outcome import Outcome
from rich.console import Console
from rich.table import Table

from cotplan import calibrate
from cotplan.backends.local import LocalModel
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.testing import FaultProxy
from cotplan.research.experiments import MARTINGALE_QUICK, BackendPredictor, martingale_gap
from cotplan.tasks import make_tasks


def client(model: LocalModel, url: str, timeout: float) -> OpenAICompatibleBackend:
    """The embedded model's backend, sent to `url`, with no call cache."""
    return model.backend(cache=None, base_url=url, timeout=timeout, max_retries=10)


def run_calibration(backend: OpenAICompatibleBackend) -> tuple[Any, int]:
    items = make_tasks("count", n=3, count=4, seed=0) + make_tasks("arithmetic", n=2, count=4)
    result = calibrate(backend, items, [0, 16, 32], progress=False)
    frame = result.frame.drop(columns=["latency_s"])
    return frame, result.requests


def run_martingale(backend: OpenAICompatibleBackend) -> tuple[Any, int]:
    result = martingale_gap(BackendPredictor(backend), **MARTINGALE_QUICK)
    return (result.gap, result.excess, result.fit_log.as_dict()), result.run.requests


def same(a: Any, b: Any) -> bool:
    if hasattr(a, "equals"):
        return bool(a.equals(b))
    return all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(a, b, strict=True)
    )


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=2.0, help="client timeout (s)")
    args = parser.parse_args()
    os.environ.setdefault("COTPLAN_HOME", tempfile.mkdtemp(prefix="cotplan-bench-"))
    workloads: dict[str, Callable[[OpenAICompatibleBackend], tuple[Any, int]]] = {
        "calibration": run_calibration,
        "martingale": run_martingale,
    }
    table = Table(title=f"resilience at a {args.rate:.0%} fault rate (seed {args.seed})")
    columns = ("workload", "requests", "faults", "retries", "clean (s)", "faulty (s)", "matched")
    for column in columns:
        table.add_column(column, justify="left" if column == "workload" else "right")
    with LocalModel() as model:
        for name, workload in workloads.items():
            started = time.perf_counter()
            clean, _ = workload(client(model, model.base_url, args.timeout))
            clean_s = time.perf_counter() - started
            slow = args.timeout * 1.5
            with FaultProxy(model.base_url, rate=args.rate, seed=args.seed, slow_seconds=slow) as p:
                backend = client(model, p.base_url, args.timeout)
                started = time.perf_counter()
                faulty, requests = workload(backend)
                faulty_s = time.perf_counter() - started
            matched = same(clean, faulty)
            faults = sum(p.stats.faults.values())
            outcome.check(f"{name}: results through faults equal the clean run's", matched)
            outcome.check(f"{name}: faults were injected and every one retried",
                          0 < faults <= backend.stats.retries,
                          f"{faults} faults, {backend.stats.retries} retries")  # fmt: skip
            table.add_row(
                name,
                str(requests),
                str(faults),
                str(backend.stats.retries),
                f"{clean_s:.1f}",
                f"{faulty_s:.1f}",
                "yes" if matched else "NO",
            )
    Console().print(table)


if __name__ == "__main__":
    with Outcome("resilience") as outcome:
        main(outcome)
