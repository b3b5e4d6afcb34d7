"""The dated price table: one row per provider and model, read from a data file.

Two sources, in order. First cotplan's own rows: `prices.csv` in this package, each read by
hand with its date and source; a user file (CSV, JSON or TOML) named by `prices(path=...)` or
the environment variable `COTPLAN_PRICES` replaces every shipped row of each model it names
and adds new models. Then genai-prices' bundled data (`cotplan.pricing.genai`) for every
(provider, model) the first source lacks: where both price a model for a provider, cotplan's
row wins. Money is exact: prices are `decimal.Decimal`, per million tokens, in USD. Every row
says where its price came from (`PriceRow.source`).

Lookup is strict on purpose. A name matches case-insensitively, then after removing a
provider prefix (``openai/``), a weights tag (``@b179c9523d0e``) or a date suffix
(``-2026-11-17``, ``-20261117``); genai-prices' rows match by its own rules. A name that
several providers price (``gpt-4o-mini`` at OpenAI and at GitHub Copilot) needs the provider
(``openai/gpt-4o-mini`` or ``provider=``). Anything else is an `UnknownModelError` that lists
the closest names of both sources: a model is never priced at zero by accident. Local models
(the embedded one, any ``local:PATH`` GGUF, ``lab:`` models) are a deliberate zero labelled
"local, no API charge" that never goes stale. Any other price read more than
`STALE_AFTER_DAYS` days ago warns with its date (`StalePriceWarning`).
"""

from __future__ import annotations

import csv
import difflib
import functools
import json
import math
import os
import re
import threading
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
    "LOCAL_SOURCE",
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
#: The source of a local model's deliberate zero price.
LOCAL_SOURCE = "local, no API charge"

