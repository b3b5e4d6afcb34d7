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
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.io.reports import reports_root

__all__ = ["reproduce_command", "run_in_subprocess"]

console = Console()
Opt = typer.Option


def run_in_subprocess(argv: list[str]) -> int:
    """Run ``cotplan ARGV`` as its own process (its output shown as it comes); its status."""
    # A process per step: each frees its model and memory when it ends, and a failure in one
    # cannot leave state behind in the next.
    return subprocess.call([sys.executable, "-m", "cotplan", *argv])


def _default_out(preset: str, backend: str) -> Path:
    # A fixed name (not the time-stamped one other commands use), so that rerunning the same
    # command finds its ledger and resumes.
    return reports_root() / f"reproduce-{preset}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', backend)}"


Preset = Annotated[str, Opt(help="'quick' (minutes) or 'full' (the docs' full grids).")]
Backend = Annotated[
    str,
    Opt(
        "--backend",
        "-b",
        help="Model of the experiment steps: 'local', 'local:NAME', 'openai:MODEL' or an "
        "exact reference (laplace, kt, ...). Lab steps use the lab's own models.",
    ),
]
BaseUrl = Annotated[
    str | None,
    Opt(
        "--base-url",
        help="Endpoint of the OpenAI-compatible server of -b openai:MODEL, passed to every "
        "experiment step.",
    ),
]
PromptLogprobs = Annotated[
    bool,
    Opt(
        "--prompt-logprobs",
        help="Every experiment step reads a sequence's positions from one request (vLLM's "
        "prompt_logprobs): martingale and entropy make one request per sequence, order and "
        "falck as many as without. Needs a vLLM server: -b openai:MODEL --base-url URL.",
    ),
]
Out = Annotated[
    Path | None,
    Opt(
        "--out",
        "-o",
        help="Report folder; the same folder resumes (default: reports/reproduce-PRESET-BACKEND).",
    ),
]
Seed = Annotated[int, Opt(help="Seed of every experiment.")]
Yes = Annotated[bool, Opt("--yes", "-y", help="Do not ask before paid requests.")]
DryRun = Annotated[bool, Opt("--dry-run", help="Print the plan and estimate only; start nothing.")]


def reproduce_command(
    *,
    preset: Preset = "quick",
    backend: Backend = "local",
    base_url: BaseUrl = None,
    prompt_logprobs: PromptLogprobs = False,
    out: Out = None,
    seed: Seed = 0,
    yes: Yes = False,
    dry_run: DryRun = False,
) -> None:
    """Run the documented reproduction: plan and estimate first, resumable, one report."""
    # Imported here: planning reads every experiment module (scipy), which no other command needs.
    from cotplan.research.render import render_plan
    from cotplan.research.reproduce_plan import plan_reproduction, run_plan

    plan = plan_reproduction(
        preset,
        backend,
        out or _default_out(preset, backend),
        seed=seed,
        base_url=base_url,
        prompt_logprobs=prompt_logprobs,
    )
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
