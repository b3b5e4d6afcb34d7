"""Warnings shown as one ``note:`` line each on stderr, as the command line shows them: no
file name, no line number, each text once (`warnings_as_notes`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

__all__ = ["note", "warnings_as_notes"]

_stderr = Console(stderr=True)


def note(message: Any, category: type[Warning] | None = None) -> None:
    """Print a warning as one line on stderr: ``note: ...`` (no file name, no line number)."""
    text = " ".join(str(message).split())
    label = "note" if category is None or _ours(category) else f"note ({category.__name__})"
    _stderr.print(f"[bold yellow]{label}:[/] {text}", highlight=False, markup=True, soft_wrap=True)


def _ours(category: type[Warning]) -> bool:
    return category.__module__.split(".")[0] == "cotplan"


@contextmanager
def warnings_as_notes() -> Iterator[None]:
    """Show every warning raised inside the block as one ``note:`` line, each text once.

    The CLI's entry point wraps every command in this, so users never see Python's raw
    ``path:line: Category: text`` warning lines; warnings stay warnings (not errors).
    """
    seen: set[str] = set()

    def show(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
        text = str(message)
        if text not in seen:
            seen.add(text)
            note(text, category)

    with warnings.catch_warnings():
        # Warnings meant for users (stale prices, for one) show every time, as notes and never
        # as errors; developer warnings (deprecations) keep Python's default of silence.
        warnings.simplefilter("always", UserWarning)
        warnings.showwarning = show
        yield
