"""A gateway from what a person gives `cotplan serve`: plan files, an upstream and options,
every one checked before anything listens.

`serve_gateway` reads the plans (and the certified exit plan with ``exit="certified"``), the
client keys and the upstream's API key, checks the call log can take rows, and builds the
`Gateway`, which refuses a plan it cannot apply before any banner says it is served.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cotplan.backends.connect_options import check_timeouts
from cotplan.errors import InputError, MissingKeyError
from cotplan.planner.exit_plan import EXIT_CHOICES, ExitPlan, exit_plan_for
from cotplan.planner.saved_plan import SavedPlan
from cotplan.production.calls import SIZE_POLICIES
from cotplan.production.client_keys import keys_from_env, read_client_keys
from cotplan.production.gateway import Gateway, check_port, check_upstream
from cotplan.production.log import CallLog
from cotplan.validation import require_choice

__all__ = ["Served", "serve_gateway"]


@dataclass(frozen=True)
class Served:
    """A gateway ready to run, with what it serves: the plans, the exit plan (None: the fixed
    cap), the upstream, the call log, the provider as declared and the client keys."""

    gateway: Gateway
    plans: tuple[SavedPlan, ...]
    exits: ExitPlan | None
    upstream: str
    log: CallLog
    provider: str
    client_keys: tuple[str, ...]

    def to_frame(self) -> pd.DataFrame:
        """One row per plan served: its model, ε and where it points."""
        return pd.DataFrame(
            [
                {
                    "model": p.model,
                    "eps": p.eps,
                    "upstream": self.upstream,
                    "port": self.gateway.port,
                }
                for p in self.plans
            ]
        )


def _client_keys(path: Path | None, env: str | None) -> tuple[str, ...]:
    keys: tuple[str, ...] = ()
    if path is not None:
        keys += read_client_keys(path)
    if env is not None:
        keys += keys_from_env(env)
    return keys


def serve_gateway(
    plans: Sequence[str | os.PathLike[str]],
    upstream: str,
    *,
    port: int = 8000,
    log: str | os.PathLike[str] | None = None,
    api_key_env: str | None = None,
    allow_other_model: bool = False,
    timeout: float = 120.0,
    exit: str = "none",
    exit_plan: str | os.PathLike[str] | None = None,
    provider: str = "detect",
    client_keys_file: str | os.PathLike[str] | None = None,
    client_keys_env: str | None = None,
    size_policy: str = "largest",
    model_map: str | os.PathLike[str] | None = None,
    workers: int = 1,
    responses_uncapped: bool = False,
) -> Served:
    """A `Gateway` for the plan files `plans` (one per model, routed by the call's model),
    every input checked before anything starts; `InputError` names the one at fault.
    `model_map` declares the team's own model names first (`cotplan.register_model`);
    `responses_uncapped` passes Responses calls the upstream cannot cap on uncapped, flagged,
    instead of refusing them (`cotplan.production.responses_cap`)."""
    from cotplan.backends.budgets import rule_for_model
    from cotplan.backends.keys import find_key
    from cotplan.production.gateway_workers import check_workers

    if model_map is not None:
        from cotplan.production.model_map import load_model_map

        load_model_map(model_map)

    require_choice(exit, "exit", EXIT_CHOICES)
    if exit_plan is not None and exit != "certified":
        raise InputError("is read only with --exit certified", field="exit_plan")
    paths = [Path(path) for path in plans]
    saved = tuple(SavedPlan.load(path) for path in paths)
    if len(paths) > 1 and exit == "certified":
        raise InputError("serves one plan: give one --plan with --exit certified", field="exit")
    require_choice(size_policy, "size_policy", SIZE_POLICIES)
    check_workers(workers)  # the processes start in `Gateway.run(workers)`
    if provider != "detect":
        rule_for_model(provider, "")  # an unknown name is refused before anything starts
    keys = _client_keys(
        None if client_keys_file is None else Path(client_keys_file), client_keys_env
    )
    exits = None
    if exit == "certified":
        exits = exit_plan_for(exit_plan, paths[0], eps=saved[0].eps, model=saved[0].model)
    upstream = check_upstream(upstream)
    port = check_port(port)
    check_timeouts(timeout, max_retries=0)  # the gateway's own retries are not an option
    call_log = CallLog(None if log is None else Path(log))
    call_log.check()  # a log that cannot take rows would fail each call after it was paid for
    key = None
    if api_key_env is not None:
        key = find_key(api_key_env)
        if not key:
            raise MissingKeyError(api_key_env, "the upstream")
    gateway = Gateway(
        # The files, not what was read from them: a plan file that changes is read again.
        paths,
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
        responses="uncapped" if responses_uncapped else "refuse",
        model_map=model_map,
    )
    return Served(gateway, saved, exits, upstream, call_log, provider, keys)
