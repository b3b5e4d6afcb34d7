"""Checks of one argument each, and the constraints a public function declares with them.

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

A public function declares its parameters' constraints once, where it is defined, and they are
checked once, at the boundary where a caller enters the library (the idea of scikit-learn's
`validate_params`)::

    @validate_params(k=BUDGET, eps=SHARE)
    def budgeted_answer(backend, item, k, ...): ...

A declared function called from inside another one (`budgeted_answer` asking `budget_params`
for the request fields) trusts its caller's values and checks nothing again, so each quantity is
checked once on each path, against one ceiling per quantity (`MAX_BUDGET`, `MAX_SIZE`).
A command checks its options before it connects to a model with the same declarations
(`check_call`), then calls the library `trusting()` them, so the command line and the library
refuse the same values with the same words, once.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import numbers
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from cotplan.errors import InputError

__all__ = [
    "BUDGET",
    "BUDGETS",
    "CAP",
    "COUNT",
    "MAX_BUDGET",
    "MAX_SIZE",
    "REACH",
    "SHARE",
    "SIZE",
    "TOKENS",
    "Constraint",
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
    "validate_params",
]

#: The largest reasoning budget accepted, everywhere (the library, the command line, plan and
#: calibration files): 2^20 tokens, more than any model writes in one reply (the longest 2026
#: context windows hold about a million tokens), so a larger number is a typo, not a budget.
MAX_BUDGET = 1_048_576

#: The largest task size n accepted, everywhere: sizes are counts of inputs (words, digits,
#: examples), and a billion of them in one prompt is a typo.
MAX_SIZE = 1_000_000_000


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


# -- declared constraints --------------------------------------------------------------------

#: A constraint checks one value for the parameter it is declared on and returns it in its plain
#: Python type, or raises `InputError` naming the parameter.
Constraint = Callable[[object, str], Any]


def _budget(value: object, field: str) -> int:
    return require_budget(value, field)


def _cap(value: object, field: str) -> int:
    return require_int(value, field, low=1, high=MAX_BUDGET)


def _share(value: object, field: str) -> float:
    return require_unit(value, field)


def _size(value: object, field: str) -> float:
    size = require_positive(value, field)
    if size > MAX_SIZE:
        raise InputError(f"must be a size of at most {MAX_SIZE:,}, got {value!r}", field=field)
    return size


def _tokens(value: object, field: str) -> int:
    return require_int(value, field, low=0)


def _reach(value: object, field: str) -> float:
    return require_number(value, field, low=1.0)


def _count(value: object, field: str) -> int:
    return require_int(value, field, low=1)


def _budgets(value: object, field: str) -> list[int]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InputError(f"must be a list of budgets, got {value!r}", field=field)
    budgets = [require_budget(k, field) for k in value]
    if not budgets:
        raise InputError("must hold at least one budget", field=field)
    return budgets


#: A reasoning budget: whole tokens in 0..MAX_BUDGET.
BUDGET: Constraint = _budget
#: A generation cap sent with a request: whole tokens in 1..MAX_BUDGET.
CAP: Constraint = _cap
#: A non-empty list of reasoning budgets, each a BUDGET.
BUDGETS: Constraint = _budgets
#: A share strictly between 0 and 1: a target error ε, a risk δ, a confidence.
SHARE: Constraint = _share
#: A task size n: a positive number up to MAX_SIZE.
SIZE: Constraint = _size
#: A count of tokens a call reported using: a whole number, at least 0, no ceiling (a model that
#: overran its cap reports what it spent).
TOKENS: Constraint = _tokens
#: A count of things (items, orderings, resamples): a whole number, at least 1.
COUNT: Constraint = _count
#: How far a cap may scale beyond the calibrated sizes: a factor of n, at least 1.
REACH: Constraint = _reach

_P = ParamSpec("_P")
_R = TypeVar("_R")

# Set while a declared function runs: the declared functions it calls trust their caller.
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("cotplan_validating", default=False)


def _check_into(
    arguments: MutableMapping[str, Any],
    constraints: Mapping[str, Constraint],
    *,
    may_be_none: Collection[str],
) -> None:
    """Check and convert, in place, each of `arguments` that has a constraint; None passes for
    the names in `may_be_none` (a parameter whose default is None)."""
    for name, constraint in constraints.items():
        if name in arguments:
            value = arguments[name]
            if not (value is None and name in may_be_none):
                arguments[name] = constraint(value, name)


def validate_params(
    **constraints: Constraint,
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Declare the constraints of a function's parameters, checked when a caller enters it.

    Each named parameter is checked (and converted: ``np.int64(8)`` becomes ``8``) when the
    function is called from outside the library's declared functions; a parameter left at a
    default of None is not checked. The declaration is kept on the function as
    `__constraints__`, for documentation and tests.
    """

    def declare(function: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(function)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:  # a typo in a declaration is the library's bug: fail at import
            raise TypeError(f"{function.__qualname__} has no parameter {sorted(unknown)}")
        optional = {
            name for name, parameter in signature.parameters.items() if parameter.default is None
        }

        @functools.wraps(function)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            if _inside.get():
                return function(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            _check_into(bound.arguments, constraints, may_be_none=optional)
            token = _inside.set(True)
            try:
                return function(*bound.args, **bound.kwargs)
            finally:
                _inside.reset(token)

        checked.__constraints__ = dict(constraints)  # type: ignore[attr-defined]
        return checked

    return declare


def check_call(function: Callable[..., Any], **arguments: Any) -> dict[str, Any]:
    """`arguments` checked (and converted) by `function`'s declared constraints, without calling
    it: a command checks its options this way before it connects to a model."""
    checked = dict(arguments)
    _check_into(checked, getattr(function, "__constraints__", {}), may_be_none=set(checked))
    return checked


@contextlib.contextmanager
def trusting() -> Iterator[None]:
    """Within this block, declared functions trust their arguments (already `check_call`ed)."""
    token = _inside.set(True)
    try:
        yield
    finally:
        _inside.reset(token)
