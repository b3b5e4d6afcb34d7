"""`cotplan reproduce`: the documented reproduction in one command
(`cotplan.research.reproduce_plan`).

Prints the plan (every step's command line, its requests and its measured time) before
anything starts, asks before requests that may cost money, runs each step as its own
``cotplan`` process and writes one report with provenance. The same command with the same
`--out` resumes: finished steps are skipped.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.cli.options import opt, takes
from cotplan.io.reports import reports_root

__all__ = ["reproduce_command", "run_in_subprocess"]

console = Console()


def run_in_subprocess(argv: list[str]) -> int:
    """Run ``cotplan ARGV`` as its own process (its output shown as it comes); its status."""
    # A process per step: each frees its model and memory when it ends, and a failure in one
    # cannot leave state behind in the next.
    return subprocess.call([sys.executable, "-m", "cotplan", *argv])


def _default_out(preset: str, backend: str) -> Path:
    # A fixed name (not the time-stamped one other commands use), so that rerunning the same
    # command finds its ledger and resumes.
    return reports_root() / f"reproduce-{preset}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', backend)}"


# fmt: off
REPRODUCE = {
    "preset": opt(str, "quick", "'quick' (minutes) or 'full' (the docs' full grids)."),
    "backend": opt(str, "local", "Model of the experiment steps: 'local', 'local:NAME', "
                   "'openai:MODEL' or an exact reference (laplace, kt, ...). Lab steps use the "
                   "lab's own models.", "--backend", "-b"),
    "base_url": opt(str | None, None, "Endpoint of the OpenAI-compatible server of -b "
                    "openai:MODEL, passed to every experiment step.", "--base-url"),
    "prompt_logprobs": opt(bool, False, "Every experiment step reads a sequence's positions from "
                           "one request (vLLM's prompt_logprobs): martingale and entropy make "
                           "one request per sequence, order and falck as many as without. Needs "
                           "a vLLM server: -b openai:MODEL --base-url URL.", "--prompt-logprobs"),
    "out": opt(Path | None, None, "Report folder; the same folder resumes (default: "
               "reports/reproduce-PRESET-BACKEND).", "--out", "-o"),
    "seed": opt(int, 0, "Seed of every experiment."),
    "yes": opt(bool, False, "Do not ask before paid requests.", "--yes", "-y"),
    "dry_run": opt(bool, False, "Print the plan and estimate only; start nothing.", "--dry-run"),
}
# fmt: on


@takes(REPRODUCE)
def reproduce_command(
    *, preset: str, backend: str, out: Path | None, yes: bool, dry_run: bool, **options: Any
) -> None:
    """Run the documented reproduction: plan and estimate first, resumable, one report."""
    # Imported here: planning reads every experiment module (scipy), which no other command needs.
    from cotplan.research.render import render_plan
    from cotplan.research.reproduce_plan import plan_reproduction, run_plan

    plan = plan_reproduction(preset, backend, out or _default_out(preset, backend), **options)
    render_plan(plan, console)
    if dry_run:
        console.print("dry run: nothing started, no requests sent")
        return
    if plan.paid and plan.pending() and not yes:
        question = f"{escape(backend)} may charge for these requests. Start?"
        if not typer.confirm(question, default=False):
            console.print("not started: no requests sent")
            raise typer.Exit(1)
    written = run_plan(plan, run_in_subprocess, echo=lambda line: console.rule(escape(line)))
    console.print("report: " + ", ".join(escape(str(p)) for p in written))
