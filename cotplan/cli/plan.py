"""`cotplan plan` and `cotplan run`: plan a cap from a calibration, apply it on held-out items.

Each command checks ALL its options before it reads a file or connects to a model, calls one
library function, prints with rich, and has the library write its report folder
(`cotplan.reports`: named at the start, written as a unit). `plan` calls
`cotplan.planner.plan_result.plan_from_calibration`, whose `PlanResult.save` decides what a plan
folder holds (by default the calibration's own folder); `run` loads plan.json as written (no
refit), checks it is this model's and protocol's, and calls `run_plan`, whose `PlanRun.save`
writes the run's tables. Charts are drawn by `cotplan.charts`. `cotplan calibrate` and the
option checks are in `cotplan.cli.calibrate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

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
from cotplan.cli.report_folders import check_read, finish_report, start_report
from cotplan.errors import InputError
from cotplan.reports import save_chart
from cotplan.validation import require_choice, require_number, require_unit

if TYPE_CHECKING:
    from cotplan.backends import Backend
    from cotplan.planner import Budget, BudgetPlanner, CertifiedBudget, SavedPlan
    from cotplan.planner.records import SizeChecks
    from cotplan.planner.run import PlanRun
    from cotplan.tasks import TaskItem

__all__ = [
    "build_items",
    "check_at_least",
    "check_item_source",
    "check_unit",
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

console = Console()

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
# Printing


def _fmt(x: float, digits: int = 2) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    return f"{x:.{digits}f}"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.0%}"


def print_report(planner: BudgetPlanner) -> None:
    """The verdict and the constants with their intervals."""
    report = planner.report()
    console.print(f"[bold]verdict:[/] {report.verdict}")
    if report.constants:
        table = Table(title="Fitted constants (95% item-bootstrap intervals)")
        for column in ("constant", "estimate", "interval", "meaning"):
            table.add_column(
                column, justify="left" if column in ("constant", "meaning") else "right"
            )
        meaning = {
            "e0": "error floor no budget removes",
            "e_base": "error without useful reasoning",
            "k0": "tokens before reasoning pays",
            "c": "tokens per e-fold of error, per n^α",
            "alpha": "how the budget grows with n (paper: 1/2)",
        }
        meaning = {**meaning, **{k: "" for k in report.constants if k not in meaning}}
        flat = report.status not in ("helps", "given")
        for name, est in report.constants.items():
            if flat and name != "e0":
                continue  # a flat fit has one constant: the error at every budget
            interval = f"[{_fmt(est.interval.low)}, {_fmt(est.interval.high)}]"
            what = "error at every budget (flat: no effect of k)" if flat else meaning[name]
            table.add_row(name, _fmt(est.value, 3), interval, what)
        console.print(table)
    for line in (
        report.trend.verdict if report.trend else None,
        report.lrt.verdict if report.lrt else None,
        # The α = 0 test; the verdict already carries it when α sits at 0.
        report.growth.verdict
        if report.growth and report.growth.verdict not in report.verdict
        else None,
    ):
        if line:
            console.print(f"  {line}")
    laws = planner.laws_
    if laws is None:
        return
    table = Table(
        title=f"Error laws by held-out log-likelihood ({laws.folds}-fold cross-validation over "
        "items)"
    )
    for column in ("law", "held-out", "vs paper ± se", "parameters (95% intervals)"):
        table.add_column(column, justify="left" if column[0] in "lp" else "right")
    for fit in laws.fits:
        mark = " *" if fit.law == laws.selected else ""
        table.add_row(
            fit.law + mark,
            f"{fit.heldout_loglik:.1f}",
            f"{fit.difference:+.1f} ± {_fmt(fit.difference_se, 1)}",
            fit.parameter_text() or "(one error per calibrated budget)",
        )
    console.print(table)
    console.print(f"[bold]law:[/] {laws.selected} ({laws.reason})")


def print_certified(planner: BudgetPlanner, eps: float) -> None:
    """The certified budget at each calibrated size for `eps` (`print_certificates` of the
    planner's certificates), or nothing when reasoning is not credited."""
    certified = planner.certified_
    if certified is None or planner.status_ != "helps":
        return
    print_certificates([certified.at(n, eps) for n in certified.sizes], eps)


def print_certificates(certificates: Sequence[CertifiedBudget], eps: float) -> None:
    """The certified budget at each calibrated size for `eps`, or why there is none."""
    if not certificates:
        return
    delta = certificates[0].delta
    table = Table(
        title=f"Certified budgets: error ≤ ε = {eps:g} with {1 - delta:.0%} confidence "
        "(exact binomial bounds, tested from the largest budget down)"
    )
    for column in ("n", "cap", "error bound", "wrong / items", "note"):
        table.add_column(column, justify="left" if column == "note" else "right")
    for cert in certificates:
        table.add_row(
            str(cert.n),
            "–" if cert.k is None else str(cert.k),
            f"{cert.error_bound:.3f}",
            f"{cert.errors} / {cert.items}",
            cert.note,
        )
    console.print(table)


def print_budgets(budgets: Sequence[Budget], eps: float) -> None:
    """k* per size, with its interval and the cap to use."""
    table = Table(title=f"Planned budget k* for target error ε = {eps:g}")
    for column in ("n", "law", "k*", "interval", "cap (tokens)", "how", "note"):
        table.add_column(column, justify="left" if column in ("law", "how", "note") else "right")
    for budget in budgets:
        how = budget.basis
        if budget.extrapolated and math.isfinite(budget.cap_high):
            how += f" (cap interval {budget.cap_low:.0f}–{budget.cap_high:.0f})"
        table.add_row(
            f"{budget.n:g}",
            budget.law,
            _fmt(budget.k_star, 1),
            f"[{_fmt(budget.low, 1)}, {_fmt(budget.high, 1)}]",
            str(budget.tokens),
            how,
            budget.note,
        )
    console.print(table)
    if budgets and budgets[0].formula:
        console.print(f"  {budgets[0].formula}")


def print_caps(plan: SavedPlan, sizes: Sequence[int]) -> None:
    """The cap a saved plan deploys at each size (`SavedPlan.cap`), or why it refuses one."""
    table = Table(title=f"Caps to deploy for ε = {plan.eps:g} (plan.cap(n))")
    for column in ("n", "cap (tokens)", "certified", "how"):
        table.add_column(column, justify="left" if column == "how" else "right")
    for n in sizes:
        try:
            cap = plan.cap(n)
        except InputError as exc:
            table.add_row(str(n), "–", "no", f"refused: {exc}")
            continue
        table.add_row(str(n), str(cap.tokens), "yes" if cap.certified else "no", cap.note)
    console.print(table)
    if plan.nothing_certified and plan.status_ == "helps":
        console.print(
            f"[yellow]note:[/] no calibrated size certifies ε = {plan.eps:g}: every cap is an "
            "estimate (the conservative end of the law's interval where it has one)"
        )


def print_size_checks(checks: SizeChecks) -> None:
    """Each size's held-out error with its exact interval against ε."""
    table = Table(
        title=f"Held-out error against ε = {checks.eps:g} per size "
        f"({checks.confidence:.0%} exact intervals)"
    )
    for column in ("n", "items", "cap", "certified", "error [interval]", "verdict"):
        table.add_column(column, justify="left" if column == "verdict" else "right")
    for size in checks.sizes:
        table.add_row(
            str(size.n),
            str(size.items),
            "–" if size.cap is None else str(size.cap),
            "yes" if size.certified else "no",
            f"{size.error:.2f} [{size.low:.2f}, {size.high:.2f}]",
            f"{size.verdict} ε",
        )
    console.print(table)


def print_comparison(run: PlanRun, *, title: str | None = None) -> None:
    """Planned vs uncapped: accuracy with intervals, tokens, cost, and the paired savings."""
    comparison = run.comparison
    table = Table(
        title=title or f"Held-out items: plan (ε = {run.eps:g}) vs uncapped (cap {run.uncapped})"
    )
    for column in (
        "policy",
        "items",
        "accuracy [95% CI]",
        "reasoning tok",
        "answer tok",
        "cost (USD)",
    ):
        table.add_column(column, justify="left" if column == "policy" else "right")
    for _, r in comparison.iterrows():
        table.add_row(
            str(r["policy"]),
            str(int(r["items"])),
            f"{r['accuracy']:.2f} [{r['accuracy_low']:.2f}, {r['accuracy_high']:.2f}]",
            f"{r['reasoning_tokens']:.1f}",
            f"{r['answer_tokens']:.1f}",
            _fmt(float(r["cost_usd"]), 6),
        )
    console.print(table)
    if run.by_size is not None:
        print_size_checks(run.by_size)
    planned = run.row("planned")
    console.print(
        f"plan vs uncapped: reasoning tokens saved {planned['tokens_saved']:.0%} "
        f"[{_pct(float(planned['tokens_saved_low']))}, "
        f"{_pct(float(planned['tokens_saved_high']))}], "
        f"accuracy change {planned['accuracy_change']:+.2f} "
        f"[{planned['accuracy_change_low']:+.2f}, {planned['accuracy_change_high']:+.2f}] "
        "(paired item bootstrap, 95%)"
    )
    console.print(f"[bold]conclusion:[/] {run.conclusion}")


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
) -> None:
    """Fit the error laws on a calibration, print the chosen law, the certified budgets and
    k* for the sizes asked; write plan.json for `cotplan run` (and exit.json with --exit)."""
    from cotplan.charts import chart
    from cotplan.planner.plan_result import plan_from_calibration

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
    print_spend(result.calibration)
    print_report(result.planner)
    if result.planner.status_ == "helps":
        print_certificates(result.certificates, result.eps)
    print_budgets(result.budgets, result.eps)
    print_caps(saved, sorted({*saved.calibrated_sizes, *saved.sizes_}))
    console.print(_made_for(saved))
    if result.exit_note:
        console.print(f"[yellow]note:[/] no exit plan written: {result.exit_note}")
    for line in result.exit_lines():
        console.print(line)
    with start_report(out, calibration.parent, command="plan") as report:
        written = result.save(report.path, draw=chart)
        # plan.json last: a folder whose plan.json is new holds the new tables too.
        folder = finish_report(report, last=("plan.json",))
    names = ", ".join(path.name for path in written[1:])
    console.print(f"wrote {folder}/plan.json (for `cotplan run --plan`), {names}")


def _made_for(saved: SavedPlan) -> str:
    """The plan's binding in words: model, mode and protocol."""
    model = saved.model or "(not recorded)"
    mode = f", mode {saved.mode}" if saved.mode else ""
    protocol = saved.protocol or "(not recorded)"
    return f"made for model {model}{mode}, protocol {protocol}"


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
    console.print(f"plan {plan} (law {saved.law or 'none'}): {saved.verdict_}")
    console.print(_made_for(saved))
    for note in notes:
        console.print(f"[yellow]note:[/] {note}")
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
        print_comparison(result)
        for note in result.exit_notes:
            console.print(f"[yellow]note:[/] {note}")
        if result.exit_summary:
            console.print(result.exit_summary)
        written = result.save(report.path, draw=chart)
        folder = finish_report(report)
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
