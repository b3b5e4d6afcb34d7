"""Checks of command-line options, run before a command connects to a model.

A typo must cost nothing: every command validates all of its options, and finds its model file
or endpoint spec well formed, before it starts a server or sends a request (which may be paid).
`cotplan calibrate` uses `check_calibrate_options`; the other commands use the pieces
(`check_backend`, `check_int`, `check_out`...). Each raises `InputError` naming the option.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from cotplan.errors import InputError, ModelFileError
from cotplan.model_registry import PROTOCOL_NAMES

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "MAX_BOOTSTRAP",
    "MAX_BUDGET",
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_RETRIES",
    "MAX_TIMEOUT_S",
    "MaxRetriesOption",
    "ProtocolOption",
    "TimeoutOption",
    "check_backend",
    "check_budgets",
    "check_calibrate_options",
    "check_int",
    "check_out",
    "check_probability",
    "check_protocol",
    "check_timeouts",
    "connect_options",
]

#: The largest reasoning budget accepted: above every provider's output cap (128k tokens).
MAX_BUDGET = 131_072
#: Items per size: a calibration beyond this is a typo, not a plan.
MAX_COUNT = 10_000
#: Requests in flight at once.
MAX_CONCURRENCY = 256
#: Bootstrap resamples: beyond this a fit runs for hours and its intervals gain nothing.
MAX_BOOTSTRAP = 100_000

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

TimeoutOption = Annotated[
    float,
    typer.Option(
        help="Seconds one attempt waits for an answer (long by default: a reasoning model says "
        "nothing until it has thought). A hung endpoint costs at most timeout x (retries + 1) "
        "per request; Ctrl-C stops at once."
    ),
]
MaxRetriesOption = Annotated[
    int,
    typer.Option(
        help="Retries of a request after a 429, a 5xx, a dropped connection or a timeout."
    ),
]
ProtocolOption = Annotated[
    str,
    typer.Option(
        help="How the model writes and closes its thinking: 'auto' (the model registry's, by "
        "name), 'plain' (cotplan's 'Think step by step ... Answer:'), 'think' (<think> ... "
        "</think>: R1 distills, QwQ) or 'qwen3'. Set it for a thinking model served under a "
        "name cotplan does not know."
    ),
]


def check_int(value: int | None, field: str, *, low: int = 1, high: int | None = None) -> None:
    """`value` (None allowed: the default) is a whole number in [low, high]."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be a whole number, got {value!r}", field=field)
    if value < low or (high is not None and value > high):
        span = f"at least {low}" if high is None else f"in {low}..{high}"
        raise InputError(f"must be {span}, got {value}", field=field)


def check_probability(value: float | None, field: str, *, closed_high: bool = False) -> None:
    """`value` (None allowed) lies in (0, 1), or (0, 1] with `closed_high`."""
    if value is None:
        return
    ok = isinstance(value, int | float) and not math.isnan(value)
    ok = ok and value > 0.0 and (value <= 1.0 if closed_high else value < 1.0)
    if not ok:
        span = "(0, 1]" if closed_high else "(0, 1)"
        raise InputError(f"must be in {span}, got {value!r}", field=field)


def check_budgets(text: str) -> list[int] | str:
    """`--budgets`: 'paper', or comma-separated whole numbers in 0..MAX_BUDGET."""
    if text.strip() == "paper":
        return "paper"
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise InputError("give at least one budget, e.g. 0,8,32, or 'paper'", field="budgets")
    grid: list[int] = []
    for part in parts:
        if not part:
            raise InputError(f"has an empty entry in {text!r}", field="budgets")
        try:
            k = int(part)
        except ValueError:
            raise InputError(
                f"must be whole numbers of tokens, got {part!r}", field="budgets"
            ) from None
        if not 0 <= k <= MAX_BUDGET:
            raise InputError(f"must be in 0..{MAX_BUDGET} tokens, got {k}", field="budgets")
        grid.append(k)
    return grid


def check_out(out: Path | None, field: str = "out") -> None:
    """A report folder we could create: not an existing file, under a writable folder."""
    if out is None:
        return
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


def check_backend(spec: str, base_url: str | None = None) -> None:
    """A backend spec that `connect` can honour, checked without starting or calling anything.

    For the embedded engine the model file is located and checked (a known name on this
    machine, or a GGUF file: not a folder, a device or a missing path); for an endpoint the
    URL must be http(s). A lab family must be known. API keys are checked by `connect` (which
    sends nothing either).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("must be 'local', 'local:PATH', or 'openai:MODEL'", field="backend")
    provider, _, rest = spec.partition(":")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise InputError(f"must start with http:// or https://, got {base_url!r}", field="base_url")
    if provider == "local":
        from cotplan.backends.models import locate

        model = rest or "smollm2-135m-instruct"
        try:
            locate(model)
        except ModelFileError as exc:
            raise InputError(str(exc), field="backend") from exc
        return
    if provider == "lab":
        from cotplan.lab.reasoning.tasks import get_lab_family

        try:
            get_lab_family(rest)  # "parity" or "lab-parity"
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], field="backend") from exc
        return
    if provider == "openai" and not rest:
        raise InputError("name the model: 'openai:MODEL'", field="backend")


def check_calibrate_options(
    *,
    budgets: str,
    count: int,
    concurrency: int | None,
    answer_tokens: int,
    backend: str,
    base_url: str | None,
    out: Path | None,
) -> list[int] | str:
    """Every `cotplan calibrate` option that the item loader does not check; the budget grid."""
    grid = check_budgets(budgets)
    check_int(count, "count", high=MAX_COUNT)
    check_int(concurrency, "concurrency", high=MAX_CONCURRENCY)
    check_int(answer_tokens, "answer_tokens", high=MAX_BUDGET)
    check_out(out)
    check_backend(backend, base_url)
    return grid


def check_timeouts(timeout: float, max_retries: int) -> None:
    """`--timeout` in (0, MAX_TIMEOUT_S] seconds and `--max-retries` in 0..MAX_RETRIES."""
    if not (isinstance(timeout, int | float) and math.isfinite(timeout)) or not (
        0.0 < timeout <= MAX_TIMEOUT_S
    ):
        raise InputError(
            f"must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, got {timeout!r}",
            field="timeout",
        )
    check_int(max_retries, "max_retries", low=0, high=MAX_RETRIES)


def check_protocol(protocol: str) -> None:
    """`--protocol` names a known reasoning protocol (or 'auto')."""
    if protocol != "auto" and protocol not in PROTOCOL_NAMES:
        known = ", ".join(["auto", *PROTOCOL_NAMES])
        raise InputError(f"must be one of {known}, got {protocol!r}", field="protocol")


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
