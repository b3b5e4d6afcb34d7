"""`cotplan calibrate`, `cotplan plan`, `cotplan run`: top-level planner commands.

Each command parses and checks ALL its options before it reads a file or connects to a model,
calls the library (`cotplan.planner`), prints with rich and writes its artefacts (CSV, PNG,
plan.json) into a report folder (`cotplan.reports`: named at the start, written as a unit):
`--out`, by default `reports/<time>-<random>/` for `calibrate` and the calibration's own folder
for `plan`. `plan` prints the chosen law, the certified
budgets and the extrapolations and writes plan.json; `run` applies that plan file as written
(no refit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cotplan.cli.calibrate import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MaxRetriesOption,
    ProtocolOption,
    TimeoutOption,
    check_protocol,
)
from cotplan.cli.report_folders import check_read, finish_report, start_report
from cotplan.errors import InputError
from cotplan.io import write_csv

if TYPE_CHECKING:
    from cotplan.backends import Backend

__all__ = [
    "build_items",
    "check_item_source",
    "parse_ints",
    "print_budgets",
    "print_calibration",
    "print_caps",
    "print_certified",
    "print_comparison",
    "print_report",
    "print_size_checks",
    "register",
    "save_chart",
]

console = Console()

Family = Annotated[
    str | None, typer.Option(help="A built-in task family (see `cotplan tasks list`).")
]
TasksFile = Annotated[Path | None, typer.Option(help="A JSONL task file instead of a family.")]
Sizes = Annotated[list[str] | None, typer.Option("--n", help="Sizes, e.g. --n 4,8.")]
Count = Annotated[int, typer.Option(help="Items per size (built-in families).")]
BackendSpec = Annotated[str, typer.Option(help="'local', 'local:PATH' or 'openai:MODEL'.")]
BaseUrl = Annotated[str | None, typer.Option(help="An OpenAI-compatible endpoint.")]
Concurrency = Annotated[int | None, typer.Option(help="Items answered at once.")]
ShowProgress = Annotated[bool, typer.Option(help="Show a progress bar.")]
CalibrationFile = Annotated[
    Path, typer.Option(help="calibration.csv written by `cotplan calibrate`.")
]
LogBaseOption = Annotated[str, typer.Option(help="Base in which c is reported: e, 2 or 10.")]
AlphaOption = Annotated[str, typer.Option(help="'fit' or a fixed exponent (0.5: the paper).")]
Bootstrap = Annotated[int, typer.Option(help="Item-bootstrap resamples for the intervals.")]
LawOption = Annotated[
    str,
    typer.Option(help="'auto' (chosen on held-out items), paper, paper-half, logistic, step, "
                 "monotone."),
]  # fmt: skip
DeltaOption = Annotated[
    float, typer.Option(help="1 − confidence of the certified budgets (0.05: 95%).")
]
OutNextToCalibration = Annotated[
    Path | None, typer.Option(help="Report folder (default: the calibration's folder).")
]


# ------------------------------------------------------------------------------------------
# Shared helpers (also used by `cotplan demo`)


def parse_ints(values: Sequence[str] | None, name: str, *, low: int | None = None) -> list[int]:
    """`["4,8", "16"]` -> [4, 8, 16]; names the option in errors; each at least `low`."""
    out: list[int] = []
    for value in values or ():
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            try:
                number = int(part)
            except ValueError:
                raise InputError(f"must be whole numbers, got {part!r}", field=name) from None
            if low is not None and number < low:
                raise InputError(f"must be at least {low}, got {number}", field=name)
            out.append(number)
    return out


def check_unit(value: float, name: str) -> float:
    """A share strictly between 0 and 1 (a target error, a risk level)."""
    if not (isinstance(value, int | float) and 0.0 < float(value) < 1.0):
        raise InputError(f"must be in (0, 1), got {value!r}", field=name)
    return float(value)


def check_at_least(value: float | None, name: str, low: float) -> None:
    """`value` ≥ `low` (None passes: the option was not given)."""
    if value is not None and not (math.isfinite(value) and value >= low):
        raise InputError(f"must be at least {low:g}, got {value!r}", field=name)


def check_law(law: str) -> str:
    from cotplan.planner.laws import LAW_NAMES

    if law != "auto" and law not in LAW_NAMES:
        raise InputError(
            f"must be 'auto' or one of {', '.join(LAW_NAMES)}, got {law!r}", field="law"
        )
    return law


def check_item_source(family: str | None, tasks: Path | None, sizes: Sequence[int]) -> None:
    """Exactly one of --family and --tasks, and no --n with --tasks: a task file's items carry
    their own sizes, and silently running other sizes than asked misleads."""
    if (family is None) == (tasks is None):
        raise InputError("give exactly one of --family and --tasks", field="family")
    if tasks is not None and sizes:
        raise InputError(
            "--n cannot be used with --tasks: the task file's items carry their own sizes "
            "(`cotplan tasks make --n ...` writes a file for the sizes you want)",
            field="n",
        )


def build_items(
    family: str | None, tasks: Path | None, sizes: list[int], count: int, seed: int
) -> list[Any]:
    """Items from a built-in family (each size, `count` items) or from a JSONL task file."""
    from cotplan.tasks import load_tasks, make_tasks

    if (family is None) == (tasks is None):
        raise InputError("give exactly one of --family and --tasks", field="family")
    if tasks is not None:
        return list(load_tasks(tasks))
    assert family is not None
    if not sizes:
        raise InputError("give at least one size, e.g. --n 4,8", field="n")
    return [item for n in sizes for item in make_tasks(family, n=n, count=count, seed=seed)]


def save_chart(chart: Any, path: Path) -> Path | None:
    """Save an Altair chart as PNG; a rendering failure is reported, not fatal."""
    try:
        chart.save(str(path))
    except Exception as exc:  # vl-convert failures should not lose the CSVs already written
        console.print(f"[yellow]could not render {path.name}: {exc}[/]")
        return None
    return path


def _fmt(x: float, digits: int = 2) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    return f"{x:.{digits}f}"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.0%}"


def print_calibration(
    calibration: Any, *, title: str = "Calibration: accuracy by size and budget"
) -> None:
    """Accuracy per (n, k) with the mean reasoning tokens spent at each budget."""
    summary = calibration.summary()
    budgets = sorted(int(k) for k in summary["k"].unique())
    table = Table(title=title)
    table.add_column("n", justify="right")
    for k in budgets:
        table.add_column(f"k={k}", justify="right")
    for n, rows in summary.groupby("n"):
        cells = []
        for k in budgets:
            hit = rows[rows["k"] == k]
            if hit.empty:
                cells.append("")
                continue
            r = hit.iloc[0]
            cells.append(f"{r['accuracy']:.2f} ({r['reasoning_tokens']:.0f} tok)")
        table.add_row(str(n), *cells)
    console.print(table)
    answers = len(calibration.frame)
    items = calibration.frame["item"].nunique()
    console.print(
        f"{items} items x {len(budgets)} budgets = {answers} answers; cells: accuracy (mean "
        f"reasoning tokens spent); {calibration.requests} requests, {calibration.cache_hits} "
        "answered by the call cache"
        + (f", {calibration.retries} retried after failures" if calibration.retries else "")
    )
    for note in calibration.notes:
        console.print(f"[yellow]note:[/] {note}")
    print_spend(calibration.frame)


def print_spend(frame: Any) -> None:
    """One line: what the calibration itself cost (answers, tokens, USD)."""
    from cotplan.planner.calibrate import calibration_spend

    spend = calibration_spend(frame)
    tokens = [
        f"{spend[kind]:,.0f} {kind.removesuffix('_tokens')}"
        for kind in ("prompt_tokens", "reasoning_tokens", "answer_tokens")
        if not math.isnan(spend[kind])
    ]
    usd = "price unknown" if math.isnan(spend["cost_usd"]) else f"USD {spend['cost_usd']:.4f}"
    console.print(
        f"calibration spend: {spend['answers']:.0f} answers of {spend['items']:.0f} items"
        + (f"; tokens {', '.join(tokens)}" if tokens else "")
        + f"; {usd}"
    )


def print_report(planner: Any) -> None:
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
    laws = getattr(planner, "laws_", None)
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


def print_certified(planner: Any, eps: float) -> None:
    """The certified budget at each calibrated size for `eps`, or why there is none."""
    if getattr(planner, "certified_", None) is None or planner.status_ != "helps":
        return
    delta = planner.certified_.delta
    table = Table(
        title=f"Certified budgets: error ≤ ε = {eps:g} with {1 - delta:.0%} confidence "
        "(exact binomial bounds, tested from the largest budget down)"
    )
    for column in ("n", "cap", "error bound", "wrong / items", "note"):
        table.add_column(column, justify="left" if column == "note" else "right")
    for n in planner.certified_.sizes:
        cert = planner.certified_.at(n, eps)
        table.add_row(
            str(n),
            "–" if cert.k is None else str(cert.k),
            f"{cert.error_bound:.3f}",
            f"{cert.errors} / {cert.items}",
            cert.note,
        )
    console.print(table)


def print_budgets(budgets: Sequence[Any], eps: float) -> None:
    """k* per size, with its interval and the cap to use."""
    table = Table(title=f"Planned budget k* for target error ε = {eps:g}")
    for column in ("n", "law", "k*", "interval", "cap (tokens)", "how", "note"):
        table.add_column(column, justify="left" if column in ("law", "how", "note") else "right")
    for budget in budgets:
        how = getattr(budget, "basis", "")
        if getattr(budget, "extrapolated", False) and math.isfinite(budget.cap_high):
            how += f" (cap interval {budget.cap_low:.0f}–{budget.cap_high:.0f})"
        table.add_row(
            f"{budget.n:g}",
            getattr(budget, "law", ""),
            _fmt(budget.k_star, 1),
            f"[{_fmt(budget.low, 1)}, {_fmt(budget.high, 1)}]",
            str(budget.tokens),
            how,
            budget.note,
        )
    console.print(table)
    if budgets and getattr(budgets[0], "formula", ""):
        console.print(f"  {budgets[0].formula}")


def print_caps(plan: Any, sizes: Sequence[int]) -> None:
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


def print_size_checks(checks: Any) -> None:
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


def print_comparison(run: Any, *, title: str | None = None) -> None:
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
    if getattr(run, "by_size", None) is not None:
        print_size_checks(run.by_size)
    planned = comparison.set_index("policy").loc["planned"]
    console.print(
        f"plan vs uncapped: reasoning tokens saved {planned['tokens_saved']:.0%} "
        f"[{_pct(planned['tokens_saved_low'])}, {_pct(planned['tokens_saved_high'])}], "
        f"accuracy change {planned['accuracy_change']:+.2f} "
        f"[{planned['accuracy_change_low']:+.2f}, {planned['accuracy_change_high']:+.2f}] "
        "(paired item bootstrap, 95%)"
    )
    console.print(f"[bold]conclusion:[/] {run.conclusion}")


# ------------------------------------------------------------------------------------------
# Commands


def mode_and_protocol(model: Backend) -> str:
    """How budgeted CoT drives `model`, for the line a command prints after connecting (the
    heavy generate layer is imported only then, so `cotplan --help` stays fast)."""
    from cotplan.generate.budgeted import driven_as

    return driven_as(model)


def register(app: typer.Typer) -> None:
    """Add the planner's commands to the top-level app."""

    @app.command()
    def calibrate(
        family: Family = None,
        tasks: TasksFile = None,
        n: Sizes = None,
        count: Count = 12,
        seed: Annotated[int, typer.Option(help="Seed of the generated items.")] = 0,
        budgets: Annotated[
            str, typer.Option(help="Reasoning budgets, comma-separated, or 'paper'.")
        ] = "0,8,16,32,64,128",
        backend: BackendSpec = "local",
        base_url: BaseUrl = None,
        concurrency: Concurrency = None,
        answer_tokens: Annotated[int, typer.Option(help="Cap of the answer phase.")] = 16,
        out: Annotated[
            Path | None, typer.Option(help="Report folder (default reports/<time>-<random>/).")
        ] = None,
        progress: ShowProgress = True,
        timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
        max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
        protocol: ProtocolOption = "auto",
    ) -> None:
        """Answer items at several reasoning budgets and save the calibration table."""
        from cotplan.backends import connect
        from cotplan.cli.calibrate import (
            check_calibrate_options,
            check_int,
            check_timeouts,
            connect_options,
        )
        from cotplan.planner.calibrate import calibrate as run_calibration

        check_item_source(family, tasks, parse_ints(n, "n"))
        check_timeouts(timeout, max_retries)
        check_protocol(protocol)
        check_int(seed, "seed", low=0)
        grid: Any = check_calibrate_options(
            budgets=budgets,
            count=count,
            concurrency=concurrency,
            answer_tokens=answer_tokens,
            backend=backend,
            base_url=base_url,
            out=out,
        )  # all before the first (maybe paid) call
        items = build_items(family, tasks, parse_ints(n, "n"), count, seed)
        options = connect_options(backend, timeout, max_retries, protocol)
        with (
            start_report(out, command="calibrate") as report,
            connect(backend, base_url=base_url, **options) as model,
        ):
            console.print(f"model {model.model} ({mode_and_protocol(model)})")
            result = run_calibration(
                model,
                items,
                grid,
                concurrency=concurrency,
                progress=progress,
                answer_tokens=answer_tokens,
            )
            result.to_csv(report.path / "calibration.csv")
            print_calibration(result)
            folder = finish_report(report)
        console.print(f"wrote {folder / 'calibration.csv'}")

    @app.command()
    def plan(
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
    ) -> None:
        """Fit the error laws on a calibration, print the chosen law, the certified budgets
        and k* for the sizes asked; write plan.json for `cotplan run`."""
        from cotplan.cli.calibrate import MAX_BOOTSTRAP, check_int, check_out
        from cotplan.planner.run import SavedPlan

        # Every option is checked before the fit: a typo should not cost a bootstrap.
        asked = parse_ints(n, "n", low=1)
        check_out(out)
        check_int(seed, "seed", low=0)
        check_int(bootstrap, "bootstrap", low=0, high=MAX_BOOTSTRAP)
        check_unit(eps, "eps")
        check_unit(delta, "delta")
        check_law(law)
        check_at_least(bootstrap, "bootstrap", 0)
        check_at_least(reach, "reach", 1)
        check_read(calibration)
        frame, planner = _fit(calibration, law, delta, log_base, alpha, bootstrap, seed)
        sizes = asked or list(planner.sizes_)
        print_spend(frame)
        print_report(planner)
        print_certified(planner, eps)
        budgets = [planner.budget(size, eps) for size in sizes]
        print_budgets(budgets, eps)
        saved = SavedPlan.from_planner(
            planner, budgets, eps, str(calibration.resolve()), frame=frame, reach=reach
        )
        print_caps(saved, sorted({*saved.calibrated_sizes, *sizes}))
        with start_report(out, calibration.parent, command="plan") as report:
            written = [
                saved.save(report.path / "plan.json"),
                *_write_plan(report.path, planner, budgets, eps),
            ]
            # plan.json last: a folder whose plan.json is new holds the new tables too.
            folder = finish_report(report, last=("plan.json",))
        names = ", ".join(path.name for path in written[1:])
        console.print(f"wrote {folder}/plan.json (for `cotplan run --plan`), {names}")

    @app.command()
    def run(
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
            typer.Option("--allow-other-model", help="Apply a plan made for another model anyway."),
        ] = False,
        out: OutNextToCalibration = None,
        progress: ShowProgress = True,
        timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
        max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
        protocol: ProtocolOption = "auto",
    ) -> None:
        """Apply the plan that `cotplan plan` wrote on held-out items; judge each size against
        ε and compare with uncapped."""
        from cotplan.backends import connect
        from cotplan.cli.calibrate import (
            MAX_BUDGET,
            check_int,
            check_out,
            check_timeouts,
            connect_options,
        )
        from cotplan.planner.calibrate import load_calibration
        from cotplan.planner.run import SavedPlan, check_plan_model, run_plan
        from cotplan.tasks import drop_seen

        asked = parse_ints(n, "n", low=1)
        check_item_source(family, tasks, asked)
        check_at_least(count, "count", 1)
        check_at_least(uncapped, "uncapped", 1)
        check_at_least(concurrency, "concurrency", 1)
        check_timeouts(timeout, max_retries)
        check_protocol(protocol)
        check_out(out)
        check_int(seed, "seed", low=0)
        check_int(uncapped, "uncapped", high=MAX_BUDGET)  # sent as max_tokens: a real cap
        check_read(plan)
        saved = SavedPlan.load(plan)
        # The plan must be this model's, before the model (maybe paid, maybe slow) starts.
        note = check_plan_model(
            saved, backend=backend, base_url=base_url, allow_other_model=allow_other_model
        )
        sizes = asked or list(saved.sizes_)
        items = build_items(family, tasks, sizes, count, seed)
        if tasks is not None:
            # Items without `n` are sized by the model's tokenizer, known once it runs.
            sizes = sorted({item.n for item in items if item.n is not None})
        for size in sizes:
            saved.cap(size)  # a size beyond the plan's reach is refused here, naming it
        if Path(saved.calibration).is_file():
            calibrated = load_calibration(saved.calibration).frame["item"].astype(str)
            items, dropped = drop_seen(items, calibrated)
            if dropped:
                console.print(
                    f"[yellow]note:[/] dropped {dropped} held-out item(s) seen in calibration"
                )
        console.print(f"plan {plan} (law {saved.law or 'none'}): {saved.verdict_}")
        if saved.model:
            console.print(
                f"made for model {saved.model}" + (f" ({saved.mode})" if saved.mode else "")
            )
        if note:
            console.print(f"[yellow]note:[/] {note}")
        print_caps(saved, sizes)
        options = connect_options(backend, timeout, max_retries, protocol)
        with (
            start_report(out, plan.parent, command="run") as report,
            connect(backend, base_url=base_url, **options) as model,
        ):
            # The spec alone cannot name every model (plugins, lab weights): check the real one.
            late = check_plan_model(saved, model.model, allow_other_model=allow_other_model)
            if late and late != note:
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
            )
            print_comparison(result)
            written = _write_run(report.path, result)
            folder = finish_report(report)
        console.print(f"wrote {folder}/" + ", ".join(path.name for path in written))


