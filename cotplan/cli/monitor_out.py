"""`cotplan monitor --out DIR`: the monitor's report folder (its files, then report.html), one
call from the command; the files are `cotplan.production.monitor_files`'."""

from __future__ import annotations

from pathlib import Path

from cotplan.cli.report_folders import finish_report, start_report
from cotplan.cli.report_page import add_report_page

__all__ = ["save_monitor_report"]


def save_monitor_report(report: object, out: Path, *, model: str | None) -> Path:
    """Write the report's files into `out` as one report folder, then its page."""
    from cotplan.production.monitor import MonitorReport
    from cotplan.production.monitor_files import write_monitor_files

    assert isinstance(report, MonitorReport)
    staged = start_report(out, kind="monitor", command="monitor")
    with staged:
        write_monitor_files(report, staged.path, model=model)
        folder = finish_report(staged)
    add_report_page(folder, command="monitor")
    return folder
