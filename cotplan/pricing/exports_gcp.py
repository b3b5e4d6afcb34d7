"""Google Cloud's billing export (the BigQuery standard usage cost table, saved as CSV), read
into `ExportLine` rows: a SKU that names a model and a token type becomes usage and cost lines,
credits become credit lines, tax and adjustment rows stay as cost lines with no model."""

from __future__ import annotations

import json
import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from cotplan.errors import InputError
from cotplan.pricing.exports import ExportLine, csv_rows, export_column, export_text, iso_day, money

__all__ = ["read_gcp_billing_csv"]

_ZERO = Decimal(0)

#: "Gemini 2.5 Pro Input Tokens", "Gemini 2.5 Flash Cached Input Tokens (long)", ...
_SKU = re.compile(
    r"^(?P<model>.+?)\s+(?P<kind>cached input|cache read|input|thinking output|output)"
    r"(?:\s+text)?\s+tokens?\b(?P<rest>.*)$",
    re.IGNORECASE,
)
_TOKEN_UNITS = {"count", "token", "tokens"}


def _gcp_credits(row: dict[str, str], number: int, source: str) -> Decimal:
    total = _ZERO
    text = row.get("credits")
    if text and text.strip() not in ("", "[]"):
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            raise InputError(
                "must be the credits record as JSON text",
                field="credits",
                line=number,
                source=source,
            ) from None
        for item in items if isinstance(items, list) else [items]:
            amount = item.get("amount") if isinstance(item, dict) else None
            total += money(amount, "credits.amount", source)
    if row.get("credits.amount"):
        total += money(row["credits.amount"], "credits.amount", source)
    return total


def _model_name(text: str) -> str:
    """A SKU's model words as the model's id: "Gemini 2.5 Pro" -> "gemini-2.5-pro"."""
    return "-".join(text.lower().split())


def read_gcp_billing_csv(path: str | os.PathLike[str]) -> list[ExportLine]:
    """Google Cloud's standard billing export (BigQuery table saved as CSV).

    A row whose SKU names a model and a token type (and is counted in tokens) becomes a usage
    line and a cost line of the same day; credits on a row become a credit line; rows of other
    services, and tax or adjustment rows, become cost lines with no model (kept in the totals).
    """
    file = Path(path)
    out: list[ExportLine] = []
    for number, row in csv_rows(file):
        start = export_column(row, ("usage_start_time",))
        cost = export_column(row, ("cost",))
        if start is None or cost is None:
            raise InputError(
                "needs `usage_start_time` and `cost` columns", line=number, source=str(file)
            )
        try:
            day = iso_day(start, "usage_start_time", str(file))
            usd = money(cost, "cost", str(file))
            credits = _gcp_credits(row, number, str(file))
        except InputError as exc:
            raise InputError(
                str(exc).split(": ", 1)[-1], field=exc.field, line=number, source=str(file)
            ) from None
        sku = export_text(row.get("sku.description"))
        project = export_text(row.get("project.id"))
        currency = export_text(row.get("currency")).upper() or "USD"
        kind = export_text(row.get("cost_type")).lower() or "regular"
        found = _SKU.match(sku) if kind == "regular" else None
        unit = export_text(row.get("usage.unit")).lower()
        model = _model_name(found["model"]) if found else ""
        where = f"{file.name} line {number}"
        if found and unit in _TOKEN_UNITS:
            try:
                amount = Decimal(export_text(row.get("usage.amount")) or "0")
            except InvalidOperation:
                raise InputError(
                    "must be a number", field="usage.amount", line=number, source=str(file)
                ) from None
            tokens = int(amount)
            what = found["kind"].lower()
            cached = what in ("cached input", "cache read")
            long = "long" in found["rest"].lower() or "> 200k" in found["rest"].lower()
            out.append(
                ExportLine(
                    provider="google",
                    kind="usage",
                    day=day,
                    model=model,
                    project=project,
                    long_context=long,
                    item=sku,
                    source=where,
                    input_tokens=tokens if what == "input" else 0,
                    cached_tokens=tokens if cached else 0,
                    output_tokens=tokens if what.endswith("output") else 0,
                )
            )
        out.append(
            ExportLine(
                provider="google",
                kind="cost",
                day=day,
                model=model,
                project=project,
                usd=usd,
                currency=currency,
                item=sku or kind,
                source=where,
                extra={"cost_type": kind},
            )
        )
        if credits:
            out.append(
                ExportLine(
                    provider="google",
                    kind="cost",
                    day=day,
                    model=model,
                    project=project,
                    usd=credits,
                    currency=currency,
                    item="credits",
                    credit=True,
                    source=where,
                )
            )
    return out
