"""The `cotplan` command line: parses arguments, calls the library, prints. No logic lives here.

Library errors become one clear line on stderr and exit status 2. Set `COTPLAN_DEBUG=1` to see
the full traceback instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import TracebackType

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.backends.keys import scrub_secrets
from cotplan.backends.process_end import (
    known_secrets,
    scrubbed_traceback,
    sigterm_as_interrupt,
    terminated,
)
from cotplan.cli import (
    answer,
    cache,
    calibrate,
    cost,
    demo,
    experiment,
    kstar,
    lab_reasoning,
    models,
    monitor,
    notebooks,
    plan,
    report_page,
    reproduce,
    serve,
    tasks,
)
from cotplan.errors import CotplanError, describe_uncaught

__all__ = ["COMMANDS", "GROUPS", "HIDDEN", "app", "main"]

#: Every command, registered here and only here, in the order `cotplan --help` lists them: each
#: module defines plain functions (their options as `Annotated` parameters) and no app.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("calibrate", calibrate.calibrate),
    ("plan", plan.plan),
    ("run", plan.run),
    ("demo", demo.demo),
    ("answer", answer.answer),
    ("notebooks", notebooks.notebooks),
    ("serve", serve.serve),
    ("monitor", monitor.monitor),
    ("reproduce", reproduce.reproduce_command),
    ("report", report_page.report),
)
#: Earlier names, kept working for scripts and hidden from the help.
HIDDEN: tuple[tuple[str, Callable[..., None]], ...] = (("lab", notebooks.notebooks),)
#: Every command group: a module's own `typer.Typer` of subcommands.
GROUPS: tuple[tuple[str, typer.Typer], ...] = (
    ("models", models.app),
    ("cost", cost.app),
    ("tasks", tasks.app),
    ("experiment", experiment.app),
    ("cache", cache.app),
    ("kstar-lab", lab_reasoning.app),
    ("kstar", kstar.app),
)

app = typer.Typer(
    name="cotplan",
    help="Plan chain-of-thought token budgets and measure what reasoning is worth.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for _name, _command in COMMANDS:
    app.command(_name)(_command)
for _name, _command in HIDDEN:
    app.command(_name, hidden=True)(_command)
for _name, _group in GROUPS:
    app.add_typer(_group, name=_name)

_stderr = Console(stderr=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script.

    Typer handles usage errors itself (exit 2); cotplan's own errors become one line and exit 2;
    a file, encoding, overflow or memory error no check caught becomes one line and exit 1;
    anything else is a bug, said in one line with exit 1. `COTPLAN_DEBUG=1` prints the
    traceback instead, every secret in it masked. Ctrl-C and SIGTERM both stop the run, say
    how to resume, and exit 130 and 143 (128 + the signal, as a shell reports them).
    """
    debug = bool(os.environ.get("COTPLAN_DEBUG"))
    try:
        with sigterm_as_interrupt(), cost.warnings_as_notes():  # warnings print as `note:`
            app(args=argv)
    except CotplanError as exc:
        _fail(exc, escape(str(exc)), 2, debug)
    except (OSError, UnicodeError, OverflowError, MemoryError) as exc:
        # What a file, a folder or an absurd size the user gave can raise below the checks
        # (a folder where a file goes, bytes that are not UTF-8, a number past what floats or
        # memory hold): one line that says what failed, not a traceback.
        _fail(exc, escape(describe_uncaught(exc)), 1, debug)
    except KeyboardInterrupt:
        _interrupted()
        sys.exit(_interrupt_status())
    except SystemExit as exc:
        # Typer turns Ctrl-C into a silent exit with status 130 (the shell's code for SIGINT);
        # no other path of ours exits 130, so this is where the user hears how to resume.
        if exc.code == 130:
            _interrupted()
            sys.exit(_interrupt_status())
        raise
    except Exception:
        # No check caught it: a bug. It propagates (a caller in-process sees it as it is),
        # and the process's last word is `_unexpected`'s, never Python's unscrubbed traceback.
        sys.excepthook = _unexpected
        raise


def _unexpected(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """A bug, said in one line (the traceback with COTPLAN_DEBUG=1), every secret masked."""
    if os.environ.get("COTPLAN_DEBUG"):
        sys.stderr.write(scrubbed_traceback(exc))
        return
    line = f"internal error: {kind.__name__}: {exc} (COTPLAN_DEBUG=1 shows where)"
    _stderr.print(
        f"[bold red]error:[/] {escape(scrub_secrets(line, known_secrets()))}", highlight=False
    )


def _fail(exc: BaseException, line: str, status: int, debug: bool) -> None:
    if debug:
        sys.stderr.write(scrubbed_traceback(exc))
    else:
        _stderr.print(f"[bold red]error:[/] {line}", highlight=False)
    sys.exit(status)


def _interrupt_status() -> int:
    signum = terminated()
    return 128 + (signum if signum is not None else 2)


def _interrupted() -> None:
    # Pending requests were never sent (`Backend.map` stops taking items) and every call that
    # finished is in the call cache, so the same command picks up where this one stopped.
    _stderr.print(
        "interrupted: pending requests cancelled; answers that finished are kept in the call "
        "cache. Run the same command again to resume: finished calls are replayed, not paid "
        "again.",
        highlight=False,
    )
