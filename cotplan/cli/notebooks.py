"""`cotplan notebooks`: JupyterLab on the explanatory notebooks, on 127.0.0.1 only.

`cotplan lab`, its earlier name, still works and is hidden from the help: "lab" now means
the lab models only (`cotplan.research.lab`, `cotplan kstar-lab`).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import typer

from cotplan.errors import ConfigError, InputError

__all__ = ["jupyterlab_command", "notebooks"]


def jupyterlab_command(notebooks: Path, port: int, open_browser: bool) -> list[str]:
    """The JupyterLab command line: loopback only, root allowed where we run as root."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise InputError(f"must be in 1..65535, got {port!r}", field="port")
    if not notebooks.is_dir():
        raise InputError(f"{notebooks} is not a folder", field="notebooks")
    if importlib.util.find_spec("jupyterlab") is None:
        raise ConfigError("JupyterLab is not installed: pip install 'cotplan[dev]'")
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--notebook-dir={notebooks.resolve()}",
    ]
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return command


def notebooks(
    notebooks: Path = typer.Option(Path("notebooks"), help="The notebooks folder."),
    port: int = typer.Option(8888, help="Port on 127.0.0.1."),
    browser: bool = typer.Option(False, help="Open a browser."),
) -> None:
    """Open JupyterLab on the notebooks, listening on 127.0.0.1 only."""
    raise typer.Exit(subprocess.call(jupyterlab_command(notebooks, port, browser)))
