"""`cotplan kstar study`: the preregistered k* protocol on any served reasoning model
(`cotplan.research.lab.reasoning.kstar_served`). Every option is checked before the backend is
connected; the protocol is written to the report folder before the first request."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

__all__ = ["app"]

app = typer.Typer(help="The k* law on a served reasoning model.", no_args_is_help=True)
console = Console()
Opt = typer.Option


def _numbers(text: str, field: str, kind: type[int] | type[float]) -> list[int] | list[float]:
    from cotplan.errors import InputError

    try:
        return [kind(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise InputError(f"must be comma-separated numbers, got {text!r}", field=field) from exc


@app.command("study")
def study_command(
    *,
    backend: Annotated[str, Opt(help="openai:MODEL (with --base-url) or local:thinking-long")],
    out: Annotated[Path, Opt(help="Report folder (protocol.json is written first)")],
    base_url: Annotated[str | None, Opt(help="An OpenAI-compatible server (vLLM)")] = None,
    sizes: Annotated[str, Opt(help="Sizes n, comma-separated")] = "8,16,32,64,128,256",
    items: Annotated[int, Opt(help="Items per size and seed")] = 200,
    seeds: Annotated[int, Opt(help="Independent item draws")] = 3,
    eps: Annotated[str, Opt(help="Relative targets ε, comma-separated")] = "0.5,0.3,0.2,0.1",
    budget_points: Annotated[int, Opt(help="Budgets per size, 0 to the cap")] = 12,
    tokens_per_input: Annotated[int, Opt(help="Cap of the uncapped run per number")] = 16,
    min_tokens: Annotated[int, Opt(help="Smallest cap of the uncapped run")] = 256,
    measure: Annotated[str, Opt(help="auto, logprob (B(k)) or accuracy")] = "auto",
    prompt_logprobs: Annotated[
        bool, Opt(help="The server scores prompts (vLLM's prompt_logprobs)")
    ] = False,
    plan_only: Annotated[
        bool, Opt(help="Print the protocol and its size; connect to nothing")
    ] = False,
) -> None:
    """Run the k* protocol: B(k) per size, the premise test, β, the ε-ratio, k* on length."""
    from cotplan.backends import connect
    from cotplan.research.lab.reasoning.kstar_served import check_protocol, kstar_study

    protocol = check_protocol(
        backend,
        sizes=_numbers(sizes, "sizes", int),  # type: ignore[arg-type]
        items=items,
        seeds=seeds,
        eps=_numbers(eps, "eps", float),
        budget_points=budget_points,
        tokens_per_input=tokens_per_input,
        min_tokens=min_tokens,
        measure=measure,
    )
    if plan_only:
        console.print(protocol.plan_text(), highlight=False, markup=False, soft_wrap=True)
        return
    options: dict[str, Any] = {"prompt_logprobs": True} if prompt_logprobs else {}
    with connect(backend, base_url=base_url, **options) as model:
        study = kstar_study(model, protocol, out)
    console.print(study.summary(), highlight=False, markup=False, soft_wrap=True)


@app.command("controls")
def controls_command(
    *,
    out: Annotated[Path, Opt(help="Folder for controls.csv and its tables")],
    preset: Annotated[str, Opt(help="quick (seconds) or full (the benchmarks' scale)")] = "quick",
) -> None:
    """Run the controls (debias on exact Bayes, planted √n and linear laws, the premise)."""
    from cotplan.research.controls import run_controls

    controls = run_controls(preset)
    controls.save(out)
    console.print(controls.summary(), highlight=False, markup=False, soft_wrap=True)
    if not controls.passed:
        raise typer.Exit(1)
