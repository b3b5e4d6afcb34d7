"""Checks of one argument each, for the values every part validates the same way.

Each returns the value in its plain Python type or raises `InputError` naming the field, so an
entry point reads as a list of its parameters: ``n = require_int(n, "n", low=1)``. They sit in
the lowest layer, beside the error tree, so any module may use them.
"""

from __future__ import annotations

import numbers

from cotplan.errors import InputError

__all__ = ["require_int", "require_text"]


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


def require_text(value: object, field: str) -> str:
    """`value` as a `str` with something other than whitespace in it (returned as given)."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be a non-empty string, got {value!r}", field=field)
    return value
