"""`cotplan experiment ...`: run the paper's experiments on a backend or an exact reference.

Each command runs one experiment with the `--quick` preset (seconds) or the full one (the
paper's grid), shows a progress bar, prints the side-by-side table against the paper, and saves
CSV tables and PNG charts in a report folder (`cotplan.io.reports`: named when the command starts,
written as a unit when it ends).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from cotplan.charts import save as save_result
from cotplan.cli.calibrate import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MaxRetriesOption,
    TimeoutOption,
    check_timeouts,
)
from cotplan.cli.experiment_print import (
    console,
    print_ablation,
    print_rows,
    print_run,
    print_spread,
    progress,
)
from cotplan.cli.experiment_run import (
    check_first,
    given,
    open_predictor_shown,
    preset,
    run_experiment,
    saved,
    start_report,
)
from cotplan.errors import InputError
from cotplan.intervals import compact as fmt

__all__ = ["app"]

app = typer.Typer(
    help="Reproduce the paper's experiments on a model or an exact reference.",
    no_args_is_help=True,
)

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


@app.command()
def martingale(
    *,
    backend: Backend = "local",
    base_url: BaseUrl = None,
    quick: Quick = False,
    design: Annotated[
        str, Opt(help="'nested' (one pass per sequence) or 'independent'.")
    ] = "nested",
    n_sequences: Annotated[int | None, Opt(help="Sequences per n (preset if omitted).")] = None,
    seed: Seed = 0,
    out: Out = None,
    charts: Charts = True,
    instruction: Instruction = "",
    concurrency: Concurrency = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    prompt_logprobs: PromptLogprobs = False,
) -> None:
    """The martingale gap Δ̂n with its A·log n/n + B fit, beside the exact Bayes reference."""
    run_experiment(
        "martingale",
        given(design=design, n_sequences=n_sequences),
        backend=backend,
        base_url=base_url,
        quick=quick,
        seed=seed,
        out=out,
        charts=charts,
        instruction=instruction,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        prompt_logprobs=prompt_logprobs,
    )


@app.command()
def debias(
    *,
    backend: Backend = "local",
    base_url: BaseUrl = None,
    quick: Quick = False,
    source: Annotated[
        Path | None,
        Opt("--from", help="A saved martingale folder or martingale_per_sequence.csv to reuse."),
    ] = None,
    all_positions: Annotated[bool, Opt(help="Use every position of a nested run.")] = False,
    seed: Seed = 0,
    out: Out = None,
    charts: Charts = True,
    instruction: Instruction = "",
    concurrency: Concurrency = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    prompt_logprobs: PromptLogprobs = False,
) -> None:
    """Find, fit and remove the periodic positional part of the per-position gaps."""
    from cotplan.research.experiments import (
        martingale_gap,
        planned_predictions,
        positional_debias,
        read_gaps,
    )

    params = preset("debias", quick)
    if source is None:
        mparams = preset("martingale", quick)
        check_first(
            backend,
            concurrency,
            ("martingale", mparams),
            base_url=base_url,
            prompt_logprobs=prompt_logprobs,
        )
        check_timeouts(timeout, max_retries)
    elif prompt_logprobs:
        raise InputError(
            "--from reuses saved gaps and makes no model requests", field="prompt_logprobs"
        )
    with start_report(out, "debias", "gaps" if source is not None else backend) as report:
        if source is not None:
            result = positional_debias(read_gaps(source), seed=seed, **params)
            name = "gaps"
        else:
            with (
                open_predictor_shown(
                    backend,
                    base_url,
                    instruction,
                    concurrency,
                    timeout=timeout,
                    max_retries=max_retries,
                    prompt_logprobs=prompt_logprobs,
                ) as predictor,
                progress() as st,
            ):
                gaps = martingale_gap(
                    predictor,
                    seed=seed,
                    progress=st("martingale", planned_predictions("martingale", mparams)),
                    **mparams,
                )
            print_run(gaps.run)
            result = positional_debias(gaps, seed=seed, all_positions=all_positions, **params)
            name = predictor.name
            save_result(gaps, report.path, charts=charts)
        console.print(
            f"{escape(name)}: period {result.period:.2f} (detected {result.detected_period:.2f}, "
            f"p = {fmt(result.p_value)}), harmonics explain {fmt(result.explained)}, variance "
            f"change {fmt(result.variance_change)}, position R² {fmt(result.r2_before)} -> "
            f"{fmt(result.r2_after)}"
        )
        print_rows(result.versus_paper(), "Positional debiasing vs the paper")
        saved(report, save_result(result, report.path, charts=charts))


@app.command()
def order(
    *,
    backend: Backend = "local",
    base_url: BaseUrl = None,
    quick: Quick = False,
    n_orderings: int | None = typer.Option(
        None, help="Orderings per multiset (preset if omitted)."
    ),
    seed: Seed = 0,
    out: Out = None,
    charts: Charts = True,
    instruction: Instruction = "",
    concurrency: Concurrency = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    prompt_logprobs: PromptLogprobs = False,
) -> None:
    """Spread of P(next = 1) over orderings of one multiset, versus orderings averaged."""
    run_experiment(
        "order",
        given(n_orderings=n_orderings),
        backend=backend,
        base_url=base_url,
        quick=quick,
        seed=seed,
        out=out,
        charts=charts,
        instruction=instruction,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        prompt_logprobs=prompt_logprobs,
    )


@app.command()
def entropy(
    *,
    backend: Backend = "local",
    base_url: BaseUrl = None,
    quick: Quick = False,
    p: Annotated[str | None, Opt("--p", help="Bernoulli p, or 'prior' (p ~ Beta(1,1)).")] = None,
    n_max: Annotated[int | None, Opt(help="Sequence length (preset if omitted).")] = None,
    n_sequences: Annotated[int | None, Opt(help="Sequences (preset if omitted).")] = None,
    seed: Seed = 0,
    out: Out = None,
    charts: Charts = True,
    instruction: Instruction = "",
    concurrency: Concurrency = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    prompt_logprobs: PromptLogprobs = False,
) -> None:
    """Cross-entropy per position against H(p), beside Laplace, KT, the MLE and the Bayes limit."""
    from cotplan.research.experiments import read_p

    options = given(n_max=n_max, n_sequences=n_sequences)
    if p is not None:
        options["p"] = read_p(p)  # None here means the uniform prior, not the preset
    run_experiment(
        "entropy",
        options,
        backend=backend,
        base_url=base_url,
        quick=quick,
        seed=seed,
        out=out,
        charts=charts,
        instruction=instruction,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        prompt_logprobs=prompt_logprobs,
    )


@app.command()
def falck(
    *,
    backend: Backend = "local",
    base_url: BaseUrl = None,
    quick: Quick = False,
    n_paths: Annotated[
        int | None, Opt(help="Sampled paths per setting (preset if omitted).")
    ] = None,
    t3_contexts: Annotated[
        int | None,
        Opt(help="Contexts per n for T3 (preset if omitted: 2 quick, 4 full; Falck et al.: 9)."),
    ] = None,
    seed: Seed = 0,
    out: Out = None,
    charts: Charts = True,
    instruction: Instruction = "",
    concurrency: Concurrency = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    prompt_logprobs: PromptLogprobs = False,
) -> None:
    """Falck et al.'s T1, T2, T3 checks: bayes_icl's definitions beside cotplan's exact bands."""
    run_experiment(
        "falck",
        given(n_paths=n_paths, t3_contexts=t3_contexts),
        backend=backend,
        base_url=base_url,
        quick=quick,
        seed=seed,
        out=out,
        charts=charts,
        instruction=instruction,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        prompt_logprobs=prompt_logprobs,
    )


