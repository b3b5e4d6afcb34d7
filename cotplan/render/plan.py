"""Planning at a glance: what `cotplan plan`, `run` and `demo` print first.

`print_plan_glance` leads with the cap per size as `SavedPlan.cap(n)` gives it, what backs it,
the savings measured in calibration, how to ship it and the law in one sentence;
`print_run_glance` with the held-out check in one table. `render_plan` and `render_run` are
the whole of each command's output (the statistics of `--details` are
`cotplan.render.plan_details`'s).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.console import Console

from cotplan.errors import InputError
from cotplan.render import plan_details
from cotplan.render.tables import compact_table, pct

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from cotplan.planner import BudgetPlanner, SavedPlan
    from cotplan.planner.held_out import HeldOut
    from cotplan.planner.plan_result import PlanResult
    from cotplan.planner.records import Budget, PlanCap
    from cotplan.planner.run import PlanRun
    from cotplan.planner.savings import CalibrationSavings

__all__ = [
    "cap_backing",
    "law_sentence",
    "made_for",
    "print_budget_caps",
    "print_plan_glance",
    "print_run_glance",
    "render_plan",
    "render_plan_header",
    "render_run",
    "ship_lines",
]


def print_budget_caps(console: Console, budgets: Sequence[Budget], eps: float) -> None:
    """The cap per size a planner's budgets give (the caps `run_plan` applies with a fitted
    planner), in the layout of `print_plan_glance`."""
    console.print(f"[bold]Reasoning caps for error ≤ {eps:g}[/]")
    table = compact_table([("n", "num"), ("cap", "num"), ("certified", "text"), ("why", "text")])
    for budget in budgets:
        if budget.certified:
            why = f"error ≤ {budget.error_bound:.3f}"
        elif budget.extrapolated:
            why = f"scaled by the {budget.law} law"
        else:
            why = f"the {budget.law} law's estimate"
        yes = "yes" if budget.certified else "no"
        table.add_row(f"{budget.n:g}", str(budget.tokens), yes, why)
    console.print(table)


def cap_backing(cap: PlanCap, law: str | None) -> str:
    """What backs a cap, in a few words (the full note is in `--details` and plan.csv)."""
    peak = " (capped at the accuracy peak)" if "capped at the peak" in cap.note else ""
    if cap.basis == "certified":
        return f"error ≤ {cap.error_bound:.3f}{peak}"
    if cap.basis == "scaled":
        return f"scaled from n = {cap.reference} by the {law} law{peak}"
    if cap.basis == "law":
        if cap.conservative:
            return f"{law} law, upper end of k* {cap.low:.0f}–{cap.high:.0f}{peak}"
        return f"{law} law's point estimate (misses ε half the time){peak}"
    return "reasoning showed no benefit: none allowed"


def law_sentence(planner: BudgetPlanner) -> str:
    """The fit's verdict in one sentence: does reasoning help, which law, how k grows with n."""
    report = planner.report()
    if report.status != "helps":
        head = report.verdict.split(";")[0].rstrip(".")
        return head + ")" * (head.count("(") - head.count(")")) + "."
    constants = report.constants
    parts = [
        f"reasoning helps: error falls from {constants['e_base'].value:.2f} with no reasoning "
        f"to a floor of {constants['e0'].value:.2f}"
    ]
    laws = planner.laws_
    if laws is not None:
        parts.append(f"the {laws.selected} law is used")
    alpha = constants.get("alpha")
    if alpha is not None:
        low, high = alpha.interval.low, alpha.interval.high
        if f"{low:.2f}" == f"{high:.2f}" or math.isnan(low - high):
            # The resamples all gave one exponent (a boundary of the fit, or too few sizes):
            # "n^2.00 (95% CI 2.00–2.00)" would read as certainty it does not have.
            parts.append(
                "how the budget grows with n could not be estimated (the item bootstrap "
                "shows no spread in the exponent)"
            )
            return "; ".join(parts) + "."
        from cotplan.planner.data import ALPHA_MAX  # here: the planner loads scipy

        paper = laws is None or laws.selected.startswith("paper")
        grow = "the budget grows as" if paper else "under the paper's law the budget grows as"
        if alpha.value >= ALPHA_MAX - 0.02:
            # The exponent sits at the top of its search range: "n^2.00" would read as a
            # measured square law, when all the fit says is "at least this fast".
            grow = grow.replace("grows as", "grows at least as fast as") + (
                f" n^{low:.2f} (its exponent reached the top of its range, {ALPHA_MAX:g}: "
                "how much faster is not measured"
            )
        else:
            grow += f" n^{alpha.value:.2f} (95% CI {low:.2f}–{high:.2f}"
        if report.lrt is not None:
            same = "consistent with" if "consistent" in report.lrt.verdict else "unlike"
            grow += f", {same} the paper's √n"
        parts.append(grow + ")")
    return "; ".join(parts) + "."


