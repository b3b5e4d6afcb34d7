"""The tables `cotplan cost` prints: the price table, a projection's periods, fiscal roll-ups
and growth scenarios (rich renderables; the command module parses and calls the library)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import pandas as pd
from rich import box
from rich.table import Table

__all__ = ["growth_table", "money", "price_tables", "projection_table", "rollup_table"]

_BILLING_WORDS = {"in_completion": "in completion", "separate": "apart", "none": "none"}


def money(value: Any, places: int = 2) -> str:
    """Dollars with thousands separators: $1,234.56 (blank for a missing value)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    number = float(value)
    sign = "-" if number < 0 else ""
    return f"{sign}${abs(number):,.{places}f}"


_money = money


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


def _places(frame: pd.DataFrame, columns: tuple[str, ...]) -> int:
    """Cents for small amounts; whole dollars once any amount reaches $10,000, so a table of
    millions fits 80 columns with no number cut short."""
    values = frame[list(columns)].abs().max().max() if len(frame) else 0.0
    return 0 if values == values and values >= 10_000 else 2


_MONEY = ("mean_usd", "p10_usd", "p50_usd", "p90_usd")


def projection_table(frame: pd.DataFrame, title: str, periods: tuple[str, ...]) -> Table:
    """The projection's periods: queries and spend (mean, P10, P50, P90), every number whole
    at 80 columns (the period labels fold instead)."""
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("period", overflow="fold", ratio=1)
    for column in ("queries", "mean", "P10", "P50", "P90"):
        out.add_column(column, justify="right", no_wrap=True)
    chosen = frame[frame["period"].isin(periods)]
    places = _places(chosen, _MONEY)
    for record in chosen.to_dict("records"):
        bold = record["period"] in ("year", "total")
        cells = [
            str(record["label"]),
            f"{record['queries']:,.0f}",
            *(_money(record[k], places) for k in _MONEY),
        ]
        out.add_row(*[f"[bold]{c}[/]" if bold else c for c in cells])
    return out


def rollup_table(rollups: pd.DataFrame, fiscal_year_start: int) -> Table:
    start = date(2000, fiscal_year_start, 1).strftime("%B")
    out = Table(
        title=f"Fiscal quarters and years (the year starts in {start}), USD",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    out.add_column("period", overflow="fold", ratio=1)
    for column in ("mean", "P10", "P50", "P90", "per 1k q"):
        out.add_column(column, justify="right", no_wrap=True)
    places = _places(rollups, _MONEY)
    for record in rollups.to_dict("records"):
        bold = record["period"] == "fiscal_year"
        cells = [
            str(record["label"]),
            *(_money(record[k], places) for k in _MONEY),
            _money(record["usd_per_1k_queries"], 4),
        ]
        out.add_row(*[f"[bold]{c}[/]" if bold else c for c in cells])
    return out


def growth_table(frame: pd.DataFrame, name: str, budget: Any) -> Table:
    out = Table(
        title=f"{name}: growth scenarios over the horizon, USD", box=box.SIMPLE_HEAD, pad_edge=False
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
            _money(rec["total_mean_usd"], 0),
            f"{_money(rec['total_p10_usd'], 0)}..{_money(rec['total_p90_usd'], 0)}",
            _money(rec["last_month_mean_usd"], 0),
        ]
        if budget is not None:
            p = rec["p_over_budget"]
            cells.append("" if p != p else f"{100 * p:.1f}%")
        out.add_row(*cells)
    return out
