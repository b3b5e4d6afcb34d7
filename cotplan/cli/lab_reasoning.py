"""`cotplan kstar-lab ...`: train the lab reasoning models and test the k* law on them.

- ``cotplan kstar-lab train FAMILY``: train (or load) a lab family's model and print what
  training measured.
- ``cotplan kstar-lab study [FAMILY ...]``: the study of `cotplan.lab.reasoning.study` per
  family: the error grid, the planner's constants, which law holds, the oracle per-item budget
  and the held-out policies; tables and charts go into a report folder.

Register with ``lab_reasoning.register(app)`` (adds the ``kstar-lab`` group).
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["app", "print_study", "register"]

console = Console()

app = typer.Typer(
    help="Lab reasoning models: train them, and test the k* law where the mechanism is known.",
    no_args_is_help=True,
)

Preset = Annotated[str, typer.Option(help="Preset: tiny, quick or standard.")]
Threads = Annotated[int, typer.Option(help="torch threads (1 on a shared machine).")]


def _frame_table(frame: pd.DataFrame, title: str, digits: int = 2) -> Table:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for row in frame.itertuples(index=False):
        table.add_row(*(escape(_cell(v, digits)) for v in row))
    return table


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if math.isinf(value):
            return "∞"
        if abs(value) < 1e-9:
            return "0"  # rounding noise of a fit (9.9e-16) reads as a number otherwise
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        if abs(value) < 10**-digits:
            return f"{value:.2g}"
        return f"{value:.{digits}f}"
    return str(value)


def _set_threads(threads: int) -> None:
    from cotplan.lab._torch import require_torch

    require_torch().set_num_threads(max(1, threads))


def print_study(study: Any) -> None:
    """Print one `LabStudy` the way `cotplan kstar-lab study` does."""
    meta = study.train_meta
    console.rule(f"[bold]{study.family}[/] ({study.model})")
    console.print(
        f"trained in {meta.get('train_seconds', '?')} s ({meta.get('parameters', '?')} "
        f"parameters); greedy accuracy with the full trace {meta.get('accuracy_full_trace')}, "
        f"without reasoning {meta.get('accuracy_no_reasoning')}"
    )
    grid = study.to_frame()
    picks = []
    for n, group in grid.groupby("n"):
        full = 3 * int(n)
        wanted = [0, full // 4, full // 2, 3 * full // 4, full - 1, full, full + 3]
        for k in sorted(set(wanted)):
            row = group[group["k"] == k]
            if len(row):
                picks.append(row.iloc[0])
    summary = pd.DataFrame(picks)[
        ["n", "k", "answers", "error", "low", "high", "blind", "fitted"]
    ].astype({"n": int, "k": int, "answers": int})
    console.print(_frame_table(summary, "Error by size and budget (excerpt; low/high: Wilson 95%)"))
    console.print(escape(study.verdict))
    console.print(_frame_table(study.constants_frame(), "Planner constants (95% item bootstrap)"))
    console.print(_frame_table(study.laws, "The curve with α free, 1/2 and 1 (likelihood)"))
    law = study.law_frame()
    console.print(_frame_table(law, "k*(n, ε): observed, planned, full trace, √n law"))
    console.print(_frame_table(study.exponents, "n-exponent β of the observed k* per ε"))
    console.print(_frame_table(study.oracle_summary(), "Oracle per-item budget (calibration)", 1))
    console.print(_frame_table(study.plan.drop(columns=["note"]), "Planned caps", 2))
    columns = [
        "policy", "items", "accuracy", "accuracy_low", "accuracy_high", "reasoning_tokens",
        "tokens_saved", "tokens_saved_low", "tokens_saved_high",
    ]  # fmt: skip
    console.print(
        _frame_table(study.heldout[columns], "Held-out items (paired bootstrap vs uncapped)")
    )
    console.print(f"[bold]law:[/] {escape(study.law)}")


@app.command("train")
def train_command(
    family: Annotated[str, typer.Argument(help="parity, sum, state or bits.")],
    preset: Preset = "standard",
    retrain: Annotated[bool, typer.Option(help="Train again even if saved.")] = False,
    threads: Threads = 1,
) -> None:
    """Train a lab family's model (or load it from the user folder) and print its checks."""
    from cotplan.lab.reasoning.train import load_or_train

    _set_threads(threads)
    started = time.perf_counter()

    def progress(step: int, loss: float) -> None:
        if step % 500 == 0:
            console.print(f"step {step}: loss {loss:.4f}")

    model = load_or_train(family, preset, retrain=retrain, progress=progress)
    console.print(f"{model.family} ({model.key[:12]}): {model.meta}")
    console.print(f"finished in {time.perf_counter() - started:.0f} s")


@app.command("study")
def study_command(
    families: Annotated[
        list[str] | None, typer.Argument(help="Families (default: all four).")
    ] = None,
    preset: Preset = "standard",
    out: Annotated[Path | None, typer.Option(help="Report folder.")] = None,
    threads: Threads = 1,
    charts: Annotated[bool, typer.Option(help="Save PNG charts.")] = True,
) -> None:
    """Test k* = Θ(√n·log(1/ε)) on lab models: grid, constants, law, oracle, held-out."""
    from cotplan.lab.reasoning.study import reasoning_study, study_report_rows
    from cotplan.lab.reasoning.tasks import get_lab_family, lab_families

    _set_threads(threads)
    names = [get_lab_family(f).name for f in (families or list(lab_families))]
    folder = out or Path("reports") / f"kstar-lab-{datetime.now():%Y%m%d-%H%M%S}"
    started = time.perf_counter()
    studies = []
    for name in names:
        study = reasoning_study(name, preset)
        studies.append(study)
        print_study(study)
        study.save(folder / name, charts=charts)
        console.print(f"{name}: {study.seconds:.0f} s")
    rows = pd.DataFrame([r.as_dict() for r in study_report_rows(studies)])
    console.rule("reproduction report rows")
    console.print(
        _frame_table(rows[["claim", "measured", "interval", "verdict"]], "k* on lab models")
    )
    rows.to_csv(folder / "report.csv", index=False)
    console.print(f"wrote {folder}; finished in {time.perf_counter() - started:.0f} s")


def register(parent: typer.Typer) -> None:
    """Add the ``kstar-lab`` command group to the main app."""
    parent.add_typer(app, name="kstar-lab")


if __name__ == "__main__":  # `python -m cotplan.cli.lab_reasoning study ...` before registration
    app()
