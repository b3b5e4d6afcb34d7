"""What one call costs, in exact decimal dollars, by each provider's own counting rule.

Providers disagree on what `completion_tokens` holds. OpenAI and Anthropic count reasoning
("thinking") tokens inside it, so they must not be added again; Gemini reports them apart
(``thoughtsTokenCount``), so they are added once, at the output rate. The price row's
`reasoning_billing` says which rule applies. Cached and cache-written tokens are part of the
prompt: they are priced at their own rates and not again at the full input rate.

The arithmetic is written once, in `price_parts`: `call_cost` applies it to exact Decimals and
`cotplan.pricing.projection` to float arrays of a million draws, from the same `Rates`.

`call_cost` takes counts as the provider reports them. `cost_of_completion` takes a cotplan
`Completion`, whose `Usage` always follows the OpenAI convention (reasoning inside completion,
cached inside prompt), whatever the provider. `cost_of_text` estimates a call before it is made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from numbers import Integral
from typing import Any

import pandas as pd

from cotplan.backends.base import Completion
from cotplan.errors import InputError
from cotplan.pricing.rows import SERVICE_TIERS
from cotplan.pricing.table import PriceRow, PriceTable, Rates, price_table

__all__ = ["CallCost", "call_cost", "cost_of_completion", "cost_of_text", "price_parts"]

#: Providers whose `completion_tokens` leave reasoning tokens out (reported apart).
REASONING_APART = frozenset({"x-ai", "xai"})
_MILLION = Decimal(1_000_000)
_ZERO = Decimal(0)


@dataclass(frozen=True)
class CallCost:
    """The cost of one call and where each dollar comes from.

    Every amount is an exact `Decimal` in USD. The line items are at list price;
    `batch_discount_usd` (zero or negative) takes the batch discount off their sum, and `usd` is
    the total. `output_tokens` are the visible answer tokens and `reasoning_tokens` the hidden
    ones, whatever the provider's convention was. `request_usd` is a per-request fee (zero for
    most models). `notes` says what the price leaves out or how it was chosen (the maker's price
    of a name several providers sell, charges not modelled), "; "-separated. `tier` is the
    service tier priced ("flex" or "priority": the line items are at its rates; "" for the
    standard tier, with or without batch).
    """

    model: str
    provider: str
    usd: Decimal
    input_usd: Decimal
    cached_input_usd: Decimal
    cache_write_usd: Decimal
    output_usd: Decimal
    reasoning_usd: Decimal
    batch_discount_usd: Decimal
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    reasoning_tokens: int
    rates: Rates
    batch: bool
    as_of: date
    source_url: str
    from_cache: bool = False
    source: str = ""
    request_usd: Decimal = _ZERO
    notes: str = ""
    tier: str = ""

    @property
    def prompt_tokens(self) -> int:
        """All prompt tokens: uncached, cached and cache-written."""
        return self.input_tokens + self.cached_tokens + self.cache_write_tokens

    @property
    def long_context(self) -> bool:
        """True when the prompt crossed the model's long-context threshold."""
        return self.rates.long_context

    def __float__(self) -> float:
        return float(self.usd)

    def to_frame(self) -> pd.DataFrame:
        """One row per line item (tokens, USD per million, USD) and a total row; exact Decimals."""
        rows: list[dict[str, Any]] = [
            {
                "item": "input",
                "tokens": self.input_tokens,
                "usd_per_mtok": self.rates.input,
                "usd": self.input_usd,
            },
            {
                "item": "cached input",
                "tokens": self.cached_tokens,
                "usd_per_mtok": self.rates.cached_input,
                "usd": self.cached_input_usd,
            },
            {
                "item": "cache write",
                "tokens": self.cache_write_tokens,
                "usd_per_mtok": self.rates.cache_write,
                "usd": self.cache_write_usd,
            },
            {
                "item": "output",
                "tokens": self.output_tokens,
                "usd_per_mtok": self.rates.output,
                "usd": self.output_usd,
            },
            {
                "item": "reasoning",
                "tokens": self.reasoning_tokens,
                "usd_per_mtok": self.rates.reasoning_rate,
                "usd": self.reasoning_usd,
            },
            {"item": "request fee", "tokens": None, "usd_per_mtok": None, "usd": self.request_usd},
            {
                "item": "batch discount",
                "tokens": None,
                "usd_per_mtok": None,
                "usd": self.batch_discount_usd,
            },
            {
                "item": "total",
                "tokens": self.prompt_tokens + self.output_tokens + self.reasoning_tokens,
                "usd_per_mtok": None,
                "usd": self.usd,
            },
        ]
        frame = pd.DataFrame(rows, columns=["item", "tokens", "usd_per_mtok", "usd"])
        frame["tokens"] = frame["tokens"].astype("Int64")
        frame.attrs.update(
            model=self.model,
            provider=self.provider,
            as_of=self.as_of.isoformat(),
            source_url=self.source_url,
            batch=self.batch,
            long_context=self.long_context,
            from_cache=self.from_cache,
            source=self.source,
            notes=self.notes,
        )
        return frame


