"""How the command line's `--timeout`, `--max-retries` and `--protocol` reach `connect`.

`check_timeouts` checks the two numbers (an hour and ten retries at most: more is a typo, not a
model); `connect_options` gives the `connect` keyword arguments each provider takes: the
embedded engine a timeout (its server is local: nothing to retry), an OpenAI-compatible endpoint
both, an in-process lab model neither.
"""

from __future__ import annotations

from typing import Any

from cotplan.errors import InputError
from cotplan.validation import require_int, require_number

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "MAX_RETRIES",
    "MAX_TIMEOUT_S",
    "check_timeouts",
    "connect_options",
]

#: `--timeout`: seconds one attempt may wait for its answer. A reasoning model sends nothing
#: until it has thought, which takes minutes at high effort (10k hidden tokens at 50 tokens/s
#: is 200 s), so the default is long; what bounds a hung endpoint is the few retries below and
#: Ctrl-C, which now stops at once.
DEFAULT_TIMEOUT_S = 300.0
#: `--max-retries`: retries of one request after a 429, a 5xx, a dropped connection or a
#: timeout. Two ride out a transient fault; each retry of a hung endpoint costs a full timeout.
DEFAULT_MAX_RETRIES = 2
#: The longest `--timeout` accepted (an hour: longer is a typo, not a model).
MAX_TIMEOUT_S = 3600.0
#: The most `--max-retries` accepted.
MAX_RETRIES = 10


def check_timeouts(timeout: float, max_retries: int) -> None:
    """`--timeout` in (0, MAX_TIMEOUT_S] seconds and `--max-retries` in 0..MAX_RETRIES."""
    seconds = require_number(timeout, "timeout", low=0.0, high=MAX_TIMEOUT_S)
    if seconds <= 0.0:
        raise InputError(
            f"must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, got {timeout!r}",
            field="timeout",
        )
    require_int(max_retries, "max_retries", low=0, high=MAX_RETRIES)


def connect_options(
    backend: str, timeout: float, max_retries: int, protocol: str = "auto"
) -> dict[str, Any]:
    """The `connect` options that carry `--timeout`, `--max-retries` and `--protocol` to
    `backend`'s provider: the embedded engine takes a timeout (its server is local: nothing to
    retry), an OpenAI-compatible endpoint both, an in-process lab model neither."""
    provider = backend.partition(":")[0]
    chosen: dict[str, Any] = {} if protocol == "auto" else {"protocol": protocol}
    if provider == "lab":
        return chosen
    if provider == "local":
        return {"timeout": float(timeout), **chosen}
    return {"timeout": float(timeout), "max_retries": int(max_retries), **chosen}
