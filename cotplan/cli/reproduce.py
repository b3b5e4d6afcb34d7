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
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cotplan.io.reports import reports_root
from cotplan.research.experiments import PROMPT_LOGPROBS_CHANGE_NOTHING

if TYPE_CHECKING:
    from cotplan.research.reproduce_plan import ReproductionPlan

__all__ = ["register", "reproduce_command", "run_in_subprocess"]

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


def _print_plan(plan: ReproductionPlan) -> None:
    table = Table(title=f"cotplan reproduce: preset {plan.preset}, backend {escape(plan.backend)}")
    columns = ("step", "state", "requests at most", "estimate")
    for column in columns:
        table.add_column(column, justify="right" if column != "step" else "left")
    rows = plan.rows()
    for row in rows:
        table.add_row(*(escape(row[c]) for c in columns))
    console.print(table)
    # Commands and sources on lines of their own: a table column would fold them unreadably.
    console.print("commands:", highlight=False)
    for row in rows:
        console.print(f"  {escape(row['step'])}: {escape(row['command'])}", highlight=False)
    console.print("estimates from:", highlight=False)
    for row in rows:
        console.print(f"  {escape(row['step'])}: {escape(row['from'])}", highlight=False)
    console.print(escape(plan.summary()), highlight=False)
    if plan.prompt_logprobs:
        unchanged = "; ".join(PROMPT_LOGPROBS_CHANGE_NOTHING.values())
        console.print(
            "--prompt-logprobs: martingale, debias and entropy read each sequence in one "
            f"request; the rest are unchanged ({escape(unchanged)})",
            highlight=False,
        )
    console.print(f"report folder: {escape(str(plan.out))}", highlight=False)


def reproduce_command(
    *,
    preset: Annotated[
        str, Opt(help="'quick' (minutes) or 'full' (the docs' full grids).")
    ] = "quick",
    backend: Annotated[
        str,
        Opt(
            "--backend",
            "-b",
            help="Model of the experiment steps: 'local', 'local:NAME', 'openai:MODEL' or an "
            "exact reference (laplace, kt, ...). Lab steps use the lab's own models.",
        ),
    ] = "local",
    base_url: Annotated[
        str | None,
        Opt(
            "--base-url",
            help="Endpoint of the OpenAI-compatible server of -b openai:MODEL, passed to every "
            "experiment step.",
        ),
    ] = None,
    prompt_logprobs: Annotated[
        bool,
        Opt(
            "--prompt-logprobs",
            help="Every experiment step reads a sequence's positions from one request (vLLM's "
            "prompt_logprobs): martingale and entropy make one request per sequence, order and "
            "falck as many as without. Needs a vLLM server: -b openai:MODEL --base-url URL.",
        ),
    ] = False,
    out: Annotated[
        Path | None,
        Opt(
            "--out",
            "-o",
            help="Report folder; the same folder resumes (default: "
            "reports/reproduce-PRESET-BACKEND).",
        ),
    ] = None,
    seed: Annotated[int, Opt(help="Seed of every experiment.")] = 0,
    yes: Annotated[bool, Opt("--yes", "-y", help="Do not ask before paid requests.")] = False,
    dry_run: Annotated[
        bool, Opt("--dry-run", help="Print the plan and estimate only; start nothing.")
    ] = False,
) -> None:
    """Run the documented reproduction: plan and estimate first, resumable, one report."""
    # Imported here: planning reads every experiment module (scipy), which no other command needs.
    from cotplan.research.reproduce_plan import plan_reproduction, run_plan

    plan = plan_reproduction(
        preset,
        backend,
        out or _default_out(preset, backend),
        seed=seed,
        base_url=base_url,
        prompt_logprobs=prompt_logprobs,
    )
    _print_plan(plan)
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


def register(app: typer.Typer) -> None:
    app.command("reproduce")(reproduce_command)
