"""`cotplan monitor LOG`: a shipped cap's call log against its plan, and the error alarm.

Every option is checked before the log is read; the work is `cotplan.production.monitor`, the
report folder's files `cotplan.production.monitor_files`'. Exit status 1 when the error alarm
fires, so a scheduled job can act on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from cotplan.cli.options import REQUIRED, arg, opt, takes
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.render.production import print_monitor

__all__ = ["monitor"]

_console = Console(highlight=False)
_P = Path | None

# fmt: off
MONITOR_FILES = {
    "log": arg(Path, REQUIRED, "The call log (SQLite) the wrapper or gateway wrote."),
    "labels": opt(_P, None, "CSV of labelled calls: call_id (the reply's id), correct (1/0)."),
    "plan": opt(_P, None, "The plan the calls applied (plan.json)."),
    "calibration": opt(_P, None, "The plan's calibration CSV, if not where the plan records it."),
    "eps": opt(float | None, None, "Target error for the labels (default: the plan's)."),
    "delta": opt(float | None, None, "False-alarm probability of the test (default: the plan's "
                 "δ)."),
    "exit_plan": opt(_P, None, "The exit plan the calls ran under (default: exit.json by the "
                     "plan)."),
    "out": opt(_P, None, "Report folder: the tables by size and day, and report.html."),
}
# fmt: on


@takes(MONITOR_FILES)
def monitor(*, out: Path | None, **options: Any) -> None:
    """Spend, cap bites and forced answers by size against the plan's calibration, and where
    the certified early exit stopped; with --labels, an anytime-valid test that the error still
    meets ε (alarm: exit status 1)."""
    from cotplan.production.monitor import monitor_files
    from cotplan.production.monitor_files import write_monitor_files

    report, model = monitor_files(**options)
    print_monitor(_console, report)
    if out is not None:
        with start_report(out, kind="monitor", command="monitor") as staged:
            write_monitor_files(report, staged.path, model=model)
            folder = finish_report(staged)
        add_report_page(folder, command="monitor")
    if report.alarm:
        raise typer.Exit(1)
