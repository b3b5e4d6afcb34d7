"""`cotplan notebooks`: JupyterLab on the explanatory notebooks, on 127.0.0.1 only.

`cotplan lab`, its earlier name, still works and is hidden from the help: "lab" now means
the lab models only (`cotplan.research.lab`, `cotplan kstar-lab`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import typer

from cotplan.workflow import jupyterlab_command

__all__ = ["jupyterlab_command", "notebooks"]


def notebooks(
    notebooks: Path = typer.Option(Path("notebooks"), help="The notebooks folder."),
    port: int = typer.Option(8888, help="Port on 127.0.0.1."),
    browser: bool = typer.Option(False, help="Open a browser."),
) -> None:
    """Open JupyterLab on the notebooks, listening on 127.0.0.1 only."""
    raise typer.Exit(subprocess.call(jupyterlab_command(notebooks, port, browser)))
