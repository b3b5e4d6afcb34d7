"""genai-prices' bundled price data as cotplan price rows: the second source behind cotplan's own.

pydantic's `genai-prices` package ships the prices of about two thousand models from dozens of
providers, with historic prices and long-context tiers. cotplan reads its bundled data only:
the package's network updater (`UpdatePrices`) is never started and its process-wide snapshot
(which an updater elsewhere could replace) is never consulted. A newer genai-prices release is
how this data moves.

Each (provider, model) whose prices include per-token input and output rates becomes one
`PriceRow` per dated price: a price that starts on a date becomes a row with `effective_from`,
the price before it ends the day before (`effective_to`). What cotplan does not model is said in
the row's `notes`: per-request fees, searches. Two models with two
long-context tiers are left out (a row holds one threshold).

Conventions carried over: genai-prices counts cache reads and writes inside the input tokens,
like cotplan; a tier applies to the whole request when the prompt passes its start, like
cotplan's `long_context_threshold`. Reasoning: Gemini models sold by Google report thinking
tokens apart from the answer (``separate``); every other provider counts them inside the
completion. A model without a listed batch price is never assumed cheaper in batch.
Batch, flex and priority prices ride on the row as `PriceRow.tiers`, each with the token types
it lists and the dates it holds (a row's `batch_discount` is zero: there is no single one).
Time-of-day prices (DeepSeek's peak hours) ride on the row they override
(`PriceRow.time_of_day`); `PriceRow.at` picks the one for an hour.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cotplan.pricing.rows import PriceRow, TierPrice

__all__ = [
    "GENAI_PRICES_URL",
    "GENAI_PRICES_VERSION",
    "GenaiMatch",
    "genai_as_of",
    "genai_candidates",
    "genai_lookup",
    "genai_names",
    "genai_rows",
    "is_home",
    "is_provider",
    "provider_ids",
]

#: The installed genai-prices version (its data is bundled with the release).
GENAI_PRICES_VERSION = metadata.version("genai-prices")
#: Where genai-prices lives, for rows whose provider lists no pricing page.
GENAI_PRICES_URL = "https://github.com/pydantic/genai-prices"
# The first day of the month each release came out: a row's "read on" date for staleness. A
# release we do not know is dated by the newest scheduled price it carries (a lower bound).
_RELEASED = {"0.2.3": date(2026, 11, 1)}
_ORIGIN = f"genai-prices {GENAI_PRICES_VERSION}"
#: What may follow a model's name in a release that is still that model: date and version
#: stamps (-2025-04-16, -20241022, -0125, -v2, -latest, -preview, -exp), and the sizes and
#: instruction-tuned builds of an open model priced as one (gemma-3-27b-it as gemma-3).
_RELEASE_SUFFIX = re.compile(
    r"(?:[-_.:@](?:\d+|v\d+|\d+(?:\.\d+)?[bm]|latest|preview|exp|it|instruct))*"
)


def _providers() -> list[Any]:
    # The bundled list itself, never `get_snapshot()`: an updater started anywhere in the
    # process would swap that snapshot for downloaded data.
    from genai_prices.data import providers

    return list(providers)


def _newest_start() -> date:
    from genai_prices import types

    newest = date(2020, 1, 1)
    for provider in _providers():
        for model in provider.models:
            if isinstance(model.prices, list):
                for conditional in model.prices:
                    if isinstance(conditional.constraint, types.StartDateConstraint):
                        newest = max(newest, conditional.constraint.start_date)
    return newest


@functools.cache
def genai_as_of() -> date:
    """The "read on" date of every genai-prices row: the first day of the release's month."""
    return _RELEASED.get(GENAI_PRICES_VERSION) or _newest_start()


def _base(value: Any) -> Decimal | None:
    from genai_prices import types

    if value is None:
        return None
    return Decimal(value.base) if isinstance(value, types.TieredPrices) else Decimal(value)


def _tier(value: Any) -> tuple[int, Decimal] | None:
    from genai_prices import types

    if isinstance(value, types.TieredPrices) and value.tiers:
        return value.tiers[0].start, Decimal(value.tiers[0].price)
    return None


def _long_rate(value: Any, short: Decimal | None) -> Decimal | None:
    """A key's rate above the first tier: its tier price, or its flat rate if it has none."""
    tier = _tier(value)
    return tier[1] if tier is not None else short


_TOKEN_KEYS = (
    "input_mtok",
    "output_mtok",
    "cache_read_mtok",
    "cache_write_mtok",
    "cache_write_1h_mtok",
    "output_reasoning_mtok",
)


