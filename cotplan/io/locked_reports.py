"""A report folder held by one run: `ReportFolder` (`cotplan.io.reports`) with the folder's lock
(`cotplan.io.folder_lock`) taken when the run names it and freed when it is committed or
discarded. Every command that writes a report starts it here, and so can a notebook.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cotplan.io.folder_lock import lock_folder, remove_leftovers, unlock_folder
from cotplan.io.reports import Committed, ReportFolder

__all__ = ["LockedReport", "start_locked_report"]


@dataclass
class LockedReport(ReportFolder):
    """A report folder this run holds the lock of until it is committed or discarded."""

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


def start_locked_report(
    out: Path | None,
    default: Path | None = None,
    *,
    kind: str = "",
    label: str = "",
    command: str = "",
) -> ReportFolder:
    """The report folder a command writes into, named now (`out`, else `default`, else a new
    folder under `reports/`); write into its `.path`, then commit it (`cotplan.io.reports`).

    The folder is this run's until then: a second run naming it is refused (`InputError`
    naming `out`) instead of replacing this one's files, and staging folders that killed runs
    left beside it are removed."""
    # `start` builds its own class (`cls(...)`), typed as the base's.
    report = cast(
        LockedReport,
        LockedReport.start(out, default=default, kind=kind, label=label, command=command),
    )
    try:
        report.lock = lock_folder(report.target)
    except BaseException:
        report.discard()
        raise
    remove_leftovers(report.target, keep=report.path)
    return report