_PRICE_COLUMNS = (
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "reasoning_per_mtok",
    "request_fee_usd",
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
    "reasoning_per_mtok",
    "request_fee_usd",
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
    "reasoning_per_mtok",
    "request_fee_usd",
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
#: Columns of `PriceTable.to_frame` beyond the file columns.
_FRAME_EXTRA = ("effective_to", "origin", "source")
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


_SOFT_WARNING_LOCK = threading.Lock()


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
    reasoning: Decimal | None = None  # None: reasoning pays the output rate
    request: Decimal = Decimal(0)  # USD per request, whatever its tokens

    @property
    def reasoning_rate(self) -> Decimal:
        """The rate of reasoning tokens (the output rate unless the model prices them apart)."""
        return self.output if self.reasoning is None else self.reasoning


@dataclass(frozen=True)
class PriceRow:
    """One model's published prices, per million tokens, with where and when they were read.

    `cache_write_per_mtok` is None when the provider charges no separate cache-write rate
    (written tokens then cost the input rate). `long_context_threshold` is the prompt size
    (input, cached and written tokens together) above which the whole request pays the
    ``long_*`` rates. `effective_from` is None for a price in effect until a later row for the
    same model takes over; `effective_to` is the last day of a price a later row replaces
    (genai-prices' historic prices). `reasoning_per_mtok` is None when reasoning tokens pay the
    output rate; `request_fee_usd` is a charge per request on top of the tokens. `origin` is
    "cotplan" for a shipped row, the file for a user's row and "genai-prices VERSION" for the
    second source.
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
    reasoning_per_mtok: Decimal | None = None
    effective_to: date | None = None
    request_fee_usd: Decimal | None = None

    @property
    def is_local(self) -> bool:
        """True for a local model's deliberate zero price (never stale)."""
        return self.provider == "local"

    @property
    def from_genai(self) -> bool:
        """True when the price comes from genai-prices' bundled data."""
        return self.origin.startswith("genai-prices")

    @property
    def source(self) -> str:
        """Where the price came from, in one line: the page and the date read, or genai-prices'
        version and the price's validity dates."""
        if self.is_local:
            return LOCAL_SOURCE
        if self.from_genai:
            valid = []
            if self.effective_from is not None:
                valid.append(f"from {self.effective_from}")
            if self.effective_to is not None:
                valid.append(f"to {self.effective_to}")
            when = f", valid {' '.join(valid)}" if valid else ""
            return f"{self.origin}{when} ({self.source_url})"
        where = "" if self.origin == "cotplan" else f"{self.origin}: "
        return f"{where}{self.source_url}, read {self.as_of}"

    def is_long(self, prompt_tokens: Any) -> Any:
        """Whether a prompt of `prompt_tokens` pays the long-context rates (numbers or arrays):
        the one place the threshold rule is written."""
        if self.long_context_threshold is None:
            return prompt_tokens > math.inf  # False, or an all-False array
        return prompt_tokens > self.long_context_threshold

    def rates(self, prompt_tokens: int | float | Decimal) -> Rates:
        """The rates for a call whose prompt holds `prompt_tokens` tokens."""
        return self.long_rates() if bool(self.is_long(prompt_tokens)) else self.short_rates()

    def long_rates(self) -> Rates:
        """The rates above the long-context threshold (the short ones if there is none)."""
        if self.long_context_threshold is not None:
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
                self.reasoning_per_mtok,
                self.request_fee_usd or Decimal(0),
            )
        return self.short_rates()

    def short_rates(self) -> Rates:
        """The rates at or below the long-context threshold."""
        write = self.cache_write_per_mtok
        return Rates(
            self.input_per_mtok,
            self.cached_input_per_mtok,
            write if write is not None else self.input_per_mtok,
            self.output_per_mtok,
            False,
            self.reasoning_per_mtok,
            self.request_fee_usd or Decimal(0),
        )

    def age_days(self, on: date | None = None) -> int:
        """Days between the date the price was read and `on` (default: today)."""
        return ((on or date.today()) - self.as_of).days

    def is_stale(self, on: date | None = None) -> bool:
        """True when the price was read more than `STALE_AFTER_DAYS` days before `on`.

        A local model's deliberate zero never goes stale."""
        return not self.is_local and self.age_days(on) > STALE_AFTER_DAYS

    def stale_message(self, on: date | None = None) -> str:
        """The one text of the stale-price warning (used by every code path that warns)."""
        when = on or date.today()
        if self.from_genai:
            fix = "install a newer genai-prices release or override it with a price file"
        else:
            fix = f"check {self.source_url} and override it with a price file"
        return (
            f"the price of {self.model} ({self.provider}) was read on {self.as_of.isoformat()}, "
            f"{self.age_days(when)} days before {when.isoformat()} (more than "
            f"{STALE_AFTER_DAYS}); {fix} ({PRICES_ENV})"
        )

    def warn_if_stale(
        self, on: date | None = None, *, soft: bool = False, stacklevel: int = 2
    ) -> None:
        """Warn with `StalePriceWarning` when the price is stale on `on`.

        ``soft=True`` is for code paths that only record a cost (a completion already made):
        the warning is shown even where warnings are turned into errors, and never raised.
        `stacklevel` counts from the caller, as in `warnings.warn`.
        """
        if not self.is_stale(on):
            return
        warning = StalePriceWarning(self.stale_message(on))
        if soft:
            # The lock keeps concurrent recordings (threads of `Backend.map`) from restoring
            # each other's filters out of order.
            with _SOFT_WARNING_LOCK, warnings.catch_warnings():
                warnings.simplefilter("always", StalePriceWarning)
                warnings.warn(warning, stacklevel=stacklevel + 1)
        else:
            warnings.warn(warning, stacklevel=stacklevel + 1)

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict (Decimal prices, `date` dates), in file column order, then
        `effective_to`, `origin` and `source`."""
        out: dict[str, Any] = {name: getattr(self, name) for name in _COLUMNS}
        out["aliases"] = ";".join(self.aliases)
        for name in _FRAME_EXTRA:
            out[name] = getattr(self, name)
        return out


class PriceTable:
    """Price rows of both sources with strict, case-insensitive lookup by model name.

    `own_rows` are cotplan's rows (shipped plus a user file); with ``genai=True`` the rows of
    genai-prices' bundled data fill in every (provider, model) they lack. `rows` is the merged
    table (cotplan's rows first).
    """

    def __init__(self, rows: Iterable[PriceRow], *, genai: bool = False) -> None:
        self.own_rows: tuple[PriceRow, ...] = tuple(rows)
        self.genai = bool(genai)
        index: dict[str, list[PriceRow]] = {}
        for row in self.own_rows:
            for name in {row.model.lower(), *(a.lower() for a in row.aliases)}:
                index.setdefault(name, []).append(row)
        for candidates in index.values():
            candidates.sort(key=lambda r: r.effective_from or date.min)
        self._index = index
        self._merged: tuple[PriceRow, ...] | None = None

    @property
    def rows(self) -> tuple[PriceRow, ...]:
        """Every row: cotplan's, then genai-prices' for the (provider, model) pairs we lack."""
        if self._merged is None:
            merged = list(self.own_rows)
            if self.genai:
                from cotplan.pricing.genai import genai_rows

                merged += [r for r in genai_rows() if not self._shadowed(r)]
            self._merged = tuple(merged)
        return self._merged

    def _shadowed(self, row: PriceRow) -> bool:
        own = self._index.get(row.model.lower(), ())
        return any(r.provider.lower() == row.provider.lower() for r in own)

    def __len__(self) -> int:
        return len(self.rows)

    def models(self) -> list[str]:
        """Known model names (not aliases), sorted, each once."""
        return sorted({row.model for row in self.rows})

    def providers(self) -> list[str]:
        """Provider names of every row, sorted, each once."""
        return sorted({row.provider for row in self.rows})

    def resolve(self, model: str, *, provider: str | None = None) -> str:
        """The table's own name for `model` (after the alias rules), or `UnknownModelError`."""
        return self._candidates(model, provider)[0].model

    def lookup(
        self,
        model: str,
        *,
        on: date | None = None,
        warn: bool = True,
        provider: str | None = None,
    ) -> PriceRow:
        """The price row of `model` (sold by `provider`) in effect on `on` (default: today).

        Warns with `StalePriceWarning` when that price was read more than `STALE_AFTER_DAYS`
        days before `on`, unless `warn` is False.
        """
        when = on or date.today()
        candidates = self._candidates(model, provider)
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
            warnings.warn(StalePriceWarning(row.stale_message(when)), stacklevel=3)
        return row

    def changes(
        self, model: str, start: date, end: date, *, provider: str | None = None
    ) -> list[PriceRow]:
        """Rows of `model` that take effect after `start` and on or before `end`."""
        return [
            r
            for r in self._candidates(model, provider)
            if r.effective_from is not None and start < r.effective_from <= end
        ]

    def _candidates(self, model: str, provider: str | None = None) -> list[PriceRow]:
        if not isinstance(model, str) or not model.strip():
            raise InputError("must be a non-empty model name", field="model")
        if provider is not None and (not isinstance(provider, str) or not provider.strip()):
            raise InputError("must be a non-empty provider name", field="provider")
        wanted = provider.strip().lower() if provider else None
        name = model.strip()
        head, sep, tail = name.partition("/")
        if wanted is not None and sep and tail and head.lower() == wanted:
            # provider="openai" and "openai/gpt-4o" say the same (unless the provider's own
            # name for the model starts with its id, as some do).
            try:
                return self._find(name, wanted, model)
            except UnknownModelError:
                return self._find(tail.strip(), wanted, model)
        if wanted is None and sep and tail and self._is_provider(head.lower()):
            # "openai/gpt-4o": the provider named in the model name.
            try:
                return self._find(tail, head.lower(), model)
            except UnknownModelError:
                pass  # "qwen/qwen3-coder" is a whole model name at OpenRouter
        return self._find(name, wanted, model)

    def _is_provider(self, name: str) -> bool:
        if name in _KNOWN_PROVIDERS or any(r.provider.lower() == name for r in self.own_rows):
            return True
        if self.genai:
            from cotplan.pricing.genai import is_provider

            return is_provider(name)
        return False

    def _find(self, name: str, provider: str | None, asked: str) -> list[PriceRow]:
        local = _local_row(name, provider)
        own = None
        for key in _name_keys(name):
            if key in self._index:
                own = self._index[key]
                break
        if own is not None and provider is not None:
            own = [r for r in own if r.provider.lower() == provider] or None
        if own is not None:
            sellers = sorted({r.provider for r in own})
            if len(sellers) > 1:
                raise _ambiguous(asked, sellers)
            return own
        if local is not None:
            return [local]
        if self.genai:
            from cotplan.pricing.genai import genai_candidates, genai_lookup

            bare = _untagged(name)
            if provider is not None:
                match = genai_lookup(bare, provider)
                if match is not None:
                    return _by_date(match.rows)
            else:
                matches = genai_candidates(bare)
                if len(matches) == 1:
                    return _by_date(matches[0].rows)
                if len(matches) > 1:
                    raise _ambiguous(asked, [m.provider for m in matches])
        raise UnknownModelError(asked, self._suggest(name, provider))

    def _suggest(self, name: str, provider: str | None) -> list[str]:
        key = _name_keys(name)[-1]
        known: set[str] = {
            k
            for k, rows in self._index.items()
            if provider is None or any(r.provider == provider for r in rows)
        }
        if self.genai:
            from cotplan.pricing.genai import genai_names

            names = genai_names()
            if provider is not None:
                prefix = f"{provider}/"
                known |= {n[len(prefix) :] for n in names if n.startswith(prefix)}
            else:
                known |= {n for n in names if "/" not in n}
        return difflib.get_close_matches(key, sorted(known), n=5, cutoff=0.5)

    def to_frame(self, on: date | None = None) -> pd.DataFrame:
        """The table as a DataFrame: exact `Decimal` prices, `date` dates, each row's source and
        age."""
        when = on or date.today()
        records = []
        for row in self.rows:
            record = row.to_dict()
            record["age_days"] = row.age_days(when)
            records.append(record)
        columns = [*_COLUMNS, *_FRAME_EXTRA, "age_days"]
        return pd.DataFrame.from_records(records, columns=columns)


def _untagged(name: str) -> str:
    """`name` in lower case without a weights tag (``model@b179c9523d0e``); a leading ``@`` is
    part of the name (``@cf/meta/llama-3-8b``)."""
    key = name.strip().lower()
    head, at, _ = key.rpartition("@")
    return head if at and head else key


def _strip_tag(name: str) -> str:
    head, at, _ = name.strip().rpartition("@")
    return head if at and head else name.strip()


def _by_date(rows: Iterable[PriceRow]) -> list[PriceRow]:
    return sorted(rows, key=lambda r: r.effective_from or date.min)


def _ambiguous(model: str, providers: Sequence[str]) -> InputError:
    listed = ", ".join(providers)
    return InputError(
        f"{model!r} is priced for several providers ({listed}); name one, e.g. "
        f"'{providers[0]}/{model}' (or pass the provider)",
        field="provider",
    )


#: The embedded model's row, as the template of every other local model's zero price.
_LOCAL_TEMPLATE = "smollm2-135m-instruct"


def _local_row(name: str, provider: str | None) -> PriceRow | None:
    """A deliberate zero for a local model: ``local:PATH``, a ``.gguf`` file, ``lab:FAMILY``."""
    bare = _untagged(name)
    is_local = (
        provider == "local"
        or bare.startswith(("local:", "lab:"))
        or bare.endswith(".gguf")
        or (provider is None and bare.startswith("lab-"))
    )
    if not is_local:
        return None
    template = next((r for r in _builtin_rows() if r.model == _LOCAL_TEMPLATE), None)
    as_of = template.as_of if template is not None else date(2026, 11, 29)
    return PriceRow(
        provider="local", model=_strip_tag(name), input_per_mtok=Decimal(0),
        cached_input_per_mtok=Decimal(0), output_per_mtok=Decimal(0), reasoning_billing="none",
        batch_discount=Decimal(0), as_of=as_of, source_url=LOCAL_SOURCE,
        notes="a model run on this machine: a deliberate zero, not an unknown price",
    )  # fmt: skip


def _name_keys(model: str) -> list[str]:
    """The names to try for `model`, most literal first."""
    key = model.strip().lower()
    keys = [key]
    bare = _untagged(key)
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


def price_table(
    path: str | os.PathLike[str] | None = None, *, builtin: bool = True, genai: bool | None = None
) -> PriceTable:
    """Both sources: the shipped table, overridden by `path` or else by the file in
    `COTPLAN_PRICES`, then genai-prices' bundled data behind it.

    ``builtin=False`` uses only the file (and, unless ``genai=True``, no genai-prices rows);
    `genai` defaults to `builtin`.
    """
    rows: list[PriceRow] = list(_builtin_rows()) if builtin else []
    chosen = path if path is not None else os.environ.get(PRICES_ENV) or None
    if chosen is not None:
        rows = _merge(rows, load_price_file(chosen))
    with_genai = builtin if genai is None else bool(genai)
    if not rows and not with_genai:
        raise InputError("the price table is empty", field="path")
    return PriceTable(rows, genai=with_genai)


def prices(
    path: str | os.PathLike[str] | None = None,
    *,
    builtin: bool = True,
    genai: bool | None = None,
    on: date | None = None,
) -> pd.DataFrame:
    """The price table as a DataFrame, one row per provider, model and effective date.

    Prices are exact `Decimal` values in USD per million tokens (``df[col].astype(float)`` for
    plotting). `path` (or the environment variable `COTPLAN_PRICES`) names a CSV, JSON or TOML
    file whose rows replace the shipped rows of the models they name and add new ones; with
    ``builtin=False`` only that file is used. genai-prices' rows follow cotplan's (``genai=False``
    leaves them out); `source` says where each price came from. `age_days` counts from `as_of`
    to `on` (today).
    """
    return price_table(path, builtin=builtin, genai=genai).to_frame(on)