@app.command()
def report(
    *,
    backend: Backend = "local",
    base_url: BaseUrl = None,
    quick: Quick = False,
    only: Annotated[
        str | None,
        Opt(help="Comma-separated experiments (martingale,debias,order,entropy,falck)."),
    ] = None,
    seed: Seed = 0,
    out: Out = None,
    charts: Charts = True,
    instruction: Instruction = "",
    concurrency: Concurrency = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
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
    prompt_logprobs: PromptLogprobs = False,
) -> None:
    """Every headline number of the paper beside what this backend gives, with verdicts."""
    from cotplan.research.experiments import EXPERIMENTS, PRESETS, read_p
    from cotplan.research.reproduction import check_lab_options, reproduction_report

    chosen = tuple(e.strip() for e in only.split(",") if e.strip()) if only else EXPERIMENTS
    unknown = [e for e in chosen if e not in EXPERIMENTS]
    if unknown or not chosen:
        raise InputError(f"unknown {unknown or [only]}; choose from {EXPERIMENTS}", field="only")
    lab_families = tuple(f.strip() for f in cot_lab.split(",") if f.strip()) if cot_lab else ()
    if cot_lab is not None:
        check_lab_options(lab_families, cot_lab_preset)
    preset = "quick" if quick else "full"
    overrides: dict[str, dict[str, Any]] = {}
    if p is not None:
        overrides["entropy"] = {"p": read_p(p)}
    check_first(
        backend,
        concurrency,
        *(
            (name, {**PRESETS[preset][name], **overrides.get(name, {})})
            for name in chosen
            if name != "debias"
        ),
        base_url=base_url,
        prompt_logprobs=prompt_logprobs,
    )
    check_timeouts(timeout, max_retries)
    with start_report(out, "report", backend) as report_folder:
        with (
            open_predictor_shown(
                backend,
                base_url,
                instruction,
                concurrency,
                timeout=timeout,
                max_retries=max_retries,
                prompt_logprobs=prompt_logprobs,
            ) as predictor,
            progress() as st,
        ):
            result = reproduction_report(
                predictor,
                preset,
                seed,
                experiments=chosen,
                overrides=overrides,
                stage=st,
                cot_lab=lab_families,
                cot_lab_preset=cot_lab_preset,
            )
        print_rows(result.to_frame(), f"Reproduction report: {result.predictor}")
        console.print(escape(result.tally_line()))
        console.print(escape(result.capability()))
        console.print(f"{result.requests} model requests in total")
        saved(report_folder, save_result(result, report_folder.path, charts=charts))


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
    for name, value in (("seeds", seeds), ("steps", steps), ("threads", threads)):
        if value is not None and value < 1:
            raise InputError(f"must be >= 1, got {value}", field=name)
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", field="seed")
    from cotplan.research.lab import require_torch

    require_torch()
    from cotplan.research.lab.ablation import ablation_variants, pe_ablation_seeds
    from cotplan.research.lab.ablation import pe_ablation as run_ablation
    from cotplan.research.lab.transformer import POSITIONAL_ENCODINGS

    chosen = (
        tuple(e.strip().lower() for e in encodings.split(",") if e.strip())
        if encodings
        else POSITIONAL_ENCODINGS
    )
    ablation_variants(chosen, "tokens", ordinary)  # unknown encodings fail before any training
    overrides: dict[str, Any] = {} if steps is None else {"steps": steps}
    preset = "quick" if quick else "full"
    with start_report(out, "pe-ablation", preset) as report:
        if seeds > 1:
            with progress() as st:
                spread = pe_ablation_seeds(
                    preset,
                    seeds=range(seed, seed + seeds),
                    encodings=chosen,
                    ordinary_none=ordinary,
                    threads=threads,
                    retrain=retrain,
                    stage=st,
                    **overrides,
                )
            print_spread(spread)
            print_rows(spread.versus_paper(), "Across seeds vs the paper (v2)")
            console.print(f"{len(spread.seeds)} seeds in {spread.wall_s:.1f} s")
            saved(report, save_result(spread, report.path, charts=charts))
            return
        with progress() as st:
            result = run_ablation(
                preset,
                encodings=chosen,
                ordinary_none=ordinary,
                seed=seed,
                threads=threads,
                retrain=retrain,
                stage=st,
                **overrides,
            )
        print_ablation(result)
        print_rows(result.versus_paper(), "Positional-encoding ablation vs the paper (v2)")
        console.print(f"{len(result.variants)} models in {result.wall_s:.1f} s")
        saved(report, save_result(result, report.path, charts=charts))
