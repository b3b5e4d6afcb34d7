"""`cotplan experiment ...`: run the paper's experiments on a backend or an exact reference.

Each command runs one experiment with the `--quick` preset (seconds) or the full one (the
paper's grid): `cotplan.research.runs` checks every option and runs it, `cotplan.research.render`
prints the side-by-side table against the paper, and the CSV tables and PNG charts go into a
report folder (`cotplan.io.reports`: named when the command starts, written as a unit when it
ends). The eleven options every experiment shares are declared once (`shared_options`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.backends.connect_options import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S
from cotplan.cli.options import (
    MAX_RETRIES_OPTION,
    TIMEOUT,
    Spec,
    check_timeouts,
    connect_options,
    opt,
    takes,
)
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.io.reports import ReportFolder

if TYPE_CHECKING:
    from cotplan.research.runs import PredictorSpec

__all__ = ["Shared", "app", "shared_options"]

app = typer.Typer(
    help="Reproduce the paper's experiments on a model or an exact reference.",
    no_args_is_help=True,
)
console = Console()
_I = int | None

# fmt: off
SEED = opt(int, 0, "Seed of every random draw.", "--seed", min=0)
OUT = opt(Path | None, None, "Report folder (default: reports/NAME-<time>-...).", "--out", "-o")
CHARTS = opt(bool, True, "Save PNG charts.", "--charts/--no-charts")
#: The shared options: three before a command's own options in `--help`, the rest after them.
FIRST = {
    "backend": opt(str, "local", "'local' (the embedded model), 'local:PATH', 'openai:MODEL' "
                   "(add --base-url for any OpenAI-compatible server), or an exact reference: "
                   "'laplace', 'kt', 'mle', 'beta:A,B', 'recency:DECAY', 'oracle:P'; or a "
                   "positional-encoding lab model: 'pe:PE[:states][:quick]' with PE one of "
                   "none, learned, sinusoidal, rope, alibi (trained on first use, then loaded).",
                   "--backend", "-b"),
    "base_url": opt(str | None, None, "Endpoint of an OpenAI-compatible server.", "--base-url"),
    "quick": opt(bool, False, "Quick preset (seconds) or the paper's full grid.",
                 "--quick/--full"),
}
LAST = {
    "seed": SEED,
    "out": OUT,
    "charts": CHARTS,
    "instruction": opt(str, "", "Text before the bits in each prompt.", "--instruction"),
    "concurrency": opt(int | None, None, "Sequences scored at once.", "--concurrency"),
    "timeout": TIMEOUT,
    "max_retries": MAX_RETRIES_OPTION,
    "prompt_logprobs": opt(bool, False, "Read every position of a sequence from one request "
                           "(vLLM's prompt_logprobs) instead of one request per position. Needs "
                           "a vLLM server: -b openai:MODEL --base-url URL.", "--prompt-logprobs"),
}
# fmt: on


@dataclass(frozen=True)
class Shared:
    """The options every experiment command takes, as given."""

    backend: str = "local"
    base_url: str | None = None
    quick: bool = False
    seed: int = 0
    out: Path | None = None
    charts: bool = True
    instruction: str = ""
    concurrency: int | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    prompt_logprobs: bool = False

    def predictor(self) -> PredictorSpec:
        """The predictor these options name; --timeout and --max-retries reach its client."""
        from cotplan.research.runs import PredictorSpec

        def connection() -> dict[str, Any]:
            check_timeouts(self.timeout, self.max_retries)
            return connect_options(self.backend, self.timeout, self.max_retries)

        return PredictorSpec(self.backend, self.base_url, self.instruction, self.concurrency,
                             self.prompt_logprobs, connection)  # fmt: skip


def shared_options(
    own: Mapping[str, Spec],
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give `command(shared, **own)` the shared options around its `own` ones: typer reads the
    signature made here, and the command gets the shared ones as one `Shared`."""

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(command)
        def with_shared(**given: Any) -> None:
            shared = {name: given.pop(name) for name in (*FIRST, *LAST)}
            command(Shared(**shared), **given)

        return takes({**FIRST, **own, **LAST})(with_shared)

    return wrap


def _report(shared: Shared, name: str, label: str | None = None) -> ReportFolder:
    """The report folder, named as the command starts (`reports/NAME-<time>-<random>-LABEL`)."""
    label = shared.backend if label is None else label
    return start_report(shared.out, kind=name, label=label, command=f"experiment {name}")


def _save(report: ReportFolder, result: Any, charts: bool) -> None:
    """Save the result's tables and charts, move the files into place together, say where."""
    from cotplan.charts import save as save_result

    files = save_result(result, report.path, charts=charts)
    folder = finish_report(report)
    console.print(f"saved {len(files)} files in {escape(str(folder))}")


def _run(name: str, shared: Shared, **options: Any) -> None:
    """Check, run, print and save experiment `name` (options None: the preset's value)."""
    from cotplan.research.render import progress, render_experiment
    from cotplan.research.runs import prepare_experiment

    given = {key: value for key, value in options.items() if value is not None}
    run = prepare_experiment(name, shared.predictor(), quick=shared.quick, seed=shared.seed,
                             options=given)  # fmt: skip
    if run.notice:
        console.print(run.notice)
    with _report(shared, name) as report:
        result = run.run(progress(console))
        render_experiment(name, result, console)
        _save(report, result, shared.charts)


