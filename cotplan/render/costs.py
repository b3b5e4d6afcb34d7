"""What the cost commands print: the price table, one call's cost, spend forecasts (a model's
and a portfolio's), the month-end reconciliation and spend by tag.

Each renderer takes a result of `cotplan.pricing` and a rich `Console`, and prints what
`cotplan cost ...` prints; `write_forecast` writes a forecast's CSV, XLSX, PNG and SVG files.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table

__all__ = [
    "Shown",
    "actuals_table",
    "batch_cell",
    "exact",
    "growth_table",
    "invoice_table",
    "money",
    "per_1k",
    "price_tables",
    "projection_summary",
    "projection_table",
    "rate",
    "reconcile_table",
    "render_call",
    "render_forecast",
    "render_portfolio",
    "render_prices",
    "render_reconciliation",
    "render_tagged_spend",
    "rollup_table",
    "scenario_table",
    "times_base",
    "write_forecast",
]

_BILLING_WORDS = {"in_completion": "in completion", "separate": "apart", "none": "none"}

#: How a plain line is printed: wrapped by rich at the width, a long address folded, so no
#: line is wider than the terminal (or 80 columns in a pipe).
_LINE: dict[str, Any] = {"highlight": False}
_LONG_LINE: dict[str, Any] = {"highlight": False, "overflow": "fold"}


def money(value: Any, places: int = 2) -> str:
    """Dollars with thousands separators: $1,234.56 (blank for a missing value)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    number = float(value)
    sign = "-" if number < 0 else ""
    return f"{sign}${abs(number):,.{places}f}"


@dataclass(frozen=True)
class Shown:
    """The currency a forecast is shown in: `scale` units per USD, `code` (USD, EUR). Called
    on a USD amount it gives the amount in that currency, "$1,234" or "EUR 1,234"."""

    scale: float = 1.0
    code: str = "USD"

    def __call__(self, value: Any, places: int = 2) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return ""
        text = money(float(value) * self.scale, places)
        return text if self.code == "USD" else text.replace("$", f"{self.code} ", 1)

    def plain(self, value: float) -> str:
        """The amount with no currency sign, whole units (the table's title names it)."""
        return f"{value * self.scale:,.0f}"


USD = Shown()


def rate(value: Decimal | None) -> str:
    """A rate with at least two decimals and every digit it has: 0.80, 0.125, 0.01875 (a
    finance user checks a rate against the provider's page: it is never cut short)."""
    if value is None:
        return ""
    if value == value.quantize(Decimal("0.01")):
        return f"{value:.2f}"
    return f"{value.normalize():f}"


def batch_cell(row: Any, when: date) -> str:
    """The batch discount of a row on `when`: one percentage when every token type it prices
    gets the same cut, "varies" when they differ, and 0% when no batch price holds that day."""
    batched = row.for_tier("batch", when)
    if batched is None:
        return "0%"
    pairs = [
        (row.input_per_mtok, batched.input_per_mtok),
        (row.cached_input_per_mtok, batched.cached_input_per_mtok),
        (row.output_per_mtok, batched.output_per_mtok),
    ]
    cuts = {1 - b / a for a, b in pairs if a}
    if len(cuts) == 1:
        return f"{next(iter(cuts)) * 100:.0f}%"
    return "varies"


