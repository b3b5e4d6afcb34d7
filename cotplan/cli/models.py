"""`cotplan models ...` commands."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(help="Model files for the embedded engine.", no_args_is_help=True)