#: The request context of each service tier, as genai-prices' price variants are keyed.
_TIER_CONTEXT = {
    "batch": {"processing": "batch"},
    "flex": {"service_tier": "flex"},
    "priority": {"service_tier": "priority"},
}


def _tier_prices(
    provider: Any, model: Any, label: str, standard: Any, span: tuple[date | None, date | None]
) -> tuple[TierPrice, ...]:
    """The batch, flex and priority prices of one standard price over its `span`.

    As genai-prices resolves them: a variant holds from its start date, and each token type
    takes the first variant that holds and lists it (the others keep the standard rate). A
    variant starting inside the span splits it, so each tier price carries its own dates.
    """
    from copy import copy

    from cotplan.pricing.rows import TierPrice

    out: list[TierPrice] = []
    first, last = span
    for tier, context in _TIER_CONTEXT.items():
        variants = [v for v in model.price_variants or () if v.when.items() <= context.items()]
        starts = sorted(
            {
                v.constraint.start_date
                for v in variants
                if _start(v) is not None
                and (first is None or _start(v) > first)  # type: ignore[operator]
                and (last is None or _start(v) <= last)  # type: ignore[operator]
            }
        )
        bounds: list[date | None] = [first, *starts]
        for n, begin in enumerate(bounds):
            after = bounds[n + 1] if n + 1 < len(bounds) else None
            end: date | None = last if after is None else after - timedelta(days=1)
            overrides: dict[str, Any] = {}
            for variant in variants:
                start = _start(variant)
                if start is not None and (begin is None or start > begin):
                    continue  # not yet in effect on this part's first day
                for key, price in variant.prices.__dict__.items():
                    if price is not None:
                        overrides.setdefault(key, price)
            if not any(key in _TOKEN_KEYS or key == "requests_kcount" for key in overrides):
                continue  # the tier lists no text price then: it has no price
            resolved = copy(standard)
            resolved.__dict__.update(overrides)
            row = _row(provider, model, label, resolved, span=(begin, end))
            if row is not None:
                out.append(TierPrice(tier, begin, end, row))
    return tuple(out)


def _start(variant: Any) -> date | None:
    """A variant's start date (None: it always held). genai-prices uses no hours here."""
    from genai_prices import types

    if isinstance(variant.constraint, types.StartDateConstraint):
        start: date = variant.constraint.start_date
        return start
    return None


def _reasoning_billing(provider_id: str, model_id: str) -> str:
    if provider_id == "google" and model_id.startswith(("gemini", "gemma")):
        return "separate"
    return "in_completion"


def _convert(provider: Any, model: Any, label: str) -> list[PriceRow]:
    """One model's dated prices as rows labelled with provider `label`; [] when not priced."""
    from genai_prices import types

    from cotplan.pricing.rows import TimeOfDayPrice

    conditionals = (
        [types.ConditionalPrice(None, prices=model.prices)]
        if isinstance(model.prices, types.ModelPrice)
        else list(model.prices)
    )
    # genai-prices uses the last price whose constraint holds; one without a constraint always
    # holds, so nothing before it can apply.
    unconditional = [i for i, c in enumerate(conditionals) if c.constraint is None]
    if unconditional:
        conditionals = conditionals[unconditional[-1] :]
    hourly = [
        (i, c.constraint, c.prices)
        for i, c in enumerate(conditionals)
        if isinstance(c.constraint, types.TimeOfDateConstraint)
    ]
    dated = [
        (i, c)
        for i, c in enumerate(conditionals)
        if not isinstance(c.constraint, types.TimeOfDateConstraint)
    ]
    if not dated:
        return []
    starts: list[date | None] = [
        c.constraint.start_date if isinstance(c.constraint, types.StartDateConstraint) else None
        for _, c in dated
    ]
    # Before the first dated price, genai-prices uses the first one: it has no start.
    starts[0] = None
    rows: list[PriceRow] = []
    for n, (position, conditional) in enumerate(dated):
        end = starts[n + 1] if n + 1 < len(starts) else None
        span = (starts[n], None if end is None else end - timedelta(days=1))
        # genai-prices takes the last price that holds: hours listed after this price override
        # it while they hold; hours listed before it never apply while it does.
        windows = []
        for i, hours, prices in hourly:
            if i < position:
                continue
            peak = _row(provider, model, label, prices, span=span)
            if peak is None:
                return []
            windows.append(TimeOfDayPrice(hours.start_time, hours.end_time, peak))
        notes: tuple[str, ...] = ()
        if windows:
            listed = ", ".join(w.label for w in windows)
            notes = (
                f"time-of-day prices: other rates {listed}; `at=` picks the hour's price, "
                "without it the price outside those hours is used",
            )
            windows = [
                replace(
                    w,
                    row=replace(w.row, notes=_joined(f"time-of-day price, {w.label}", w.row.notes)),
                )
                for w in windows
            ]
        row = _row(provider, model, label, conditional.prices, span=span, notes=notes)
        if row is None:
            return []
        tiers = _tier_prices(provider, model, label, conditional.prices, span)
        rows.append(replace(row, time_of_day=tuple(windows), tiers=tiers))
    return rows