def price_tables(
    rows: list[Any], table: Any, when: date, chosen: str
) -> list[tuple[Any, dict[str, Any]]]:
    """The two price tables (rates; billing rules and sources), the sources and the legend,
    each with the keyword arguments `Console.print` shows it with."""
    from cotplan.pricing.table import STALE_AFTER_DAYS

    parts: list[tuple[Any, dict[str, Any]]] = []
    # Two narrow tables rather than one wide one: both stay readable in an 80-column terminal.
    rates = Table(title="API prices, USD per 1M tokens", box=box.SIMPLE_HEAD, pad_edge=False)
    rates.add_column("model", overflow="fold")
    for column in ("input", "cached", "write", "output", "batch", "long >"):
        rates.add_column(column, justify="right", no_wrap=True, min_width=len(column))
    facts = Table(title="Billing rules and sources", box=box.SIMPLE_HEAD, pad_edge=False)
    facts.add_column("model", overflow="fold")
    for column in ("reasoning", "valid", "read on", "source"):
        facts.add_column(column, no_wrap=True)
    # Sources are listed under the tables, whole, so a URL is never folded across lines.
    sources: dict[str, int] = {}
    provider_seen = None
    for row in rows:
        if row.provider != provider_seen:
            rates.add_row(f"[bold]{row.provider}[/]")
            facts.add_row(f"[bold]{row.provider}[/]")
            provider_seen = row.provider
        origin = "local" if row.is_local else "genai-prices" if row.from_genai else row.origin
        where = f"{row.origin} (data of {row.as_of:%Y-%m}): " if row.from_genai else ""
        number = sources.setdefault(where + row.source_url, len(sources) + 1)
        read_on = str(row.as_of)
        if row.is_local or row.from_genai:
            read_on = ""  # a release's date is in its source line
        if row.is_stale(when):
            read_on = f"[bold red]{row.as_of}, stale ({row.age_days(when)} days)[/]"
        long = "" if row.long_context_threshold is None else f"{row.long_context_threshold:,}"
        rates.add_row(
            f"  {row.model}",
            rate(row.input_per_mtok),
            rate(row.cached_input_per_mtok),
            rate(row.cache_write_per_mtok),
            rate(row.output_per_mtok),
            batch_cell(row, when),
            long,
        )
        valid = " to ".join(str(d) for d in (row.effective_from, row.effective_to) if d is not None)
        if row.effective_from is None and row.effective_to is not None:
            valid = f"until {row.effective_to}"
        elif row.effective_from is not None and row.effective_to is None:
            valid = f"from {row.effective_from}"
        facts.add_row(
            f"  {row.model}",
            _BILLING_WORDS[row.reasoning_billing],
            valid,
            read_on,
            f"{origin} [{number}]",
        )
    parts += [(rates, {}), (facts, {})]
    for url, number in sources.items():
        parts.append(
            (f"[{number}] {url}", {"highlight": False, "markup": False, "soft_wrap": True})
        )
    genai_rows = sum(r.from_genai for r in table.rows)
    models = len({(r.provider, r.model) for r in table.rows})
    hidden = (
        ""
        if chosen != "cotplan"
        else (
            " The rest come from genai-prices: filter with --provider or --model, or --source all."
        )
    )
    legend = (
        f"{len(rows):,} rows shown of {len(table.rows):,}: {models:,} models (provider and "
        f"name) from {len(table.providers())} providers, {genai_rows:,} rows from "
        f"genai-prices.{hidden} Source: cotplan's own row (read on the date shown) "
        "or genai-prices (the release's data date is in the source line; valid: the dates a "
        "historic price held). "
        "write: cache write. batch: discount for batch calls on that day ('varies': it differs "
        "by token type; the CSV's `tiers` lists each, with batch, flex and priority rates and "
        "their dates). long >: above this many prompt "
        "tokens the whole call pays the long-context rates. "
        "Reasoning 'in completion' is already in the completion count (never added again); "
        "'apart' is reported separately and billed once at the output rate. A price read "
        f"over {STALE_AFTER_DAYS} days ago is stale. A model not listed is an error, never "
        "free: add it with --prices FILE or COTPLAN_PRICES."
    )
    parts.append((legend, {"highlight": False}))
    return parts


def render_prices(listing: Any, console: Console) -> None:
    """The two price tables, the sources and the legend; the CSV written, when one was."""
    for item, style in price_tables(
        list(listing.rows), listing.table, listing.when, listing.source
    ):
        console.print(item, **style)
    if listing.csv:
        console.print(f"wrote {listing.csv}", highlight=False)