# fmt: off
@app.command()
@shared_options({
    "design": opt(str, "nested", "'nested' (one pass per sequence) or 'independent'."),
    "n_sequences": opt(_I, None, "Sequences per n (preset if omitted)."),
})
def martingale(shared: Shared, **options: Any) -> None:
    """The martingale gap Δ̂n with its A·log n/n + B fit, beside the exact Bayes reference."""
    _run("martingale", shared, **options)


@app.command()
@shared_options({
    "source": opt(Path | None, None, "A saved martingale folder or martingale_per_sequence.csv "
                  "to reuse.", "--from"),
    "all_positions": opt(bool, False, "Use every position of a nested run."),
})
def debias(shared: Shared, *, source: Path | None, all_positions: bool) -> None:
    """Find, fit and remove the periodic positional part of the per-position gaps."""
    from cotplan.charts import save as save_result
    from cotplan.research.render import progress, render_debias
    from cotplan.research.runs import prepare_debias

    run = prepare_debias(shared.predictor(), quick=shared.quick, seed=shared.seed,
                         source=source, all_positions=all_positions)
    with _report(shared, "debias", "gaps" if source is not None else None) as report:
        outcome = run.run(progress(console))
        if outcome.gaps is not None:
            save_result(outcome.gaps, report.path, charts=shared.charts)
        render_debias(outcome, console)
        _save(report, outcome.result, shared.charts)


@app.command()
@shared_options({"n_orderings": opt(_I, None, "Orderings per multiset (preset if omitted).")})
def order(shared: Shared, **options: Any) -> None:
    """Spread of P(next = 1) over orderings of one multiset, versus orderings averaged."""
    _run("order", shared, **options)


@app.command()
@shared_options({
    "p": opt(str | None, None, "Bernoulli p, or 'prior' (p ~ Beta(1,1)).", "--p"),
    "n_max": opt(_I, None, "Sequence length (preset if omitted)."),
    "n_sequences": opt(_I, None, "Sequences (preset if omitted)."),
})
def entropy(shared: Shared, *, p: str | None, **options: Any) -> None:
    """Cross-entropy per position against H(p), beside Laplace, KT, the MLE and the Bayes limit."""
    from cotplan.research.experiments import read_p

    # `read_p` gives None for the uniform prior, which is not the preset: passed as given.
    extra = {} if p is None else {"p": read_p(p)}
    _run("entropy", shared, **options, **extra)


@app.command()
@shared_options({
    "n_paths": opt(_I, None, "Sampled paths per setting (preset if omitted)."),
    "t3_contexts": opt(_I, None, "Contexts per n for T3 (preset if omitted: 2 quick, 4 full; "
                       "Falck et al.: 9)."),
})
def falck(shared: Shared, **options: Any) -> None:
    """Falck et al.'s T1, T2, T3 checks: bayes_icl's definitions beside cotplan's exact bands."""
    _run("falck", shared, **options)


@app.command()
@shared_options({
    "only": opt(str | None, None, "Comma-separated experiments (martingale,debias,order,entropy,"
                "falck)."),
    "cot_lab": opt(str | None, None, "Also test the k* law on lab reasoning models of these "
                   "families (e.g. parity,state; the lab extra; trains on first use)."),
    "cot_lab_preset": opt(str, "quick", "Lab model preset for --cot-lab: tiny, quick or "
                          "standard."),
    "p": opt(str | None, None, "Entropy experiment: Bernoulli p, or 'prior' (p ~ Beta(1,1)).",
             "--p"),
})
def report(shared: Shared, **options: Any) -> None:
    """Every headline number of the paper beside what this backend gives, with verdicts."""
    from cotplan.research.render import progress, render_report
    from cotplan.research.runs import prepare_report

    run = prepare_report(shared.predictor(), quick=shared.quick, seed=shared.seed, **options)
    with _report(shared, "report") as folder:
        result = run.run(progress(console))
        render_report(result, console)
        _save(folder, result, shared.charts)


PREPARE_ABLATION = {
    "quick": opt(bool, False, "Tiny models (seconds) or the pinned full preset.",
                 "--quick/--full"),
    "encodings": opt(str | None, None, "Comma-separated encodings (default: none,learned,"
                     "sinusoidal,rope,alibi)."),
    "ordinary": opt(bool, True, "Add the ordinary decoder without an encoding.",
                    "--ordinary/--no-ordinary"),
    "seed": SEED,
    "steps": opt(_I, None, "Training steps (preset if omitted)."),
    "threads": opt(_I, None, "torch threads (default: the idle cores, 1 to 4)."),
    "retrain": opt(bool, False, "Train again even where a stored model matches."),
    "seeds": opt(int, 1, "Training seeds (seed, seed+1, ...); 3 or more print the spread "
                 "across seeds."),
    "out": OUT,
    "charts": CHARTS,
}
# fmt: on


@app.command("pe-ablation")
@takes(PREPARE_ABLATION)
def pe_ablation(*, out: Path | None, charts: bool, **options: Any) -> None:
    """Train one small transformer per positional encoding and compare order effects.

    Models differ only in the encoding; each is stored in the user folder, so a second run only
    evaluates. Prints the training losses beside the Bayes-optimal loss, the variance over
    orderings at t = 20 and beyond beside the paper's v2 table, and the martingale-gap fits.
    """
    from cotplan.research.render import progress, render_ablation
    from cotplan.research.runs import prepare_ablation

    run = prepare_ablation(**options)
    with _report(Shared(out=out), "pe-ablation", run.preset) as report:
        result = run.run(progress(console))
        render_ablation(result, console)
        _save(report, result, charts)
