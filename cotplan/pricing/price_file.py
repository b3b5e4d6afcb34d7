"""Price files a user gives (CSV, JSON, JSONL or TOML): read and validate every row, with
errors that name the file, the line and the column. Private to `cotplan.pricing`, whose table
reads the built-in rows and a user's file through `load_price_file`."""

from __future__ import annotations

import csv
import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cotplan.errors import InputError
from cotplan.io import parse_json
from cotplan.pricing.rows import (
    COLUMNS,
    PRICE_COLUMNS,
    REASONING_BILLING,
    REQUIRED,
    PriceRow,
)

__all__ = ["load_price_file"]


@dataclass(frozen=True)
class _Where:
    """Where a record sits in its file, to build errors that name the field and the line."""

    source: str
    line: int | None = None
    prefix: str = ""  # "prices[3]." for the fourth record of a JSON or TOML file

    def error(self, message: str, column: str | None = None) -> InputError:
        name = self.prefix + column if column else self.prefix.rstrip(".") or None
        return InputError(message, field=name, line=self.line, source=self.source)


def _parse_decimal(value: Any, column: str, where: _Where) -> Decimal:
    text = str(value).strip().replace("$", "").replace(",", "")
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise where.error(f"{value!r} is not a number", column) from None
    if not number.is_finite():
        raise where.error(f"must be a finite number, got {value!r}", column)
    if number < 0:
        raise where.error(f"must not be negative, got {value!r}", column)
    return number


def _parse_date(value: Any, column: str, where: _Where) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise where.error(f"{value!r} is not a date in YYYY-MM-DD form", column) from None


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _unknown_column(column: str, where: _Where) -> InputError:
    close = difflib.get_close_matches(column, COLUMNS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return where.error(f"unknown column{hint}", column)


def _row_from_mapping(raw: Mapping[str, Any], where: _Where, origin: str) -> PriceRow:
    """Validate one record of a price file."""
    for column in raw:
        if column not in COLUMNS:
            raise _unknown_column(str(column), where)
    for column in REQUIRED:
        if _blank(raw.get(column)):
            raise where.error("is required and missing or empty", column)

    values: dict[str, Any] = {}
    for column in ("provider", "model", "source_url"):
        values[column] = str(raw[column]).strip()
    values["notes"] = "" if _blank(raw.get("notes")) else str(raw["notes"]).strip()
    aliases = raw.get("aliases")
    if isinstance(aliases, list | tuple):
        values["aliases"] = tuple(str(a).strip() for a in aliases if str(a).strip())
    else:
        text = "" if _blank(aliases) else str(aliases)
        values["aliases"] = tuple(a.strip() for a in text.split(";") if a.strip())
    for column in PRICE_COLUMNS:
        if not _blank(raw.get(column)):
            values[column] = _parse_decimal(raw[column], column, where)
    billing = str(raw["reasoning_billing"]).strip().lower()
    if billing not in REASONING_BILLING:
        raise where.error(
            f"must be one of {', '.join(REASONING_BILLING)}, got {raw['reasoning_billing']!r}",
            "reasoning_billing",
        )
    values["reasoning_billing"] = billing
    discount = _parse_decimal(raw["batch_discount"], "batch_discount", where)
    if discount >= 1:
        raise where.error(
            f"is the fraction taken off for batch calls, in [0, 1); got {raw['batch_discount']!r}",
            "batch_discount",
        )
    values["batch_discount"] = discount
    values["as_of"] = _parse_date(raw["as_of"], "as_of", where)
    if not _blank(raw.get("effective_from")):
        values["effective_from"] = _parse_date(raw["effective_from"], "effective_from", where)

    threshold = raw.get("long_context_threshold")
    long_columns = ("long_input_per_mtok", "long_cached_input_per_mtok", "long_output_per_mtok")
    if not _blank(threshold):
        number = _parse_decimal(threshold, "long_context_threshold", where)
        if number != number.to_integral_value() or number <= 0:
            raise where.error(
                f"must be a positive whole number of tokens, got {threshold!r}",
                "long_context_threshold",
            )
        values["long_context_threshold"] = int(number)
        for column in long_columns:
            if column not in values:
                raise where.error("is required when `long_context_threshold` is set", column)
    else:
        for column in (*long_columns, "long_cache_write_per_mtok"):
            if column in values:
                raise where.error(
                    "needs `long_context_threshold` (the prompt size where it starts)", column
                )
    return PriceRow(**values, origin=origin)


def _document(text: str, suffix: str, source: str) -> Any:
    """A JSON or TOML price file's document."""
    if suffix == ".json":
        # The one JSON reader: depth, size and repeated-key limits that name the file.
        return parse_json(text, source=source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _Where(source).error(f"not valid TOML: {exc}") from exc
    except RecursionError:
        raise _Where(source).error("nested too deep to read") from None


def _read_records(path: Path) -> list[tuple[dict[str, Any], _Where]]:
    """(record, location) pairs from a CSV, JSON or TOML file."""
    source = str(path)
    file_where = _Where(source)
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise file_where.error("price file not found", "path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise file_where.error(f"cannot read price file: {exc}", "path") from exc

    if suffix in {".json", ".toml"}:
        data = _document(text, suffix, source)
        entries = data.get("prices") if isinstance(data, dict) else data
        if not isinstance(entries, list) or not entries:
            raise file_where.error(
                "expected a non-empty list of price records (or a `prices` list)", "prices"
            )
        records = []
        for i, entry in enumerate(entries):
            where = _Where(source, prefix=f"prices[{i}].")
            if not isinstance(entry, dict):
                raise where.error("must be a table/object")
            records.append((entry, where))
        return records

    if suffix not in {".csv", ".txt", ""}:
        raise file_where.error(
            f"unsupported price file type {suffix!r}; use .csv, .json or .toml", "path"
        )
    reader = csv.DictReader(text.splitlines(keepends=True))
    header_where = _Where(source, line=1)
    header = reader.fieldnames
    if not header:
        raise header_where.error("the price file is empty")
    names = [c.strip() if c else "" for c in header]
    for column in names:
        if not column:
            raise header_where.error("empty column name in the header")
        if column not in COLUMNS:
            raise _unknown_column(column, header_where)
    for column in REQUIRED:
        if column not in names:
            raise header_where.error("required column is missing", column)
    records = []
    for raw in reader:
        where = _Where(source, line=reader.line_num)
        if None in raw:
            extra = raw[None]
            raise where.error(
                f"has {len(header) + len(extra)} fields but the header has {len(header)}"
            )
        if all(_blank(v) for v in raw.values()):
            continue
        records.append(({k.strip(): v for k, v in raw.items()}, where))
    if not records:
        raise _Where(source, line=2).error("the price file has a header but no rows")
    return records


def load_price_file(path: str | os.PathLike[str], *, origin: str | None = None) -> list[PriceRow]:
    """Read and validate every row of a price file; errors name the column and line."""
    file = Path(path).expanduser()
    rows: list[PriceRow] = []
    seen: dict[tuple[str, date | None], int | None] = {}
    for record, where in _read_records(file):
        row = _row_from_mapping(record, where, origin or str(file))
        key = (row.model.lower(), row.effective_from)
        if key in seen:
            first = seen[key]
            raise where.error(
                f"duplicate row for {row.model!r} with the same `effective_from`"
                + (f" (first on line {first})" if first else ""),
                "model",
            )
        seen[key] = where.line
        rows.append(row)
    return rows