def exact(usd: Decimal) -> str:
    """Exact dollars, every digit and no trailing zeros beyond cents: 0.0424, 0.01, 0.00."""
    text = f"{usd.normalize():f}"
    units, _, cents = text.partition(".")
    return f"{units}.{cents.ljust(2, '0')}"


def render_call(priced: Any, console: Console) -> None:
    """One call's cost line by line (`cotplan.pricing.price_lookups.PricedCall`), then its
    notes on one line."""
    cost = priced.cost
    shown = f", {cost.tier} tier" if cost.tier else ""
    out = Table(title=f"{cost.model} ({cost.provider}{shown}): one call")
    for column, justify in (
        ("item", "left"),
        ("tokens", "right"),
        ("USD per 1M", "right"),
        ("USD", "right"),
    ):
        out.add_column(column, justify=justify)  # type: ignore[arg-type]
    r = cost.rates
    items = (
        ("input", cost.input_tokens, r.input, cost.input_usd),
        ("cached input", cost.cached_tokens, r.cached_input, cost.cached_input_usd),
        ("cache write", cost.cache_write_tokens, r.cache_write, cost.cache_write_usd),
        ("output", cost.output_tokens, r.output, cost.output_usd),
        ("reasoning", cost.reasoning_tokens, r.reasoning_rate, cost.reasoning_usd),
    )
    for item, tokens, rate_, usd in items:
        out.add_row(item, f"{tokens:,}", rate(rate_), exact(usd))
    if cost.request_usd:
        out.add_row("request fee", "", "", exact(cost.request_usd))
    if cost.batch:
        out.add_row("batch discount", "", "", exact(cost.batch_discount_usd))
    all_tokens = cost.prompt_tokens + cost.output_tokens + cost.reasoning_tokens
    out.add_row("[bold]total[/]", f"{all_tokens:,}", "", f"[bold]{exact(cost.usd)}[/]")
    console.print(out)
    console.print("; ".join(priced.notes), highlight=False)


def _places(frame: pd.DataFrame, columns: tuple[str, ...], scale: float = 1.0) -> int:
    """Cents for small amounts; whole units once any amount reaches 10,000, so a table of
    millions fits 80 columns with no number cut short."""
    values = scale * frame[list(columns)].abs().max().max() if len(frame) else 0.0
    return 0 if values == values and values >= 10_000 else 2


_MONEY = ("mean_usd", "p10_usd", "p50_usd", "p90_usd")


def projection_table(
    frame: pd.DataFrame, title: str, periods: tuple[str, ...], cash: Shown = USD
) -> Table:
    """The projection's periods: queries and spend (mean, P10, P50, P90), every number whole
    at 80 columns (the period labels fold instead)."""
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("period", overflow="fold", ratio=1)
    for column in ("queries", "mean", "P10", "P50", "P90"):
        out.add_column(column, justify="right", no_wrap=True)
    chosen = frame[frame["period"].isin(periods)]
    places = _places(chosen, _MONEY, cash.scale)
    for record in chosen.to_dict("records"):
        bold = record["period"] in ("year", "total")
        cells = [
            str(record["label"]),
            f"{record['queries']:,.0f}",
            *(cash(record[k], places) for k in _MONEY),
        ]
        out.add_row(*[f"[bold]{c}[/]" if bold else c for c in cells])
    return out


