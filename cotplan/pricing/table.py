"""The dated price table: one row per provider and model, read from a data file.

The shipped table is `prices.csv` in this package. A user file (CSV, JSON or TOML) named by
`prices(path=...)` or the environment variable `COTPLAN_PRICES` replaces every shipped row of
each model it names and adds new models. Money is exact: prices are `decimal.Decimal` parsed
from the file's text, per million tokens, in USD.

Lookup is strict on purpose. A name matches case-insensitively, then after removing a
provider prefix (``openai/``), a weights tag (``@b179c9523d0e``) or a date suffix
(``-2026-11-17``, ``-20261117``). Anything else is an `UnknownModelError` that lists the
closest known names: a model is never priced at zero by accident, and a variant that costs
more (``-fast``, ``ft:`` fine-tunes) never borrows its base model's price. A price read more
than `STALE_AFTER_DAYS` days ago warns with its date (`StalePriceWarning`).
"""

from __future__ import annotations

import csv
import difflib
import functools
import json
import os
import re
import tomllib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError, UnknownModelError

__all__ = [
    "PRICES_ENV",
    "REASONING_BILLING",
    "STALE_AFTER_DAYS",
    "PriceRow",
    "PriceTable",
    "Rates",
    "StalePriceWarning",
    "load_price_file",
    "price_table",
    "prices",
]

#: Environment variable naming a user price file that overrides or extends the shipped table.
PRICES_ENV = "COTPLAN_PRICES"
#: A price read longer ago than this warns when it is used.
STALE_AFTER_DAYS = 180
#: How a provider reports reasoning ("thinking") tokens in its usage:
#: ``in_completion``: already inside the completion/output count (OpenAI, Anthropic);
#: ``separate``: reported apart from the completion count, billed once at the output rate
#: (Gemini's ``thoughtsTokenCount``); ``none``: no hidden reasoning (any chain of thought is
#: ordinary output text).
REASONING_BILLING = ("in_completion", "separate", "none")

_PRICE_COLUMNS = (
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "long_input_per_mtok",
    "long_cached_input_per_mtok",
    "long_cache_write_per_mtok",
    "long_output_per_mtok",
)
_REQUIRED = (
    "provider",
    "model",
    "input_per_mtok",
    "cached_input_per_mtok",
    "output_per_mtok",
    "reasoning_billing",
    "batch_discount",
    "as_of",
    "source_url",
)
_OPTIONAL = (
    "aliases",
    "cache_write_per_mtok",
    "long_context_threshold",
    "long_input_per_mtok",
    "long_cached_input_per_mtok",
    "long_cache_write_per_mtok",
    "long_output_per_mtok",
    "effective_from",
    "notes",
)
_COLUMNS = (
    "provider",
    "model",
    "aliases",
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "reasoning_billing",
    "batch_discount",
    "long_context_threshold",
    "long_input_per_mtok",
    "long_cached_input_per_mtok",
    "long_cache_write_per_mtok",
    "long_output_per_mtok",
    "effective_from",
    "as_of",
    "source_url",
    "notes",
)
_KNOWN_PROVIDERS = ("openai", "anthropic", "google", "local")
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


class StalePriceWarning(UserWarning):
    """A price was read from its source longer ago than `STALE_AFTER_DAYS` days."""


@dataclass(frozen=True)
class Rates:
    """The USD-per-million-token rates that apply to one call."""

    input: Decimal
    cached_input: Decimal
    cache_write: Decimal
    output: Decimal
    long_context: bool


