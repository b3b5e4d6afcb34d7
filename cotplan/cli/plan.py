"""`cotplan plan` and `cotplan run`: plan a cap from a calibration, apply it on held-out items.

Each command checks ALL its options before it reads a file or connects to a model, calls one
library function, prints with rich, and has the library write its report folder
(`cotplan.io.reports`: named at the start, written as a unit). `plan` calls
`cotplan.planner.plan_result.plan_from_calibration`, whose `PlanResult.save` decides what a plan
folder holds (by default the calibration's own folder); `run` loads plan.json as written (no
refit), checks it is this model's and protocol's, and calls `run_plan`, whose `PlanRun.save`
writes the run's tables. Charts are drawn by `cotplan.charts`. `cotplan calibrate` and the
option checks are in `cotplan.cli.calibrate`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cotplan.cli.calibrate import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MAX_BUDGET,
    BackendSpec,
    BaseUrl,
    Concurrency,
    Count,
    Family,
    MaxRetriesOption,
    ProtocolOption,
    ShowProgress,
    Sizes,
    TasksFile,
    TimeoutOption,
    build_items,
    check_int,
    check_item_source,
    check_out,
    check_protocol,
    check_timeouts,
    connect_options,
    mode_and_protocol,
    parse_ints,
    print_calibration,
    print_spend,
)
from cotplan.cli.glance import made_for, print_plan_glance, print_run_glance
from cotplan.cli.plan_print import (
    console,
    print_budgets,
    print_caps,
    print_certificates,
    print_certified,
    print_comparison,
    print_report,
    print_size_checks,
)
from cotplan.cli.report_folders import check_read, finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.errors import InputError
from cotplan.io.reports import save_chart
from cotplan.validation import require_choice, require_number, require_unit

if TYPE_CHECKING:
    from cotplan.backends import Backend
    from cotplan.planner import SavedPlan
    from cotplan.tasks import TaskItem

__all__ = [
    "build_items",
    "check_at_least",
    "check_item_source",
    "check_unit",
    "console",
    "mode_and_protocol",
    "parse_ints",
    "plan",
    "print_budgets",
    "print_calibration",
    "print_caps",
    "print_certificates",
    "print_certified",
    "print_comparison",
    "print_report",
    "print_size_checks",
    "register",
    "run",
    "save_chart",
]


CalibrationFile = Annotated[
    Path, typer.Option(help="calibration.csv written by `cotplan calibrate`.")
]
LogBaseOption = Annotated[str, typer.Option(help="Base in which c is reported: e, 2 or 10.")]
AlphaOption = Annotated[str, typer.Option(help="'fit' or a fixed exponent (0.5: the paper).")]
Bootstrap = Annotated[int, typer.Option(help="Item-bootstrap resamples for the intervals.")]
LawOption = Annotated[
    str,
    typer.Option(
        help="'auto' (chosen on held-out items), paper, paper-half, logistic, step, monotone."
    ),
]
DeltaOption = Annotated[
    float, typer.Option(help="1 − confidence of the certified budgets (0.05: 95%).")
]
OutNextToCalibration = Annotated[
    Path | None, typer.Option(help="Report folder (default: the calibration's folder).")
]
DetailsOption = Annotated[
    bool,
    typer.Option("--details", help="Also print the statistics (fit, laws, tests, certificates)."),
]
ExitOption = Annotated[
    str,
    typer.Option(
        "--exit", help="'none' (the fixed cap) or 'certified' (certified early exit under it)."
    ),
]


def check_unit(value: float, name: str) -> float:
    """A share strictly between 0 and 1 (`cotplan.validation.require_unit`)."""
    return require_unit(value, name)


def check_at_least(value: float | None, name: str, low: float) -> None:
    """`value` ≥ `low` (None passes: the option was not given)."""
    if value is not None:
        require_number(value, name, low=low)


# ------------------------------------------------------------------------------------------
# Commands


def plan(
    *,
    calibration: CalibrationFile,
    eps: Annotated[float, typer.Option(help="Target error rate (share of wrong answers).")],
    n: Annotated[
        list[str] | None, typer.Option("--n", help="Sizes to plan for, e.g. --n 6,40.")
    ] = None,
    law: LawOption = "auto",
    delta: DeltaOption = 0.05,
    log_base: LogBaseOption = "e",
    alpha: AlphaOption = "fit",
    bootstrap: Bootstrap = 200,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    reach: Annotated[
        float,
        typer.Option(
            help="How far plan.cap(n) scales beyond the calibrated sizes (a factor of n)."
        ),
    ] = 2.0,
    out: OutNextToCalibration = None,
    exit_: ExitOption = "none",
    probe_every: Annotated[
        int, typer.Option(help="With --exit certified: probe every this many thinking tokens.")
    ] = 16,
    exit_family: Annotated[
        str,
        typer.Option(
            help="With --exit certified: the stopping rules tested: 'auto' (agreement and "
            "probability together where probabilities are known), 'agreement', 'confidence', "
            "'both', or 'all' (every chain, each at its share of --delta)."
        ),
    ] = "auto",
    details: DetailsOption = False,
) -> None:
    """Plan reasoning caps from a calibration: print the cap per size (certified or not), what
    it saves, how to ship it and the law in a sentence (--details: the statistics); write
    plan.json for `cotplan run` and `cotplan serve` (and exit.json with --exit)."""
    from cotplan.charts import chart
    from cotplan.planner.plan_result import plan_from_calibration
    from cotplan.planner.savings import calibration_savings

    sizes = parse_ints(n, "n", low=1)
    check_out(out)  # the rest is checked by the library, all before the file is read
    check_read(calibration)
    result = plan_from_calibration(
        calibration,
        eps,
        sizes=sizes,
        law=law,
        delta=delta,
        log_base=log_base,
        alpha=alpha,
        n_bootstrap=bootstrap,
        seed=seed,
        reach=reach,
        exit=exit_,
        probe_every=probe_every,
        exit_family=exit_family,
    )
    saved = result.plan
    with start_report(out, calibration.parent, command="plan") as report:
        plan_path = report.target / "plan.json"
        caps = _calibrated_caps(saved, result.calibration["n"])
        savings = calibration_savings(result.calibration, caps)
        print_plan_glance(console, result, plan_path, report.target / "report.html", savings)
        # Unknown token counts change what a plan can be trusted for: said at a glance too.
        from cotplan.planner.calibration_file import usage_note

        if not details and (note := usage_note(result.calibration)):
            console.print(f"[yellow]note:[/] {note}")
        if details:
            console.rule("details")
            print_spend(result.calibration)
            print_report(result.planner)
            if result.planner.status_ == "helps":
                print_certificates(result.certificates, result.eps)
            print_budgets(result.budgets, result.eps, caps=caps)
            print_caps(saved, sorted({*saved.calibrated_sizes, *saved.sizes_}))
        if result.exit_note:
            console.print(f"[yellow]note:[/] no exit plan written: {result.exit_note}")
        for line in result.exit_lines():
            console.print(line)
        written = result.save(report.path, draw=chart)
        # plan.json last: a folder whose plan.json is new holds the new tables too.
        folder = finish_report(report, last=("plan.json",))
    page = add_report_page(folder, command="plan")
    names = ", ".join(path.name for path in [*written[1:], *([page] if page else [])])
    console.print(f"wrote {folder}/plan.json (for `cotplan run --plan`), {names}")


def _calibrated_caps(saved: SavedPlan, sizes: Iterable[int]) -> dict[int, int]:
    """plan.cap(n) at each calibrated size that has one."""
    caps = {}
    for n in sorted({int(size) for size in sizes}):
        tokens = _cap_tokens(saved, n)
        if tokens is not None:
            caps[n] = tokens
    return caps


def _cap_tokens(saved: SavedPlan, n: float) -> int | None:
    """plan.cap(n) in tokens, None where the plan refuses the size."""
    try:
        return saved.cap(n).tokens
    except InputError:
        return None


def _made_for(saved: SavedPlan) -> str:
    """The plan's binding in words: model, mode and protocol."""
    return made_for(saved)


