"""Month-end reconciliation: the provider's stated cost, cotplan's price of the provider's usage,
and cotplan's own call log, side by side per month, provider, model and project.

Every row ends in one of three states. ``matched``: the stated cost equals cotplan's price of
the provider's usage within the tolerance (a cent, or 0.1% of the amount). ``explained``: it
does not, but one named cause accounts for the difference to within the tolerance: the lines
were billed at the batch, flex or priority rates, at the long-context rates, at a price that
held on another date (a price change), or at a negotiated discount (`Terms`). ``flagged``:
nothing cotplan knows explains it, or the row has usage and no stated cost, or a stated cost
and no usage. Credits, tax and invoice totals are checked per provider and month
(`Invoice`): stated costs, less export credits and credits entered, plus tax, must equal the
invoice total.

Money is exact `Decimal` throughout. Prices come from the same `PriceTable` every other
cost in cotplan comes from; a provider's aggregated daily line is priced at the rates of the
average request it holds (the long-context rule is per request).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd

from cotplan.errors import CotplanError, InputError
from cotplan.pricing.cost import price_parts
from cotplan.pricing.currency import ExchangeRates
from cotplan.pricing.exports import ExportLine
from cotplan.pricing.rows import PriceRow
from cotplan.pricing.table import PriceTable, price_table
from cotplan.pricing.terms import Terms

__all__ = ["Invoice", "LoggedCall", "Reconciliation", "reconcile"]

_ZERO = Decimal(0)
_CENT = Decimal("0.01")
#: A difference within max(a cent, this share of the amount) is rounding, not a difference.
RELATIVE_TOLERANCE = Decimal("0.001")
#: Anthropic bills one-hour cache writes at twice the input rate (five-minute ones: 1.25x,
#: the row's cache-write rate).
_ONE_HOUR_WRITE = Decimal(2)

_Key = tuple[str, str, str, str]
_COLUMNS = [
    "month",
    "provider",
    "model",
    "project",
    "stated_usd",
    "priced_usd",
    "logged_usd",
    "difference_usd",
    "status",
    "why",
    "rate_source",
]


@dataclass(frozen=True)
class Invoice:
    """What a provider's invoice for one month says: its `total_usd` (None: no invoice entered,
    the check is skipped), the `tax_usd` on it and `credits_usd` applied (a positive amount
    taken off, beside any credit lines the export itself holds)."""

    provider: str
    month: str
    total_usd: Decimal | None = None
    tax_usd: Decimal = _ZERO
    credits_usd: Decimal = _ZERO


@dataclass(frozen=True)
class LoggedCall:
    """One call from cotplan's own log, priced: its day, provider, model, USD and tags
    (``project`` matches the provider's project or workspace id)."""

    day: date
    provider: str
    model: str
    usd: Decimal
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Reconciliation:
    """The reconciliation table (`frame`, one row per month, provider, model and project, with
    the columns of `_COLUMNS`) and the invoice checks (`invoices`: per provider and month, the
    stated total, credits, tax, the expected and the invoiced total, status and why)."""

    frame: pd.DataFrame
    invoices: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """The reconciliation table (a copy)."""
        return self.frame.copy()

    @property
    def flagged(self) -> pd.DataFrame:
        """Rows and invoice checks nothing explains: what a finance team must chase."""
        rows = self.frame[self.frame["status"] == "flagged"]
        bills = self.invoices[self.invoices["status"] == "flagged"]
        return pd.concat([rows, bills], ignore_index=True)

    @property
    def all_explained(self) -> bool:
        return self.flagged.empty


def _tolerance(amount: Decimal) -> Decimal:
    return max(_CENT, abs(amount) * RELATIVE_TOLERANCE)


# ---------------------------------------------------------------------------------------------
# Pricing a provider's usage line


def _row_for(line: ExportLine, table: PriceTable, row: PriceRow | None = None) -> PriceRow:
    base = row or table.lookup(line.model, on=line.day, provider=line.provider, warn=False)
    tier = "batch" if line.batch else line.tier
    if not tier:
        return base
    tiered = base.for_tier(tier, line.day)
    if tiered is None:
        raise _NoPrice(f"{base.model} has no {tier} price on {line.day}")
    return tiered


class _NoPrice(CotplanError):
    """A price the line would need does not exist (a tier on a day it did not)."""


def _price_line(line: ExportLine, table: PriceTable, row: PriceRow | None = None) -> Decimal:
    """Cotplan's price of one usage line (exact)."""
    priced = _row_for(line, table, row)
    if line.long_context is None:
        average = Decimal(line.prompt_tokens) / line.requests if line.requests else _ZERO
        long = bool(priced.is_long(average))
    else:
        long = line.long_context
    rates = priced.long_rates() if long else priced.short_rates()
    one_hour = int(line.extra.get("cache_write_1h_tokens", 0))
    counts = (
        Decimal(line.input_tokens),
        Decimal(line.cached_tokens),
        Decimal(line.cache_write_tokens - one_hour),
        Decimal(line.output_tokens),
        _ZERO,
    )
    parts = price_parts(rates, counts, requests=Decimal(line.requests))
    extra = Decimal(one_hour) * rates.input * _ONE_HOUR_WRITE / Decimal(1_000_000)
    return sum(parts, _ZERO) + extra


def _price_all(
    lines: Sequence[ExportLine],
    table: PriceTable,
    change: Callable[[ExportLine], ExportLine] | None = None,
    row: PriceRow | None = None,
) -> Decimal | None:
    try:
        return sum((_price_line(change(x) if change else x, table, row) for x in lines), _ZERO)
    except (_NoPrice, InputError):
        return None


def _other_rows(lines: Sequence[ExportLine], table: PriceTable) -> list[tuple[PriceRow, date]]:
    """Rows of the lines' model that held within two months of them, each with a day it held:
    prices the provider may have billed at if it moved its price on another date than
    cotplan's table says."""
    first = min(x.day for x in lines)
    model, provider = lines[0].model, lines[0].provider
    days = [first - timedelta(days=62), first - timedelta(days=31), first + timedelta(days=31)]
    found: dict[tuple[Any, ...], tuple[PriceRow, date]] = {}
    for day in days:
        try:
            row = table.lookup(model, on=day, provider=provider, warn=False)
        except InputError:
            continue
        found.setdefault((row.effective_from, row.input_per_mtok, row.output_per_mtok), (row, day))
    window = (first - timedelta(days=62), first + timedelta(days=62))
    for row in table.changes(model, *window, provider=provider):
        assert row.effective_from is not None  # `changes` lists dated rows only
        key = (row.effective_from, row.input_per_mtok, row.output_per_mtok)
        found.setdefault(key, (row, row.effective_from))
    return list(found.values())


def _explain(
    stated: Decimal,
    priced: Decimal,
    lines: Sequence[ExportLine],
    table: PriceTable,
    discount: Decimal | None,
) -> tuple[str, str, str]:
    """(status, why, rate source) of a row whose stated cost and price differ."""
    tolerance = _tolerance(stated)
    same_row = table.lookup(lines[0].model, on=lines[0].day, provider=lines[0].provider, warn=False)
    if abs(stated - priced) <= tolerance:
        return "matched", "", same_row.source
    trials: list[tuple[str, Callable[[ExportLine], ExportLine] | None, PriceRow | None]] = []
    batch = any(x.batch for x in lines)
    tiered = any(x.tier for x in lines)
    if not batch:
        why = "billed at the batch rates (the usage export does not say batch)"
        trials.append((why, _served("batch"), None))
    if batch or tiered:
        why = "billed at the standard rates, not the tier the usage names"
        trials.append((why, _served(""), None))
    for tier in ("flex", "priority"):
        if not all(x.tier == tier for x in lines):
            trials.append((f"billed at the {tier} tier's rates", _served(tier), None))
    trials.append(("billed at the long-context rates", _context(True), None))
    trials.append(("billed at the short-context rates", _context(False), None))
    for row, day in _other_rows(lines, table):
        why = (
            f"price change: billed at the price that held on {day} (input "
            f"{row.input_per_mtok}, output {row.output_per_mtok} per 1M), not the one "
            "cotplan's table gives these days"
        )
        trials.append((why, None, row))
    for why, change, other in trials:
        total = _price_all(lines, table, change, other)
        if total is not None and abs(stated - total) <= tolerance:
            source = other.source if other is not None else same_row.source
            return "explained", f"{why}; difference {_signed(stated - priced)}", source
    if discount is not None and abs(stated - priced * (1 - discount)) <= tolerance:
        return (
            "explained",
            f"negotiated discount of {(discount * 100).normalize():f}% (terms file); difference "
            f"{_signed(stated - priced)}",
            same_row.source,
        )
    share = f" ({(stated - priced) / priced * 100:+.1f}%)" if priced else ""
    return "flagged", f"unexplained difference {_signed(stated - priced)}{share}", same_row.source


def _served(tier: str) -> Callable[[ExportLine], ExportLine]:
    """A line as if served in `tier` ("batch", "flex", "priority"; "" for standard)."""

    def change(line: ExportLine) -> ExportLine:
        return replace(line, batch=tier == "batch", tier="" if tier == "batch" else tier)

    return change


def _context(long: bool) -> Callable[[ExportLine], ExportLine]:
    """A line as if every request in it were above (or below) the long-context threshold."""

    def change(line: ExportLine) -> ExportLine:
        return replace(line, long_context=long)

    return change


def _signed(amount: Decimal) -> str:
    sign = "-" if amount < 0 else "+"
    return f"{sign}${abs(amount):,.2f}"


# ---------------------------------------------------------------------------------------------
# The table


def _canonical(model: str, provider: str, table: PriceTable) -> str:
    if not model:
        return ""
    try:
        return table.resolve(model, provider=provider)
    except InputError:
        return model


def reconcile(
    exports: Iterable[ExportLine],
    *,
    log: Iterable[LoggedCall] = (),
    invoices: Iterable[Invoice] = (),
    table: PriceTable | None = None,
    discounts: dict[str, Decimal] | None = None,
    by_project: bool = True,
    rates: ExchangeRates | None = None,
    terms: Terms | None = None,
) -> Reconciliation:
    """Reconcile the providers' exports (usage and cost lines, any providers, any months)
    with cotplan's price of the usage and cotplan's own `log`; check each `invoices` entry.

    `discounts` maps a provider to a negotiated discount (0.1 for 10%) that explains a stated
    cost that much below list price. With `by_project` False, rows are per model only (for a
    log whose calls carry no project tag). `rates` converts a cost stated in another currency
    to USD at the rate dated on or before its day (the rate and its date are in ``why``);
    without them such a row is flagged. `terms` (a terms file) explains a difference its
    volume tiers account for, and applies its credits to the invoice checks while they last
    (`cotplan.pricing.reconcile_terms`).
    """
    chosen = table or price_table()
    cuts = discounts or {}
    usage: dict[_Key, list[ExportLine]] = defaultdict(list)
    stated: dict[_Key, Decimal] = defaultdict(lambda: _ZERO)
    credits: dict[tuple[str, str], Decimal] = defaultdict(lambda: _ZERO)
    other_currency: dict[_Key, set[str]] = defaultdict(set)
    converted: dict[_Key, set[str]] = defaultdict(set)
    has_cost: set[_Key] = set()
    for line in exports:
        model = _canonical(line.model, line.provider, chosen)
        key = (line.month, line.provider, model, line.project if by_project else "")
        if line.kind == "usage":
            usage[key].append(replace(line, model=model))
        elif line.credit:
            credits[(line.month, line.provider)] += line.usd
        else:
            amount = line.usd
            if line.currency != "USD" and rates is not None:
                amount, used = rates.to_usd(line.usd, line.currency, line.day)
                converted[key].add(used.label)
            elif line.currency != "USD":
                other_currency[key].add(line.currency)
            stated[key] += amount
            has_cost.add(key)
    logged: dict[_Key, Decimal] = defaultdict(lambda: _ZERO)
    has_log: set[_Key] = set()
    for call in log:
        model = _canonical(call.model, call.provider, chosen)
        project = call.tags.get("project", "") if by_project else ""
        key = (f"{call.day:%Y-%m}", call.provider, model, project)
        logged[key] += call.usd
        has_log.add(key)
    rows = []
    for key in sorted(set(usage) | has_cost | has_log):
        row = _row(
            key,
            usage.get(key, []),
            stated,
            has_cost,
            logged,
            has_log=has_log,
            other_currency=other_currency,
            table=chosen,
            cuts=cuts,
        )
        if converted.get(key):
            row["why"] = _joined(row["why"], "converted at " + "; ".join(sorted(converted[key])))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    checks = _invoice_checks(frame, credits, list(invoices))
    if terms is not None:
        from cotplan.pricing.reconcile_terms import apply_credits, explain_tiers

        frame = explain_tiers(frame, terms, _tolerance)
        checks = apply_credits(checks, terms, _tolerance)
    return Reconciliation(frame, checks)


def _row(
    key: _Key,
    lines: list[ExportLine],
    stated: dict[_Key, Decimal],
    has_cost: set[_Key],
    logged: dict[_Key, Decimal],
    *,
    has_log: set[_Key],
    other_currency: dict[_Key, set[str]],
    table: PriceTable,
    cuts: dict[str, Decimal],
) -> dict[str, Any]:
    month, provider, model, project = key
    said = stated[key] if key in has_cost else None
    priced = _price_all(lines, table) if lines and model else None
    own = logged[key] if key in has_log else None
    source = ""
    if other_currency.get(key):
        status = "flagged"
        why = f"stated in {', '.join(sorted(other_currency[key]))}: give a rates file"
    elif not model and said is not None:
        status, why = "flagged", "a cost with no model: group the cost export by line item"
    elif said is not None and priced is not None:
        status, why, source = _explain(said, priced, lines, table, cuts.get(provider))
    elif said is not None:
        status, why = "flagged", "a stated cost with no usage in the usage export"
    elif priced is not None:
        status, why = "flagged", "usage with no stated cost in the cost export"
    elif lines:
        status, why = "flagged", "usage cotplan cannot price (see the price table)"
    else:
        status, why = "flagged", "calls in cotplan's log that no provider export holds"
    if own is not None and priced is not None and own > priced + _tolerance(priced):
        status = "flagged"
        why = _joined(
            why, f"cotplan's log holds {_signed(own - priced)} more than the provider's usage"
        )
    elif own is not None and priced:
        share = own / priced * 100
        shown = f"{share:.0f}" if share >= 10 else f"{share:.2g}"
        why = _joined(why, f"cotplan's log covers {shown}% of this usage")
    reference = priced if priced is not None else _ZERO
    return {
        "month": month,
        "provider": provider,
        "model": model,
        "project": project,
        "stated_usd": said,
        "priced_usd": priced,
        "logged_usd": own,
        "difference_usd": None if said is None else said - reference,
        "status": status,
        "why": why,
        "rate_source": source,
    }


def _joined(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _invoice_checks(
    frame: pd.DataFrame, credits: dict[tuple[str, str], Decimal], invoices: list[Invoice]
) -> pd.DataFrame:
    columns = [
        "month",
        "provider",
        "stated_usd",
        "export_credits_usd",
        "credits_usd",
        "tax_usd",
        "expected_usd",
        "invoice_usd",
        "status",
        "why",
    ]
    entered = {(i.month, i.provider): i for i in invoices}
    months = {(m, p) for m, p in zip(frame["month"], frame["provider"], strict=True)}
    rows = []
    for month, provider in sorted(months | set(entered) | set(credits)):
        part = frame[(frame["month"] == month) & (frame["provider"] == provider)]
        said = sum((v for v in part["stated_usd"] if v is not None and not pd.isna(v)), _ZERO)
        bill = entered.get((month, provider), Invoice(provider, month))
        from_export = credits.get((month, provider), _ZERO)
        expected = said + from_export - bill.credits_usd + bill.tax_usd
        if bill.total_usd is None:
            status, why = "", "no invoice total entered"
        elif abs(expected - bill.total_usd) <= _tolerance(bill.total_usd):
            status = "explained"
            why = (
                f"stated {said:,.2f} {_signed(from_export)} export credits "
                f"-{bill.credits_usd:,.2f} credits +{bill.tax_usd:,.2f} tax = invoice"
            )
        else:
            status = "flagged"
            why = (
                f"invoice differs from stated costs, credits and tax by "
                f"{_signed(bill.total_usd - expected)}"
            )
        rows.append(
            {
                "month": month,
                "provider": provider,
                "stated_usd": said,
                "export_credits_usd": from_export,
                "credits_usd": bill.credits_usd,
                "tax_usd": bill.tax_usd,
                "expected_usd": expected,
                "invoice_usd": bill.total_usd,
                "status": status,
                "why": why,
            }
        )
    return pd.DataFrame(rows, columns=columns)