def ship_lines(plan_path: Path) -> list[str]:
    """The one command and the one line of Python that put the plan in front of traffic (the
    plan's path once, so no line outgrows the terminal)."""
    return [
        "[bold]Ship it[/] (P = " + str(plan_path) + "):",
        "  gateway: cotplan serve --plan P --upstream URL",
        '  Python:  client = cotplan.capped(openai.OpenAI(), "P")',
        "           client.chat.completions.create(..., size=n)",
    ]


def made_for(saved: SavedPlan) -> str:
    """The plan's binding in words: model, mode and protocol."""
    model = saved.model or "(not recorded)"
    mode = f", mode {saved.mode}" if saved.mode else ""
    protocol = saved.protocol or "(not recorded)"
    return f"made for model {model}{mode}, protocol {protocol}"


def print_plan_glance(
    console: Console,
    result: PlanResult,
    plan_path: Path,
    report_path: Path | None,
    savings: CalibrationSavings | None,
) -> None:
    """`cotplan plan`'s answer: caps, savings, how to ship, the law; at most ~20 lines."""
    saved = result.plan
    sizes = sorted({*saved.calibrated_sizes, *saved.sizes_})
    confidence = 1 - saved.delta
    console.print(
        f"[bold]Reasoning caps for error ≤ {saved.eps:g}[/] (certified: exact bound, "
        f"{confidence:.0%} confidence)"
    )
    table = compact_table([("n", "num"), ("cap", "num"), ("certified", "text"), ("why", "text")])
    for n in sizes:
        try:
            cap = saved.cap(n)
        except InputError as exc:
            table.add_row(str(n), "–", "no", f"refused: {_first_clause(str(exc))}")
            continue
        yes = "yes" if cap.certified else "no"
        table.add_row(str(n), str(cap.tokens), yes, cap_backing(cap, saved.law))
    console.print(table)
    if saved.nothing_certified and saved.status_ == "helps":
        console.print(
            f"[yellow]note:[/] no size certifies ε = {saved.eps:g}: every cap is an estimate"
        )
    saves = "nothing measured to compare (no capped size)" if savings is None else savings.sentence
    console.print(f"[bold]Saves:[/] {saves}")
    for line in ship_lines(plan_path):
        console.print(line)
    console.print(f"[bold]Law:[/] {law_sentence(result.planner)}")
    console.print(made_for(saved))
    where = f"; report {report_path}" if report_path is not None else ""
    console.print(f"Statistics: --details{where}")


def _first_clause(text: str) -> str:
    """The head of an error message, for a table cell (the message is printed in full with
    --details): its first clause after the field's name."""
    if text.startswith("`") and "`: " in text:
        text = text.split("`: ", 1)[1]
    return text.split(":")[0]


