"""`cotplan monitor LOG`: a shipped cap's call log against its plan, and the error alarm.

Every option is checked before the log is read; the work is `cotplan.production.monitor`.
Exit status 1 when the error alarm fires, so a scheduled job can act on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cotplan.errors import InputError
from cotplan.render.production import print_monitor

__all__ = ["monitor"]

_console = Console(highlight=False)


def _existing(path: Path | None, field: str) -> None:
    if path is not None and not path.is_file():
        raise InputError(f"no such file: {path}", field=field, source=str(path))


def monitor(
    *,
    log: Annotated[
        Path, typer.Argument(help="The call log (SQLite) the wrapper or gateway wrote.")
    ],
    labels: Annotated[
        Path | None,
        typer.Option(help="CSV of labelled calls: call_id (the reply's id), correct (1/0)."),
    ] = None,
    plan: Annotated[
        Path | None, typer.Option(help="The plan the calls applied (plan.json).")
    ] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="The plan's calibration CSV, if not where the plan records it."),
    ] = None,
    eps: Annotated[
        float | None, typer.Option(help="Target error for the labels (default: the plan's).")
    ] = None,
    delta: Annotated[
        float | None,
        typer.Option(help="False-alarm probability of the test (default: the plan's δ)."),
    ] = None,
    exit_plan: Annotated[
        Path | None,
        typer.Option(help="The exit plan the calls ran under (default: exit.json by the plan)."),
    ] = None,
) -> None:
    """Spend, cap bites and forced answers by size against the plan's calibration, and where
    the certified early exit stopped; with --labels, an anytime-valid test that the error still
    meets ε (alarm: exit status 1)."""
    from cotplan.planner import SavedPlan
    from cotplan.production.monitor import load_labels
    from cotplan.production.monitor import monitor as run_monitor
    from cotplan.production.sequential import error_test

    _existing(log, "log")
    _existing(calibration, "calibration")
    _existing(exit_plan, "exit_plan")
    if exit_plan is not None and plan is None:
        raise InputError("is replayed on the plan's calibration: give --plan", field="exit_plan")
    saved = SavedPlan.load(plan) if plan is not None else None
    if eps is not None or delta is not None:
        error_test([], 0.5 if eps is None else eps, 0.05 if delta is None else delta)
    if labels is not None and eps is None and saved is None:
        raise InputError("labels are tested against ε: give --plan or --eps", field="eps")
    marks = load_labels(labels) if labels is not None else None
    report = run_monitor(
        # The plan's path, not the loaded plan: its calibration is looked for beside it.
        log,
        plan=plan,
        labels=marks,
        calibration=calibration,
        eps=eps,
        delta=delta,
        exit_plan=exit_plan,
    )
    print_monitor(_console, report)
    if report.alarm:
        raise typer.Exit(1)
