"""The parts of `cotplan cost project` below its options: the budget and scenario options
checked, what it prints after the run (rich renderables with their print styles) and the files
it writes. The command module parses the options and calls these in order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from cotplan.cli.cost_tables import money, projection_table, rollup_table
from cotplan.errors import InputError

__all__ = ["budget_option", "projection_summary", "scenario_table", "scenarios", "write_outputs"]

#: How a plain line is printed: wrapped by rich at the width, a long address folded, so no
#: line is wider than the terminal (or 80 columns in a pipe).
_LINE: dict[str, Any] = {"highlight": False}
_LONG_LINE: dict[str, Any] = {"highlight": False, "overflow": "fold"}


def budget_option(budget: float | None, budget_per: str) -> Any:
    """--budget and --budget-per checked: the `Budget`, or None without --budget."""
    from cotplan.pricing.periods import BUDGET_PERIODS, Budget

    if budget_per not in BUDGET_PERIODS:
        raise InputError(f"must be 'month' or 'year', got {budget_per!r}", field="budget_per")
    if budget is not None:
        return Budget(budget, budget_per)
    if budget_per != "month":
        raise InputError("needs --budget", field="budget_per")
    return None


def scenarios(
    table: Any,
    model: str,
    seller: str | None,
    *,
    cap: int | None,
    compare_models: Sequence[str],
    compare_caps: Sequence[int],
    levers: dict[str, Any],
) -> list[Any]:
    """The baseline, then each --compare-model and each --compare-cap, named by the table's
    own model names; two that would share a name are refused."""
    from cotplan.pricing.comparison import Scenario

    def scenario(name_model: str, k: int | None, sold_by: str | None) -> Scenario:
        label = table.resolve(name_model, provider=sold_by) + ("" if k is None else f", cap {k}")
        return Scenario(label, name_model, policy=k, provider=sold_by, **levers)

    out = [scenario(model, cap, seller)]
    out += [scenario(other, cap, None) for other in compare_models]
    out += [scenario(model, k, seller) for k in compare_caps]
    labels = [s.name for s in out]
    if len(set(labels)) < len(labels):
        raise InputError(
            f"the scenarios repeat one another: {', '.join(labels)}", field="compare_model"
        )
    return out


def projection_summary(
    comparison: Any, workload: Any, *, draws: int, seed: int, fiscal_year_start: int
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The baseline's periods, its first average day, the price of each scenario, the hours,
    price changes, the fiscal roll-ups and the budget check, in print order."""
    base = comparison.projections[comparison.baseline]
    frame = base.frame
    title = f"{comparison.baseline}: projected spend (USD)"
    yield projection_table(frame, title, ("month", "year", "total")), {}
    day = frame[frame["period"] == "day"].iloc[0]
    first_day = (
        f"first month's average day: {money(day['mean_usd'])} (P10 {money(day['p10_usd'])}, "
        f"P90 {money(day['p90_usd'])}); cost per query {money(base.per_query_usd, 6)}; "
        f"{draws:,} draws, seed {seed}"
    )
    yield first_day, _LINE
    for name, proj in comparison.projections.items():
        yield f"price of {name}: {proj.assumptions['price_source']}", _LONG_LINE
    yield f"hours of the calls: {workload.hours.label}", _LINE
    for change in base.price_changes.to_dict("records"):
        before, after = change["usd_per_1k_queries_before"], change["usd_per_1k_queries"]
        if f"{before:,.4f}" == f"{after:,.4f}":
            # The rate card changed where this workload does not pay (a long-context or batch
            # rate): say so rather than print a change from a number to itself.
            what = f"rates this workload does not pay; USD per 1k queries stays {after:,.4f}"
        else:
            what = f"USD per 1k queries {before:,.4f} -> {after:,.4f}"
        yield f"price change on {change['date']}: {what} ({change['source']})", _LONG_LINE
    yield rollup_table(base.rollups, fiscal_year_start), {}
    if base.budget is not None:
        yield _budget_line(base.budget), _LINE


def _budget_line(check: Any) -> str:
    what = "in some month" if check.budget.per == "month" else "in some complete year"
    if check.periods.empty:
        return f"budget {check.budget.label}: no complete year in the horizon to compare"
    chance = f"{100 * check.probability:.1f}%"
    return f"budget {check.budget.label}: chance of going over {what} {chance}"


def scenario_table(comparison: Any) -> Table:
    """Each scenario's spend over the horizon (P50 and P10..P90), and against the baseline:
    the mean saved and its spend as a multiple of the baseline's. Narrow enough for an
    80-column terminal with every number whole; the savings' P10..P90 are in comparison.csv."""
    cmp = Table(
        title=f"Scenarios over the horizon, USD (baseline: {comparison.baseline})",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    cmp.add_column("scenario", overflow="fold", ratio=1)
    for column in ("per 1k q", "P50", "P10..P90", "saved", "x base"):
        cmp.add_column(column, justify="right", no_wrap=True)
    for rec in comparison.frame.to_dict("records"):
        cmp.add_row(
            str(rec["scenario"]),
            per_1k(1000 * rec["usd_per_query"]),
            f"{rec['total_p50_usd']:,.0f}",
            f"{rec['total_p10_usd']:,.0f}..{rec['total_p90_usd']:,.0f}",
            f"{rec['savings_mean_usd']:,.0f}",
            times_base(rec["times_baseline"]),
        )
    return cmp


def per_1k(usd: float) -> str:
    """USD per 1,000 queries with enough decimals to show a cheap model's cost (no ellipsis)."""
    if usd >= 100:
        return f"{usd:,.0f}"
    return f"{usd:,.2f}" if usd >= 1 else f"{usd:.4g}"


def times_base(ratio: float) -> str:
    """A scenario's spend as a multiple of the baseline's: 0.50x saves half; 22x costs 22 times
    as much. A percentage saving below -100% (-2,122.5%) reads as nonsense to a finance user."""
    if ratio != ratio:
        return "–"  # no multiple of a baseline that spends nothing
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:,.0f}x"


def write_outputs(out: Path, comparison: Any, growth: Any, *, compared: bool) -> list[Path]:
    """The projection's CSV, XLSX, PNG and SVG in `out` (created), the comparison's when
    `compared`, the growth scenarios' CSV when there are some; the paths written, in order."""
    from cotplan.charts.costs import comparison_chart, projection_chart, save_chart
    from cotplan.cli.report_page import add_report_page

    base = comparison.projections[comparison.baseline]
    out.mkdir(parents=True, exist_ok=True)
    # One CSV per period kind: a spreadsheet SUM over any file's column is that kind's total.
    written = [*base.to_csvs(out), out / "projection.xlsx"]
    base.to_excel(written[-1])
    # PNG at twice the size for slides, SVG to scale without blur.
    for suffix in (".png", ".svg"):
        written.append(save_chart(projection_chart(base), out / f"projection{suffix}"))
    if compared:
        extra = [out / "comparison.csv", out / "comparison.xlsx"]
        comparison.to_csv(extra[0])
        comparison.to_excel(extra[1])
        for suffix in (".png", ".svg"):
            extra.append(save_chart(comparison_chart(comparison), out / f"comparison{suffix}"))
        written += extra
    if growth is not None:
        growth.to_csv(out / "growth.csv")
        written.append(out / "growth.csv")
    return [*written, *filter(None, [add_report_page(out, command="cost project")])]
