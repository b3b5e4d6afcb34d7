"""Checks of one argument each: the one place where an option's or a parameter's range is checked.

Each returns the value in its plain Python type or raises `InputError` naming the field, so an
entry point reads as a list of its parameters: ``n = require_int(n, "n", low=1)``. The library
and the command line call the same helpers, so a value refused by one is refused by the other
with the same words. They sit in the lowest layer, beside the error tree, so any module may use
them.

| helper | accepts |
|---|---|
| `require_int` | an integer (never a bool) in [low, high]: counts, seeds, resamples |
| `require_ints` | option text such as ``["4,8", "16"]``: whole numbers, each at least `low` |
| `require_number` | a finite real number in [low, high]: a reach, a timeout, a price |
| `require_positive` | a finite real number above 0: a size n, a price per token |
| `require_unit` | a share strictly between 0 and 1 (or up to 1 with `closed_high`): ε, δ |
| `require_budget` | a whole number of tokens in 0..`MAX_BUDGET`: a reasoning cap |
| `require_choice` | one of a fixed set of names: a law, a protocol |
| `require_text` | a string with something other than whitespace |
| `require_file` | an existing regular file to read (not a folder) |
| `require_folder_target` | a folder that can be created or written (not an existing file) |
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from pathlib import Path

from cotplan.errors import InputError

__all__ = [
    "MAX_BUDGET",
    "require_budget",
    "require_choice",
    "require_file",
    "require_folder_target",
    "require_int",
    "require_ints",
    "require_number",
    "require_positive",
    "require_text",
    "require_unit",
]

#: The largest reasoning budget accepted: above every provider's output cap (128k tokens), so
#: a larger one is a typo (or a value that would be sent as is), not a budget.
MAX_BUDGET = 131_072


def require_int(
    value: object, field: str, *, low: int | None = None, high: int | None = None
) -> int:
    """`value` as an `int`: an integer (numpy's too, never a bool) in [`low`, `high`].

    Either failure reads the same, e.g. ``must be an integer >= 1, got 2.5`` or ``must be an
    integer between 2 and 50, got 51``."""
    if low is not None and high is not None:
        bound = f" between {low} and {high}"
    elif low is not None:
        bound = f" >= {low}"
    elif high is not None:
        bound = f" <= {high}"
    else:
        bound = ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"must be an integer{bound}, got {value!r}", field=field)
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise InputError(f"must be an integer{bound}, got {value!r}", field=field)
    return number


def require_ints(values: Iterable[str] | None, field: str, *, low: int | None = None) -> list[int]:
    """Option text as whole numbers: ``["4,8", "16"]`` -> ``[4, 8, 16]``, each at least `low`."""
    out: list[int] = []
    for value in values or ():
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            try:
                number = int(part)
            except ValueError:
                raise InputError(f"must be whole numbers, got {part!r}", field=field) from None
            if low is not None and number < low:
                raise InputError(f"must be at least {low}, got {number}", field=field)
            out.append(number)
    return out


def require_number(
    value: object, field: str, *, low: float | None = None, high: float | None = None
) -> float:
    """`value` as a finite `float` (never a bool) in [`low`, `high`]."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    number = float(value) if ok else math.nan  # type: ignore[arg-type]
    ok = ok and math.isfinite(number)
    ok = ok and (low is None or number >= low) and (high is None or number <= high)
    if not ok:
        if low is not None and high is not None:
            bound = f"a number from {low:g} to {high:g}"
        elif low is not None:
            bound = f"at least {low:g}"
        elif high is not None:
            bound = f"at most {high:g}"
        else:
            bound = "a finite number"
        raise InputError(f"must be {bound}, got {value!r}", field=field)
    return number


def require_positive(value: object, field: str) -> float:
    """`value` as a finite `float` above 0 (never a bool): a size, a price, a constant."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"must be a positive number, got {value!r}", field=field)
    number = float(value)
    if not (number > 0 and math.isfinite(number)):
        raise InputError(f"must be a positive number, got {number:g}", field=field)
    return number


def require_unit(value: object, field: str, *, closed_high: bool = False) -> float:
    """`value` as a `float` strictly between 0 and 1 (up to 1 with `closed_high`): a target
    error, a risk level, a confidence."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"must be a number between 0 and 1, got {value!r}", field=field)
    number = float(value)
    ok = 0.0 < number <= 1.0 if closed_high else 0.0 < number < 1.0
    if not ok:
        interval = "(0, 1]" if closed_high else "(0, 1)"
        raise InputError(f"must be in {interval}, got {number:g}", field=field)
    return number


def require_budget(value: object, field: str, *, high: int = MAX_BUDGET) -> int:
    """`value` as a whole number of tokens in 0..`high` (`MAX_BUDGET` by default): a cap that
    is sent to a provider as it is, so it must be one a provider could honour."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not 0 <= int(value) <= high
    ):
        raise InputError(
            f"must be a whole number of tokens in 0..{high}, got {value!r}", field=field
        )
    return int(value)


def require_choice(value: object, field: str, choices: Iterable[str]) -> str:
    """`value`, which must be one of `choices` (listed in the message when it is not)."""
    known = list(choices)
    if not isinstance(value, str) or value not in known:
        raise InputError(f"must be one of {', '.join(known)}, got {value!r}", field=field)
    return value


def require_text(value: object, field: str) -> str:
    """`value` as a `str` with something other than whitespace in it (returned as given)."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be a non-empty string, got {value!r}", field=field)
    return value


def require_file(path: Path | str, field: str) -> Path:
    """`path` as a `Path` to an existing regular file (a folder or a device is refused)."""
    file = Path(path)
    if not file.exists():
        raise InputError(f"no such file: {file}", field=field, source=str(file))
    if not file.is_file():
        what = "a folder" if file.is_dir() else "not a regular file"
        raise InputError(f"{file} is {what}: give a file", field=field, source=str(file))
    return file


def require_folder_target(path: Path | str | None, field: str = "out") -> Path | None:
    """A folder a report can be written into (None passes: the default is used): an existing
    folder, or one that can be created under a writable folder; never an existing file."""
    if path is None:
        return None
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a folder", field=field)
    parent = out
    while not parent.exists():
        if parent.parent == parent:
            break
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"cannot create {out}: {parent} is not a folder", field=field)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot create {out}: {parent} is not writable", field=field)
    return out
