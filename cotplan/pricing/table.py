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
several providers price (``o3`` at OpenAI and at Azure) is priced at its maker's list price,
with a note naming the other sellers (`cotplan.pricing.makers`); only a name with no known
maker among its sellers needs the provider (``openai/o3`` or ``provider=``). Anything else is
an `UnknownModelError` that lists the closest names of both sources: a model is never priced
at zero by accident. Local models (the embedded one, any ``local:PATH`` GGUF, ``lab:`` models)
are a deliberate zero labelled "local, no API charge" that never goes stale. Any other price read
more than `STALE_AFTER_DAYS` days ago warns with its date (`StalePriceWarning`). A shipped row
takes genai-prices' flex and priority prices where both lists agree (`cotplan.pricing.carried`).
"""

from __future__ import annotations

import difflib
import functools
import os
import warnings
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from importlib import resources

import pandas as pd

from cotplan.errors import InputError, UnknownModelError
from cotplan.pricing.carried import carry_tiers
from cotplan.pricing.makers import maker_rows
from cotplan.pricing.price_file import load_price_file
from cotplan.pricing.rows import (
    COLUMNS,
    DATE_SUFFIX,
    FRAME_EXTRA,
    KNOWN_PROVIDERS,
    LOCAL_SOURCE,
    PRICES_ENV,
    REASONING_BILLING,
    STALE_AFTER_DAYS,
    EarlyDateWarning,
    PriceRow,
    Rates,
    StalePriceWarning,
)

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


#: OpenAI's API, the first priced LLM API, opened on this day
#: (https://openai.com/index/openai-api/, read 2026-11-29): no price in the table held before it.
FIRST_PRICED_DAY = date(2020, 6, 11)


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

                merged = [carry_tiers(r) for r in merged]
                merged += [r for r in genai_rows() if not self._shadowed(r)]
            self._merged = tuple(merged)
        return self._merged

    def _shadowed(self, row: PriceRow) -> bool:
        own = self._index.get(row.model.lower(), ())
        return any(r.provider.lower() == row.provider.lower() for r in own)

    def __len__(self) -> int:
        return len(self.rows)

    @functools.cached_property
    def first_date(self) -> date:
        """The earliest day a price of the table can hold: the day the first priced LLM API
        opened (`FIRST_PRICED_DAY`), or an earlier date a row itself names. genai-prices' oldest
        price of a model carries no start, so the table cannot say more."""
        days = [r.effective_from for r in self.rows if r.effective_from is not None]
        days += [r.as_of for r in self.own_rows if not r.is_local]
        return min([FIRST_PRICED_DAY, *days])

    def check_date(self, day: date, *, stacklevel: int = 2) -> None:
        """Warn (`EarlyDateWarning`) when `day` is before `first_date`: a clock set wrong, or a
        date typed wrong, would otherwise be priced silently at prices of years later."""
        if day < self.first_date:
            warnings.warn(
                EarlyDateWarning(
                    f"{day.isoformat()} is before the first date of the price table "
                    f"({self.first_date.isoformat()}): no price is known for it, so the "
                    "earliest one is used; check the date (or the computer's clock)"
                ),
                stacklevel=stacklevel + 1,
            )

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
        at: datetime | None = None,
    ) -> PriceRow:
        """The price row of `model` (sold by `provider`) in effect on `on` (default: `at`'s UTC
        date, else today), at the time of day `at` for a row with time-of-day prices (without
        `at`, the price outside their hours).

        Warns with `StalePriceWarning` when that price was read more than `STALE_AFTER_DAYS`
        days before `on`, unless `warn` is False.
        """
        when = on or (_utc_day(at) if at is not None else date.today())
        candidates = self._candidates(model, provider)
        in_effect = [r for r in candidates if r.effective_from is None or r.effective_from <= when]
        if not in_effect:
            first = candidates[0].effective_from
            raise InputError(
                f"no price for {model!r} is in effect on {when.isoformat()}; "
                f"the first takes effect on {first}",
                field="on",
            )
        row = in_effect[-1].at(at)
        if warn:
            self.check_date(when, stacklevel=3)
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
        if name in KNOWN_PROVIDERS or any(r.provider.lower() == name for r in self.own_rows):
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
            own = [carry_tiers(r) for r in own] if self.genai else own
            sellers = sorted({r.provider for r in own})
            if len(sellers) > 1:
                return maker_rows(asked, {s: [r for r in own if r.provider == s] for s in sellers})
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
                    return maker_rows(asked, {m.provider: _by_date(m.rows) for m in matches})
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
        columns = [*COLUMNS, *FRAME_EXTRA, "age_days"]
        return pd.DataFrame.from_records(records, columns=columns)


def _utc_day(moment: datetime) -> date:
    """The UTC date of `moment` (naive means UTC, as in genai-prices)."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).date()


def _untagged(name: str) -> str:
    """`name` in lower case without a weights tag (``model@b179c9523d0e``); a leading ``@`` is
    part of the name (``@cf/meta/llama-3-8b``)."""
    return _strip_tag(name).lower()


def _strip_tag(name: str) -> str:
    head, at, _ = name.strip().rpartition("@")
    return head if at and head else name.strip()


def _by_date(rows: Iterable[PriceRow]) -> list[PriceRow]:
    return sorted(rows, key=lambda r: r.effective_from or date.min)


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
    template = next((r for r in builtin_rows() if r.model == _LOCAL_TEMPLATE), None)
    as_of = template.as_of if template is not None else date(2026, 11, 29)
    return PriceRow(
        provider="local",
        model=_strip_tag(name),
        input_per_mtok=Decimal(0),
        cached_input_per_mtok=Decimal(0),
        output_per_mtok=Decimal(0),
        reasoning_billing="none",
        batch_discount=Decimal(0),
        as_of=as_of,
        source_url=LOCAL_SOURCE,
        notes="a model run on this machine: a deliberate zero, not an unknown price",
    )


def _name_keys(model: str) -> list[str]:
    """The names to try for `model`, most literal first."""
    key = model.strip().lower()
    keys = [key]
    bare = _untagged(key)
    for sep in ("/", ":"):
        head, found, tail = bare.partition(sep)
        if found and head in KNOWN_PROVIDERS:
            bare = tail
    keys.append(bare)
    keys.append(DATE_SUFFIX.sub("", bare))
    return list(dict.fromkeys(keys))


# ---------------------------------------------------------------------------------------------
# The built-in rows and a user's file (read and checked in `cotplan.pricing.price_file`)


@functools.cache
def builtin_rows() -> tuple[PriceRow, ...]:
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
    rows: list[PriceRow] = list(builtin_rows()) if builtin else []
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
