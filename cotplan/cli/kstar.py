"""`cotplan kstar study`: the preregistered k* protocol on any served reasoning model
(`cotplan.research.lab.reasoning.kstar_served`). Every option is checked before the backend is
connected; the protocol is written to the report folder before the first request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from cotplan.cli.options import REQUIRED, opt, takes

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


# fmt: off
STUDY = {
    "backend": opt(str, REQUIRED, "openai:MODEL (with --base-url) or local:thinking-long"),
    "out": opt(Path, REQUIRED, "Report folder (protocol.json is written first)"),
    "base_url": opt(str | None, None, "An OpenAI-compatible server (vLLM)"),
    "sizes": opt(str, "8,16,32,64,128,256", "Sizes n, comma-separated"),
    "items": opt(int, 200, "Items per size and seed"),
    "seeds": opt(int, 3, "Independent item draws"),
    "eps": opt(str, "0.5,0.3,0.2,0.1", "Relative targets ε, comma-separated"),
    "budget_points": opt(int, 12, "Budgets per size, 0 to the cap"),
    "tokens_per_input": opt(int, 16, "Cap of the uncapped run per number"),
    "min_tokens": opt(int, 256, "Smallest cap of the uncapped run"),
    "measure": opt(str, "auto", "auto, logprob (B(k)) or accuracy"),
    "prompt_logprobs": opt(bool, False, "The server scores prompts (vLLM's prompt_logprobs)"),
    "plan_only": opt(bool, False, "Print the protocol and its size; connect to nothing"),
}
# fmt: on


@app.command("study")
@takes(STUDY)
def study_command(*, out: Path, base_url: str | None, prompt_logprobs: bool, plan_only: bool,
                  sizes: str, eps: str, **options: Any) -> None:  # fmt: skip
    """Run the k* protocol: B(k) per size, the premise test, β, the ε-ratio, k* on length."""
    from cotplan.backends import connect
    from cotplan.research.lab.reasoning.kstar_served import check_protocol, kstar_study

    sizes_ = _numbers(sizes, "sizes", int)
    protocol = check_protocol(sizes=sizes_, eps=_numbers(eps, "eps", float), **options)  # type: ignore[arg-type]
    if plan_only:
        console.print(protocol.plan_text(), highlight=False, markup=False, soft_wrap=True)
        return
    connection: dict[str, Any] = {"prompt_logprobs": True} if prompt_logprobs else {}
    with connect(options["backend"], base_url=base_url, **connection) as model:
        study = kstar_study(model, protocol, out)
    console.print(study.summary(), highlight=False, markup=False, soft_wrap=True)


@app.command("controls")
@takes({
    "out": opt(Path, REQUIRED, "Folder for controls.csv and its tables"),
    "preset": opt(str, "quick", "quick (seconds) or full (the benchmarks' scale)"),
})  # fmt: skip
def controls_command(*, out: Path, preset: str) -> None:
    """Run the controls (debias on exact Bayes, planted √n and linear laws, the premise)."""
    from cotplan.research.controls import run_controls

    controls = run_controls(preset)
    controls.save(out)
    console.print(controls.summary(), highlight=False, markup=False, soft_wrap=True)
    if not controls.passed:
        raise typer.Exit(1)
