"""`cotplan cache info | verify | clear`: what the call cache holds, is it intact, forget it.

The cache is the file `COTPLAN_CACHE` names, else ``~/.cotplan/cache.sqlite`` (under
`COTPLAN_HOME`); the work is `cotplan.backends.cache.CallCache`'s.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from cotplan import paths
from cotplan.backends.cache import CallCache, check_clear_filters

__all__ = ["app"]

app = typer.Typer(
    help="The call cache: what it holds, whether it is intact, and forgetting it.",
    no_args_is_help=True,
)


def _console() -> Console:
    return Console(highlight=False)


def _open() -> CallCache | None:
    """The user's cache, or None (after saying so) when nothing was recorded yet."""
    cache = CallCache.existing(paths.cache_path())
    if cache is None:
        _console().print(f"no call cache at {escape(str(paths.cache_path()))} (nothing recorded)")
    return cache


@app.command()
def info() -> None:
    """Show where the cache is, how many calls it holds per model, its size and age."""
    from cotplan.render.tasks import render_cache_info

    cache = _open()
    if cache is not None:
        render_cache_info(cache.info(), _console())


@app.command()
def verify(
    discard: Annotated[
        bool, typer.Option("--discard", help="Remove the damaged rows (they are asked again).")
    ] = False,
) -> None:
    """Check every recorded call's checksum and answer; exit 1 if damaged rows remain."""
    cache = _open()
    if cache is None:
        return
    from cotplan.backends.openai_compat import check_recorded_row  # the openai client: slow
    from cotplan.render.tasks import render_cache_check

    report = cache.verify(check_recorded_row, discard=discard)
    console = _console()
    render_cache_check(report, console, discard=discard)
    if report.damaged and not discard:
        console.print("run `cotplan cache verify --discard` to remove them")
        raise typer.Exit(1)


@app.command()
def clear(
    model: Annotated[
        str | None, typer.Option("--model", help="Only the calls to this model.")
    ] = None,
    older_than: Annotated[
        float | None,
        typer.Option("--older-than", help="Only the calls recorded over this many days ago."),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Clear everything without asking.")] = False,
) -> None:
    """Forget recorded calls (all of them, or those --model and --older-than select)."""
    check_clear_filters(model, older_than)
    cache = _open()
    if cache is None:
        return
    if model is None and older_than is None and not yes:
        # Every recorded answer was paid for once; forgetting them all is asked, not assumed.
        typer.confirm(f"forget all {len(cache)} recorded calls?", abort=True)
    removed = cache.clear(model=model, older_than_days=older_than)
    _console().print(f"{removed} recorded calls removed, {len(cache)} left")
