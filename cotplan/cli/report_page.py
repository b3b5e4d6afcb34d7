"""`cotplan report DIR`: (re)build a report folder's report.html
(`cotplan.charts.report_page_files`); `add_report_page` is the step every command that writes
a report folder ends with."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

__all__ = ["add_report_page", "report"]

_console = Console()


def add_report_page(folder: Path, *, command: str) -> Path | None:
    """Write report.html into a committed report folder (None, with a warning, when the page
    cannot be built: the command's tables are in place already)."""
    from cotplan.charts.report_page_files import write_report_page

    return write_report_page(folder, command=command)


def report(
    folder: Annotated[Path, typer.Argument(help="A report folder cotplan wrote.")],
) -> None:
    """Rebuild FOLDER/report.html from the folder's files: the answer, the charts (inline SVG,
    no network needed), then the statistics."""
    from cotplan.charts.report_page_files import rebuild_report_page

    _console.print(f"wrote {rebuild_report_page(folder)}")
