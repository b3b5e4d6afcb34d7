"""`cotplan serve`: an OpenAI-compatible gateway on 127.0.0.1 that applies a plan's cap.

Parses and checks every option, then runs the gateway (`cotplan.production.gateway.Gateway`)
until Ctrl-C; `--exit certified` applies the certified early exit (exit.json beside the plan,
or `--exit-plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cotplan.errors import InputError, MissingKeyError
from cotplan.validation import require_choice

__all__ = ["register", "serve"]

_console = Console()


def serve(
    *,
    plan: Annotated[
        list[Path],
        typer.Option(
            help="The plan to apply (plan.json); repeat it to serve one plan per model, "
            "routed by the call's model. SIGHUP reloads them."
        ),
    ],
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
    exit_: Annotated[
        str,
        typer.Option(
            "--exit",
            help="'none' (the fixed cap) or 'certified' (the certified early exit under it, "
            "from the exit.json `cotplan plan --exit certified` wrote).",
        ),
    ] = "none",
    exit_plan: Annotated[
        Path | None,
        typer.Option(help="With --exit certified: exit.json (default: beside the plan)."),
    ] = None,
    provider: Annotated[
        str,
        typer.Option(
            help="What the upstream is: 'detect' (ask it once: llama.cpp /props, vLLM "
            "/version, SGLang /get_server_info), or a provider such as llama.cpp-thinking, "
            "vllm-thinking, sglang-thinking (the server caps the thinking in one request) "
            "or openai-compatible (cotplan forces the answer in two requests)."
        ),
    ] = "detect",
    client_keys_file: Annotated[
        Path | None,
        typer.Option(
            help="A file of the gateway's own client keys, one a line: each call must carry "
            "one as its bearer token (none: no authentication)."
        ),
    ] = None,
    client_keys_env: Annotated[
        str | None,
        typer.Option(help="An environment variable holding client keys, comma-separated."),
    ] = None,
    size_policy: Annotated[
        str,
        typer.Option(
            help="A call with no size, or one beyond the plan's reach: 'largest' (the plan's "
            "largest certified cap, noted in the report) or 'refuse' (400 naming `size`)."
        ),
    ] = "largest",
    workers: Annotated[
        int,
        typer.Option(
            help="Processes serving the port, sharing the call log and /metrics (each "
            "reloads its plans on SIGHUP, which the first process passes on)."
        ),
    ] = 1,
) -> None:
    """Serve /v1/chat/completions on 127.0.0.1 with the plan's reasoning cap applied.

    Point any OpenAI SDK's base_url at http://127.0.0.1:PORT/v1; a call's item size may come
    in the body's `size` field, the X-Cotplan-Size header or metadata.cotplan_size (without
    one, the plan's largest certified cap applies). See docs/shipping.md. With --exit certified,
    each call stops thinking where the certified rule fires, never past the cap.
    """
    from cotplan.backends.budgets import rule_for_model
    from cotplan.backends.keys import find_key
    from cotplan.cli.calibrate import check_timeouts
    from cotplan.planner import SavedPlan
    from cotplan.planner.exit_plan import EXIT_CHOICES, exit_plan_for
    from cotplan.production.calls import SIZE_POLICIES
    from cotplan.production.client_keys import keys_from_env, read_client_keys
    from cotplan.production.gateway import Gateway, check_port, check_upstream
    from cotplan.production.gateway_workers import check_workers
    from cotplan.production.log import CallLog

    # Every option is checked before anything starts listening.
    require_choice(exit_, "exit", EXIT_CHOICES)
    if exit_plan is not None and exit_ != "certified":
        raise InputError("is read only with --exit certified", field="exit_plan")
    saved_plans = [SavedPlan.load(path) for path in plan]
    saved = saved_plans[0]
    if len(plan) > 1 and exit_ == "certified":
        raise InputError("serves one plan: give one --plan with --exit certified", field="exit")
    require_choice(size_policy, "size_policy", SIZE_POLICIES)
    check_workers(workers)
    if provider != "detect":
        rule_for_model(provider, "")  # an unknown name is refused before anything starts
    keys: tuple[str, ...] = ()
    if client_keys_file is not None:
        keys += read_client_keys(client_keys_file)
    if client_keys_env is not None:
        keys += keys_from_env(client_keys_env)
    exits = None
    if exit_ == "certified":
        exits = exit_plan_for(exit_plan, plan[0], eps=saved.eps, model=saved.model)
    upstream = check_upstream(upstream)
    port = check_port(port)
    check_timeouts(timeout, max_retries=0)  # the gateway's own retries are not an option
    call_log = CallLog(log)
    call_log.check()  # a log that cannot take rows would fail each call after it was paid for
    key = None
    if api_key_env is not None:
        key = find_key(api_key_env)
        if not key:
            raise MissingKeyError(api_key_env, "the upstream")
    # Built before the banner: a plan the gateway refuses (a certified exit where the
    # provider hides the reasoning, ...) is refused before anything is said to be served.
    gateway = Gateway(
        plan if len(plan) > 1 else saved,
        upstream,
        port=port,
        api_key=key,
        log=call_log,
        allow_other_model=allow_other_model,
        timeout=timeout,
        exit="certified" if exits is not None else "none",
        exit_plan=exits,
        provider=provider,
        client_keys=keys,
        size_policy=size_policy,
    )
    models = ", ".join(f"{p.model or '(no model recorded)'} (ε = {p.eps:g})" for p in saved_plans)
    _console.print(
        f"serving the plans for {models} on http://127.0.0.1:{port}/v1 → {upstream}; "
        f"call log: {call_log.path}",
        highlight=False,
    )
    how = (
        f"{gateway.detected.provider}: {gateway.detected.note}"
        if gateway.detected is not None
        else f"{provider} (declared)"
    )
    _console.print(
        f"upstream: {how}; client keys: {len(keys) or 'none (no authentication)'}; "
        "/health, /ready, /metrics; SIGHUP reloads the plans",
        highlight=False,
    )
    if exits is not None:
        sizes = ", ".join(
            f"n = {n}: {rule.rule.name} under {rule.ceiling}, probes every {rule.every}"
            for n, rule in sorted(exits.sizes.items())
        )
        _console.print(f"certified early exit ({sizes})", highlight=False)
    raise typer.Exit(gateway.run(workers))


def register(app: typer.Typer) -> None:
    """Add `cotplan serve` to the top-level app."""
    app.command()(serve)
