"""How a process that talks to models ends when something fails: a traceback that shows no key,
and SIGTERM handled as Ctrl-C is (the command line's entry point uses both).

`COTPLAN_DEBUG=1` prints the traceback of a failure, and a traceback quotes exception messages,
including the ones an upstream server wrote (an SDK error chained under ours holds the raw
body, which may echo the request's `Authorization` header). Every traceback the command line prints
therefore passes through `cotplan.backends.keys.scrub_secrets`, with the key values this
process can see.
"""

from __future__ import annotations

import contextlib
import os
import signal
import traceback
from collections.abc import Iterator
from types import FrameType

from cotplan.backends.keys import KEY_FILE_ENV, read_key_file, scrub_secrets
from cotplan.errors import CotplanError

__all__ = ["known_secrets", "scrubbed_traceback", "sigterm_as_interrupt", "terminated"]

#: Environment variables whose values are secrets: provider keys, tokens, passwords.
_SECRET_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def known_secrets() -> list[str]:
    """The secret values this process holds: key-like environment variables and the values of
    the key file `COTPLAN_KEY_FILE` names (when it can be read)."""
    values = [
        value
        for name, value in os.environ.items()
        if any(part in name.upper() for part in _SECRET_NAMES) and len(value) >= 8
    ]
    key_file = os.environ.get(KEY_FILE_ENV)
    if key_file:
        with contextlib.suppress(CotplanError):
            values += [value for value in read_key_file(key_file).values() if len(value) >= 8]
    return values


def scrubbed_traceback(exc: BaseException) -> str:
    """`exc`'s full traceback (its causes included), every secret masked."""
    text = "".join(traceback.format_exception(exc))
    return scrub_secrets(text, known_secrets())


#: The signal that ended the run, when one did (None: none, or Ctrl-C as Python raises it).
_received: list[int] = []


def terminated() -> int | None:
    """The signal number (SIGTERM) that interrupted this run, if one did."""
    return _received[-1] if _received else None


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (`kill`, a container stopping, a job scheduler's time limit)
    interrupts the run as Ctrl-C does: pending requests are cancelled, the report folder being
    staged is discarded, and the user hears how to resume, instead of a silent exit -15."""
    _received.clear()
    try:
        previous = signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