def usage_count(value: Any, name: str) -> int:
    """A token count: a whole, non-negative, finite number (not a bool)."""
    if isinstance(value, bool) or value is None:
        raise InputError(f"must be a whole number of tokens, got {value!r}", field=name)
    if isinstance(value, Integral):
        number = int(value)
    elif isinstance(value, float | Decimal):
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"must be a finite number of tokens, got {value!r}", field=name)
        if isinstance(value, Decimal) and not value.is_finite():
            raise InputError(f"must be a finite number of tokens, got {value!r}", field=name)
        if value != int(value):
            raise InputError(f"must be a whole number of tokens, got {value!r}", field=name)
        number = int(value)
    else:
        raise InputError(f"must be a whole number of tokens, got {value!r}", field=name)
    if number < 0:
        raise InputError(f"must not be negative, got {value!r}", field=name)
    return number


def usage_moment(on: Any, at: Any) -> tuple[date | None, datetime | None]:
    """`on` and `at` checked: the call's UTC date and its moment (naive means UTC)."""
    if at is None:
        return on, None
    if not isinstance(at, datetime):
        raise InputError(
            f"must be a datetime (a date goes in `on`), got {type(at).__name__}", field="at"
        )
    moment = at if at.tzinfo else at.replace(tzinfo=UTC)
    try:
        day = moment.astimezone(UTC).date()
    except OverflowError:  # a time within hours of year 1 or 9999, its UTC day out of range
        raise InputError(f"{moment.isoformat()} has no date in UTC", field="at") from None
    if on is not None and on != day:
        raise InputError(f"{moment.isoformat()} falls on {day} UTC, not on `on` ({on})", field="at")
    return day, moment


def price_parts(
    rates: Rates,
    tokens: Sequence[Any],
    *,
    requests: Any = 1,
    as_float: bool = False,
) -> tuple[Any, Any, Any, Any, Any, Any]:
    """USD of each part of a call (input, cached input, cache write, output, reasoning, and the
    per-request fee of `requests` requests), from `tokens`: the uncached, cached, cache-written,
    visible output and reasoning token counts, in that order.

    The one price formula: exact for Decimal token counts, vectorised for float arrays
    (``as_float=True`` turns the rates into floats first).
    """
    r: tuple[Any, ...] = (
        rates.input,
        rates.cached_input,
        rates.cache_write,
        rates.output,
        rates.reasoning_rate,
    )
    million: Any = _MILLION
    fee: Any = rates.request
    if as_float:
        r = tuple(float(x) for x in r)
        million = 1e6
        fee = float(fee)
    a, b, c, d, e = (count * rate / million for count, rate in zip(tokens, r, strict=True))
    return a, b, c, d, e, requests * fee


def batch_factor(discount: Any, share: Any) -> Any:
    """What a call costs after the batch discount, as a fraction of list price."""
    return 1 - share * discount


def _tier_row(
    row: PriceRow, tier: str | None, on: date | None, *, strict: bool
) -> tuple[PriceRow | None, str]:
    """The row a call in `tier` pays (None: the standard row) and a note when the tier has no
    price on `on`: an error when `strict`, else the standard price with that note."""
    if tier is None:
        return None, ""
    if tier not in SERVICE_TIERS:
        raise InputError(f"must be one of {', '.join(SERVICE_TIERS)}, got {tier!r}", field="tier")
    priced = row.for_tier(tier, on)
    if priced is not None:
        return priced, ""
    day = on or date.today()
    message = f"{row.model} ({row.provider}) has no {tier} price on {day}"
    if strict and tier != "batch":
        raise InputError(f"{message}; leave the tier out for the standard price", field="tier")
    return None, f"{message}: the standard price is used"


