"""Prices that change with the hour (DeepSeek's peak hours in genai-prices): `call_cost(at=)`
and `cost_of` price the hour of the call, as genai-prices' own `calc_price` does."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from cotplan.errors import InputError
from cotplan.pricing import call_cost, cost_of, price_table
from cotplan.pricing.rows import PriceRow

TABLE = price_table(builtin=False, genai=True)
DAY = date(2026, 11, 29)
CALL = {"prompt_tokens": 30_000, "cached_tokens": 24_000, "completion_tokens": 5_000}
HOURLY = [r for r in TABLE.rows if r.time_of_day]


def _genai_total(row: PriceRow, call: dict[str, Any], when: datetime) -> Decimal:
    from genai_prices import Usage as GenaiUsage
    from genai_prices.data import providers

    provider = next(p for p in providers if p.id == row.provider)
    model = next(m for m in provider.models if m.id == row.model)
    usage = GenaiUsage(
        input_tokens=call["prompt_tokens"],
        cache_read_tokens=call["cached_tokens"],
        output_tokens=call["completion_tokens"],
    )
    return model.calc_price(usage, provider, genai_request_timestamp=when).total_price


def test_deepseek_reasoner_costs_its_peak_price_at_noon_utc() -> None:
    noon = call_cost("deepseek-reasoner", at=datetime(2026, 11, 29, 12, tzinfo=UTC), **CALL)
    night = call_cost("deepseek-reasoner", at=datetime(2026, 11, 29, 20, tzinfo=UTC), **CALL)
    assert noon.rates.input == Decimal("0.55")
    assert night.rates.input == Decimal("0.135")
    assert noon.usd > 3 * night.usd
    assert "time-of-day price, 00:30-16:30 UTC" in noon.notes
    # Without a time: the price outside the peak hours, said in the notes.
    plain = call_cost("deepseek-reasoner", on=DAY, **CALL)
    assert plain.usd == night.usd
    assert "`at=` picks the hour's price" in plain.notes


def test_every_hourly_row_prices_each_hour_like_genai_prices() -> None:
    assert {r.model for r in HOURLY} >= {"deepseek-chat", "deepseek-reasoner", "deepseek-v4-pro"}
    wrong = []
    for row in HOURLY:
        day = row.effective_to or row.effective_from or DAY
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        # Every half hour, and a minute either side of each window's edges.
        moments = [start + timedelta(minutes=30 * i) for i in range(48)]
        for window in row.time_of_day:
            for edge in (window.start, window.end):
                at_edge = start.replace(hour=edge.hour, minute=edge.minute)
                moments += [at_edge - timedelta(minutes=1), at_edge + timedelta(minutes=1)]
        for moment in moments:
            ours = call_cost(row.model, provider=row.provider, at=moment, table=TABLE, **CALL)
            theirs = _genai_total(row, CALL, moment)
            if ours.usd != theirs:
                wrong.append(f"{row.model} {moment:%Y-%m-%d %H:%M}: {ours.usd} vs {theirs}")
    assert not wrong, "\n".join(wrong[:20])


def test_a_time_with_an_offset_is_its_utc_hour() -> None:
    beijing = timezone(timedelta(hours=8))
    # 20:00 in Beijing is 12:00 UTC: peak.
    at = datetime(2026, 11, 29, 20, tzinfo=beijing)
    utc = datetime(2026, 11, 29, 12, tzinfo=UTC)
    assert (
        call_cost("deepseek-reasoner", at=at, **CALL).usd
        == call_cost("deepseek-reasoner", at=utc, **CALL).usd
    )
    naive = call_cost("deepseek-reasoner", at=datetime(2026, 11, 29, 12), **CALL)
    assert naive.rates.input == Decimal("0.55")


def test_cost_of_prices_the_hour_the_call_was_made() -> None:
    body = {
        "model": "deepseek-reasoner",
        "created": int(datetime(2026, 11, 29, 12, tzinfo=UTC).timestamp()),
        "usage": {
            "prompt_tokens": 30_000,
            "completion_tokens": 5_000,
            "prompt_cache_hit_tokens": 24_000,
            "prompt_cache_miss_tokens": 6_000,
        },
    }
    peak = call_cost("deepseek-reasoner", at=datetime(2026, 11, 29, 12, tzinfo=UTC), **CALL)
    assert cost_of(body).usd == peak.usd
    assert cost_of(body, at=DAY).usd < peak.usd  # a date alone: the price outside the hours


def test_bad_moments_name_at() -> None:
    with pytest.raises(InputError, match=r"`at`: must be a datetime \(a date goes in `on`\)"):
        call_cost("deepseek-reasoner", at=DAY, **CALL)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"`at`: 2026-11-29T23:30:00\+00:00 falls on 2026-11-29"):
        call_cost(
            "deepseek-reasoner", on=date(2026, 11, 30), at=datetime(2026, 11, 29, 23, 30), **CALL
        )