@dataclass(frozen=True)
class PriceRow:
    """One model's published prices, per million tokens, with where and when they were read.

    `cache_write_per_mtok` is None when the provider charges no separate cache-write rate
    (written tokens then cost the input rate). `long_context_threshold` is the prompt size
    (input, cached and written tokens together) above which the whole request pays the
    ``long_*`` rates. `effective_from` is None for a price in effect until a later row for the
    same model takes over.
    """

    provider: str
    model: str
    input_per_mtok: Decimal
    cached_input_per_mtok: Decimal
    output_per_mtok: Decimal
    reasoning_billing: str
    batch_discount: Decimal
    as_of: date
    source_url: str
    aliases: tuple[str, ...] = ()
    cache_write_per_mtok: Decimal | None = None
    long_context_threshold: int | None = None
    long_input_per_mtok: Decimal | None = None
    long_cached_input_per_mtok: Decimal | None = None
    long_cache_write_per_mtok: Decimal | None = None
    long_output_per_mtok: Decimal | None = None
    effective_from: date | None = None
    notes: str = ""
    origin: str = field(default="cotplan", compare=False)

    def rates(self, prompt_tokens: int) -> Rates:
        """The rates for a call whose prompt holds `prompt_tokens` tokens."""
        long = self.long_context_threshold is not None and prompt_tokens > (
            self.long_context_threshold
        )
        if long:
            assert self.long_input_per_mtok is not None  # checked when the row was read
            assert self.long_cached_input_per_mtok is not None
            assert self.long_output_per_mtok is not None
            write = self.long_cache_write_per_mtok
            return Rates(
                self.long_input_per_mtok,
                self.long_cached_input_per_mtok,
                write if write is not None else self.long_input_per_mtok,
                self.long_output_per_mtok,
                True,
            )
        write = self.cache_write_per_mtok
        return Rates(
            self.input_per_mtok,
            self.cached_input_per_mtok,
            write if write is not None else self.input_per_mtok,
            self.output_per_mtok,
            False,
        )

    def age_days(self, on: date | None = None) -> int:
        """Days between the date the price was read and `on` (default: today)."""
        return ((on or date.today()) - self.as_of).days

    def is_stale(self, on: date | None = None) -> bool:
        """True when the price was read more than `STALE_AFTER_DAYS` days before `on`."""
        return self.age_days(on) > STALE_AFTER_DAYS

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict (Decimal prices, `date` dates), in file column order."""
        out: dict[str, Any] = {name: getattr(self, name) for name in _COLUMNS}
        out["aliases"] = ";".join(self.aliases)
        out["origin"] = self.origin
        return out


class PriceTable:
    """Price rows with strict, case-insensitive lookup by model name."""

    def __init__(self, rows: Iterable[PriceRow]) -> None:
        self.rows: tuple[PriceRow, ...] = tuple(rows)
        index: dict[str, list[PriceRow]] = {}
        for row in self.rows:
            for name in {row.model.lower(), *(a.lower() for a in row.aliases)}:
                index.setdefault(name, []).append(row)
        for candidates in index.values():
            candidates.sort(key=lambda r: r.effective_from or date.min)
        self._index = index

    def __len__(self) -> int:
        return len(self.rows)

    def models(self) -> list[str]:
        """Known model names (not aliases), sorted, each once."""
        return sorted({row.model for row in self.rows})

    def resolve(self, model: str) -> str:
        """The table's own name for `model` (after the alias rules), or `UnknownModelError`."""
        return self._candidates(model)[0].model

    def lookup(self, model: str, *, on: date | None = None, warn: bool = True) -> PriceRow:
        """The price row of `model` in effect on `on` (default: today).

        Warns with `StalePriceWarning` when that price was read more than `STALE_AFTER_DAYS`
        days before `on`, unless `warn` is False.
        """
        when = on or date.today()
        candidates = self._candidates(model)
        in_effect = [r for r in candidates if r.effective_from is None or r.effective_from <= when]
        if not in_effect:
            first = candidates[0].effective_from
            raise InputError(
                f"no price for {model!r} is in effect on {when.isoformat()}; "
                f"the first takes effect on {first}",
                field="on",
            )
        row = in_effect[-1]
        if warn and row.is_stale(when):
            warnings.warn(
                StalePriceWarning(
                    f"the price of {row.model} was read on {row.as_of.isoformat()}, "
                    f"{row.age_days(when)} days ago (more than {STALE_AFTER_DAYS}); check "
                    f"{row.source_url} and override it with a price file ({PRICES_ENV})"
                ),
                stacklevel=3,
            )
        return row

    def changes(self, model: str, start: date, end: date) -> list[PriceRow]:
        """Rows of `model` that take effect after `start` and on or before `end`."""
        return [
            r
            for r in self._candidates(model)
            if r.effective_from is not None and start < r.effective_from <= end
        ]

    def _candidates(self, model: str) -> list[PriceRow]:
        if not isinstance(model, str) or not model.strip():
            raise InputError("must be a non-empty model name", field="model")
        for key in _name_keys(model):
            if key in self._index:
                return self._index[key]
        known = sorted(self._index)
        key = _name_keys(model)[-1]
        raise UnknownModelError(model, difflib.get_close_matches(key, known, n=5, cutoff=0.5))

    def to_frame(self, on: date | None = None) -> pd.DataFrame:
        """The table as a DataFrame: exact `Decimal` prices, `date` dates, and each row's age."""
        when = on or date.today()
        records = []
        for row in self.rows:
            record = row.to_dict()
            record["age_days"] = row.age_days(when)
            records.append(record)
        columns = [*_COLUMNS, "origin", "age_days"]
        return pd.DataFrame.from_records(records, columns=columns)


