"""`cotplan report DIR`: (re)build a report folder's report.html; and the step every command
that writes a report folder ends with (`add_report_page`).

The page is `cotplan.charts.report_page.build_report_page`'s, written into the folder through a
`ReportFolder` commit of its own, so the folder's manifest lists it like every other file.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cotplan.io.reports import ChartNotSavedWarning, ReportFolder

__all__ = ["add_report_page", "register", "report"]

_console = Console()


def add_report_page(folder: Path, *, command: str) -> Path | None:
    """Write report.html into a committed report folder; the path, or None (with a
    `ChartNotSavedWarning`) when the page cannot be built. A command's tables are already in
    place: a page that fails must not fail the command."""
    from cotplan.charts.report_page import REPORT_PAGE, build_report_page
    from cotplan.io import write_text

    try:
        page = build_report_page(folder)
    except Exception as exc:  # the report's tables are written; the page is a view of them
        warnings.warn(ChartNotSavedWarning(f"could not build {REPORT_PAGE}: {exc}"), stacklevel=2)
        return None
    staged = ReportFolder.start(folder, command=command)
    with staged:
        write_text(staged.path / REPORT_PAGE, page)
        staged.commit()
    return folder / REPORT_PAGE


def report(
    folder: Annotated[Path, typer.Argument(help="A report folder cotplan wrote.")],
) -> None:
    """Rebuild FOLDER/report.html from the folder's files: the answer, the charts (inline SVG,
    no network needed), then the statistics."""
    from cotplan.charts.report_page import REPORT_PAGE, build_report_page
    from cotplan.io import write_text

    page = build_report_page(folder)  # InputError naming the folder when there is nothing
    command = _manifest_command(folder)
    staged = ReportFolder.start(folder, command=command)
    with staged:
        write_text(staged.path / REPORT_PAGE, page)
        staged.commit()
    _console.print(f"wrote {folder / REPORT_PAGE}")


def _manifest_command(folder: Path) -> str:
    """The command that wrote the folder, kept in the manifest when the page is rebuilt."""
    from cotplan.io import read_json

    try:
        record = read_json(folder / "manifest.json")
    except Exception:  # no manifest (a folder from elsewhere): the page names no command
        return "report"
    return str(record.get("command", "report")) if isinstance(record, dict) else "report"


def register(app: typer.Typer) -> None:
    """Add `cotplan report` to the top-level app."""
    app.command("report")(report)
