"""`cotplan tasks ...`: list the built-in families, make, check and split task files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.tasks import (
    item_to_dict,
    list_families,
    load_tasks,
    save_tasks,
)
from cotplan.workflow import make_task_items

__all__ = ["app"]

app = typer.Typer(
    help="Calibration tasks: built-in families and JSONL task files.", no_args_is_help=True
)


def _console() -> Console:
    return Console(highlight=False)


@app.command("list")
def list_command(
    measured: Annotated[
        bool, typer.Option("--measured", help="Show what was measured on the embedded model.")
    ] = False,
) -> None:
    """List the built-in task families, what n means for each, and which suit the demo."""
    from cotplan.render.tasks import render_families

    render_families(list_families(), _console(), measured=measured)


@app.command("make")
def make_command(
    *,
    family: Annotated[
        str | None,
        typer.Argument(help="Family name (see `cotplan tasks list`); or give --family."),
    ] = None,
    n: Annotated[
        list[int] | None,
        typer.Option("--n", help="Size of each item; repeat for several sizes."),
    ] = None,
    family_option: Annotated[
        str | None,
        typer.Option(
            "--family", help="Family name: a built-in one, or a lab one (lab-parity, ...)."
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(help="The backend the items are for: lab:FAMILY makes the lab's questions."),
    ] = None,
    count: Annotated[int, typer.Option(help="Items per size.")] = 20,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same items).")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Write JSONL here; without it, print JSONL to stdout.")
    ] = None,
) -> None:
    """Generate COUNT items of FAMILY at each size n, reproducibly from SEED."""
    family, items = make_task_items(family, family_option, sizes=n, count=count, seed=seed,
                                    backend=backend, out=out)  # fmt: skip
    if out is None:
        for item in items:
            typer.echo(json.dumps(item_to_dict(item), ensure_ascii=False))
        return
    path = save_tasks(items, out)
    console = _console()
    sizes = ", ".join(str(size) for size in n or ())
    where = escape(str(path))
    console.print(
        f"wrote {len(items)} {family} items (n = {sizes}, seed {seed}) to [bold]{where}[/]"
    )
    example = items[0]
    console.print(
        f"first: [dim]{escape(str(example.prompt))}[/] -> [green]{escape(example.answer)}[/]"
    )


@app.command("split")
def split_command(
    path: Annotated[Path, typer.Argument(help="A JSONL task file.")],
    held_out: Annotated[
        float, typer.Option("--held-out", help="Share of items held out, e.g. 0.25.")
    ],
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same split).")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Folder for the two files (default: FILE's folder).")
    ] = None,
) -> None:
    """Split FILE by item into FILE.calibration.jsonl and FILE.held-out.jsonl (per size, items
    asking the same question kept together) for `cotplan calibrate` and `cotplan run`."""
    from cotplan.tasks.files import split_task_file

    console = _console()
    for count, target in split_task_file(path, held_out, seed=seed, out=out):
        console.print(f"wrote {count} items to [bold]{escape(str(target))}[/]")


@app.command("check")
def check_command(
    path: Annotated[Path, typer.Argument(help="A JSONL task file.")],
) -> None:
    """Validate a task file and summarise it (errors name the line and field)."""
    from cotplan.render.tasks import render_task_file

    render_task_file(path, load_tasks(path), _console())
