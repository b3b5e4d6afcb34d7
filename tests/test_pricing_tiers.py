"""Batch, flex and priority prices per token type and date; hour profiles; actuals; early dates.

Rates are genai-prices 0.2.3's bundled data (data of 2026-11), read offline.
"""

from __future__ import annotations

import json
import sqlite3
import warnings
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage as GenaiUsage
from genai_prices import calc_price

from cotplan.errors import InputError
from cotplan.pricing import ParametricTokens, Workload, call_cost, price_table, project_costs
from cotplan.pricing.actuals import actuals_from_calls, actuals_from_jsonl, forecast_vs_actuals
from cotplan.pricing.hours import HourProfile, blend_hours, hour_profile
from cotplan.pricing.rows import EarlyDateWarning

TABLE = price_table()
ON = date(2026, 11, 29)
NOON = datetime(2026, 11, 29, 12, tzinfo=UTC)


def _genai(
    model: str, provider: str, when: datetime, context: dict[str, str], **usage: int
) -> Decimal:
    found = calc_price(GenaiUsage(**usage), model, provider_id=provider,
                       genai_request_timestamp=when, price_context=context)  # fmt: skip
    return found.total_price


def test_batch_prices_reach_only_the_token_types_they_list() -> None:
    # Groq's gpt-oss-120b: batch halves input and output; cached tokens keep their rate.
    row = TABLE.lookup("groq/openai/gpt-oss-120b", on=ON)
    batched = row.for_tier("batch", ON)
    assert batched is not None
    assert batched.input_per_mtok == row.input_per_mtok / 2
    assert batched.output_per_mtok == row.output_per_mtok / 2
    assert batched.cached_input_per_mtok == row.cached_input_per_mtok
    call: dict[str, Any] = {
        "prompt_tokens": 100_000,
        "cached_tokens": 60_000,
        "completion_tokens": 10_000,
    }
    ours = call_cost("groq/openai/gpt-oss-120b", batch=True, on=ON, **call)
    theirs = _genai("openai/gpt-oss-120b", "groq", NOON, {"processing": "batch"},
                    input_tokens=100_000, cache_read_tokens=60_000,
                    output_tokens=10_000)  # fmt: skip
    assert ours.usd == theirs
    assert ours.batch_discount_usd < 0


def test_a_batch_price_holds_only_from_its_own_date() -> None:
    # o3's batch price in genai-prices starts on 2026-10-14; before then no discount is made
    # up from a later price (the old "batch 90%" came from mixing dates).
    early = call_cost("openai/o3", prompt_tokens=1_000_000, completion_tokens=0, batch=True,
                      on=date(2025, 5, 1))  # fmt: skip
    assert early.batch_discount_usd == 0
    assert "no batch price on 2025-05-01" in early.notes
    late = call_cost("openai/o3", prompt_tokens=1_000_000, completion_tokens=0, batch=True, on=ON)
    full = call_cost("openai/o3", prompt_tokens=1_000_000, completion_tokens=0, on=ON)
    assert late.usd == full.usd / 2


@pytest.mark.parametrize("tier", ["flex", "priority"])
def test_flex_and_priority_calls_pay_their_tiers_rates(tier: str) -> None:
    call: dict[str, Any] = {
        "prompt_tokens": 20_000,
        "cached_tokens": 5_000,
        "completion_tokens": 3_000,
    }
    ours = call_cost("openai/o3", tier=tier, on=ON, **call)
    theirs = _genai("o3", "openai", NOON, {"service_tier": tier}, input_tokens=20_000,
                    cache_read_tokens=5_000, output_tokens=3_000)  # fmt: skip
    assert (ours.usd, ours.tier) == (theirs, tier)
    # Before flex existed: the standard price, with a note (as `cost_of` prices a response).
    early = call_cost("openai/o3", tier="flex", on=date(2025, 5, 1), **call)
    assert early.tier == ""
    assert early.usd == call_cost("openai/o3", on=date(2025, 5, 1), **call).usd
    assert "has no flex price on 2025-05-01: the standard price is used" in early.notes
    with pytest.raises(InputError, match=r"`tier`: must be one of batch, flex, priority"):
        call_cost("openai/o3", tier="turbo", on=ON, **call)


def test_cost_of_reads_the_tier_a_response_was_served_in() -> None:
    from cotplan.pricing import cost_of

    body = {"object": "chat.completion", "model": "o3", "service_tier": "flex",
            "usage": {"prompt_tokens": 20_000, "completion_tokens": 3_000}}  # fmt: skip
    assert cost_of(body, at=NOON).usd == call_cost("o3", prompt_tokens=20_000,
                                                   completion_tokens=3_000, tier="flex",
                                                   at=NOON).usd  # fmt: skip


