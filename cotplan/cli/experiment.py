"""`cotplan experiment ...`: run the paper's experiments on a backend or an exact reference.

Each command runs one experiment with the `--quick` preset (seconds) or the full one (the
paper's grid): `cotplan.research.runs` checks every option and runs it, `cotplan.research.render`
prints the side-by-side table against the paper, and the CSV tables and PNG charts go into a
report folder (`cotplan.io.reports`: named when the command starts, written as a unit when it
ends). The eleven options every experiment shares are declared once (`shared_options`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.backends.connect_options import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S
from cotplan.cli.options import MAX_RETRIES_OPTION, TIMEOUT, check_timeouts, connect_options
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

BACKEND_HELP = (
    "'local' (the embedded model), 'local:PATH', 'openai:MODEL' (add --base-url for any "
    "OpenAI-compatible server), or an exact reference: 'laplace', 'kt', 'mle', 'beta:A,B', "
    "'recency:DECAY', 'oracle:P'; or a positional-encoding lab model: "
    "'pe:PE[:states][:quick]' with PE one of none, learned, sinusoidal, rope, alibi (trained "
    "on first use, then loaded)."
)
Opt = typer.Option
Backend = Annotated[str, Opt("--backend", "-b", help=BACKEND_HELP)]
BaseUrl = Annotated[str | None, Opt("--base-url", help="Endpoint of an OpenAI-compatible server.")]
Quick = Annotated[
    bool, Opt("--quick/--full", help="Quick preset (seconds) or the paper's full grid.")
]
Seed = Annotated[int, Opt("--seed", min=0, help="Seed of every random draw.")]
Out = Annotated[
    Path | None, Opt("--out", "-o", help="Report folder (default: reports/NAME-<time>-...).")
]
Charts = Annotated[bool, Opt("--charts/--no-charts", help="Save PNG charts.")]
Instruction = Annotated[str, Opt("--instruction", help="Text before the bits in each prompt.")]
Concurrency = Annotated[int | None, Opt("--concurrency", help="Sequences scored at once.")]
PromptLogprobs = Annotated[
    bool,
    Opt(
        "--prompt-logprobs",
        help="Read every position of a sequence from one request (vLLM's prompt_logprobs) "
        "instead of one request per position. Needs a vLLM server: -b openai:MODEL "
        "--base-url URL.",
    ),
]


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


#: The shared options' types (with their flags and help): three before a command's own
#: options in `--help`, the rest after them.
_FIRST = {"backend": Backend, "base_url": BaseUrl, "quick": Quick}
_LAST = {
    "seed": Seed,
    "out": Out,
    "charts": Charts,
    "instruction": Instruction,
    "concurrency": Concurrency,
    "timeout": TIMEOUT[0],
    "max_retries": MAX_RETRIES_OPTION[0],
    "prompt_logprobs": PromptLogprobs,
}


def shared_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command(shared, **own)` the shared options around its own ones: typer reads the
    signature made here, and the command gets them as one `Shared`."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values()][1:]
    defaults = {f.name: f.default for f in dataclasses.fields(Shared)}

    def option(name: str, kind: Any) -> inspect.Parameter:
        keyword = inspect.Parameter.KEYWORD_ONLY
        return inspect.Parameter(name, keyword, default=defaults[name], annotation=kind)

    @functools.wraps(command)
    def with_shared(**given: Any) -> None:
        command(Shared(**{name: given.pop(name) for name in defaults}), **given)

    params = [option(*o) for o in _FIRST.items()] + own + [option(*o) for o in _LAST.items()]
    with_shared.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return with_shared


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


@app.command()
@shared_options
def martingale(
    shared: Shared,
    *,
    design: Annotated[
        str, Opt(help="'nested' (one pass per sequence) or 'independent'.")
    ] = "nested",
    n_sequences: Annotated[int | None, Opt(help="Sequences per n (preset if omitted).")] = None,
) -> None:
    """The martingale gap Δ̂n with its A·log n/n + B fit, beside the exact Bayes reference."""
    _run("martingale", shared, design=design, n_sequences=n_sequences)


@app.command()
@shared_options
def debias(
    shared: Shared,
    *,
    source: Annotated[
        Path | None,
        Opt("--from", help="A saved martingale folder or martingale_per_sequence.csv to reuse."),
    ] = None,
    all_positions: Annotated[bool, Opt(help="Use every position of a nested run.")] = False,
) -> None:
    """Find, fit and remove the periodic positional part of the per-position gaps."""
    from cotplan.charts import save as save_result
    from cotplan.research.render import progress, render_debias
    from cotplan.research.runs import prepare_debias

    run = prepare_debias(shared.predictor(), quick=shared.quick, seed=shared.seed,
                         source=source, all_positions=all_positions)  # fmt: skip
    with _report(shared, "debias", "gaps" if source is not None else None) as report:
        outcome = run.run(progress(console))
        if outcome.gaps is not None:
            save_result(outcome.gaps, report.path, charts=shared.charts)
        render_debias(outcome, console)
        _save(report, outcome.result, shared.charts)


@app.command()
@shared_options
def order(
    shared: Shared,
    *,
    n_orderings: Annotated[
        int | None, Opt(help="Orderings per multiset (preset if omitted).")
    ] = None,
) -> None:
    """Spread of P(next = 1) over orderings of one multiset, versus orderings averaged."""
    _run("order", shared, n_orderings=n_orderings)


@app.command()
@shared_options
def entropy(
    shared: Shared,
    *,
    p: Annotated[str | None, Opt("--p", help="Bernoulli p, or 'prior' (p ~ Beta(1,1)).")] = None,
    n_max: Annotated[int | None, Opt(help="Sequence length (preset if omitted).")] = None,
    n_sequences: Annotated[int | None, Opt(help="Sequences (preset if omitted).")] = None,
) -> None:
    """Cross-entropy per position against H(p), beside Laplace, KT, the MLE and the Bayes limit."""
    from cotplan.research.experiments import read_p

    # `read_p` gives None for the uniform prior, which is not the preset: passed as given.
    extra = {} if p is None else {"p": read_p(p)}
    _run("entropy", shared, n_max=n_max, n_sequences=n_sequences, **extra)


@app.command()
@shared_options
def falck(
    shared: Shared,
    *,
    n_paths: Annotated[
        int | None, Opt(help="Sampled paths per setting (preset if omitted).")
    ] = None,
    t3_contexts: Annotated[
        int | None,
        Opt(help="Contexts per n for T3 (preset if omitted: 2 quick, 4 full; Falck et al.: 9)."),
    ] = None,
) -> None:
    """Falck et al.'s T1, T2, T3 checks: bayes_icl's definitions beside cotplan's exact bands."""
    _run("falck", shared, n_paths=n_paths, t3_contexts=t3_contexts)


