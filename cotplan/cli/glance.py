"""Answer-first printing: what a command's user came for, in a few lines that fit the terminal.

`cotplan plan` leads with `print_plan_glance` (the cap per size as `SavedPlan.cap(n)` gives it,
what backs it, the savings measured in calibration, how to ship it, the law in one sentence);
`run` with `print_run_glance` (the held-out check in one table). The statistics stay behind
`--details` (`cotplan.cli.plan`'s full tables) and in the report folder.

Tables here never cut a number: numeric columns do not wrap and text columns take what is
left (`compact_table`); a grid wider than the terminal is split into column groups
(`print_grid`) rather than squeezed into ellipses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table

from cotplan.errors import InputError

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from cotplan.planner import BudgetPlanner, SavedPlan
    from cotplan.planner.plan_result import PlanResult
    from cotplan.planner.records import Budget, PlanCap
    from cotplan.planner.run import PlanRun
    from cotplan.planner.savings import CalibrationSavings

__all__ = [
    "cap_backing",
    "compact_table",
    "law_sentence",
    "money",
    "print_budget_caps",
    "print_costs",
    "print_grid",
    "print_plan_glance",
    "print_run_glance",
    "ship_lines",
]


def compact_table(columns: Sequence[tuple[str, str]], *, title: str | None = None) -> Table:
    """A table with one header rule and no side borders (fewer lines, more room); each column
    is (name, kind): "num" columns are right-aligned and never wrap (a number is never cut),
    "text" columns wrap into the width left."""
    table = Table(
        box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title=title, title_justify="left"
    )
    for name, kind in columns:
        if kind == "num":
            table.add_column(name, justify="right", no_wrap=True)
        else:
            table.add_column(name, justify="left", overflow="fold")
    return table


def print_grid(
    console: Console,
    corner: str,
    headers: Sequence[str],
    rows: Sequence[tuple[str, Sequence[str]]],
    *,
    title: str | None = None,
) -> None:
    """A grid of short cells (every column a number column), split into as many tables as
    it takes for each to fit the console's width instead of cutting cells to '…'."""
    width = console.width
    # Each column takes its widest cell, a space of padding each side and a divider.
    label = max([len(corner), *(len(r[0]) for r in rows)]) + 1
    groups: list[list[int]] = [[]]
    used = label
    for j, head in enumerate(headers):
        cell = max([len(head), *(len(r[1][j]) for r in rows)]) + 3
        if groups[-1] and used + cell > width:
            groups.append([])
            used = label
        groups[-1].append(j)
        used += cell
    if title:
        console.print(title)
    for group in groups:
        table = compact_table([(corner, "num"), *((headers[j], "num") for j in group)])
        for name, cells in rows:
            table.add_row(name, *(cells[j] for j in group))
        console.print(table)


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


def money(x: float) -> str:
    """USD short enough for a narrow column: cents below 1,000, whole dollars above."""
    if math.isnan(x):
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 0.01 or x == 0:
        return f"{x:,.2f}"
    return f"{x:.2g}"


def print_costs(console: Console, costs: pd.DataFrame, queries_per_day: float) -> None:
    """The demo's projected cost, one small table per pricing (the model names above each
    table, not in a column that would push the numbers past the terminal's edge)."""
    console.print(
        f"[bold]Projected cost at {queries_per_day:,.0f} queries a day[/] "
        "(USD; month: the first month, P50 and P10–P90; year: 12 months)"
    )
    for pricing, rows in costs.groupby("pricing", sort=False):
        model = str(rows["model"].iloc[0])
        console.print(f"{model} ({pricing})")
        table = compact_table(
            [
                ("policy", "text"),
                ("tokens/query", "num"),
                ("USD/query", "num"),
                ("month P50", "num"),
                ("P10–P90", "num"),
                ("year", "num"),
            ]
        )
        for r in rows.to_dict("records"):
            table.add_row(
                str(r["policy"]),
                f"{r['tokens_per_query']:.0f}",
                f"{r['usd_per_query']:.2g}" if r["usd_per_query"] else "0",
                money(r["month_p50_usd"]),
                f"{money(r['month_p10_usd'])}–{money(r['month_p90_usd'])}",
                money(r["year_mean_usd"]),
            )
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
        paper = laws is None or laws.selected.startswith("paper")
        grow = (
            "the budget grows as" if paper else "under the paper's law the budget grows as"
        ) + f" n^{alpha.value:.2f} (95% CI {alpha.interval.low:.2f}–{alpha.interval.high:.2f}"
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


def _savings_line(savings: CalibrationSavings | None) -> str:
    if savings is None:
        return "nothing measured to compare (no capped size)"
    return savings.sentence


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
    console.print(f"[bold]Saves:[/] {_savings_line(savings)}")
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
        f"{uncapped['reasoning_tokens']:.1f} a query, {_pct(planned['tokens_saved'])} saved "
        f"[{_pct(planned['tokens_saved_low'])}, {_pct(planned['tokens_saved_high'])}]"
    )
    console.print(f"[bold]Conclusion:[/] {run.conclusion}")


def _pct(value: object) -> str:
    x = float(value)  # type: ignore[arg-type]
    return "–" if math.isnan(x) else f"{x:.0%}"


def made_for(saved: SavedPlan) -> str:
    """The plan's binding in words: model, mode and protocol."""
    model = saved.model or "(not recorded)"
    mode = f", mode {saved.mode}" if saved.mode else ""
    protocol = saved.protocol or "(not recorded)"
    return f"made for model {model}{mode}, protocol {protocol}"
