"""How an experiment command runs: options checked first, the predictor opened, the report
folder named at the start and written as a unit at the end (`cotplan.cli.experiment` holds the
commands themselves)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from cotplan.charts import save as save_result
from cotplan.cli.calibrate import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    check_timeouts,
    connect_options,
)
from cotplan.cli.experiment_print import (
    console,
    entropy_details,
    entropy_notes,
    falck_details,
    martingale_details,
    order_details,
    print_rows,
    print_run,
    progress,
)
from cotplan.cli.report_folders import finish_report
from cotplan.cli.report_folders import start_report as start_locked
from cotplan.errors import InputError
from cotplan.io.reports import ReportFolder

if TYPE_CHECKING:
    from cotplan.research.experiments import Predictor

# The experiments (scipy, pandas) are imported by the functions that run them, so that every
# other command starts without them.

__all__ = [
    "Experiment",
    "check_first",
    "experiments",
    "given",
    "open_predictor_shown",
    "preset",
    "run_experiment",
    "saved",
    "start_report",
]


@contextlib.contextmanager
def open_predictor_shown(
    spec: str,
    base_url: str | None,
    instruction: str,
    concurrency: int | None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
    prompt_logprobs: bool = False,
) -> Iterator[Predictor]:
    """The predictor `spec` names (`cotplan.research.experiments.open_predictor`), a model connected
    so that --timeout and --max-retries reach its client, a lab model's training shown.

    `prompt_logprobs` (checked first by `check_prompt_logprobs`) declares the endpoint a vLLM
    server, so that `BackendPredictor` reads a sequence's every position from one request."""
    import cotplan.research.lab  # noqa: F401  (registers the lab's predictor kind pe:; loads no torch)
    from cotplan.research.experiments import open_predictor

    options = connect_options(spec, timeout, max_retries)
    if prompt_logprobs:
        options["prompt_logprobs"] = True
    with contextlib.ExitStack() as stack:
        # The lab's training shows its own bar, closed before the experiment's bars start.
        with progress() as stage:
            predictor = stack.enter_context(
                open_predictor(
                    spec,
                    base_url=base_url,
                    instruction=instruction,
                    concurrency=concurrency,
                    connect_options=options,
                    stage=stage,
                )
            )
        yield predictor


def start_report(out: Path | None, name: str, label: str) -> ReportFolder:
    """The report folder, named as the command starts (`reports/NAME-<time>-<random>-LABEL`)."""
    return start_locked(out, kind=name, label=label, command=f"experiment {name}")


def saved(report: ReportFolder, files: list[Path]) -> None:
    """Move the report's files into place together and say where they went."""
    folder = finish_report(report)
    console.print(f"saved {len(files)} files in {escape(str(folder))}")


def preset(name: str, quick: bool) -> dict[str, Any]:
    from cotplan.research.experiments import PRESETS

    return dict(PRESETS["quick" if quick else "full"][name])


def check_first(
    backend: str,
    concurrency: int | None,
    *runs: tuple[str, dict[str, Any]],
    base_url: str | None = None,
    prompt_logprobs: bool = False,
) -> None:
    """Validate every option before a model is started or connected to."""
    from cotplan.research.experiments import check_prompt_logprobs, exact_predictor
    from cotplan.research.experiments.report import check_params

    if concurrency is not None and concurrency < 1:
        raise InputError(f"must be >= 1, got {concurrency}", field="concurrency")
    exact_predictor(backend)  # a malformed reference spec fails here
    for name, params in runs:
        check_params(name, params)
    if prompt_logprobs:
        check_prompt_logprobs(backend, base_url)


@dataclass(frozen=True)
class Experiment:
    """How one experiment command runs: the library call, and what it prints around the verdicts."""

    run: Callable[..., Any]  # martingale_gap, order_variance, ...: (predictor, seed, progress, ...)
    counts: str  # what the progress bar counts
    title: str  # heading of the table against the paper
    details: Callable[[Any], None]  # printed before that table
    notes: Callable[[Any], None] = lambda result: None  # printed after it


def experiments() -> dict[str, Experiment]:
    """The commands that run one experiment on one predictor, by name (imported on first use)."""
    from cotplan.research.experiments import (
        entropy_efficiency,
        falck_tests,
        martingale_gap,
        order_variance,
    )

    return {
        "martingale": Experiment(
            martingale_gap, "martingale", "Martingale gap vs the paper", martingale_details
        ),
        "order": Experiment(
            order_variance, "orderings", "Order variance vs the paper", order_details
        ),
        "entropy": Experiment(
            entropy_efficiency,
            "positions",
            "Compression efficiency vs the paper",
            entropy_details,
            entropy_notes,
        ),
        "falck": Experiment(falck_tests, "paths", "Falck et al.'s checks", falck_details),
    }


def run_experiment(
    name: str,
    options: dict[str, Any],
    *,
    backend: str,
    base_url: str | None,
    quick: bool,
    seed: int,
    out: Path | None,
    charts: bool,
    instruction: str,
    concurrency: int | None,
    timeout: float,
    max_retries: int,
    prompt_logprobs: bool = False,
) -> None:
    """Run experiment `name` with its preset and `options` over it; print, then save."""
    from cotplan.research.experiments import PROMPT_LOGPROBS_CHANGE_NOTHING, planned_predictions

    experiment = experiments()[name]
    params = {**preset(name, quick), **options}
    check_first(
        backend, concurrency, (name, params), base_url=base_url, prompt_logprobs=prompt_logprobs
    )
    check_timeouts(timeout, max_retries)
    if prompt_logprobs and name in PROMPT_LOGPROBS_CHANGE_NOTHING:
        why = PROMPT_LOGPROBS_CHANGE_NOTHING[name]
        console.print(f"--prompt-logprobs changes nothing here: {why}")
    with start_report(out, name, backend) as report:
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
            result = experiment.run(
                predictor,
                seed=seed,
                progress=st(experiment.counts, planned_predictions(name, params)),
                **params,
            )
        experiment.details(result)
        print_rows(result.versus_paper(), experiment.title)
        experiment.notes(result)
        print_run(result.run)
        saved(report, save_result(result, report.path, charts=charts))


def given(**options: Any) -> dict[str, Any]:
    """The options given on the command line (None means: the preset's value)."""
    return {key: value for key, value in options.items() if value is not None}
