"""`cotplan tasks ...`: list the built-in families, make, check and split task files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.errors import InputError
from cotplan.tasks import (
    item_to_dict,
    list_families,
    load_tasks,
    save_tasks,
)
from cotplan.workflow import check_backend, family_items

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
    if (family is None) == (family_option is None):
        raise InputError("give the family once: as an argument or as --family", field="family")
    family = family if family is not None else family_option
    assert family is not None
    if not n:
        raise InputError("give at least one size, e.g. --n 4", field="n")
    if out is not None and out.is_dir():
        raise InputError(f"{out} is a folder; name a file in it, e.g. tasks.jsonl", field="out")
    if backend is not None:
        check_backend(backend)
    items = [
        item
        for size in n
        for item in family_items(family, n=size, count=count, seed=seed, backend=backend)
    ]
    if out is None:
        for item in items:
            typer.echo(json.dumps(item_to_dict(item), ensure_ascii=False))
        return
    path = save_tasks(items, out)
    console = _console()
    sizes = ", ".join(str(size) for size in n)
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
    from cotplan.tasks.files import split_tasks

    if not 0.0 < held_out < 1.0:  # checked before the file is read
        raise InputError(f"must be a fraction in (0, 1), got {held_out!r}", field="held_out")
    if out is not None and out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file; name a folder", field="out")
    split = split_tasks(load_tasks(path), held_out, seed=seed)
    folder = out or path.parent
    stem = path.name.removesuffix(".jsonl")
    written = [
        save_tasks(split.calibration, folder / f"{stem}.calibration.jsonl"),
        save_tasks(split.held_out, folder / f"{stem}.held-out.jsonl"),
    ]
    console = _console()
    for items, target in zip((split.calibration, split.held_out), written, strict=True):
        console.print(f"wrote {len(items)} items to [bold]{escape(str(target))}[/]")


@app.command("check")
def check_command(
    path: Annotated[Path, typer.Argument(help="A JSONL task file.")],
) -> None:
    """Validate a task file and summarise it (errors name the line and field)."""
    from cotplan.render.tasks import render_task_file

    render_task_file(path, load_tasks(path), _console())