def unit_price(
    row: PriceRow,
    *,
    prompt_tokens: int,
    completion_tokens: int,
    reasoning_tokens: int,
    cached_tokens: int,
    cache_write_tokens: int,
    batch: bool,
    reasoning_in_completion: bool,
    from_cache: bool = False,
    on: date | None = None,
    tier: str | None = None,
    strict: bool = False,
) -> CallCost:
    if cached_tokens + cache_write_tokens > prompt_tokens:
        raise InputError(
            f"cached ({cached_tokens}) plus cache-written ({cache_write_tokens}) tokens exceed "
            f"`prompt_tokens` ({prompt_tokens}); both are counted inside the prompt",
            field="cached_tokens",
        )
    if reasoning_in_completion:
        if reasoning_tokens > completion_tokens:
            raise InputError(
                f"{reasoning_tokens} exceeds `completion_tokens` ({completion_tokens}); for "
                f"{row.model} reasoning tokens are already counted inside completion_tokens",
                field="reasoning_tokens",
            )
        visible = completion_tokens - reasoning_tokens
    else:
        visible = completion_tokens
    if batch and tier not in (None, "batch"):
        raise InputError(f"a batch call has no {tier} tier; give one or the other", field="tier")
    # Flex and priority calls are billed at their tier's rates; a batch call's lines stay at
    # list price with the discount on a line of its own, as an invoice shows it.
    listed, tier_note = _tier_row(row, None if batch else tier, on, strict=strict)
    billed = listed or row
    batch_row, batch_note = _tier_row(row, "batch" if batch else None, on, strict=strict)
    uncached = prompt_tokens - cached_tokens - cache_write_tokens
    counts = (
        Decimal(uncached),
        Decimal(cached_tokens),
        Decimal(cache_write_tokens),
        Decimal(visible),
        Decimal(reasoning_tokens),
    )
    rates = billed.rates(prompt_tokens)
    items = price_parts(rates, counts)
    subtotal = sum(items, _ZERO)
    total = subtotal
    if batch_row is not None:
        total = sum(price_parts(batch_row.rates(prompt_tokens), counts), _ZERO)
    discount = total - subtotal
    if from_cache:
        # The call cache answered: no request was made, so nothing was billed.
        items = (_ZERO,) * 6
        discount = total = _ZERO
    notes = "; ".join(n for n in (billed.notes, tier_note, batch_note) if n)
    return CallCost(
        model=row.model,
        provider=row.provider,
        usd=total,
        input_usd=items[0],
        cached_input_usd=items[1],
        cache_write_usd=items[2],
        output_usd=items[3],
        reasoning_usd=items[4],
        request_usd=items[5],
        batch_discount_usd=discount,
        input_tokens=uncached,
        cached_tokens=cached_tokens,
        cache_write_tokens=cache_write_tokens,
        output_tokens=visible,
        reasoning_tokens=reasoning_tokens,
        rates=rates,
        batch=batch,
        as_of=row.as_of,
        source_url=row.source_url,
        from_cache=from_cache,
        source=row.source,
        notes=notes,
        tier="" if listed is None else str(tier),
    )


def call_cost(
    model: str,
    *,
    prompt_tokens: int,
    completion_tokens: int,
    reasoning_tokens: int = 0,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    batch: bool = False,
    on: date | None = None,
    table: PriceTable | None = None,
    provider: str | None = None,
    at: datetime | None = None,
    tier: str | None = None,
) -> CallCost:
    """The USD cost of one call, from token counts as the provider reports them.

    For a model billed ``in_completion`` (OpenAI, Anthropic) `reasoning_tokens` are already
    inside `completion_tokens` and are not added again; for ``separate`` (Gemini) they are
    added once at the output rate. `cached_tokens` and `cache_write_tokens` are parts of
    `prompt_tokens` priced at the cached and cache-write rates instead of the input rate. A
    prompt above the model's long-context threshold moves the whole call to the long rates.
    `batch` applies the model's batch prices: genai-prices' per token type, only on the dates
    they hold (a day without one costs the list price, said in `notes`); cotplan's own rows
    take `batch_discount` off every rate. `tier` ("flex" or "priority") prices the call at that
    service tier's rates; on a day the model has none (before the tier existed) the standard
    price is used and `notes` says so, as `cost_of` does for a response served in that tier.
    `on` picks the price in effect on that date (default today); `table` defaults to
    `price_table()` (both sources plus `COTPLAN_PRICES`).
    `provider` names the seller (or write ``openai/gpt-4o``); a name several providers sell
    costs its maker's price, said in `CallCost.notes`. `at` is the moment of the call (naive
    means UTC), for prices that change with the hour (DeepSeek's peak hours); it also sets the
    date, and must agree with `on` when both are given. Without it such a model costs its price
    outside those hours (`notes` names them). `CallCost.source` says where
    the price came from. Counts follow OpenAI's convention for every provider billed "in
    completion" (reasoning inside `completion_tokens`); xAI's raw usage, whose completion
    count leaves reasoning out, is read by `cost_of` (and by `cotplan cost call`).
    """
    on, at = usage_moment(on, at)
    prompt = usage_count(prompt_tokens, "prompt_tokens")
    completion = usage_count(completion_tokens, "completion_tokens")
    reasoning = usage_count(reasoning_tokens, "reasoning_tokens")
    cached = usage_count(cached_tokens, "cached_tokens")
    written = usage_count(cache_write_tokens, "cache_write_tokens")
    chosen = table or price_table()
    row = chosen.lookup(model, on=on, provider=provider, at=at)
    return unit_price(
        row,
        prompt_tokens=prompt,
        completion_tokens=completion,
        reasoning_tokens=reasoning,
        cached_tokens=cached,
        cache_write_tokens=written,
        batch=bool(batch),
        reasoning_in_completion=row.reasoning_billing != "separate",
        on=on,
        tier=tier,
    )