@app.command()
@shared_options
def report(
    shared: Shared,
    *,
    only: Annotated[
        str | None,
        Opt(help="Comma-separated experiments (martingale,debias,order,entropy,falck)."),
    ] = None,
    cot_lab: Annotated[
        str | None,
        Opt(
            help="Also test the k* law on lab reasoning models of these families "
            "(e.g. parity,state; the lab extra; trains on first use)."
        ),
    ] = None,
    cot_lab_preset: Annotated[
        str, Opt(help="Lab model preset for --cot-lab: tiny, quick or standard.")
    ] = "quick",
    p: Annotated[
        str | None,
        Opt("--p", help="Entropy experiment: Bernoulli p, or 'prior' (p ~ Beta(1,1))."),
    ] = None,
) -> None:
    """Every headline number of the paper beside what this backend gives, with verdicts."""
    from cotplan.research.render import progress, render_report
    from cotplan.research.runs import prepare_report

    run = prepare_report(shared.predictor(), quick=shared.quick, seed=shared.seed, only=only,
                         cot_lab=cot_lab, cot_lab_preset=cot_lab_preset, p=p)  # fmt: skip
    with _report(shared, "report") as folder:
        result = run.run(progress(console))
        render_report(result, console)
        _save(folder, result, shared.charts)


@app.command("pe-ablation")
def pe_ablation(
    *,
    quick: Annotated[
        bool, Opt("--quick/--full", help="Tiny models (seconds) or the pinned full preset.")
    ] = False,
    encodings: Annotated[
        str | None,
        Opt(help="Comma-separated encodings (default: none,learned,sinusoidal,rope,alibi)."),
    ] = None,
    ordinary: Annotated[
        bool,
        Opt("--ordinary/--no-ordinary", help="Add the ordinary decoder without an encoding."),
    ] = True,
    seed: Seed = 0,
    steps: Annotated[int | None, Opt(help="Training steps (preset if omitted).")] = None,
    threads: Annotated[
        int | None, Opt(help="torch threads (default: the idle cores, 1 to 4).")
    ] = None,
    retrain: Annotated[bool, Opt(help="Train again even where a stored model matches.")] = False,
    seeds: Annotated[
        int,
        Opt(help="Training seeds (seed, seed+1, ...); 3 or more print the spread across seeds."),
    ] = 1,
    out: Out = None,
    charts: Charts = True,
) -> None:
    """Train one small transformer per positional encoding and compare order effects.

    Models differ only in the encoding; each is stored in the user folder, so a second run only
    evaluates. Prints the training losses beside the Bayes-optimal loss, the variance over
    orderings at t = 20 and beyond beside the paper's v2 table, and the martingale-gap fits.
    """
    from cotplan.research.render import progress, render_ablation
    from cotplan.research.runs import prepare_ablation

    run = prepare_ablation(quick=quick, encodings=encodings, ordinary=ordinary, seed=seed,
                           steps=steps, threads=threads, retrain=retrain, seeds=seeds)  # fmt: skip
    with _report(Shared(out=out), "pe-ablation", run.preset) as report:
        result = run.run(progress(console))
        render_ablation(result, console)
        _save(report, result, charts)