def render_plan(
    console: Console,
    result: PlanResult,
    *,
    folder: Path,
    caps: Mapping[int, int],
    savings: CalibrationSavings | None,
    details: bool = False,
) -> None:
    """All `cotplan plan` prints before its files are written: the glance (the plan will be
    `folder`/plan.json), with `details` the statistics, and the exit plan's lines."""
    from cotplan.planner.calibration_file import usage_note
    from cotplan.render.calibration import print_spend

    print_plan_glance(console, result, folder / "plan.json", folder / "report.html", savings)
    # Unknown token counts change what a plan can be trusted for: said at a glance too.
    if not details and (note := usage_note(result.calibration)):
        console.print(f"[yellow]note:[/] {note}")
    if details:
        saved = result.plan
        console.rule("details")
        print_spend(console, result.calibration)
        plan_details.print_report(console, result.planner)
        if result.planner.status_ == "helps":
            plan_details.print_certificates(console, result.certificates, result.eps)
        plan_details.print_budgets(console, result.budgets, result.eps, caps=caps)
        plan_details.print_caps(console, saved, sorted({*saved.calibrated_sizes, *saved.sizes_}))
    if result.exit_note:
        console.print(f"[yellow]note:[/] no exit plan written: {result.exit_note}")
    for line in result.exit_lines():
        console.print(line)


def print_run_glance(console: Console, run: PlanRun) -> None:
    """`cotplan run`'s answer: per size, the cap and its held-out error against ε, beside
    uncapped; then the savings and the conclusion in one line each."""
    planned = run.row("planned")
    uncapped = run.row("uncapped")
    if run.by_size is not None and run.by_size.sizes:
        checks = run.by_size
        console.print(
            f"[bold]Held-out check against ε = {run.eps:g}[/] "
            f"({checks.confidence:.0%} exact intervals)"
        )
        table = compact_table(
            [
                ("n", "num"),
                ("cap", "num"),
                ("cert.", "text"),
                ("items", "num"),
                ("error [interval]", "num"),
                ("verdict", "text"),
            ]
        )
        for size in checks.sizes:
            table.add_row(
                str(size.n),
                "–" if size.cap is None else str(size.cap),
                "yes" if size.certified else "no",
                str(size.items),
                f"{size.error:.2f} [{size.low:.2f}, {size.high:.2f}]",
                f"{size.verdict} ε",
            )
        console.print(table)
    console.print(
        f"[bold]Planned vs uncapped[/] (cap {run.uncapped}): accuracy "
        f"{planned['accuracy']:.2f} vs {uncapped['accuracy']:.2f} "
        f"(change {planned['accuracy_change']:+.2f} "
        f"[{planned['accuracy_change_low']:+.2f}, {planned['accuracy_change_high']:+.2f}]); "
        f"reasoning tokens {planned['reasoning_tokens']:.1f} vs "
        f"{uncapped['reasoning_tokens']:.1f} a query, {pct(planned['tokens_saved'])} saved "
        f"[{pct(planned['tokens_saved_low'])}, {pct(planned['tokens_saved_high'])}]"
    )
    console.print(f"[bold]Conclusion:[/] {run.conclusion}")


def render_run(console: Console, run: PlanRun, *, details: bool = False) -> None:
    """All `cotplan run` prints of its result: the glance, with `details` the full policy
    comparison, then the certified exit's notes and summary."""
    print_run_glance(console, run)
    if details:
        console.rule("details")
        plan_details.print_comparison(console, run)
    for note in run.exit_notes:
        console.print(f"[yellow]note:[/] {note}")
    if run.exit_summary:
        console.print(run.exit_summary)


def render_plan_header(
    console: Console,
    saved: SavedPlan,
    plan_path: Path,
    *,
    held: HeldOut,
    notes: Sequence[str],
    details: bool = False,
) -> None:
    """What `cotplan run` says before its model starts: the held-out items dropped, the plan,
    the binding notes, and with `details` the verdict, the binding and the caps."""
    if held.note:
        console.print(f"[yellow]note:[/] {held.note}")
    console.print(f"plan {plan_path} (ε = {saved.eps:g}, law {saved.law or 'none'})")
    for note in notes:
        console.print(f"[yellow]note:[/] {note}")
    if details:
        console.print(f"verdict: {saved.verdict_}")
        console.print(made_for(saved))
        plan_details.print_caps(console, saved, held.sizes)
