"""How long cotplan takes to start: `import cotplan`, a command's help, and a bad option.

Every command pays this before it does anything, and so does every test that runs the command
line in a child process. The public names (`cotplan`, `cotplan.backends`,
`cotplan.research.experiments`) are imported on first use, so that starting cotplan imports neither
the OpenAI client nor scipy; this prints the median wall time of --repeats runs of each, in fresh
processes (the operating system's file cache warm after the first).

    .venv/bin/python benchmarks/cli_start.py [--repeats 7]

Target: a bad option answered within 2 s (median, on this 2-core machine).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

from _outcome import Outcome

STARTS = {
    "import cotplan": [sys.executable, "-c", "import cotplan"],
    "cotplan --help": [sys.executable, "-m", "cotplan", "--help"],
    "a bad option (tasks make --n -1)": [
        sys.executable,
        "-m",
        "cotplan",
        "tasks",
        "make",
        "count",
        "--n",
        "-1",
    ],
    "import cotplan, then BudgetPlanner (scipy)": [
        sys.executable,
        "-c",
        "import cotplan; cotplan.BudgetPlanner",
    ],
}


def median_seconds(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        # Outside the checkout, so that the installed cotplan (or PYTHONPATH's) is the one timed.
        subprocess.run(command, capture_output=True, check=False, cwd=tempfile.gettempdir())
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    medians = {}
    for label, command in STARTS.items():
        medians[label] = median_seconds(command, args.repeats)
        print(f"{label:45s} {medians[label]:6.2f} s (median of {args.repeats})")
    bad = medians["a bad option (tasks make --n -1)"]
    outcome.target("a bad option answered within 2 s", bad <= 2.0, f"{bad:.2f} s")


if __name__ == "__main__":
    with Outcome("cli_start") as outcome:
        main(outcome)
