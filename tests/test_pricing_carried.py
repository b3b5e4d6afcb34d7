"""Flex and priority prices carried onto cotplan's own rows (`cotplan.pricing.carried`).

The rows are prices.csv's hand-read OpenAI rows; the tier rates are genai-prices 0.2.3's bundled
data (data of 2026-11), read offline and priced by its own `calc_price` for the comparison.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage as GenaiUsage
from genai_prices import calc_price

from cotplan.pricing import call_cost, price_table
from cotplan.pricing.carried import carry_tiers
from cotplan.pricing.rows import PriceRow
from cotplan.pricing.table import builtin_rows

TABLE = price_table()
ON = date(2026, 11, 29)
CALL: dict[str, Any] = {
    "prompt_tokens": 40_000,
    "cached_tokens": 30_000,
    "completion_tokens": 2_000,
}


def _shipped(model: str) -> PriceRow:
    return next(r for r in builtin_rows() if r.model == model)


@pytest.mark.parametrize("model", ["gpt-6-astra", "gpt-6-luna", "gpt-6.1-sol", "gpt-6.1-terra"])
@pytest.mark.parametrize("tier", ["flex", "priority"])
def test_a_shipped_row_pays_genai_prices_tier_rates_where_the_lists_agree(
    model: str, tier: str
) -> None:
    ours = call_cost(model, provider="openai", on=ON, tier=tier, table=TABLE, **CALL)
    theirs = calc_price(
        GenaiUsage(input_tokens=40_000, cache_read_tokens=30_000, output_tokens=2_000),
        model, provider_id="openai", genai_request_timestamp=datetime(2026, 11, 29, 12, tzinfo=UTC),
        price_context={"service_tier": tier},
    )  # fmt: skip
    assert ours.usd == theirs.total_price
    assert ours.tier == tier
    standard = call_cost(model, provider="openai", on=ON, table=TABLE, **CALL)
    assert (ours.usd < standard.usd) == (tier == "flex")
    # The row stays cotplan's; the note says where the tier's rates came from.
    assert ours.source == standard.source
    assert "genai-prices" not in ours.source
    assert f"{tier} rates from genai-prices" in ours.notes


def test_a_carried_tier_holds_only_from_genai_prices_own_date() -> None:
    # genai-prices lists gpt-6-astra's flex price from 2026-10-12.
    early = call_cost("gpt-6-astra", on=date(2026, 10, 11), tier="flex", table=TABLE, **CALL)
    assert (early.tier, "has no flex price on 2026-10-11" in early.notes) == ("", True)
    assert call_cost("gpt-6-astra", on=date(2026, 10, 12), tier="flex", table=TABLE, **CALL).tier


def test_the_batch_price_stays_the_rows_own_discount() -> None:
    row = TABLE.lookup("gpt-6-astra", on=date(2026, 10, 1), warn=False)
    assert {t.tier for t in row.tiers} == {"flex", "priority"}
    batch = call_cost("gpt-6-astra", on=date(2026, 10, 1), batch=True, table=TABLE, **CALL)
    listed = call_cost("gpt-6-astra", on=date(2026, 10, 1), table=TABLE, **CALL)
    assert batch.usd == listed.usd * Decimal("0.5")


def test_nothing_is_carried_where_the_standard_rates_differ() -> None:
    shipped = _shipped("gpt-6-astra")
    assert carry_tiers(shipped).tiers  # the rule holds for the row as shipped
    dearer = replace(shipped, output_per_mtok=shipped.output_per_mtok + 1)
    assert carry_tiers(dearer).tiers == ()
    longer = replace(shipped, long_context_threshold=300_000)
    assert carry_tiers(longer).tiers == ()


def test_a_users_price_file_and_a_table_without_genai_prices_carry_nothing(
    tmp_path: Path,
) -> None:
    # The user's row repeats the shipped rates: it may still be a negotiated price.
    own = tmp_path / "prices.csv"
    own.write_text(
        "provider,model,input_per_mtok,cached_input_per_mtok,cache_write_per_mtok,"
        "output_per_mtok,reasoning_billing,batch_discount,long_context_threshold,"
        "long_input_per_mtok,long_cached_input_per_mtok,long_cache_write_per_mtok,"
        "long_output_per_mtok,as_of,source_url\n"
        "openai,gpt-6-astra,10,1,12.5,50,in_completion,0.5,272000,20,2,25,75,2026-11-01,"
        "https://example.com/contract\n"
    )
    for table in (price_table(own), price_table(genai=False)):
        priced = call_cost("gpt-6-astra", on=ON, tier="flex", table=table, **CALL)
        assert (priced.tier, "has no flex price" in priced.notes) == ("", True)


def test_the_price_table_lists_the_carried_tiers() -> None:
    frame = TABLE.to_frame(on=ON)
    tiers = frame.loc[(frame["model"] == "gpt-6-luna") & (frame["origin"] == "cotplan"), "tiers"]
    assert list(tiers) == [
        "flex from 2026-10-12: input 0.05, cached 0.005, write 0.0625, output 0.25; "
        "priority from 2026-10-12: input 0.2, cached 0.02, write 0.25, output 1"
    ]


def test_the_command_names_where_a_carried_tier_price_came_from() -> None:
    from typer.testing import CliRunner

    from cotplan.cli import app

    args = ["cost", "call", "gpt-6-luna", "--prompt-tokens", "1000", "--completion-tokens", "100"]
    result = CliRunner().invoke(app, [*args, "--tier", "priority", "--on", "2026-11-29"],
                                env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "gpt-6-luna (openai, priority tier)" in text
    assert (
        "priority rates from genai-prices 0.2.3 (https://developers.openai.com/api/docs/pricing)"
        in text
    )
    standard = CliRunner().invoke(app, [*args, "--on", "2026-11-29"], env={"COLUMNS": "200"})
    assert "rates from" not in standard.output