def rollup_table(rollups: pd.DataFrame, fiscal_year_start: int, cash: Shown = USD) -> Table:
    start = date(2000, fiscal_year_start, 1).strftime("%B")
    out = Table(
        title=f"Fiscal quarters and years (the year starts in {start}), {cash.code}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    out.add_column("period", overflow="fold", ratio=1)
    for column in ("mean", "P10", "P50", "P90", "per 1k q"):
        out.add_column(column, justify="right", no_wrap=True)
    places = _places(rollups, _MONEY, cash.scale)
    for record in rollups.to_dict("records"):
        bold = record["period"] == "fiscal_year"
        cells = [
            str(record["label"]),
            *(cash(record[k], places) for k in _MONEY),
            cash(record["usd_per_1k_queries"], 4),
        ]
        out.add_row(*[f"[bold]{c}[/]" if bold else c for c in cells])
    return out


def growth_table(frame: pd.DataFrame, name: str, budget: Any, cash: Shown = USD) -> Table:
    out = Table(
        title=f"{name}: growth scenarios over the horizon, {cash.code}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    columns = ["scenario", "growth", "mean", "P10..P90", "last month"]
    if budget is not None:
        columns.append("P(over)")
    for column in columns:
        out.add_column(
            column,
            justify="left" if column == "scenario" else "right",
            no_wrap=column != "scenario",
        )
    for rec in frame.to_dict("records"):
        cells = [
            str(rec["scenario"]),
            f"{100 * rec['growth_rate']:.1f}%/{rec['growth_per']}",
            cash(rec["total_mean_usd"], 0),
            f"{cash(rec['total_p10_usd'], 0)}..{cash(rec['total_p90_usd'], 0)}",
            cash(rec["last_month_mean_usd"], 0),
        ]
        if budget is not None:
            p = rec["p_over_budget"]
            cells.append("" if p != p else f"{100 * p:.1f}%")
        out.add_row(*cells)
    return out


def projection_summary(
    comparison: Any,
    workload: Any,
    *,
    draws: int,
    seed: int,
    fiscal_year_start: int,
    cash: Shown = USD,
    rate_line: str = "",
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The baseline's periods, its first average day, the rate of exchange and negotiated
    terms (when given), the price of each scenario, the hours, price changes, the fiscal
    roll-ups and the budget check, in print order."""
    base = comparison.projections[comparison.baseline]
    frame = base.frame
    paid = " paid" if base.terms_notes and "terms" in base.assumptions else ""
    title = f"{comparison.baseline}: projected{paid} spend ({cash.code})"
    yield projection_table(frame, title, ("month", "year", "total"), cash), {}
    if rate_line:
        yield rate_line, _LONG_LINE
    day = frame[frame["period"] == "day"].iloc[0]
    first_day = (
        f"first month's average day: {cash(day['mean_usd'])} (P10 {cash(day['p10_usd'])}, "
        f"P90 {cash(day['p90_usd'])}); cost per query {cash(base.per_query_usd, 6)}; "
        f"{draws:,} draws, seed {seed}"
    )
    yield first_day, _LINE
    # Each note names its provider: scenarios on one provider share theirs, printed once.
    notes = [n for proj in comparison.projections.values() for n in proj.terms_notes]
    for note in dict.fromkeys(notes):
        yield f"terms: {note}", _LONG_LINE
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
    yield rollup_table(base.rollups, fiscal_year_start, cash), {}
    if base.budget is not None:
        yield _budget_line(base.budget), _LINE


def _budget_line(check: Any) -> str:
    what = "in some month" if check.budget.per == "month" else "in some complete year"
    if check.periods.empty:
        return f"budget {check.budget.label}: no complete year in the horizon to compare"
    chance = f"{100 * check.probability:.1f}%"
    return f"budget {check.budget.label}: chance of going over {what} {chance}"


def scenario_table(comparison: Any, cash: Shown = USD) -> Table:
    """Each scenario's spend over the horizon (P50 and P10..P90), and against the baseline:
    the mean saved and its spend as a multiple of the baseline's. Narrow enough for an
    80-column terminal with every number whole; the savings' P10..P90 are in comparison.csv."""
    cmp = Table(
        title=f"Scenarios over the horizon, {cash.code} (baseline: {comparison.baseline})",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    cmp.add_column("scenario", overflow="fold", ratio=1)
    for column in ("per 1k q", "P50", "P10..P90", "saved", "x base"):
        cmp.add_column(column, justify="right", no_wrap=True)
    for rec in comparison.frame.to_dict("records"):
        cmp.add_row(
            str(rec["scenario"]),
            per_1k(1000 * rec["usd_per_query"] * cash.scale),
            cash.plain(rec["total_p50_usd"]),
            f"{cash.plain(rec['total_p10_usd'])}..{cash.plain(rec['total_p90_usd'])}",
            cash.plain(rec["savings_mean_usd"]),
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


def render_forecast(forecast: Any, console: Console, *, out: Path | None = None) -> None:
    """A model's forecast (`cotplan.pricing.forecast.SpendForecast`): the baseline's periods
    and notes, the growth scenarios, the forecast against actuals, the scenarios compared;
    with `out`, its files written there (`write_forecast`) and named."""
    comparison = forecast.comparison
    cash = Shown(forecast.scale, forecast.symbol.strip() if forecast.symbol != "$" else "USD")
    summary = projection_summary(comparison, forecast.workload, draws=forecast.draws,
                                 seed=forecast.seed, fiscal_year_start=forecast.fiscal_year_start,
                                 cash=cash, rate_line=forecast.rate_line)  # fmt: skip
    for item, style in summary:
        console.print(item, **style)
    if forecast.growth is not None:
        console.print(
            growth_table(forecast.growth.frame, comparison.baseline, forecast.budget, cash)
        )
    if forecast.versus_actuals is not None:
        paid = "terms" in forecast.baseline.assumptions
        console.print(actuals_table(forecast.versus_actuals, forecast.actuals_source, cash,
                                    paid=paid))  # fmt: skip
    if forecast.compared:
        console.print(scenario_table(comparison, cash))
    if out is not None:
        written = write_forecast(forecast, out)
        console.print("wrote " + ", ".join(str(p) for p in written), highlight=False)


def write_forecast(forecast: Any, out: Path) -> list[Path]:
    """The projection's CSV, XLSX, PNG and SVG in `out` (created), the comparison's when
    scenarios were compared, the growth scenarios' CSV when there are some; the paths
    written, in order."""
    from cotplan.charts.costs import comparison_chart, projection_chart, save_chart

    comparison, growth = forecast.comparison, forecast.growth
    base = forecast.baseline
    out.mkdir(parents=True, exist_ok=True)
    # One CSV per period kind: a spreadsheet SUM over any file's column is that kind's total.
    written = [*base.to_csvs(out), out / "projection.xlsx"]
    base.to_excel(written[-1])
    # PNG at twice the size for slides, SVG to scale without blur.
    for suffix in (".png", ".svg"):
        written.append(save_chart(projection_chart(base), out / f"projection{suffix}"))
    if forecast.compared:
        extra = [out / "comparison.csv", out / "comparison.xlsx"]
        comparison.to_csv(extra[0])
        comparison.to_excel(extra[1])
        for suffix in (".png", ".svg"):
            extra.append(save_chart(comparison_chart(comparison), out / f"comparison{suffix}"))
        written += extra
    if growth is not None:
        growth.to_csv(out / "growth.csv")
        written.append(out / "growth.csv")
    from cotplan.charts.report_page_files import write_report_page

    return [*written, *filter(None, [write_report_page(out, command="cost project")])]


def actuals_table(
    frame: pd.DataFrame, source: str, cash: Shown = USD, *, paid: bool = False
) -> Table:
    """The forecast's months beside the actual spend (`forecast_vs_actuals`); `paid` when
    the forecast is after negotiated terms (the log's calls are priced at list price)."""
    what = (
        "Forecast after terms against actuals at list price" if paid else "Forecast against actuals"
    )
    out = Table(
        title=f"{what} ({source}), {cash.code}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in ("month", "actual", "calls", "mean", "P10", "P50", "P90", "where"):
        out.add_column(column, justify="left" if column in ("month", "where") else "right")
    for rec in frame.to_dict("records"):
        calls = "" if pd.isna(rec["actual_calls"]) else f"{int(rec['actual_calls']):,}"
        unpriced = rec.get("unpriced_calls")
        if not pd.isna(unpriced) and unpriced:
            calls += f" ({int(unpriced)} unpriced)"
        where = rec["where"] or ("no forecast" if pd.isna(rec["mean_usd"]) else "no calls logged")
        out.add_row(
            str(rec["label"]),
            cash(rec["actual_usd"]),
            calls,
            cash(rec["mean_usd"]),
            cash(rec["p10_usd"]),
            cash(rec["p50_usd"]),
            cash(rec["p90_usd"]),
            where,
        )
    return out


def render_portfolio(forecast: Any, console: Console, *, out: Path | None = None) -> None:
    """A portfolio's forecast (`cotplan.pricing.forecast.PortfolioForecast`): the company's
    P10/P50/P90 first, then the months and each workload's share; with `out`, its CSVs."""
    result, scale, symbol = forecast.portfolio, forecast.scale, forecast.symbol
    months = result.months
    span = f"{months['label'].iloc[0]} to {months['label'].iloc[-1]}"
    t = result.total

    def cash(value: float) -> str:
        return money(value * scale, 0).replace("$", symbol, 1)

    console.print(
        f"Portfolio of {forecast.workloads} workloads, {span}: P50 {cash(t['p50_usd'])} "
        f"(P10 {cash(t['p10_usd'])}, P90 {cash(t['p90_usd'])}; mean {cash(t['mean_usd'])})",
        highlight=False,
    )
    console.print(
        f"adding each workload's P90 would say {cash(t['sum_of_p90_usd'])}: their surprises "
        f"are not all at once (shared growth shock: sd {forecast.growth_sd:g} a month)",
        highlight=False,
    )
    if forecast.rate_line:
        console.print(forecast.rate_line, highlight=False)
    unit = symbol.strip() if symbol != "$" else "USD"
    console.print(_portfolio_months(months, t, unit, cash))
    console.print(_portfolio_workloads(result.workloads, unit, scale))
    console.print(f"{result.draws:,} draws, seed {result.seed}", highlight=False)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, overflow="fold")
    if out is not None:
        from cotplan.charts.report_page_files import write_report_page

        written = forecast.to_csvs(out)
        page = write_report_page(out, command="cost project --portfolio")
        names = ", ".join(str(p) for p in [*written, *filter(None, [page])])
        console.print(f"wrote {names}", highlight=False, overflow="fold")


_STATS = ("mean_usd", "p10_usd", "p50_usd", "p90_usd")


def _portfolio_months(months: pd.DataFrame, total: Any, unit: str, cash: Any) -> Table:
    per_month = Table(
        title=f"Portfolio spend per month, {unit}", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in ("month", "mean", "P10", "P50", "P90"):
        per_month.add_column(column, justify="left" if column == "month" else "right")
    for rec in months.to_dict("records"):
        per_month.add_row(rec["label"], *(cash(rec[k]) for k in _STATS))
    per_month.add_row("total", *(cash(total[k]) for k in _STATS))
    return per_month


def _portfolio_workloads(frame: pd.DataFrame, unit: str, scale: float) -> Table:
    items = Table(
        title=f"Workloads over the horizon, {unit} (list price)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    items.add_column("workload / model", overflow="fold", ratio=1)
    for column in ("team", "P50", "P10..P90", "share"):
        items.add_column(column, justify="left" if column == "team" else "right", no_wrap=True)
    for rec in frame.to_dict("records"):
        team = rec.get("team")
        items.add_row(
            f"{rec['workload']} ({rec['model']})",
            team if isinstance(team, str) else "",
            f"{rec['p50_usd'] * scale:,.0f}",
            f"{rec['p10_usd'] * scale:,.0f}..{rec['p90_usd'] * scale:,.0f}",
            f"{rec['share']:.1%}",
        )
    return items


def _plain(value: Any) -> str:
    """An amount with thousands separators and cents, no currency sign (blank if missing)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    number = Decimal(value)
    sign = "-" if number < 0 else ""
    return f"{sign}{abs(number):,.2f}"


def reconcile_table(frame: pd.DataFrame) -> Table:
    """The reconciliation, one row per month, provider, model and project: narrow enough for
    80 columns (the reasons are listed under it, by row number)."""
    out = Table(title="Reconciliation, USD", box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("#", justify="right", no_wrap=True)
    out.add_column("month / model / project", overflow="fold", ratio=1)
    for column in ("stated", "priced", "log", "status"):
        out.add_column(column, justify="right" if column != "status" else "left", no_wrap=True)
    for number, rec in enumerate(frame.to_dict("records"), start=1):
        label = f"{rec['month']} {rec['provider']}/{rec['model'] or '(no model)'}"
        if rec["project"]:
            label += f" {rec['project']}"
        out.add_row(
            str(number),
            label,
            _plain(rec["stated_usd"]),
            _plain(rec["priced_usd"]),
            _plain(rec["logged_usd"]),
            rec["status"],
        )
    return out


def invoice_table(frame: pd.DataFrame) -> Table:
    """Each invoice beside what the exports state, with its credits and tax."""
    out = Table(title="Invoices, USD", box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("month / provider", overflow="fold", ratio=1)
    for column in ("stated", "credits", "tax", "expected", "invoice", "status"):
        out.add_column(column, justify="right" if column != "status" else "left", no_wrap=True)
    for rec in frame.to_dict("records"):
        credits = rec["export_credits_usd"] - rec["credits_usd"]
        out.add_row(
            f"{rec['month']} {rec['provider']}",
            _plain(rec["stated_usd"]),
            _plain(credits),
            _plain(rec["tax_usd"]),
            _plain(rec["expected_usd"]),
            _plain(rec["invoice_usd"]),
            rec["status"] or "-",
        )
    return out


def render_reconciliation(result: Any, console: Console, *, csv: Path | None = None) -> None:
    """The reconciliation's counts, its table and reasons, the invoice checks; with `csv`, the
    table written there too."""
    frame = result.frame
    counts = frame["status"].value_counts()
    console.print(
        f"{len(frame)} rows: {counts.get('matched', 0)} matched, "
        f"{counts.get('explained', 0)} explained, {len(result.flagged)} flagged",
        highlight=False,
    )
    console.print(reconcile_table(frame))
    for number, rec in enumerate(frame.to_dict("records"), start=1):
        if rec["why"]:
            console.print(f"{number}. {rec['why']}", highlight=False, overflow="fold")
    console.print(invoice_table(result.invoices))
    for rec in result.invoices.to_dict("records"):
        if rec["why"]:
            text = f"{rec['month']} {rec['provider']}: {rec['why']}"
            console.print(text, highlight=False, overflow="fold")
    _write_csv(frame, csv, console)


def render_tagged_spend(spend: Any, console: Console, *, csv: Path | None = None) -> None:
    """Spend per month by tag (`cotplan.pricing.month_end.TaggedSpend`); with `csv`, written."""
    names = list(spend.by)
    out = Table(title=f"Spend by {', '.join(names)}, USD", box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("month", no_wrap=True)
    for name in names:
        out.add_column(name, overflow="fold")
    for column in ("calls", "USD", "share"):
        out.add_column(column, justify="right", no_wrap=True)
    for rec in spend.frame.to_dict("records"):
        out.add_row(
            rec["month"],
            *(str(rec[n]) for n in names),
            f"{rec['calls']:,}",
            _plain(rec["usd"]),
            f"{rec['share']:.1%}",
        )
    console.print(out)
    _write_csv(spend.frame, csv, console)


def _write_csv(frame: pd.DataFrame, csv: Path | None, console: Console) -> None:
    if csv is not None:
        from cotplan.io import write_csv

        write_csv(frame, csv, private=False)
        console.print(f"wrote {csv}", highlight=False)
