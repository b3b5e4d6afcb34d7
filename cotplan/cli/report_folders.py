"""The CLI's side of report folders: start one (`cotplan.io.locked_reports`), finish it saying
what it replaced, and note a file about to be read that differs from its folder's manifest.
Every command that writes a report calls these.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.console import Console

from cotplan.io.locked_reports import start_locked_report as start_report
from cotplan.io.reports import ReportFolder, check_report_file

__all__ = ["check_read", "finish_report", "start_report"]

console = Console()


def finish_report(report: ReportFolder, *, last: Iterable[str] = ()) -> Path:
    """Move the report's files into place together; say which replaced an earlier run's."""
    committed = report.commit(last=last)
    if committed.replaced:
        console.print(
            f"[yellow]note:[/] replaced {', '.join(committed.replaced)} in {committed.folder} "
            "(written there by an earlier run)"
        )
    return committed.folder


def check_read(path: Path) -> None:
    """Say so when a file about to be read differs from its report folder's manifest."""
    note = check_report_file(path)
    if note:
        console.print(f"[yellow]note:[/] {note}")
