"""The experiment commands' runs as library calls: every option checked first, then the run.

`cotplan experiment NAME` is `prepare_*` (checks every option, names nothing on disk, connects
to nothing), then `.run()` (opens the predictor and runs), then a renderer of
`cotplan.research.render`; a notebook makes the same two calls:

    from cotplan.research.runs import PredictorSpec, prepare_experiment

    run = prepare_experiment("martingale", PredictorSpec("laplace"), quick=True)
    result = run.run()

Progress is shown through `progress`: a context-manager factory yielding a stage factory
(``stage(name, total)`` returns a callback that advances by the predictions done, or None),
as `cotplan.research.render.progress` is; by default nothing is shown.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cotplan.errors import InputError

if TYPE_CHECKING:
    from cotplan.research.experiments import Predictor

__all__ = [
    "AblationRun",
    "DebiasOutcome",
    "DebiasRun",
    "ExperimentRun",
    "PredictorSpec",
    "Progress",
    "ReportRun",
    "StageFactory",
    "no_progress",
    "prepare_ablation",
    "prepare_debias",
    "prepare_experiment",
    "prepare_report",
    "preset_params",
]

StageFactory = Callable[[str, int], Callable[[int], None] | None]
Progress = Callable[[], AbstractContextManager[StageFactory]]


@contextlib.contextmanager
def no_progress() -> Iterator[StageFactory]:
    """Show nothing: every stage gets no callback."""
    yield lambda name, total: None


@dataclass(frozen=True)
class PredictorSpec:
    """What an experiment reads its predictions from: `backend` as
    `cotplan.research.experiments.open_predictor` reads it, and how to reach it. `connection`
    checks the connection's own options (timeout, retries) and returns the `connect` options
    that carry them; it is called after the predictor's checks, and only when a model is to
    be asked. `prompt_logprobs` declares the endpoint a vLLM server, so that a sequence's
    every position is read from one request."""

    backend: str = "local"
    base_url: str | None = None
    instruction: str = ""
    concurrency: int | None = None
    prompt_logprobs: bool = False
    connection: Callable[[], dict[str, Any]] = dict

    def check(self, *runs: tuple[str, dict[str, Any]]) -> None:
        """Validate every option (and each run's parameters) before a model is started."""
        from cotplan.research.experiments import check_prompt_logprobs, exact_predictor
        from cotplan.research.experiments.report import check_params

        if self.concurrency is not None and self.concurrency < 1:
            raise InputError(f"must be >= 1, got {self.concurrency}", field="concurrency")
        exact_predictor(self.backend)  # a malformed reference spec fails here
        for name, params in runs:
            check_params(name, params)
        if self.prompt_logprobs:
            check_prompt_logprobs(self.backend, self.base_url)
        self.connection()

    @contextlib.contextmanager
    def open(self, progress: Progress = no_progress) -> Iterator[Predictor]:
        """The predictor, open; a lab model's training shown through `progress`."""
        import cotplan.research.lab  # noqa: F401  (registers the lab's predictor kind pe:)
        from cotplan.research.experiments import open_predictor

        options = self.connection()
        if self.prompt_logprobs:
            options["prompt_logprobs"] = True
        with contextlib.ExitStack() as stack:
            # The lab's training shows its own bar, closed before the experiment's bars start.
            with progress() as stage:
                predictor = stack.enter_context(
                    open_predictor(
                        self.backend,
                        base_url=self.base_url,
                        instruction=self.instruction,
                        concurrency=self.concurrency,
                        connect_options=options,
                        stage=stage,
                    )
                )
            yield predictor


def preset_params(name: str, quick: bool) -> dict[str, Any]:
    """Experiment `name`'s parameters in the quick or the full preset (a copy)."""
    from cotplan.research.experiments import PRESETS

    return dict(PRESETS["quick" if quick else "full"][name])


#: The experiments one predictor runs alone: the library function and what its bar counts.
_RUNS = {
    "martingale": ("martingale_gap", "martingale"),
    "order": ("order_variance", "orderings"),
    "entropy": ("entropy_efficiency", "positions"),
    "falck": ("falck_tests", "paths"),
}


@dataclass(frozen=True)
class ExperimentRun:
    """One experiment on one predictor, its options checked. `notice` is what to tell the
    user before it starts (empty: nothing)."""

    name: str
    params: Mapping[str, Any]
    predictor: PredictorSpec
    seed: int = 0
    notice: str = ""

    def run(self, progress: Progress = no_progress) -> Any:
        """Open the predictor and run: the experiment's result."""
        import cotplan.research.experiments as experiments

        function, counts = _RUNS[self.name]
        total = experiments.planned_predictions(self.name, dict(self.params))
        with self.predictor.open(progress) as predictor, progress() as stage:
            return getattr(experiments, function)(
                predictor, seed=self.seed, progress=stage(counts, total), **self.params
            )


def prepare_experiment(
    name: str,
    predictor: PredictorSpec,
    *,
    quick: bool = False,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
) -> ExperimentRun:
    """Experiment `name` (martingale, order, entropy, falck) with its preset and `options`
    over it, every option checked."""
    from cotplan.research.experiments import PROMPT_LOGPROBS_CHANGE_NOTHING

    params = {**preset_params(name, quick), **(options or {})}
    predictor.check((name, params))
    notice = ""
    if predictor.prompt_logprobs and name in PROMPT_LOGPROBS_CHANGE_NOTHING:
        notice = f"--prompt-logprobs changes nothing here: {PROMPT_LOGPROBS_CHANGE_NOTHING[name]}"
    return ExperimentRun(name, params, predictor, seed, notice)


@dataclass(frozen=True)
class DebiasOutcome:
    """Positional debiasing's `result`, the martingale run it measured the gaps with (`gaps`;
    None when they were read from a file) and the `name` of what they came from."""

    result: Any
    gaps: Any
    name: str


@dataclass(frozen=True)
class DebiasRun:
    """Positional debiasing, its options checked: on saved gaps (`source`) or on gaps a
    martingale run measures first."""

    predictor: PredictorSpec
    quick: bool = False
    seed: int = 0
    source: Path | None = None
    all_positions: bool = False

    def run(self, progress: Progress = no_progress) -> DebiasOutcome:
        """Read or measure the gaps, then find, fit and remove their periodic part."""
        from cotplan.research.experiments import (
            martingale_gap,
            planned_predictions,
            positional_debias,
            read_gaps,
        )

        params = preset_params("debias", self.quick)
        if self.source is not None:
            return DebiasOutcome(
                positional_debias(read_gaps(self.source), seed=self.seed, **params), None, "gaps"
            )
        mparams = preset_params("martingale", self.quick)
        with self.predictor.open(progress) as predictor, progress() as st:
            gaps = martingale_gap(
                predictor,
                seed=self.seed,
                progress=st("martingale", planned_predictions("martingale", mparams)),
                **mparams,
            )
        result = positional_debias(gaps, seed=self.seed, all_positions=self.all_positions, **params)
        return DebiasOutcome(result, gaps, predictor.name)


def prepare_debias(
    predictor: PredictorSpec,
    *,
    quick: bool = False,
    seed: int = 0,
    source: Path | None = None,
    all_positions: bool = False,
) -> DebiasRun:
    """Positional debiasing with every option checked: a martingale run's first (unless the
    gaps come from `source`, which makes no model requests)."""
    if source is None:
        predictor.check(("martingale", preset_params("martingale", quick)))
    elif predictor.prompt_logprobs:
        raise InputError(
            "--from reuses saved gaps and makes no model requests", field="prompt_logprobs"
        )
    return DebiasRun(predictor, quick, seed, source, all_positions)


@dataclass(frozen=True)
class ReportRun:
    """The reproduction report, its options checked."""

    predictor: PredictorSpec
    preset: str
    seed: int
    experiments: tuple[str, ...]
    overrides: Mapping[str, dict[str, Any]]
    cot_lab: tuple[str, ...] = ()
    cot_lab_preset: str = "quick"

    def run(self, progress: Progress = no_progress) -> Any:
        """Run every chosen experiment (and the lab's k* law): the `ReproductionReport`."""
        from cotplan.research.reproduction import reproduction_report

        with self.predictor.open(progress) as predictor, progress() as st:
            return reproduction_report(
                predictor,
                self.preset,
                self.seed,
                experiments=self.experiments,
                overrides=dict(self.overrides),
                stage=st,
                cot_lab=self.cot_lab,
                cot_lab_preset=self.cot_lab_preset,
            )


def prepare_report(
    predictor: PredictorSpec,
    *,
    quick: bool = False,
    seed: int = 0,
    only: str | None = None,
    cot_lab: str | None = None,
    cot_lab_preset: str = "quick",
    p: str | None = None,
) -> ReportRun:
    """The reproduction report of the experiments `only` names (comma-separated; default:
    all), the lab's k* law on the `cot_lab` families too, the entropy experiment at `p`."""
    from cotplan.research.experiments import EXPERIMENTS, PRESETS, read_p
    from cotplan.research.reproduction import check_lab_options

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
    predictor.check(
        *(
            (name, {**PRESETS[preset][name], **overrides.get(name, {})})
            for name in chosen
            if name != "debias"
        )
    )
    return ReportRun(predictor, preset, seed, chosen, overrides, lab_families, cot_lab_preset)


@dataclass(frozen=True)
class AblationRun:
    """The positional-encoding ablation, its options checked: one seed, or several (`seeds`
    from `seed` on) for the spread across training seeds."""

    preset: str
    encodings: tuple[str, ...]
    ordinary: bool = True
    seed: int = 0
    seeds: int = 1
    threads: int | None = None
    retrain: bool = False
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def run(self, progress: Progress = no_progress) -> Any:
        """Train (or load) and compare: a `PEAblationResult`, or a `PESeedsResult`."""
        from cotplan.research.lab.ablation import pe_ablation, pe_ablation_seeds

        common: dict[str, Any] = {"encodings": self.encodings, "ordinary_none": self.ordinary,
                                  "threads": self.threads, "retrain": self.retrain,
                                  **self.overrides}  # fmt: skip
        with progress() as st:
            if self.seeds > 1:
                seeds = range(self.seed, self.seed + self.seeds)
                return pe_ablation_seeds(self.preset, seeds=seeds, stage=st, **common)
            return pe_ablation(self.preset, seed=self.seed, stage=st, **common)


def prepare_ablation(
    *,
    quick: bool = False,
    encodings: str | None = None,
    ordinary: bool = True,
    seed: int = 0,
    steps: int | None = None,
    threads: int | None = None,
    retrain: bool = False,
    seeds: int = 1,
) -> AblationRun:
    """The ablation over `encodings` (comma-separated; default: every one), every option
    checked and torch present before any training."""
    for name, value in (("seeds", seeds), ("steps", steps), ("threads", threads)):
        if value is not None and value < 1:
            raise InputError(f"must be >= 1, got {value}", field=name)
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", field="seed")
    from cotplan.research.lab import require_torch

    require_torch()
    from cotplan.research.lab.ablation import ablation_variants
    from cotplan.research.lab.transformer import POSITIONAL_ENCODINGS

    chosen = (
        tuple(e.strip().lower() for e in encodings.split(",") if e.strip())
        if encodings
        else POSITIONAL_ENCODINGS
    )
    ablation_variants(chosen, "tokens", ordinary)  # unknown encodings fail before any training
    overrides: dict[str, Any] = {} if steps is None else {"steps": steps}
    return AblationRun("quick" if quick else "full", tuple(chosen), ordinary, seed, seeds,
                       threads, retrain, overrides)  # fmt: skip