def _fit(
    calibration: Path,
    law: str,
    delta: float,
    log_base: str,
    alpha: str,
    bootstrap: int,
    seed: int,
) -> tuple[Any, Any]:
    from cotplan.planner import BudgetPlanner
    from cotplan.planner.calibrate import load_calibration

    loaded = load_calibration(calibration)
    alpha_value: Any = alpha
    if alpha != "fit":
        try:
            alpha_value = float(alpha)
        except ValueError:
            raise InputError(f"must be 'fit' or a number, got {alpha!r}", field="alpha") from None
    planner = BudgetPlanner(
        law,
        delta=delta,
        log_base=log_base,
        alpha=alpha_value,
        n_bootstrap=bootstrap,
        random_state=seed,
    ).fit(loaded.frame)
    return loaded.frame, planner


def _write_plan(folder: Path, planner: Any, budgets: Sequence[Any], eps: float) -> list[Path]:
    """The plan's tables and charts; returns the files actually written (a chart that does
    not render, or a table the fit has no data for, is left out, so nothing is claimed)."""
    import pandas as pd

    from cotplan.charts.planner import budget_chart, calibration_chart

    frame = pd.concat([b.to_frame() for b in budgets], ignore_index=True)
    written = [write_csv(frame, folder / "plan.csv")]
    written.append(write_csv(planner.report().to_frame(), folder / "constants.csv"))
    if planner.laws_ is not None:
        written.append(write_csv(planner.laws_.to_frame(), folder / "laws.csv"))
    if planner.certified_ is not None:
        written.append(write_csv(planner.certify(eps), folder / "certified.csv"))
    charts = [(calibration_chart(planner), "calibration.png")]
    if planner.status_ == "helps":
        charts.append((budget_chart(planner, eps=eps), "budget.png"))
    for chart, name in charts:
        path = save_chart(chart, folder / name)
        if path is not None:
            written.append(path)
    return written


def _write_run(folder: Path, result: Any) -> list[Path]:
    """The run's tables and chart; returns the files actually written."""
    written = [
        write_csv(result.frame, folder / "run.csv"),
        write_csv(result.comparison, folder / "comparison.csv"),
        write_csv(result.plan, folder / "run_plan.csv"),
    ]
    if result.by_size is not None:
        written.append(write_csv(result.by_size.to_frame(), folder / "run_eps.csv"))
    chart = save_chart(result.chart(), folder / "comparison.png")
    return written + ([chart] if chart is not None else [])
