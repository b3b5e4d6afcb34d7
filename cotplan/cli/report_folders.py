"""The CLI's side of report folders: start one, finish it saying what it replaced, and note a
file about to be read that differs from its folder's manifest. The work is
`cotplan.io.reports.ReportFolder`'s; every command that writes a report calls these.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from rich.console import Console

from cotplan.io.folder_lock import lock_folder, remove_leftovers, unlock_folder
from cotplan.io.reports import Committed, ReportFolder, check_report_file

__all__ = ["check_read", "finish_report", "start_report"]

console = Console()


@dataclass
class _LockedReport(ReportFolder):
    """A report folder this run holds the lock of (`cotplan.io.folder_lock`) until it is
    committed or discarded."""

    lock: int = -1

    def discard(self) -> None:
        try:
            super().discard()
        finally:
            self._unlock()

    def commit(self, *, last: Iterable[str] = ()) -> Committed:
        try:
            return super().commit(last=last)
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self.lock >= 0:
            unlock_folder(self.target, self.lock)
            self.lock = -1


def start_report(
    out: Path | None, default: Path | None = None, *, kind: str = "", command: str = ""
) -> ReportFolder:
    """The report folder a command writes into, named now (`out`, else `default`, else a new
    folder under `reports/`); write into its `.path`, then `finish_report` (`cotplan.io.reports`).

    The folder is this run's until then: a second run naming it is refused (`InputError`
    naming `out`) instead of replacing this one's files, and staging folders that killed runs
    left beside it are removed."""
    # `start` builds its own class (`cls(...)`), typed as the base's.
    report = cast(
        _LockedReport, _LockedReport.start(out, default=default, kind=kind, command=command)
    )
    try:
        report.lock = lock_folder(report.target)
    except BaseException:
        report.discard()
        raise
    remove_leftovers(report.target, keep=report.path)
    return report


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
