"""`cotplan serve`: an OpenAI-compatible gateway on 127.0.0.1 that applies a plan's cap.

Parses and checks every option, then runs `cotplan.production.gateway.serve` until Ctrl-C.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cotplan.errors import InputError, MissingKeyError

__all__ = ["register", "serve"]

_console = Console()


def serve(
    *,
    plan: Annotated[Path, typer.Option(help="The plan to apply (plan.json).")],
    upstream: Annotated[
        str,
        typer.Option(
            help="Base URL of the OpenAI-compatible server the calls go to, e.g. "
            "http://127.0.0.1:8080/v1 (llama.cpp, vLLM) or https://api.openai.com/v1."
        ),
    ],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8000,
    log: Annotated[
        Path | None,
        typer.Option(help="The call log (SQLite). Default: production.sqlite in COTPLAN_HOME."),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(help="Environment variable holding the upstream's API key (none: no key)."),
    ] = None,
    allow_other_model: Annotated[
        bool,
        typer.Option(help="Apply the plan to models it was not made for (not certified)."),
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds each upstream request may take.")] = 120.0,
) -> None:
    """Serve /v1/chat/completions on 127.0.0.1 with the plan's reasoning cap applied.

    Point any OpenAI SDK's base_url at http://127.0.0.1:PORT/v1 and pass each call's item
    size in the body's `size` field (or the X-Cotplan-Size header).
    """
    from cotplan.backends.keys import find_key
    from cotplan.planner import SavedPlan
    from cotplan.production.gateway import check_port, check_upstream
    from cotplan.production.gateway import serve as run_gateway
    from cotplan.production.log import CallLog

    # Every option is checked before anything starts listening.
    saved = SavedPlan.load(plan)
    upstream = check_upstream(upstream)
    port = check_port(port)
    if timeout <= 0:
        raise InputError(f"must be positive, got {timeout!r}", field="timeout")
    if log is not None and log.is_dir():
        raise InputError(f"is a folder, not a file: {log}", field="log")
    key = None
    if api_key_env is not None:
        key = find_key(api_key_env)
        if not key:
            raise MissingKeyError(api_key_env, "the upstream")
    call_log = CallLog(log)
    model = saved.model or "(no model recorded)"
    _console.print(
        f"serving the plan for {model} (ε = {saved.eps:g}) on http://127.0.0.1:{port}/v1 "
        f"→ {upstream}; call log: {call_log.path}",
        highlight=False,
    )
    run_gateway(
        saved,
        upstream,
        port=port,
        api_key=key,
        log=call_log,
        allow_other_model=allow_other_model,
        timeout=timeout,
    )


def register(app: typer.Typer) -> None:
    """Add `cotplan serve` to the top-level app."""
    app.command()(serve)