def _joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _row(
    provider: Any,
    model: Any,
    label: str,
    price: Any,
    *,
    span: tuple[date | None, date | None],
    notes: Sequence[str] = (),
) -> PriceRow | None:
    """One price of a model as a row valid over `span`; None when cotplan cannot hold it."""
    from genai_prices import types

    from cotplan.pricing.rows import PriceRow

    values = {key: getattr(price, key, None) for key in _TOKEN_KEYS}
    if values["input_mtok"] is None or values["output_mtok"] is None:
        return None
    tiers = {
        key: value
        for key, value in values.items()
        if isinstance(value, types.TieredPrices) and value.tiers
    }
    if any(len(t.tiers) > 1 for t in tiers.values()):
        return None  # two long-context tiers: a row holds one threshold
    extra = sorted(
        k
        for k, v in price.__dict__.items()
        if v is not None and k not in _TOKEN_KEYS and k != "requests_kcount"
    )
    per_thousand = _base(getattr(price, "requests_kcount", None))
    fee = None if per_thousand is None else per_thousand / 1000
    row_notes = list(notes)
    if extra:
        row_notes.append("also charged, not modelled: " + ", ".join(extra))
    if values["cache_write_1h_mtok"] is not None:
        row_notes.append(f"1-hour cache write: {_base(values['cache_write_1h_mtok'])}")
    inp = _base(values["input_mtok"])
    out = _base(values["output_mtok"])
    assert inp is not None
    assert out is not None
    cached = _base(values["cache_read_mtok"])
    write = _base(values["cache_write_mtok"])
    reasoning = _base(values["output_reasoning_mtok"])
    long: dict[str, Any] = {}
    if tiers:
        threshold = next(iter(tiers.values())).tiers[0].start

        long_input = _long_rate(values["input_mtok"], inp)
        long = {
            "long_context_threshold": threshold,
            "long_input_per_mtok": long_input,
            # No cache-read price: cached tokens pay the input rate, the long one here.
            "long_cached_input_per_mtok": long_input
            if cached is None
            else _long_rate(values["cache_read_mtok"], cached),
            "long_cache_write_per_mtok": _long_rate(values["cache_write_mtok"], write),
            "long_output_per_mtok": _long_rate(values["output_mtok"], out),
        }
    return PriceRow(
        provider=label,
        model=model.id,
        input_per_mtok=inp,
        cached_input_per_mtok=cached if cached is not None else inp,
        cache_write_per_mtok=write,
        output_per_mtok=out,
        reasoning_per_mtok=reasoning,
        reasoning_billing=_reasoning_billing(provider.id, model.id),
        batch_discount=Decimal(0),  # its batch prices are tiers, per token type and date
        as_of=genai_as_of(),
        source_url=(provider.pricing_urls or [GENAI_PRICES_URL])[0],
        effective_from=span[0],
        effective_to=span[1],
        request_fee_usd=fee,
        notes="; ".join(row_notes),
        origin=_ORIGIN,
        **long,
    )


@functools.cache
def genai_rows() -> tuple[PriceRow, ...]:
    """Every (provider, model) genai-prices prices per token, as rows (provider order)."""
    rows: list[PriceRow] = []
    for provider in _providers():
        for model in provider.models:
            rows.extend(_convert(provider, model, provider.id))
    return tuple(rows)


@functools.cache
def genai_names() -> tuple[str, ...]:
    """``provider/model`` and bare model names of every priced genai-prices row."""
    names = {r.model for r in genai_rows()} | {f"{r.provider}/{r.model}" for r in genai_rows()}
    return tuple(sorted(names))


@functools.cache
def _provider_ids() -> frozenset[str]:
    return frozenset(p.id for p in _providers())


def _find_provider(provider_id: str) -> Any:
    from genai_prices.data_snapshot import find_provider_by_id

    return find_provider_by_id(_providers(), provider_id)


@dataclass(frozen=True)
class GenaiMatch:
    """A model genai-prices prices: the provider asked for, and where the price comes from."""

    provider: str
    model: str
    rows: tuple[PriceRow, ...]


