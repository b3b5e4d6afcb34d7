"""`cotplan plan` and `cotplan run`: plan a cap from a calibration, apply it on held-out items.

Each command checks ALL its options before it reads a file or connects to a model, calls the
library and renders with `cotplan.render.plan`. `plan` calls
`cotplan.planner.plan_result.plan_from_calibration`, whose `PlanResult.save` writes the plan
folder (by default the calibration's own); `run` loads plan.json as written (no refit), has
`cotplan.workflow.held_out_items` choose its items and `cotplan.planner.held_out` check the
plan is this model's and protocol's, and calls `run_plan`, whose `PlanRun.save` writes the
run's tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cotplan.cli.options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MAX_BUDGET,
    AllowOtherModel,
    BackendSpec,
    BaseUrl,
    Concurrency,
    Count,
    Delta,
    Details,
    ExitChoice,
    ExitPlanFile,
    Family,
    MaxRetriesOption,
    OutNextTo,
    ProtocolOption,
    ShowProgress,
    Sizes,
    TasksFile,
    TimeoutOption,
    check_int,
    check_item_source,
    check_out,
    check_protocol,
    check_timeouts,
    connect_options,
    console,
    mode_and_protocol,
    parse_ints,
)
from cotplan.cli.report_folders import check_read, finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.errors import InputError
from cotplan.render.plan import render_plan, render_plan_header, render_run
from cotplan.validation import require_choice

if TYPE_CHECKING:
    from cotplan.planner import SavedPlan
    from cotplan.planner.exit_plan import ExitPlan
    from cotplan.planner.held_out import HeldOut

__all__ = ["plan", "run"]

Calibration = Annotated[Path, typer.Option(help="calibration.csv written by `cotplan calibrate`.")]
Eps = Annotated[float, typer.Option(help="Target error rate (share of wrong answers).")]
PlanSizes = Annotated[
    list[str] | None, typer.Option("--n", help="Sizes to plan for, e.g. --n 6,40.")
]
Law = Annotated[
    str,
    typer.Option(
        help="'auto' (chosen on held-out items), paper, paper-half, logistic, step, monotone."
    ),
]
LogBase = Annotated[str, typer.Option(help="Base in which c is reported: e, 2 or 10.")]
Alpha = Annotated[str, typer.Option(help="'fit' or a fixed exponent (0.5: the paper).")]
Bootstrap = Annotated[int, typer.Option(help="Item-bootstrap resamples for the intervals.")]
Reach = Annotated[
    float,
    typer.Option(help="How far plan.cap(n) scales beyond the calibrated sizes (a factor of n)."),
]
ProbeEvery = Annotated[
    int, typer.Option(help="With --exit certified: probe every this many thinking tokens.")
]
ExitFamily = Annotated[
    str,
    typer.Option(
        help="With --exit certified: the stopping rules tested: 'auto' (agreement and "
        "probability together where probabilities are known), 'agreement', 'confidence', "
        "'both', or 'all' (every chain, each at its share of --delta)."
    ),
]
PlanFile = Annotated[Path, typer.Option(help="plan.json written by `cotplan plan`.")]
HeldOutSeed = Annotated[
    int, typer.Option(help="Seed of the held-out items (not the calibration's).")
]
Uncapped = Annotated[int, typer.Option(help="The cap that stands for 'uncapped'.")]
RunDetails = Annotated[
    bool,
    typer.Option("--details", help="Also print the plan's caps and the full policy comparison."),
]


def plan(
    *,
    calibration: Calibration,
    eps: Eps,
    n: PlanSizes = None,
    law: Law = "auto",
    delta: Delta = 0.05,
    log_base: LogBase = "e",
    alpha: Alpha = "fit",
    bootstrap: Bootstrap = 200,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    reach: Reach = 2.0,
    out: OutNextTo = None,
    exit_: ExitChoice = "none",
    probe_every: ProbeEvery = 16,
    exit_family: ExitFamily = "auto",
    details: Details = False,
) -> None:
    """Plan reasoning caps from a calibration: print the cap per size (certified or not), what
    it saves, how to ship it and the law in a sentence (--details: the statistics); write
    plan.json for `cotplan run` and `cotplan serve` (and exit.json with --exit)."""
    from cotplan.charts import chart
    from cotplan.planner.held_out import plan_savings
    from cotplan.planner.plan_result import plan_from_calibration

    sizes = parse_ints(n, "n", low=1)
    check_out(out)  # the rest is checked by the library, all before the file is read
    check_read(calibration)
    result = plan_from_calibration(
        calibration, eps, sizes=sizes, law=law, delta=delta, log_base=log_base, alpha=alpha,
        n_bootstrap=bootstrap, seed=seed, reach=reach, exit=exit_, probe_every=probe_every,
        exit_family=exit_family,
    )  # fmt: skip
    with start_report(out, calibration.parent, command="plan") as report:
        caps, savings = plan_savings(result)
        render_plan(
            console, result, folder=report.target, caps=caps, savings=savings, details=details
        )
        written = result.save(report.path, draw=chart)
        # plan.json last: a folder whose plan.json is new holds the new tables too.
        folder = finish_report(report, last=("plan.json",))
    page = add_report_page(folder, command="plan")
    names = ", ".join(path.name for path in [*written[1:], *([page] if page else [])])
    console.print(f"wrote {folder}/plan.json (for `cotplan run --plan`), {names}")


def run(
    *,
    plan: PlanFile,
    family: Family = None,
    tasks: TasksFile = None,
    n: Sizes = None,
    count: Count = 12,
    seed: HeldOutSeed = 1,
    uncapped: Uncapped = 512,
    backend: BackendSpec = "local",
    base_url: BaseUrl = None,
    concurrency: Concurrency = None,
    allow_other_model: AllowOtherModel = False,
    out: OutNextTo = None,
    progress: ShowProgress = True,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    protocol: ProtocolOption = "auto",
    exit_: ExitChoice = "none",
    exit_plan: ExitPlanFile = None,
    details: RunDetails = False,
) -> None:
    """Apply the plan that `cotplan plan` wrote on held-out items; judge each size against
    ε and compare with uncapped."""
    from cotplan.backends import connect
    from cotplan.charts import chart
    from cotplan.planner.held_out import started_notes
    from cotplan.planner.run import run_plan

    asked = parse_ints(n, "n", low=1)
    check_item_source(family, tasks, asked)
    _check_run(count, uncapped, concurrency, seed, out)
    check_timeouts(timeout, max_retries)
    check_protocol(protocol)
    _check_exit(exit_, exit_plan)
    saved, exits, notes, held = _before_start(
        plan, exit_, exit_plan, backend=backend, base_url=base_url, protocol=protocol,
        allow_other_model=allow_other_model, family=family, tasks=tasks, sizes=asked,
        count=count, seed=seed,
    )  # fmt: skip
    render_plan_header(console, saved, plan, held=held, notes=notes, details=details)
    options = connect_options(backend, timeout, max_retries, protocol)
    with (
        start_report(out, plan.parent, command="run") as report,
        connect(backend, base_url=base_url, **options) as model,
    ):
        for late in started_notes(saved, model, allow_other_model=allow_other_model, said=notes):
            console.print(f"[yellow]note:[/] {late}")
        console.print(f"model {model.model} ({mode_and_protocol(model)})")
        result = run_plan(
            model, saved, held.items, saved.eps, uncapped=uncapped, concurrency=concurrency,
            progress=progress, exit_plan=exits,
        )  # fmt: skip
        render_run(console, result, details=details)
        written = result.save(report.path, draw=chart)
        folder = finish_report(report)
    page = add_report_page(folder, command="run")
    written += [page] if page else []
    console.print(f"wrote {folder}/" + ", ".join(path.name for path in written))


def _check_run(
    count: int, uncapped: int, concurrency: int | None, seed: int, out: Path | None
) -> None:
    check_int(count, "count", low=1)
    check_int(uncapped, "uncapped", low=1, high=MAX_BUDGET)  # sent as max_tokens: a real cap
    check_int(concurrency, "concurrency", low=1)
    check_out(out)
    check_int(seed, "seed", low=0)


def _check_exit(exit_: str, exit_plan: Path | None) -> None:
    from cotplan.planner.exit_plan import EXIT_CHOICES

    require_choice(exit_, "exit", EXIT_CHOICES)
    if exit_plan is not None and exit_ != "certified":
        raise InputError("is read only with --exit certified", field="exit_plan")


def _before_start(
    plan: Path,
    exit_: str,
    exit_plan: Path | None,
    *,
    backend: str,
    base_url: str | None,
    protocol: str,
    allow_other_model: bool,
    family: str | None,
    tasks: Path | None,
    sizes: list[int],
    count: int,
    seed: int,
) -> tuple[SavedPlan, ExitPlan | None, list[str], HeldOut]:
    """The plan, its exit plan, the binding notes and the held-out items: everything `run`
    refuses before the model (maybe paid, maybe slow) starts."""
    from cotplan.planner.exit_plan import exit_plan_for
    from cotplan.planner.held_out import binding_notes
    from cotplan.planner.run import SavedPlan
    from cotplan.workflow import held_out_items

    check_read(plan)
    saved = SavedPlan.load(plan)
    exits = None
    if exit_ == "certified":
        exits = exit_plan_for(exit_plan, plan, eps=saved.eps, model=saved.model)
    notes = binding_notes(
        saved, backend=backend, base_url=base_url, protocol=protocol,
        allow_other_model=allow_other_model,
    )  # fmt: skip
    held = held_out_items(
        saved, family=family, tasks=tasks, sizes=sizes, count=count, seed=seed, backend=backend
    )
    return saved, exits, notes, held
