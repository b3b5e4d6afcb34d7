"""Flex and priority prices for cotplan's own rows, carried from genai-prices' same price list.

A shipped row of ``prices.csv`` is read by hand from the provider's page and has a batch
discount but no flex or priority columns. OpenAI's pricing page
(https://developers.openai.com/api/docs/pricing, the source genai-prices 0.2.3 names for these
models) lists a model's flex and priority rates beside its standard ones, and genai-prices
carries all three.

The rule (`carry_tiers`): a shipped row takes genai-prices' flex and priority prices of the same
provider and model for the days on which genai-prices' standard price of it equals the row's in
every rate (input, cached, cache write, output, reasoning, request fee, both sides of the same
long-context threshold, the same reasoning billing, and no time-of-day prices). On those days
both sources read one price list, so the tier rates that list gives belong to the row. On any
other day, and for a user's price file (which may hold a negotiated price), a flex or priority
call stays refused. The row's batch price stays its own `batch_discount`: only tiers the row
lacks are carried. Each carried price says where it came from in its notes.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from datetime import date

from cotplan.pricing.rows import PriceRow, TierPrice

__all__ = ["CARRIED_TIERS", "carry_tiers", "same_standard_price"]

#: The service tiers a shipped row may take from genai-prices (batch is the row's own).
CARRIED_TIERS = ("flex", "priority")


def same_standard_price(ours: PriceRow, theirs: PriceRow) -> bool:
    """True when the two rows charge the same for every call in the standard tier."""
    return (
        ours.reasoning_billing == theirs.reasoning_billing
        and ours.long_context_threshold == theirs.long_context_threshold
        and ours.short_rates() == theirs.short_rates()
        and ours.long_rates() == theirs.long_rates()
        and not ours.time_of_day
        and not theirs.time_of_day
    )


def _later(*days: date | None) -> date | None:
    known = [d for d in days if d is not None]
    return max(known) if known else None


def _earlier(*days: date | None) -> date | None:
    known = [d for d in days if d is not None]
    return min(known) if known else None


def carry_tiers(row: PriceRow) -> PriceRow:
    """`row` with genai-prices' flex and priority prices on the days the rule above allows
    (`row` itself when there are none, or when it is not a shipped row)."""
    if row.origin != "cotplan" or row.is_local or row.tiers:
        return row
    return _carried(row, row.origin)


# Keyed by the origin too: rows equal but for it (a user's copy of a shipped row) compare equal.
@functools.cache
def _carried(row: PriceRow, origin: str) -> PriceRow:
    from cotplan.pricing.genai import genai_lookup

    match = genai_lookup(row.model.lower(), row.provider.lower())
    if match is None or match.provider != row.provider or match.model != row.model:
        return row  # another model's or another seller's price is not the same price list
    carried: list[TierPrice] = []
    for theirs in match.rows:
        if not same_standard_price(row, theirs):
            continue
        for tier in theirs.tiers:
            if tier.tier not in CARRIED_TIERS:
                continue
            start = _later(tier.start, theirs.effective_from, row.effective_from)
            end = _earlier(tier.end, theirs.effective_to)
            if start is not None and end is not None and end < start:
                continue
            note = (
                f"{tier.tier} rates from {theirs.source}, whose standard rates equal this "
                f"row's ({row.source})"
            )
            carried.append(TierPrice(tier.tier, start, end, replace(tier.row, notes=note)))
    return replace(row, tiers=tuple(carried)) if carried else row