def cost_of_completion(
    completion: Completion,
    *,
    batch: bool = False,
    on: date | None = None,
    table: PriceTable | None = None,
    provider: str | None = None,
) -> CallCost:
    """The cost of a call already made, from `completion.usage` and `completion.model`.

    cotplan's `Usage` counts reasoning inside completion tokens for every provider, so nothing
    is added twice. A completion the call cache answered (`from_cache`) cost nothing. This only
    records a cost: a stale price warns (`StalePriceWarning`, shown even where warnings are
    errors) and never fails. A call whose usage cannot be trusted (`Completion.usage_trusted`
    False: its counts read 0 but are no measurement) has no cost: an `InputError` on
    ``completion.usage`` with the completion's notes, which the records that keep costs turn into
    "no cost" with that note, never a $0 that a sum would count.
    """
    if not isinstance(completion, Completion):
        raise InputError(
            f"must be a cotplan Completion, got {type(completion).__name__}", field="completion"
        )
    if not completion.usage_trusted and not completion.from_cache:
        why = "; ".join(completion.notes) or "the server's counts cannot be right"
        raise InputError(
            f"the usage of this {completion.model} call cannot be trusted ({why}), so its cost "
            "is unknown, not $0",
            field="completion.usage",
        )
    usage = completion.usage
    row = (table or price_table()).lookup(completion.model, on=on, warn=False, provider=provider)
    row.warn_if_stale(on, soft=True, stacklevel=2)
    return unit_price(
        row,
        prompt_tokens=usage_count(usage.prompt_tokens, "usage.prompt_tokens"),
        completion_tokens=usage_count(usage.completion_tokens, "usage.completion_tokens"),
        reasoning_tokens=usage_count(usage.reasoning_tokens, "usage.reasoning_tokens"),
        cached_tokens=usage_count(usage.cached_tokens, "usage.cached_tokens"),
        cache_write_tokens=0,
        batch=bool(batch),
        reasoning_in_completion=True,
        from_cache=completion.from_cache,
        on=on,
        strict=False,
    )


def cost_of_text(
    model: str,
    prompt: str | Sequence[Mapping[str, Any]],
    expected_output_tokens: int,
    *,
    expected_reasoning_tokens: int = 0,
    cached_tokens: int = 0,
    batch: bool = False,
    tokenizer: Any = None,
    on: date | None = None,
    table: PriceTable | None = None,
    provider: str | None = None,
) -> CallCost:
    """Estimate a call before making it: the prompt's tokens are counted, the rest expected.

    The prompt (text or chat messages) is counted with `cotplan.backends.tokens.count_tokens` using
    `tokenizer` (a model name or a `Backend`; default `model`). For a provider whose tokenizer
    cotplan cannot run offline, pass the closest one and treat the count as an estimate.
    `expected_output_tokens` are visible answer tokens; `expected_reasoning_tokens` hidden
    reasoning tokens on top of them.
    """
    from cotplan.backends.tokens import count_tokens

    output = usage_count(expected_output_tokens, "expected_output_tokens")
    reasoning = usage_count(expected_reasoning_tokens, "expected_reasoning_tokens")
    cached = usage_count(cached_tokens, "cached_tokens")
    row = (table or price_table()).lookup(model, on=on, provider=provider)
    prompt_tokens = count_tokens(prompt, tokenizer if tokenizer is not None else model)
    return unit_price(
        row,
        prompt_tokens=prompt_tokens,
        completion_tokens=output + reasoning,
        reasoning_tokens=reasoning,
        cached_tokens=cached,
        cache_write_tokens=0,
        batch=bool(batch),
        reasoning_in_completion=True,
        on=on,
    )
