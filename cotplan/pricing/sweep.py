"""Every price genai-prices holds, priced by cotplan and by genai-prices itself, side by side.

`sweep()` walks every model of genai-prices' bundled data and every dated price of it, builds a
seeded sample of calls per price (plain; cached; cache-write; long-context; reasoning; batch,
flex and priority where the model lists them; inside and outside each time-of-day window) and
prices each call twice: with `call_cost` on cotplan's price table, and with
`genai_prices.calc_price` on the same usage. Both are exact decimal arithmetic, so they must
agree exactly; a disagreement is kept with its reason. `EXPLAINED` lists the reasons that are
deliberate differences of meaning, each with why; any other reason is a bug in one of the two.

Prices cotplan holds no row for are counted apart (`Sweep.skipped`), with the reason.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd

from cotplan.errors import CotplanError
from cotplan.pricing.cost import call_cost
from cotplan.pricing.genai import genai_rows
from cotplan.pricing.rows import PriceRow
from cotplan.pricing.table import PriceTable, price_table

__all__ = ["EXPLAINED", "Sweep", "SweepCase", "sweep"]

#: The day open-ended prices are swept on: inside genai-prices 0.2.3's data (of 2026-11).
SWEEP_DAY = date(2026, 11, 29)

#: A call in a service tier on a day the model has no price for that tier.
TIER_NOT_HELD = "a flex or priority call on a day without that tier's price"
#: Disagreements that are deliberate differences of meaning, by reason, with why. cotplan's own
#: rows take genai-prices' flex and priority prices where both lists agree
#: (`cotplan.pricing.carried`), so a tier refused on such a row is a gap, not a meaning.
EXPLAINED: dict[str, str] = {
    TIER_NOT_HELD: (
        "genai-prices prices a call asked in a service tier the model has no price for that day "
        "at the standard rates; `call_cost(tier=...)` refuses it with an error naming the day, "
        "because a tier that was asked for and does not exist is a wrong question, not a "
        "standard call. `cost_of`, which prices calls already made, uses the standard price "
        "with a note, as genai-prices does."
    ),
}


@dataclass(frozen=True)
class SweepCase:
    """One call priced by both: `ours` (None when cotplan refused it, `error` says why) and
    `theirs`, genai-prices' `calc_price` total. `reason` is empty when they agree."""

    provider: str
    model: str
    shape: str
    when: datetime
    tier: str
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    ours: Decimal | None
    theirs: Decimal
    reason: str = ""
    error: str = ""

    @property
    def agrees(self) -> bool:
        """True when both totals are the same exact decimal."""
        return self.ours is not None and self.ours == self.theirs


@dataclass(frozen=True)
class Sweep:
    """The sweep's cases, the prices cotplan holds no row for, and how it was drawn."""

    cases: tuple[SweepCase, ...]
    skipped: tuple[tuple[str, str, str], ...]  # (provider, model, reason)
    seed: int
    version: str

    @property
    def disagreements(self) -> tuple[SweepCase, ...]:
        """The cases whose totals differ (or that cotplan refused)."""
        return tuple(c for c in self.cases if not c.agrees)

    @property
    def unexplained(self) -> tuple[SweepCase, ...]:
        """Disagreements whose reason is not in `EXPLAINED`."""
        return tuple(c for c in self.disagreements if c.reason not in EXPLAINED)

    def to_frame(self) -> pd.DataFrame:
        """One row per case; `ours` and `theirs` are exact Decimals."""
        columns = list(SweepCase.__dataclass_fields__)
        records = [[getattr(c, n) for n in columns] for c in self.cases]
        frame = pd.DataFrame(records, columns=columns)
        frame["agrees"] = [c.agrees for c in self.cases]
        return frame


def _their_models() -> Iterator[tuple[Any, Any]]:
    from genai_prices.data import providers

    for provider in providers:
        for model in provider.models:
            yield provider, model


