"""`cotplan serve`: an OpenAI-compatible gateway on 127.0.0.1 that applies a plan's cap.

`cotplan.production.serve_setup.serve_gateway` checks every option and builds the gateway
(`cotplan.production.gateway.Gateway`), which runs until Ctrl-C; `--exit certified` applies the
certified early exit (exit.json beside the plan, or `--exit-plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cotplan.cli.options import ExitPlanFile
from cotplan.render.production import print_gateway_banner

__all__ = ["serve"]

_console = Console()


Plans = Annotated[
    list[Path],
    typer.Option(
        help="The plan to apply (plan.json); repeat it to serve one plan per model, "
        "routed by the call's model. SIGHUP reloads them."
    ),
]
Upstream = Annotated[
    str,
    typer.Option(
        help="Base URL of the OpenAI-compatible server the calls go to, e.g. "
        "http://127.0.0.1:8080/v1 (llama.cpp, vLLM) or https://api.openai.com/v1."
    ),
]
Port = Annotated[int, typer.Option(help="Port on 127.0.0.1.")]
LogFile = Annotated[
    Path | None,
    typer.Option(help="The call log (SQLite). Default: production.sqlite in COTPLAN_HOME."),
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(help="Environment variable holding the upstream's API key (none: no key)."),
]
AllowOther = Annotated[
    bool,
    typer.Option(help="Apply the plan to models it was not made for (not certified)."),
]
UpstreamTimeout = Annotated[float, typer.Option(help="Seconds each upstream request may take.")]
ServeExit = Annotated[
    str,
    typer.Option(
        "--exit",
        help="'none' (the fixed cap) or 'certified' (the certified early exit under it, "
        "from the exit.json `cotplan plan --exit certified` wrote).",
    ),
]
Provider = Annotated[
    str,
    typer.Option(
        help="What the upstream is: 'detect' (ask it once: llama.cpp /props, vLLM "
        "/version, SGLang /get_server_info), or a provider such as llama.cpp-thinking, "
        "vllm-thinking, sglang-thinking (the server caps the thinking in one request) "
        "or openai-compatible (cotplan forces the answer in two requests)."
    ),
]
ClientKeysFile = Annotated[
    Path | None,
    typer.Option(
        help="A file of the gateway's own client keys, one a line: each call must carry "
        "one as its bearer token (none: no authentication)."
    ),
]
ClientKeysEnv = Annotated[
    str | None,
    typer.Option(help="An environment variable holding client keys, comma-separated."),
]
Workers = Annotated[
    int,
    typer.Option(
        help="Processes serving the port, sharing the call log and /metrics (each "
        "reloads its plans on SIGHUP, which the first process passes on)."
    ),
]
ModelMap = Annotated[
    Path | None,
    typer.Option(
        help="A model map (TOML or JSON): protocol, template and server of the team's own "
        "model names (see cotplan.register_model)."
    ),
]
SizePolicy = Annotated[
    str,
    typer.Option(
        help="A call with no size, or one beyond the plan's reach: 'largest' (the plan's "
        "largest certified cap, noted in the report) or 'refuse' (400 naming `size`)."
    ),
]
Uncapped = Annotated[bool, typer.Option(help="Pass uncappable /v1/responses calls on uncapped.")]


def serve(
    *,
    plan: Plans,
    upstream: Upstream,
    port: Port = 8000,
    log: LogFile = None,
    api_key_env: ApiKeyEnv = None,
    allow_other_model: AllowOther = False,
    timeout: UpstreamTimeout = 120.0,
    exit_: ServeExit = "none",
    exit_plan: ExitPlanFile = None,
    provider: Provider = "detect",
    client_keys_file: ClientKeysFile = None,
    client_keys_env: ClientKeysEnv = None,
    size_policy: SizePolicy = "largest",
    model_map: ModelMap = None,
    workers: Workers = 1,
    responses_uncapped: Uncapped = False,
) -> None:
    """Serve /v1/chat/completions on 127.0.0.1 with the plan's reasoning cap applied.

    Point any OpenAI SDK's base_url at http://127.0.0.1:PORT/v1; a call's item size may come
    in the body's `size` field, the X-Cotplan-Size header or metadata.cotplan_size (without
    one, the plan's largest certified cap applies). See docs/shipping.md. With --exit certified,
    each call stops thinking where the certified rule fires, never past the cap.
    """
    from cotplan.production.serve_setup import serve_gateway

    # Every option is checked before anything starts listening.
    served = serve_gateway(
        plan, upstream, port=port, log=log, api_key_env=api_key_env, workers=workers,
        allow_other_model=allow_other_model, timeout=timeout, exit=exit_, exit_plan=exit_plan,
        provider=provider, client_keys_file=client_keys_file, client_keys_env=client_keys_env,
        size_policy=size_policy, model_map=model_map, responses_uncapped=responses_uncapped,
    )  # fmt: skip
    print_gateway_banner(_console, served)
    raise typer.Exit(served.gateway.run(workers))