def _name_keys(model: str) -> list[str]:
    """The names to try for `model`, most literal first."""
    key = model.strip().lower()
    keys = [key]
    bare = key.split("@", 1)[0]
    for sep in ("/", ":"):
        head, found, tail = bare.partition(sep)
        if found and head in _KNOWN_PROVIDERS:
            bare = tail
    keys.append(bare)
    keys.append(_DATE_SUFFIX.sub("", bare))
    return list(dict.fromkeys(keys))


# ---------------------------------------------------------------------------------------------
# Reading and validating price files


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
    close = difflib.get_close_matches(column, _COLUMNS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return where.error(f"unknown column{hint}", column)


def _row_from_mapping(raw: Mapping[str, Any], where: _Where, origin: str) -> PriceRow:
    """Validate one record of a price file."""
    for column in raw:
        if column not in _COLUMNS:
            raise _unknown_column(str(column), where)
    for column in _REQUIRED:
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
    for column in _PRICE_COLUMNS:
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
        try:
            data: Any = json.loads(text) if suffix == ".json" else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise file_where.error(f"not valid {suffix[1:].upper()}: {exc}") from exc
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
        if column not in _COLUMNS:
            raise _unknown_column(column, header_where)
    for column in _REQUIRED:
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


@functools.cache
def _builtin_rows() -> tuple[PriceRow, ...]:
    resource = resources.files("cotplan.pricing") / "prices.csv"
    with resources.as_file(resource) as file:
        return tuple(load_price_file(file, origin="cotplan"))


def _merge(base: Sequence[PriceRow], override: Sequence[PriceRow]) -> list[PriceRow]:
    # A user row for a model replaces all shipped rows of that model (including scheduled
    # price changes): a finance user who states a price expects exactly that price.
    names = {r.model.lower() for r in override}
    return [r for r in base if r.model.lower() not in names] + list(override)


def price_table(path: str | os.PathLike[str] | None = None, *, builtin: bool = True) -> PriceTable:
    """The shipped table, overridden by `path` or else by the file in `COTPLAN_PRICES`."""
    rows: list[PriceRow] = list(_builtin_rows()) if builtin else []
    chosen = path if path is not None else os.environ.get(PRICES_ENV) or None
    if chosen is not None:
        rows = _merge(rows, load_price_file(chosen))
    if not rows:
        raise InputError("the price table is empty", field="path")
    return PriceTable(rows)


def prices(
    path: str | os.PathLike[str] | None = None,
    *,
    builtin: bool = True,
    on: date | None = None,
) -> pd.DataFrame:
    """The price table as a DataFrame, one row per provider, model and effective date.

    Prices are exact `Decimal` values in USD per million tokens (``df[col].astype(float)`` for
    plotting). `path` (or the environment variable `COTPLAN_PRICES`) names a CSV, JSON or TOML
    file whose rows replace the shipped rows of the models they name and add new ones; with
    ``builtin=False`` only that file is used. `age_days` counts from `as_of` to `on` (today).
    """
    return price_table(path, builtin=builtin).to_frame(on)
