"""The month-end jobs from files, one call each: `reconcile_files` (the providers' exports,
cotplan's price of their usage, cotplan's own log and the invoices, as `cotplan cost
reconcile` reads them) and `tagged_spend` (a log's spend split by its calls' tags).

A log of calls is read by `read_log` (default: a JSONL file of provider responses;
`cotplan.production.spend.logged_calls` reads the production log too).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.inputs import day_of

__all__ = ["LogReader", "TaggedSpend", "read_invoices", "reconcile_files", "tagged_spend"]

#: Reads a log's calls with the price table and "today".
LogReader = Callable[[Path, Any, date | None], list[Any]]


@dataclass(frozen=True)
class TaggedSpend:
    """Spend per month split by the tags `by` (`cotplan.pricing.attribution.spend_by`)."""

    frame: pd.DataFrame
    by: tuple[str, ...]

    def to_frame(self) -> pd.DataFrame:
        """The table (a copy)."""
        return self.frame.copy()


def read_invoices(path: Path) -> list[Any]:
    """A CSV of ``provider,month,total_usd,tax_usd,credits_usd`` (the last two optional)."""
    from cotplan.pricing.reconcile import Invoice

    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None
    out = []
    for number, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        values: dict[str, Any] = {}
        for name in ("total_usd", "tax_usd", "credits_usd"):
            raw = (row.get(name) or "").strip()
            if not raw:
                continue
            try:
                values[name] = Decimal(raw.replace(",", "").lstrip("$"))
            except InvalidOperation:
                raise InputError(
                    f"must be an amount, got {raw!r}", field=name, line=number, source=str(path)
                ) from None
        provider, month = (row.get("provider") or "").strip().lower(), (row.get("month") or "")
        if not provider or len(month.strip()) != 7:
            raise InputError(
                "needs a provider and a month (YYYY-MM)", line=number, source=str(path)
            )
        out.append(Invoice(provider, month.strip(), **values))
    return out


def _exports(options: dict[str, list[Path] | None]) -> list[Any]:
    from cotplan.pricing.export_readers import read_export

    lines: list[Any] = []
    for kind, paths in options.items():
        for path in paths or []:
            chosen = kind
            if kind == "openai-costs" and path.suffix.lower() == ".csv":
                chosen = "openai-costs-csv"
            lines += read_export(chosen, path)
    if not lines:
        raise InputError(
            "give at least one export (--openai-usage, --anthropic-usage, --gcp-billing, ...)",
            field="openai_usage",
        )
    return lines


def _read_log(path: Path, table: Any, today: date | None, reader: LogReader | None) -> list[Any]:
    from cotplan.pricing.attribution import calls_from_jsonl

    if reader is None:
        return calls_from_jsonl(path, table=table, today=today)
    return reader(path, table, today)


def reconcile_files(
    exports: dict[str, list[Path] | None],
    *,
    log: Path | None = None,
    invoices: Path | None = None,
    terms: Path | None = None,
    rates: Path | None = None,
    by_model: bool = False,
    prices: str | os.PathLike[str] | None = None,
    on: date | str | None = None,
    read_log: LogReader | None = None,
) -> Any:
    """The `Reconciliation` of the exports (by kind: ``openai-usage``, ``openai-costs``,
    ``anthropic-usage``, ``anthropic-costs``, ``gcp-billing``) against cotplan's prices, its
    `log` and the `invoices` CSV; `terms`' discounts and volume tiers explain lower bills and
    its credits apply until they expire; `rates` convert costs stated in another currency.
    One row per model and project (per model: `by_model`)."""
    from cotplan.pricing.reconcile import reconcile
    from cotplan.pricing.table import price_table

    today = day_of(on, "on")
    table = price_table(prices)
    lines = _exports(exports)
    calls = [] if log is None else _read_log(log, table, today, read_log)
    bills = [] if invoices is None else read_invoices(invoices)
    agreed = None
    if terms is not None:
        from cotplan.pricing.terms import read_terms

        agreed = read_terms(terms)
    exchange = None
    if rates is not None:
        from cotplan.pricing.currency import read_rates

        exchange = read_rates(rates)
    discounts = None if agreed is None else agreed.discounts()
    return reconcile(lines, log=calls, invoices=bills, table=table, discounts=discounts,
                     by_project=not by_model, rates=exchange, terms=agreed)  # fmt: skip


def tagged_spend(
    log: Path,
    *,
    by: str = "team",
    prices: str | os.PathLike[str] | None = None,
    on: date | str | None = None,
    read_log: LogReader | None = None,
) -> TaggedSpend:
    """Actual spend per month in `log`, split by its calls' tags `by` (comma-separated)."""
    from cotplan.pricing.attribution import spend_by
    from cotplan.pricing.table import price_table

    today = day_of(on, "on")
    names = [b.strip() for b in by.split(",")]
    table = price_table(prices)
    calls = _read_log(log, table, today, read_log)
    return TaggedSpend(spend_by(calls, names), tuple(names))
