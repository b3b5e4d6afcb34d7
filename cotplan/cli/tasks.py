"""`cotplan tasks ...` commands."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(help="tasks commands", no_args_is_help=True)