def test_hour_profiles_blend_time_of_day_prices() -> None:
    row = TABLE.lookup("deepseek-reasoner", on=ON)
    assert row.time_of_day, "DeepSeek lists peak hours"
    uniform = blend_hours(row, ON, HourProfile.uniform())
    assert abs(sum((w for w, _ in uniform), Decimal(0)) - 1) < Decimal("1e-15")
    # Peak 00:30-16:30 UTC: 32 of the 48 half hours.
    peak = next(w for w, r in uniform if r is not row)
    assert abs(peak - Decimal(32) / 48) < Decimal("1e-15")
    night = blend_hours(row, ON, HourProfile.window(17, 24, 1.0))
    assert [r for _, r in night] == [row]  # all calls outside the peak hours
    tokens = ParametricTokens(30_000, 0, 5_000, 0)
    work = Workload(queries_per_month=1_000, start=date(2027, 1, 1), horizon_months=1,
                    hour_profile=HourProfile.window(17, 24, 1.0))  # fmt: skip
    off = project_costs("deepseek-reasoner", work, tokens, draws=100, today=ON, table=TABLE)
    at_night = call_cost("deepseek-reasoner", prompt_tokens=30_000, completion_tokens=5_000,
                         at=datetime(2027, 1, 5, 20, tzinfo=UTC))  # fmt: skip
    assert off.per_query_usd == pytest.approx(float(at_night.usd), rel=1e-12)
    noon = Workload(queries_per_month=1_000, start=date(2027, 1, 1), horizon_months=1,
                    hour_profile=HourProfile.window(12, 13, 1.0))  # fmt: skip
    busy = project_costs("deepseek-reasoner", noon, tokens, draws=100, today=ON, table=TABLE)
    assert busy.per_query_usd > 2 * off.per_query_usd


def test_hour_profile_input_is_checked(tmp_path: Path) -> None:
    assert hour_profile(None).label == "uniform over 24 hours UTC"
    assert hour_profile("9-17:0.8").shares[9] == pytest.approx(0.1)
    good = tmp_path / "hours.csv"
    good.write_text("hour,share\n9,3\n10,1\n")
    assert hour_profile(str(good)).shares[9] == pytest.approx(0.75)
    bad = tmp_path / "bad.csv"
    bad.write_text("hour,share\n9,3\n25,1\n")
    with pytest.raises(InputError, match=r"bad.csv, line 3, `hour`: must be a whole hour"):
        hour_profile(str(bad))
    with pytest.raises(InputError, match=r"`hour_profile`: 'noon' is not"):
        hour_profile("noon")


def test_actuals_from_a_jsonl_log_and_the_production_log_schema(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    bodies = [
        {"object": "chat.completion", "created": 1798761600, "model": "gpt-4o-mini",
         "usage": {"prompt_tokens": 1_000, "completion_tokens": 200}},
        {"time": "2027-02-10T12:00:00Z", "type": "message", "model": "claude-haiku-4-5",
         "usage": {"input_tokens": 2_000, "output_tokens": 100}},
    ]  # fmt: skip
    log.write_text("\n".join(json.dumps(b) for b in bodies) + "\n")
    spent = actuals_from_jsonl(log, table=TABLE, today=date(2027, 3, 1))
    assert list(spent.frame["label"]) == ["2027-01", "2027-02"]
    assert list(spent.frame["calls"]) == [1, 1]
    assert spent.usd > 0
    log.write_text(
        '{"model": "gpt-4o-mini", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}\n'
    )
    with pytest.raises(InputError, match=r"calls.jsonl, line 1, `time`: no time"):
        actuals_from_jsonl(log, table=TABLE, today=ON)
    unpriced = actuals_from_calls([(datetime(2027, 1, 3), 1.5), (datetime(2027, 1, 4), None)])
    assert unpriced.frame.iloc[0][["calls", "usd", "unpriced_calls"]].tolist() == [2, 1.5, 1]
    work = Workload(queries_per_month=100, start=date(2027, 1, 1), horizon_months=2)
    projection = project_costs("gpt-4o-mini", work, ParametricTokens(1_000, 0, 200, 0), draws=100,
                               today=ON, table=TABLE)  # fmt: skip
    both = forecast_vs_actuals(projection, unpriced)
    assert list(both["label"]) == ["2027-01", "2027-02"]
    assert both.iloc[0]["where"] in ("below P10", "P10..P90", "above P90")
    assert both.iloc[1]["where"] == ""


def test_the_command_reads_the_production_log(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cotplan.cli import app
    from cotplan.production.log import CallLog, LogRecord

    path = tmp_path / "production.sqlite"
    record = LogRecord(time="2026-11-05T10:00:00+00:00", model="gpt-4o-mini", size=3, cap=64,
                       basis="certified", mode="hidden", reasoning_tokens=10, answer_tokens=5,
                       prompt_tokens=100, cap_bitten=False, answer_forced=False, cost_usd=0.25,
                       via="wrapper")  # fmt: skip
    CallLog(path).append(record)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (1,)
    result = CliRunner().invoke(app, [
        "cost", "project", "gpt-4o-mini", "--queries-per-month", "100", "--start", "2026-11",
        "--months", "1", "--prompt-mean", "100", "--output-mean", "5", "--draws", "100",
        "--on", "2026-11-29", "--actuals", str(path)], env={"COLUMNS": "120"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Forecast against actuals" in result.output
    assert "$0.25" in result.output
    assert "hours of the calls: uniform over 24 hours UTC" in result.output


def test_a_date_before_the_price_table_gets_a_clear_note() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TABLE.lookup("gpt-4o-mini", provider="openai", on=date(1990, 1, 1))
    notes = [w for w in caught if issubclass(w.category, EarlyDateWarning)]
    assert notes
    assert "1990-01-01 is before the first date of the price table" in str(notes[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TABLE.lookup("gpt-4o-mini", provider="openai", on=ON)
    assert not [w for w in caught if issubclass(w.category, EarlyDateWarning)]
