"""The price table looked up as `cotplan cost prices` and `cotplan cost call` do, one call
each: `list_prices` (the rows a filter keeps, with the table they came from) and `price_call`
(one call's exact cost with the notes that explain it). Rendering is `cotplan.render.costs`'.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.inputs import check_out_file, day_of, moment_of, seller_of, token_count

__all__ = ["SOURCES", "PriceListing", "PricedCall", "list_prices", "price_call"]

#: Which rows a listing keeps: cotplan's own, genai-prices' bundled ones (~2,000), or all.
SOURCES = ("cotplan", "genai-prices", "all")


@dataclass(frozen=True)
class PriceListing:
    """The rows a filter kept (`rows`), the `table` they came from, the day they are judged
    stale against (`when`), which `source` was listed, and the CSV written (or None)."""

    rows: tuple[Any, ...]
    table: Any
    when: date
    source: str
    csv: Path | None = None

    def to_frame(self) -> pd.DataFrame:
        """The kept rows as the table's frame has them."""
        kept = {id(r) for r in self.rows}
        frame = self.table.to_frame(self.when)
        return pd.DataFrame(frame[[id(r) in kept for r in self.table.rows]]).reset_index(drop=True)


@dataclass(frozen=True)
class PricedCall:
    """One call's `CallCost` and the notes that explain it (price source, counting rules,
    the hour priced at, long-context rates)."""

    cost: Any
    notes: tuple[str, ...]

    def to_frame(self) -> pd.DataFrame:
        """The cost, line by line (`CallCost.to_frame`)."""
        return pd.DataFrame(self.cost.to_frame())


def list_prices(
    *,
    provider: str | None = None,
    model: str | None = None,
    source: str | None = None,
    prices: str | os.PathLike[str] | None = None,
    csv: Path | None = None,
    on: date | str | None = None,
) -> PriceListing:
    """The price rows of `provider` and models whose name contains `model`, from `source`
    (default: cotplan's own rows unless a filter is given); every matching row of any source
    is written to `csv` when given."""
    from cotplan.io import write_csv
    from cotplan.pricing.table import price_table

    when = day_of(on, "on") or date.today()
    if source is not None and source not in SOURCES:
        raise InputError(f"must be one of {', '.join(SOURCES)}, got {source!r}", field="source")
    if model is not None and not model.strip():
        raise InputError("must be some text of a model name", field="model")
    check_out_file(csv, "csv")
    table = price_table(prices)
    wanted = seller_of(provider, table)
    chosen = source or ("all" if provider or model else "cotplan")

    def keep(row: Any, which: str) -> bool:
        if wanted is not None and row.provider.lower() != wanted:
            return False
        if model is not None and model.strip().lower() not in row.model.lower():
            return False
        return which == "all" or (which == "genai-prices") == row.from_genai

    rows = tuple(r for r in table.rows if keep(r, chosen))
    if not rows:
        raise InputError(
            f"no price rows match (provider {provider!r}, model containing {model!r}, source "
            f"{chosen})",
            field="model" if model else "provider",
        )
    if csv:
        frame = table.to_frame(when)
        write_csv(frame[[keep(r, source or "all") for r in table.rows]], csv, private=False)
    return PriceListing(rows, table, when, chosen, csv)


def _xai_raw_counts(
    table: Any, model: str, when: date | None, seller: str | None, counts: dict[str, int]
) -> str:
    """xAI reports completion tokens without its reasoning tokens: add them, as `cost_of`
    reads xAI's usage, so `completion_tokens` is the provider's own count for every seller.
    Returns the note that says so (empty for other providers)."""
    from cotplan.pricing.cost import REASONING_APART

    row = table.lookup(model, on=when, provider=seller, warn=False)
    reasoning = counts["reasoning_tokens"]
    if row.provider.lower() not in REASONING_APART or not reasoning:
        return ""
    counts["completion_tokens"] += reasoning
    return (
        f"{row.provider} counts completion tokens without reasoning: the {reasoning:,} "
        "reasoning tokens are added to them"
    )


def _hour_used(row: Any, moment: datetime | None) -> str:
    """Which hour's price a model priced by the hour was charged at, in words."""
    from datetime import UTC

    hours = ", ".join(w.label for w in row.time_of_day)
    if moment is None:
        return (
            f"hour: none given, so priced outside {hours} (that window has its own price; "
            "give --at HH:MM)"
        )
    inside = any(w.holds(moment) for w in row.time_of_day)
    where = "inside" if inside else "outside"
    return f"hour: priced at {moment.astimezone(UTC):%H:%M} UTC, {where} {hours}"


def price_call(
    model: str,
    *,
    counts: dict[str, str | int],
    batch: bool = False,
    on: date | str | None = None,
    at: str | None = None,
    provider: str | None = None,
    prices: str | os.PathLike[str] | None = None,
    tier: str | None = None,
) -> PricedCall:
    """The exact cost of one call by the provider's own counting rule. `counts` holds
    prompt_tokens, completion_tokens (as the provider reports them), reasoning_tokens,
    cached_tokens and cache_write_tokens, as numbers or text (1e3); `at` is the call's time
    of day (HH:MM UTC or ISO 8601) for prices that change with the hour."""
    from cotplan.pricing.cost import call_cost
    from cotplan.pricing.table import price_table

    when = day_of(on, "on")
    tokens = {name: token_count(str(value), name) for name, value in counts.items()}
    moment = moment_of(at, when)
    table = price_table(prices)
    seller = seller_of(provider, table)
    raw = _xai_raw_counts(table, model, when, seller, tokens)
    cost = call_cost(model, **tokens, batch=batch, on=when, at=moment, table=table,
                     provider=seller, tier=tier)  # fmt: skip
    notes = [f"price: {cost.source}"]
    shown_notes = ("no batch price", " has no ")
    notes += [n for n in cost.notes.split("; ") if any(k in n for k in shown_notes)]
    notes += [raw] if raw else []
    day = cost.as_of if when is None else when
    if table.lookup(model, on=day, provider=seller, warn=False).time_of_day:
        notes.append(_hour_used(table.lookup(model, on=day, provider=seller, warn=False), moment))
    # A flex or priority price carried onto cotplan's own row names where its rates came from.
    carried = f"{cost.tier} rates from " if cost.tier else None
    notes += [n for n in cost.notes.split("; ") if carried and n.startswith(carried)]
    if cost.long_context:
        notes.append("the prompt is above the long-context threshold: long rates apply")
    return PricedCall(cost, tuple(notes))