@functools.cache
def _rows_for(provider_id: str, model_id: str, label: str) -> tuple[PriceRow, ...]:
    provider = _find_provider(provider_id)
    model = next(m for m in provider.models if m.id == model_id)
    rows = _convert(provider, model, label)
    if label != provider_id:
        note = f"{label} sells this model at {provider_id}'s prices (genai-prices fallback)"
        # genai-prices prices a reseller at the standard rates only: its tiers are the maker's.
        rows = [replace(_with_note(r, note), tiers=()) for r in rows]
    return tuple(rows)


def _with_note(row: PriceRow, note: str) -> PriceRow:
    return replace(row, notes="; ".join(n for n in (note, row.notes) if n))


@functools.cache
def genai_candidates(name: str) -> tuple[GenaiMatch, ...]:
    """Every provider whose own list prices `name` (lower-case, no provider prefix)."""
    matches = []
    for provider in _providers():
        model = _by_id(provider, name) or _named(provider.find_model(name), name)
        if model is not None:
            rows = _rows_for(provider.id, model.id, provider.id)
            if rows:
                matches.append(GenaiMatch(provider.id, model.id, rows))
    # The provider genai-prices itself would pick for the name (its maker) comes first.
    home = [m for m in matches if is_home(m.provider, name)]
    return tuple(home + [m for m in matches if m not in home])


def is_home(provider_id: str, name: str) -> bool:
    """True when genai-prices itself would pick `provider_id` for `name` (its maker's claim)."""
    provider = _find_provider(provider_id)
    match = provider.model_match if provider is not None else None
    return bool(match is not None and match.is_match(name))


@functools.cache
def genai_lookup(name: str, provider: str) -> GenaiMatch | None:
    """`name` as sold by `provider` (genai-prices' own fallbacks included), or None."""
    found = _find_provider(provider)
    if found is None:
        return None
    model = _by_id(found, name) or _named(found.find_model(name, all_providers=_providers()), name)
    if model is None:
        return None
    home = found.id if any(m is model for m in found.models) else _home_of(model)
    rows = _rows_for(home, model.id, found.id)
    return GenaiMatch(found.id, model.id, rows) if rows else None


def _by_id(provider: Any, name: str) -> Any:
    """The model whose id is `name` (genai-prices' match rules do not always accept the id)."""
    return next((m for m in provider.models if m.id.lower() == name), None)


def _named(model: Any, name: str) -> Any:
    """`model` if `name` names it or a dated release of it, else None.

    genai-prices matches loosely (Azure's o4-mini takes any name containing "o4-mini"), so a
    match alone would price a model nobody listed, such as ``o4-mini-unpriced``, as another
    one; an unknown model must be an error, never silently someone else's price."""
    if model is None:
        return None
    text = name.lower().rpartition("/")[2]
    if _is_release(text, model.id.lower()) or _explains(model.match, name.lower()):
        return model
    return None


def _is_release(text: str, stem: str) -> bool:
    """`text` is `stem` itself or `stem` followed by date and version stamps only."""
    if not text.startswith(stem):
        return False
    rest = text[len(stem) :]
    if stem[-1:] in ("-", "_", ".", ":", "@"):
        rest = stem[-1] + rest  # a rule such as "gemma-3-" ends with the separator
    return _RELEASE_SUFFIX.fullmatch(rest) is not None


def _explains(clause: Any, text: str) -> bool:
    """True when `clause` matches `text` as the model itself or a dated release of it."""
    kind = type(clause).__name__
    if kind == "ClauseOr":
        return any(_explains(c, text) for c in clause.or_)
    if kind == "ClauseAnd":
        return bool(clause.is_match(text)) and any(_explains(c, text) for c in clause.and_)
    if not clause.is_match(text):
        return False
    if kind == "ClauseStartsWith":
        return _is_release(text, clause.starts_with.lower())
    if kind == "ClauseContains":
        before, found, rest = text.partition(clause.contains.lower())
        return (not before or before.endswith("/")) and _is_release(found + rest, found)
    return True  # equals, a regex or an ending: the rule names the model itself


def _home_of(model: Any) -> str:
    for provider in _providers():
        if any(m is model for m in provider.models):
            return str(provider.id)
    raise LookupError(model.id)  # pragma: no cover - every model belongs to a provider


def is_provider(name: str) -> bool:
    """True when genai-prices knows a provider by this id (or one of its aliases)."""
    return name in _provider_ids() or _find_provider(name) is not None


def provider_ids() -> Sequence[str]:
    """genai-prices' provider ids, sorted."""
    return sorted(_provider_ids())