def run(
    *,
    plan: Annotated[Path, typer.Option(help="plan.json written by `cotplan plan`.")],
    family: Family = None,
    tasks: TasksFile = None,
    n: Sizes = None,
    count: Count = 12,
    seed: Annotated[
        int, typer.Option(help="Seed of the held-out items (not the calibration's).")
    ] = 1,
    uncapped: Annotated[int, typer.Option(help="The cap that stands for 'uncapped'.")] = 512,
    backend: BackendSpec = "local",
    base_url: BaseUrl = None,
    concurrency: Concurrency = None,
    allow_other_model: Annotated[
        bool,
        typer.Option(
            "--allow-other-model",
            help="Apply a plan made for another model or reasoning protocol anyway.",
        ),
    ] = False,
    out: OutNextToCalibration = None,
    progress: ShowProgress = True,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    protocol: ProtocolOption = "auto",
    exit_: ExitOption = "none",
    exit_plan: Annotated[
        Path | None,
        typer.Option(help="With --exit certified: exit.json (default: beside the plan)."),
    ] = None,
    details: Annotated[
        bool,
        typer.Option(
            "--details", help="Also print the plan's caps and the full policy comparison."
        ),
    ] = False,
) -> None:
    """Apply the plan that `cotplan plan` wrote on held-out items; judge each size against
    ε and compare with uncapped."""
    from cotplan.backends import connect
    from cotplan.charts import chart
    from cotplan.planner.exit_plan import EXIT_CHOICES, exit_plan_for
    from cotplan.planner.run import SavedPlan, run_plan

    asked = parse_ints(n, "n", low=1)
    check_item_source(family, tasks, asked)
    check_int(count, "count", low=1)
    check_int(uncapped, "uncapped", low=1, high=MAX_BUDGET)  # sent as max_tokens: a real cap
    check_int(concurrency, "concurrency", low=1)
    check_timeouts(timeout, max_retries)
    check_protocol(protocol)
    check_out(out)
    check_int(seed, "seed", low=0)
    require_choice(exit_, "exit", EXIT_CHOICES)
    if exit_plan is not None and exit_ != "certified":
        raise InputError("is read only with --exit certified", field="exit_plan")
    check_read(plan)
    saved = SavedPlan.load(plan)
    exits = None
    if exit_ == "certified":
        exits = exit_plan_for(exit_plan, plan, eps=saved.eps, model=saved.model)
    # The plan must be this model's, before the model (maybe paid, maybe slow) starts.
    notes = _binding_notes(saved, backend, base_url, protocol, allow_other_model)
    items, sizes = _held_out(
        saved, family=family, tasks=tasks, asked=asked, count=count, seed=seed, backend=backend
    )
    console.print(f"plan {plan} (ε = {saved.eps:g}, law {saved.law or 'none'})")
    for note in notes:
        console.print(f"[yellow]note:[/] {note}")
    if details:
        console.print(f"verdict: {saved.verdict_}")
        console.print(_made_for(saved))
        print_caps(saved, sizes)
    options = connect_options(backend, timeout, max_retries, protocol)
    with (
        start_report(out, plan.parent, command="run") as report,
        connect(backend, base_url=base_url, **options) as model,
    ):
        # The spec alone cannot name every model (plugins, lab weights): check the real one.
        for late in _started_notes(saved, model, allow_other_model):
            if late not in notes:
                console.print(f"[yellow]note:[/] {late}")
        console.print(f"model {model.model} ({mode_and_protocol(model)})")
        result = run_plan(
            model,
            saved,
            items,
            saved.eps,
            uncapped=uncapped,
            concurrency=concurrency,
            progress=progress,
            exit_plan=exits,
        )
        print_run_glance(console, result)
        if details:
            console.rule("details")
            print_comparison(result)
        for note in result.exit_notes:
            console.print(f"[yellow]note:[/] {note}")
        if result.exit_summary:
            console.print(result.exit_summary)
        written = result.save(report.path, draw=chart)
        folder = finish_report(report)
    page = add_report_page(folder, command="run")
    written += [page] if page else []
    console.print(f"wrote {folder}/" + ", ".join(path.name for path in written))


