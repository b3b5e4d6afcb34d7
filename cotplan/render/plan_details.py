"""The statistics behind a plan, for `cotplan plan --details`, `run --details` and `demo
--details`: the fit and its tests, the certified budgets, k* by the law, the caps a saved plan
deploys, the held-out check and the policy comparison. The answer-first summaries are
`cotplan.render.plan`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from cotplan.errors import InputError
from cotplan.render.tables import fmt, pct

if TYPE_CHECKING:
    from cotplan.planner import Budget, BudgetPlanner, CertifiedBudget, SavedPlan
    from cotplan.planner.records import SizeChecks
    from cotplan.planner.run import PlanRun

__all__ = [
    "print_budgets",
    "print_caps",
    "print_certificates",
    "print_certified",
    "print_comparison",
    "print_report",
    "print_size_checks",
]


def print_report(console: Console, planner: BudgetPlanner) -> None:
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
            interval = f"[{fmt(est.interval.low)}, {fmt(est.interval.high)}]"
            what = "error at every budget (flat: no effect of k)" if flat else meaning[name]
            table.add_row(name, fmt(est.value, 3), interval, what)
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
            f"{fit.difference:+.1f} ± {fmt(fit.difference_se, 1)}",
            fit.parameter_text() or "(one error per calibrated budget)",
        )
    console.print(table)
    console.print(f"[bold]law:[/] {laws.selected} ({laws.reason})")


def print_certified(console: Console, planner: BudgetPlanner, eps: float) -> None:
    """The certified budget at each calibrated size for `eps` (`print_certificates` of the
    planner's certificates), or nothing when reasoning is not credited."""
    certified = planner.certified_
    if certified is None or planner.status_ != "helps":
        return
    print_certificates(console, [certified.at(n, eps) for n in certified.sizes], eps)


def print_certificates(
    console: Console, certificates: Sequence[CertifiedBudget], eps: float
) -> None:
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


def print_budgets(
    console: Console, budgets: Sequence[Budget], eps: float, caps: Mapping[int, int] | None = None
) -> None:
    """k* per size, with its interval and the cap to use. With `caps` (the plan's
    `plan.cap(n)`, printed above) the table shows k* only: one number per cap, never two."""
    title = f"Planned budget k* for target error ε = {eps:g}"
    if caps is not None:
        title = f"The law's k* for ε = {eps:g} (the caps are plan.cap(n), above)"
        table = Table(title=title)
        for column in ("n", "law", "k*", "interval", "note"):
            table.add_column(column, justify="left" if column in ("law", "note") else "right")
        for budget in budgets:
            table.add_row(
                f"{budget.n:g}",
                budget.law,
                fmt(budget.k_star, 1),
                f"[{fmt(budget.low, 1)}, {fmt(budget.high, 1)}]",
                budget.note,
            )
        console.print(table)
        if budgets and budgets[0].formula:
            console.print(f"  {budgets[0].formula}")
        return
    table = Table(title=title)
    for column in ("n", "law", "k*", "interval", "cap (tokens)", "how", "note"):
        table.add_column(column, justify="left" if column in ("law", "how", "note") else "right")
    for budget in budgets:
        how = budget.basis
        if budget.extrapolated and math.isfinite(budget.cap_high):
            how += f" (cap interval {budget.cap_low:.0f}–{budget.cap_high:.0f})"
        table.add_row(
            f"{budget.n:g}",
            budget.law,
            fmt(budget.k_star, 1),
            f"[{fmt(budget.low, 1)}, {fmt(budget.high, 1)}]",
            str(budget.tokens),
            how,
            budget.note,
        )
    console.print(table)
    if budgets and budgets[0].formula:
        console.print(f"  {budgets[0].formula}")


def print_caps(console: Console, plan: SavedPlan, sizes: Sequence[int]) -> None:
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


def print_size_checks(console: Console, checks: SizeChecks) -> None:
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


def print_comparison(console: Console, run: PlanRun, *, title: str | None = None) -> None:
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
            fmt(float(r["cost_usd"]), 6),
        )
    console.print(table)
    if run.by_size is not None:
        print_size_checks(console, run.by_size)
    planned = run.row("planned")
    console.print(
        f"plan vs uncapped: reasoning tokens saved {planned['tokens_saved']:.0%} "
        f"[{pct(float(planned['tokens_saved_low']))}, "
        f"{pct(float(planned['tokens_saved_high']))}], "
        f"accuracy change {planned['accuracy_change']:+.2f} "
        f"[{planned['accuracy_change_low']:+.2f}, {planned['accuracy_change_high']:+.2f}] "
        "(paired item bootstrap, 95%)"
    )
    console.print(f"[bold]conclusion:[/] {run.conclusion}")
