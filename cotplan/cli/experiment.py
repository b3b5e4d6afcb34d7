"""`cotplan experiment ...` commands."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(help="experiment commands", no_args_is_help=True)