def _binding_notes(
    saved: SavedPlan,
    backend: str,
    base_url: str | None,
    protocol: str,
    allow_other_model: bool,
) -> list[str]:
    """Refuse a plan made for another model or protocol (before anything starts); the notes
    to print when `--allow-other-model` lets one through."""
    from cotplan.planner.binding import (
        backend_model,
        check_plan_model,
        check_plan_protocol,
        planned_protocol,
    )

    model_note = check_plan_model(
        saved, backend=backend, base_url=base_url, allow_other_model=allow_other_model
    )
    chosen = planned_protocol(protocol, backend_model(backend, base_url))
    protocol_note = check_plan_protocol(saved, chosen, allow_other_model=allow_other_model)
    return [note for note in (model_note, protocol_note) if note]


def _started_notes(saved: SavedPlan, model: Backend, allow_other_model: bool) -> list[str]:
    """The binding checked again on the started backend, which knows its name and protocol."""
    from cotplan.generate.protocols import protocol_for
    from cotplan.planner.binding import check_plan_model, check_plan_protocol

    notes = [
        check_plan_model(saved, model.model, allow_other_model=allow_other_model),
        check_plan_protocol(saved, protocol_for(model), allow_other_model=allow_other_model),
    ]
    return [note for note in notes if note]


def _held_out(
    saved: SavedPlan,
    *,
    family: str | None,
    tasks: Path | None,
    asked: list[int],
    count: int,
    seed: int,
    backend: str,
) -> tuple[list[TaskItem], list[int]]:
    """The held-out items and their sizes: none seen in calibration, none beyond the plan's
    reach (refused here, naming the size, before the model starts)."""
    from cotplan.planner.calibrate import load_calibration
    from cotplan.tasks import drop_seen

    sizes = asked or list(saved.sizes_)
    items = build_items(family, tasks, sizes, count, seed, backend=backend)
    if tasks is not None:
        # Items without `n` are sized by the model's tokenizer, known once it runs.
        sizes = sorted({item.n for item in items if item.n is not None})
    for size in sizes:
        saved.cap(size)
    if Path(saved.calibration).is_file():
        calibrated = load_calibration(saved.calibration).frame["item"].astype(str)
        items, dropped = drop_seen(items, calibrated)
        if dropped:
            console.print(
                f"[yellow]note:[/] dropped {dropped} held-out item(s) seen in calibration"
            )
    return items, sizes


def register(app: typer.Typer) -> None:
    """Add `cotplan plan` and `cotplan run` to the top-level app."""
    app.command("plan")(plan)
    app.command("run")(run)
