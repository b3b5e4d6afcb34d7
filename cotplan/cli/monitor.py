"""`cotplan monitor LOG`: a shipped cap's call log against its plan, and the error alarm.

Every option is checked before the log is read; the work is `cotplan.production.monitor`.
Exit status 1 when the error alarm fires, so a scheduled job can act on it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from cotplan.cli.monitor_out import save_monitor_report
from cotplan.errors import InputError

if TYPE_CHECKING:
    from cotplan.production.monitor import SizeLine

__all__ = ["monitor", "register"]

_console = Console(highlight=False)


def _number(value: float, digits: int = 2) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def _money(value: float) -> str:
    return "–" if math.isnan(value) else f"${value:.6f}"


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
    out: Annotated[
        Path | None,
        typer.Option(help="Report folder: the tables by size and day, and report.html."),
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
    _print(report)
    if out is not None:
        save_monitor_report(report, out, model=saved.model if saved is not None else None)
    if report.alarm:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `cotplan monitor` to the top-level app."""
    app.command()(monitor)


def _print(report: object) -> None:
    from cotplan.production.monitor import MonitorReport

    assert isinstance(report, MonitorReport)
    if report.calls == 0:
        # A gateway just started has logged nothing yet: normal, so no error and no empty
        # tables that would read as a plan with no sizes.
        others = (
            f" of the plan's model ({report.other_models} for others)"
            if report.other_models
            else ""
        )
        _console.print(f"no calls logged yet{others} in {report.log}: nothing to compare")
        return
    under = f" ({report.exit_calls} under the certified exit)" if report.exit_calls else ""
    _console.print(f"{report.calls} calls in {report.log}{under}")
    fixed = [line for line in report.sizes if not line.exit_rule]
    if fixed:
        _print_fixed(fixed)
    exits = [line for line in report.sizes if line.exit_rule]
    if exits:
        _print_exits(exits)
    _console.print(
        f"spend {_money(report.spend_usd)} (projected {_money(report.projected_usd)}); "
        f"reasoning tokens {report.reasoning_tokens} (projected "
        f"{_number(report.projected_reasoning_tokens, 0)})"
    )
    for note in report.notes:
        _console.print(f"note: {note}")
    if report.test is not None:
        style = "bold red" if report.test.alarm else "green"
        _console.print(f"[{style}]{report.test.verdict}[/]")


def _wrong(line: SizeLine) -> str:
    return f"{line.label_errors}/{line.labelled}" if line.labelled else "–"


def _print_fixed(lines: list[SizeLine]) -> None:
    # Two narrow tables rather than one wide one: each fits an 80-column terminal.
    caps = Table(title="the cap, by size", box=box.SIMPLE_HEAD)
    spend = Table(title="spend per call, by size", box=box.SIMPLE_HEAD)
    for name in ("n", "cap", "basis", "calls", "bit", "calib.", "forced", "calib.", "wrong"):
        caps.add_column(name, justify="left" if name == "basis" else "right")
    for name in ("n", "cap", "reasoning", "calib.", "spend", "projected"):
        spend.add_column(name, justify="right")
    for line in lines:
        size = f"{line.size:g}"
        caps.add_row(
            size,
            str(line.cap),
            line.basis,
            str(line.calls),
            _number(line.cap_bitten),
            _number(line.predicted_bitten),
            _number(line.answer_forced),
            _number(line.predicted_forced),
            _wrong(line),
        )
        spend.add_row(
            size,
            str(line.cap),
            _number(line.reasoning_tokens, 1),
            _number(line.predicted_reasoning_tokens, 1),
            _money(line.cost_usd / line.calls),
            _money(line.projected_cost_usd / line.calls),
        )
    _console.print(caps)
    _console.print(spend)


def _print_exits(lines: list[SizeLine]) -> None:
    # "bit" is the share that ran to the ceiling, beside the exit replayed on the calibration,
    # never beside the fixed cap's bite rate (see cotplan.production.monitor).
    stops = Table(title="the certified exit: where it stopped, by size", box=box.SIMPLE_HEAD)
    spend = Table(title="the certified exit: spend per call, by size", box=box.SIMPLE_HEAD)
    for name in ("n", "ceiling", "calls", "rule", "ended", "at cap", "bit", "calib.", "wrong"):
        stops.add_column(name, justify="right")
    # Its replayed reasoning is the replayed stop k plus probe answers: no column for it.
    for name in ("n", "stop k", "calib.", "probes", "calib.", "share", "reasoning", "spend"):
        spend.add_column(name, justify="right")
    for line in lines:
        size = f"{line.size:g}"
        stops.add_row(
            size,
            str(line.cap),
            str(line.calls),
            str(line.by_rule),
            str(line.by_end),
            str(line.by_ceiling),
            _number(line.cap_bitten),
            _number(line.predicted_bitten),
            _wrong(line),
        )
        spend.add_row(
            size,
            _number(line.stop_k, 1),
            _number(line.predicted_stop_k, 1),
            _number(line.probe_tokens / line.calls, 1),
            _number(line.predicted_probe_tokens, 1),
            _number(line.probe_share),
            _number(line.reasoning_tokens, 1),
            _money(line.cost_usd / line.calls),
        )
    _console.print(stops)
    for size, rule in dict.fromkeys((f"{line.size:g}", line.exit_rule) for line in lines):
        _console.print(f"  rule at n = {size}: {rule}")
    _console.print(spend)