def _day_in(row: PriceRow, rng: random.Random) -> date:
    """A seeded day on which `row` holds (its span, or `SWEEP_DAY` for an open end)."""
    first = row.effective_from or row.effective_to or SWEEP_DAY
    last = row.effective_to or max(SWEEP_DAY, first)
    if row.effective_from is None and row.effective_to is not None:
        first = last - timedelta(days=30)
    return first + timedelta(days=rng.randint(0, (last - first).days))


def _off_hours(row: PriceRow, day: date) -> datetime:
    """A moment on `day` outside every time-of-day window of `row` (noon without windows)."""
    for half_hour in range(48):
        moment = datetime.combine(day, time(12), UTC) + timedelta(minutes=30 * half_hour)
        moment = datetime.combine(day, moment.time(), UTC)
        if not any(w.holds(moment) for w in row.time_of_day):
            return moment
    return datetime.combine(day, time(12), UTC)  # pragma: no cover - windows cover the day


@dataclass(frozen=True)
class _Call:
    shape: str
    when: datetime
    tier: str
    prompt: int
    cached: int
    written: int
    completion: int
    reasoning: int


def _calls(row: PriceRow, rng: random.Random) -> Iterator[_Call]:
    """The seeded sample of calls for one price row."""
    day = _day_in(row, rng)
    when = _off_hours(row, day)
    threshold = row.long_context_threshold
    short = min(rng.randint(1_000, 60_000), threshold or 10**9)
    out = rng.randint(50, 8_000)
    yield _Call("plain", when, "", short, 0, 0, out, 0)
    read = rng.randint(1, short)
    yield _Call("cached", when, "", short, read, 0, out, 0)
    write = rng.randint(1, short - read) if short > read else 0
    yield _Call("cache-write", when, "", short, read, write, out, 0)
    thinking = rng.randint(1, 4_000)
    visible = out if row.reasoning_billing == "separate" else out + thinking
    yield _Call("reasoning", when, "", short, 0, 0, visible, thinking)
    if threshold is not None:
        yield _Call("at the threshold", when, "", threshold, 0, 0, out, 0)
        long = threshold + rng.randint(1, 200_000)
        long_read = rng.randint(0, long // 2)
        long_write = rng.randint(0, long // 4)
        yield _Call("long-context", when, "", long, long_read, long_write, out, 0)
        yield _Call("long-context batch", when, "batch", long, long_read, 0, out, 0)
    # Batch on every row: a day without a batch price must cost the list price in both.
    yield _Call("batch", when, "batch", short, read, write, out, 0)
    for tier in sorted({t.tier for t in row.tiers} - {"batch"}):
        yield _Call(tier, when, tier, short, read, 0, out, 0)
    for n, window in enumerate(row.time_of_day):
        start = datetime.combine(day, window.start, UTC)
        inside = start + timedelta(minutes=rng.randint(0, 29))
        yield _Call(f"time of day {n + 1}", inside, "", short, read, 0, out, 0)


def _theirs(provider: Any, model: Any, call: _Call, separate: bool) -> Decimal:
    from genai_prices import Usage

    usage: dict[str, int] = {
        "input_tokens": call.prompt,
        "cache_read_tokens": call.cached,
        "cache_write_tokens": call.written,
        "output_tokens": call.completion + (call.reasoning if separate else 0),
    }
    if call.reasoning:
        usage["output_reasoning_tokens"] = call.reasoning
    context = {"processing": "batch"} if call.tier == "batch" else {}
    if call.tier in ("flex", "priority"):
        context = {"service_tier": call.tier}
    # What `genai_prices.calc_price` runs once it has found the model: its own matching does
    # not always accept a model's own id (``ft:gpt-4o``), and names are not what is swept here.
    found = model.calc_price(
        Usage(**usage), provider, genai_request_timestamp=call.when, price_context=context or None
    )
    total: Decimal = found.total_price
    return total


def _ours(row: PriceRow, call: _Call, table: PriceTable) -> tuple[Decimal | None, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # stale and early-date notes: not a price
            cost = call_cost(
                row.model,
                provider=row.provider,
                table=table,
                at=call.when,
                prompt_tokens=call.prompt,
                cached_tokens=call.cached,
                cache_write_tokens=call.written,
                completion_tokens=call.completion,
                reasoning_tokens=call.reasoning,
                batch=call.tier == "batch",
                tier=call.tier if call.tier in ("flex", "priority") else None,
            )
    except CotplanError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return cost.usd, ""


def _reason(row: PriceRow, call: _Call, table: PriceTable, error: str) -> str:
    """Why cotplan and genai-prices disagree on `call`, from what differs; a reason outside
    `EXPLAINED` names the call's shape so the transcript groups it."""
    tier_refused = f"has no {call.tier} price" in error and call.tier in ("flex", "priority")
    if tier_refused:
        used = table.lookup(row.model, provider=row.provider, at=call.when, warn=False)
        # An own row's tiers are those carried onto it (`cotplan.pricing.carried`).
        tiers = row.tiers if used.from_genai else used.tiers
        if not used.from_genai and not any(t.tier == call.tier for t in tiers):
            return f"cotplan's own row holds no {call.tier} price"
        if not any(t.tier == call.tier and t.holds(call.when.date()) for t in tiers):
            return TIER_NOT_HELD
    if error:
        return f"cotplan refused a {call.shape} call: {error.split(':', 1)[0]}"
    return f"cotplan and genai-prices differ on a {call.shape} call"


def _rows_by_model() -> dict[tuple[str, str], list[PriceRow]]:
    """genai-prices' converted rows, by (provider, model)."""
    out: dict[tuple[str, str], list[PriceRow]] = {}
    for row in genai_rows():
        out.setdefault((row.provider, row.model), []).append(row)
    return out


def sweep(
    *, seed: int = 0, table: PriceTable | None = None, only: Iterable[str] | None = None
) -> Sweep:
    """Price a seeded sample of calls for every genai-prices price with both, and compare.

    `only` limits the sweep to these provider ids (for a quick look); `table` defaults to
    `price_table()` (cotplan's rows win where both price a model, as in every cost).
    """
    from genai_prices import __version__

    table = table or price_table()
    wanted = set(only) if only is not None else None
    rng = random.Random(seed)
    rows = _rows_by_model()
    cases: list[SweepCase] = []
    skipped: list[tuple[str, str, str]] = []
    for provider, model in _their_models():
        if wanted is not None and provider.id not in wanted:
            continue
        converted = rows.get((provider.id, model.id))
        if not converted:
            skipped.append((provider.id, model.id, _why_no_row(model)))
            continue
        for row in converted:
            for call in _calls(row, rng):
                theirs = _theirs(provider, model, call, row.reasoning_billing == "separate")
                ours, error = _ours(row, call, table)
                case = SweepCase(
                    provider.id,
                    model.id,
                    call.shape,
                    call.when,
                    call.tier,
                    call.prompt,
                    call.cached,
                    call.written,
                    call.completion,
                    call.reasoning,
                    ours,
                    theirs,
                    error=error,
                )
                if not case.agrees:
                    case = _with_reason(case, _reason(row, call, table, error))
                cases.append(case)
    return Sweep(tuple(cases), tuple(skipped), seed, __version__)


def _with_reason(case: SweepCase, reason: str) -> SweepCase:
    from dataclasses import replace

    return replace(case, reason=reason)


def _why_no_row(model: Any) -> str:
    """Why genai-prices' `model` has no cotplan row."""
    from genai_prices import types

    prices = model.prices
    listed = [prices] if isinstance(prices, types.ModelPrice) else [c.prices for c in prices]
    for price in listed:
        if None in (getattr(price, "input_mtok", None), getattr(price, "output_mtok", None)):
            return "no per-token input and output price (priced by image, audio or request)"
        for key in ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok"):
            value = getattr(price, key, None)
            if isinstance(value, types.TieredPrices) and len(value.tiers) > 1:
                return "two long-context tiers (a cotplan row holds one threshold)"
    return "not converted (unknown)"
