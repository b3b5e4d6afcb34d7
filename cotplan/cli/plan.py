"""`cotplan calibrate`, `cotplan plan`, `cotplan run`: top-level planner commands."""

from __future__ import annotations

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the planner's commands to the top-level app."""
