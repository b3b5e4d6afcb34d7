"""The options the commands share, declared once, and the checks that put them in the words
of options.

A typo must cost nothing: every command validates all of its options, and finds its model file
or endpoint spec well formed, before it starts a server or sends a request (which may be paid).
The ranges are `cotplan.validation`'s (the checks the library uses too); each check here raises
`InputError` naming the option. `console` is where every planner command prints.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from cotplan.backends.connect_options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    check_timeouts,
    connect_options,
)
from cotplan.backends.known_models import PROTOCOL_NAMES
from cotplan.errors import InputError
from cotplan.validation import (
    MAX_BUDGET,
    require_budget,
    require_choice,
    require_folder_target,
    require_int,
    require_ints,
    require_number,
    require_unit,
)
from cotplan.workflow import check_backend

if TYPE_CHECKING:
    from cotplan.backends import Backend

__all__ = [
    "ALLOW_OTHER_MODEL",
    "BACKEND_SPEC",
    "BASE_URL",
    "CONCURRENCY",
    "CONNECTION",
    "COUNT",
    "DELTA",
    "DETAILS",
    "EXIT_CHOICE",
    "EXIT_PLAN_FILE",
    "FAMILY",
    "MAX_BUDGET",
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_RETRIES_OPTION",
    "OUT_NEXT_TO",
    "REQUIRED",
    "SHOW_PROGRESS",
    "SIZES",
    "TASKS_FILE",
    "TIMEOUT",
    "arg",
    "check_at_least",
    "check_backend",
    "check_budgets",
    "check_int",
    "check_item_source",
    "check_out",
    "check_probability",
    "check_protocol",
    "check_timeouts",
    "connect_options",
    "console",
    "mode_and_protocol",
    "noted_in_tables",
    "opt",
    "takes",
]

#: The default of an option or argument the user must give.
REQUIRED: Any = inspect.Parameter.empty
#: One option of a command's table: its type (with typer's flags and help) and its default.
Spec = tuple[Any, Any]
C = TypeVar("C", bound=Callable[..., None])


def opt(kind: Any, default: Any, help: str, *flags: str, **extra: Any) -> Spec:
    """An option (`--name`, or `flags`) of type `kind`, its default and its help."""
    return Annotated[kind, typer.Option(*flags, help=help, **extra)], default


def arg(kind: Any, default: Any, help: str) -> Spec:
    """A positional argument of type `kind`, its default and its help."""
    return Annotated[kind, typer.Argument(help=help)], default


def takes(table: Mapping[str, Spec]) -> Callable[[C], C]:
    """Give a command the options of `table`, in its order (the order `--help` lists them):
    typer reads the signature made here, and the command gets them as keyword arguments. Each
    option is declared once, in one row, and options shared by commands are shared rows."""

    def give(command: C) -> C:
        keyword = inspect.Parameter.KEYWORD_ONLY
        params = [inspect.Parameter(name, keyword, default=default, annotation=kind)
                  for name, (kind, default) in table.items()]  # fmt: skip
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return command

    return give


#: The console every planner command prints to.
console = Console()

#: Items per size: a calibration beyond this is a typo, not a plan.
MAX_COUNT = 10_000
#: Requests in flight at once.
MAX_CONCURRENCY = 256

# fmt: off
TIMEOUT = opt(float, DEFAULT_TIMEOUT_S, "Seconds one attempt waits for an answer (long by "
              "default: a reasoning model says nothing until it has thought). A hung endpoint "
              "costs at most timeout x (retries + 1) per request; Ctrl-C stops at once.")
MAX_RETRIES_OPTION = opt(int, DEFAULT_MAX_RETRIES, "Retries of a request after a 429, a 5xx, a "
                         "dropped connection or a timeout.")
#: The connection options of the planner commands, in their `--help` order.
CONNECTION = {
    "timeout": TIMEOUT,
    "max_retries": MAX_RETRIES_OPTION,
    "protocol": opt(str, "auto", "How the model writes and closes its thinking: 'auto' (the "
                    "model registry's, by name), 'plain' (cotplan's 'Think step by step ... "
                    "Answer:'), 'think' (<think> ... </think>: R1 distills, QwQ) or 'qwen3'. Set "
                    "it for a thinking model served under a name cotplan does not know."),
}
FAMILY = opt(str | None, None, "A built-in task family (see `cotplan tasks list`).")
TASKS_FILE = opt(Path | None, None, "A JSONL task file instead of a family.")
SIZES = opt(list[str] | None, None, "Sizes, e.g. --n 4,8.", "--n")
COUNT = opt(int, 12, "Items per size (built-in families).")
BACKEND_SPEC = opt(str, "local", "'local', 'local:PATH' or 'openai:MODEL'.")
BASE_URL = opt(str | None, None, "An OpenAI-compatible endpoint.")
CONCURRENCY = opt(int | None, None, "Items answered at once.")
SHOW_PROGRESS = opt(bool, True, "Show a progress bar.")
DELTA = opt(float, 0.05, "1 − confidence of the certified budgets (0.05: 95%).")
OUT_NEXT_TO = opt(Path | None, None, "Report folder (default: the calibration's folder).")
DETAILS = opt(bool, False, "Also print the statistics (fit, laws, tests, certificates).",
              "--details")
EXIT_CHOICE = opt(str, "none", "'none' (the fixed cap) or 'certified' (certified early exit "
                  "under it).", "--exit")
EXIT_PLAN_FILE = opt(Path | None, None, "With --exit certified: exit.json (default: beside the "
                     "plan).")
ALLOW_OTHER_MODEL = opt(bool, False, "Apply a plan made for another model or reasoning protocol "
                        "anyway.", "--allow-other-model")
# fmt: on


def check_int(value: int | None, field: str, *, low: int = 1, high: int | None = None) -> None:
    """`value` (None allowed: the default) is a whole number in [low, high]
    (`cotplan.validation.require_int`)."""
    if value is not None:
        require_int(value, field, low=low, high=high)


def check_probability(value: float | None, field: str, *, closed_high: bool = False) -> None:
    """`value` (None allowed) lies in (0, 1), or (0, 1] with `closed_high`
    (`cotplan.validation.require_unit`)."""
    if value is not None:
        require_unit(value, field, closed_high=closed_high)


def check_at_least(value: float | None, name: str, low: float) -> None:
    """`value` ≥ `low` (None passes: the option was not given)."""
    if value is not None:
        require_number(value, name, low=low)


def check_budgets(text: str) -> list[int] | str:
    """`--budgets`: 'auto', 'paper', or comma-separated whole numbers in 0..MAX_BUDGET."""
    if text.strip() in ("auto", "paper"):
        return text.strip()
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise InputError(
            "give at least one budget, e.g. 0,8,32, or 'auto' or 'paper'", field="budgets"
        )
    if not all(parts):
        raise InputError(f"has an empty entry in {text!r}", field="budgets")
    return [require_budget(k, "budgets") for k in require_ints(parts, "budgets")]


def check_out(out: Path | None, field: str = "out") -> None:
    """A report folder we could create: not an existing file, under a writable folder
    (`cotplan.validation.require_folder_target`)."""
    require_folder_target(out, field)


def check_protocol(protocol: str) -> None:
    """`--protocol` names a known reasoning protocol (or 'auto')."""
    require_choice(protocol, "protocol", ["auto", *PROTOCOL_NAMES])


def check_item_source(family: str | None, tasks: Path | None, sizes: Sequence[int]) -> None:
    """Exactly one of --family and --tasks, and no --n with --tasks: a task file's items carry
    their own sizes, and silently running other sizes than asked misleads."""
    if (family is None) == (tasks is None):
        raise InputError("give exactly one of --family and --tasks", field="family")
    if tasks is not None and sizes:
        raise InputError(
            "--n cannot be used with --tasks: the task file's items carry their own sizes "
            "(`cotplan tasks make --n ...` writes a file for the sizes you want)",
            field="n",
        )


@contextlib.contextmanager
def noted_in_tables() -> Iterator[None]:
    """Leave out the warnings that a calibration's table prints as its own notes (a short
    grid): the entry point shows warnings as notes too, and would say them twice."""
    from cotplan.planner.auto_grid import GridShortWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridShortWarning)
        yield


def mode_and_protocol(model: Backend) -> str:
    """How budgeted CoT drives `model`, for the line a command prints after connecting (the
    heavy generate layer is imported only then, so `cotplan --help` stays fast)."""
    from cotplan.generate.budgeted import driven_as

    return driven_as(model)
