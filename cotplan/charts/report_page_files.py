"""report.html written into a report folder: after a command's own files (`write_report_page`,
the step every command that writes a report folder ends with) or again later
(`rebuild_report_page`, `cotplan report DIR`).

The page is `cotplan.charts.report_page.build_report_page`'s, written through a `ReportFolder`
commit of its own, so the folder's manifest lists it like every other file.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from cotplan.charts.report_page import REPORT_PAGE, build_report_page
from cotplan.io import read_json, write_text
from cotplan.io.reports import ChartNotSavedWarning, ReportFolder

__all__ = ["rebuild_report_page", "write_report_page"]


def _commit(folder: Path, page: str, command: str) -> Path:
    staged = ReportFolder.start(folder, command=command)
    with staged:
        write_text(staged.path / REPORT_PAGE, page)
        staged.commit()
    return folder / REPORT_PAGE


def write_report_page(folder: Path, *, command: str) -> Path | None:
    """Write report.html into a committed report folder; the path, or None (with a
    `ChartNotSavedWarning`) when the page cannot be built. A command's tables are already in
    place: a page that fails must not fail the command."""
    try:
        page = build_report_page(folder)
    except Exception as exc:  # the report's tables are written; the page is a view of them
        warnings.warn(ChartNotSavedWarning(f"could not build {REPORT_PAGE}: {exc}"), stacklevel=2)
        return None
    return _commit(folder, page, command)


def rebuild_report_page(folder: Path) -> Path:
    """Rebuild `folder`'s report.html from its files (`InputError` naming the folder when
    there is nothing to show), keeping the command its manifest names."""
    page = build_report_page(folder)
    return _commit(folder, page, _manifest_command(folder))


def _manifest_command(folder: Path) -> str:
    """The command that wrote the folder, kept in the manifest when the page is rebuilt."""
    try:
        record = read_json(folder / "manifest.json")
    except Exception:  # no manifest (a folder from elsewhere): the page names no command
        return "report"
    return str(record.get("command", "report")) if isinstance(record, dict) else "report"
