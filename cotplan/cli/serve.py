"""`cotplan serve`: an OpenAI-compatible gateway on 127.0.0.1 that applies a plan's cap.

`cotplan.production.serve_setup.serve_gateway` checks every option and builds the gateway
(`cotplan.production.gateway.Gateway`), which runs until Ctrl-C; `--exit certified` applies the
certified early exit (exit.json beside the plan, or `--exit-plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from cotplan.cli.options import EXIT_PLAN_FILE, REQUIRED, opt, takes
from cotplan.render.production import print_gateway_banner

__all__ = ["serve"]

_console = Console()

# fmt: off
SERVE_GATEWAY = {
    "plan": opt(list[Path], REQUIRED, "The plan to apply (plan.json); repeat it to serve one "
                "plan per model, routed by the call's model. SIGHUP reloads them."),
    "upstream": opt(str, REQUIRED, "Base URL of the OpenAI-compatible server the calls go to, "
                    "e.g. http://127.0.0.1:8080/v1 (llama.cpp, vLLM) or https://api.openai.com/v1."),
    "port": opt(int, 8000, "Port on 127.0.0.1."),
    "log": opt(Path | None, None, "The call log (SQLite). Default: production.sqlite in "
               "COTPLAN_HOME."),
    "api_key_env": opt(str | None, None, "Environment variable holding the upstream's API key "
                       "(none: no key)."),
    "allow_other_model": opt(bool, False, "Apply the plan to models it was not made for (not "
                             "certified)."),
    "timeout": opt(float, 120.0, "Seconds each upstream request may take."),
    "exit": opt(str, "none", "'none' (the fixed cap) or 'certified' (the certified early exit "
                "under it, from the exit.json `cotplan plan --exit certified` wrote).", "--exit"),
    "exit_plan": EXIT_PLAN_FILE,
    "provider": opt(str, "detect", "What the upstream is: 'detect' (ask it once: llama.cpp "
                    "/props, vLLM /version, SGLang /get_server_info), or a provider such as "
                    "llama.cpp-thinking, vllm-thinking, sglang-thinking (the server caps the "
                    "thinking in one request) or openai-compatible (cotplan forces the answer in "
                    "two requests)."),
    "client_keys_file": opt(Path | None, None, "A file of the gateway's own client keys, one a "
                            "line: each call must carry one as its bearer token (none: no "
                            "authentication)."),
    "client_keys_env": opt(str | None, None, "An environment variable holding client keys, "
                           "comma-separated."),
    "size_policy": opt(str, "largest", "A call with no size, or one beyond the plan's reach: "
                       "'largest' (the plan's largest certified cap, noted in the report) or "
                       "'refuse' (400 naming `size`)."),
    "model_map": opt(Path | None, None, "A model map (TOML or JSON): protocol, template and "
                     "server of the team's own model names (see cotplan.register_model)."),
    "workers": opt(int, 1, "Processes serving the port, sharing the call log and /metrics (each "
                   "reloads its plans on SIGHUP, which the first process passes on)."),
    "responses_uncapped": opt(bool, False, "Pass uncappable unstreamed /v1/responses calls on."),
}
# fmt: on


@takes(SERVE_GATEWAY)
def serve(**options: Any) -> None:
    """Serve /v1/chat/completions on 127.0.0.1 with the plan's reasoning cap applied.

    Point any OpenAI SDK's base_url at http://127.0.0.1:PORT/v1; a call's item size may come
    in the body's `size` field, the X-Cotplan-Size header or metadata.cotplan_size (without
    one, the plan's largest certified cap applies). See docs/shipping.md. With --exit certified,
    each call stops thinking where the certified rule fires, never past the cap.
    """
    from cotplan.production.serve_setup import serve_gateway

    # Every option is checked before anything starts listening.
    served = serve_gateway(options.pop("plan"), **options)
    print_gateway_banner(_console, served)
    raise typer.Exit(served.gateway.run(options["workers"]))
