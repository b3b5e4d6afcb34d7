"""A name several providers sell is priced at its maker's list price, with a note naming the
others; only a name with no known maker among its sellers needs the provider."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from cotplan.errors import InputError
from cotplan.pricing import call_cost, price_table
from cotplan.pricing.makers import maker_of, pick_maker

ON = date(2026, 11, 29)
TABLE = price_table()
COUNTS = {"prompt_tokens": 10_000, "completion_tokens": 2_000, "reasoning_tokens": 1_500}


@pytest.mark.parametrize(
    ("model", "maker", "others"),
    [
        ("o3", "openai", "azure"),
        ("o3-2025-04-16", "openai", "azure"),
        ("claude-3-5-haiku", "anthropic", "google"),
    ],
)
def test_a_bare_name_costs_its_makers_price(model: str, maker: str, others: str) -> None:
    cost = call_cost(model, on=ON, table=TABLE, **COUNTS)
    named = call_cost(model, provider=maker, on=ON, table=TABLE, **COUNTS)
    assert cost.provider == maker
    assert cost.usd == named.usd
    assert f"is also sold by {others}; priced at its maker's ({maker}) list price" in cost.notes
    # Naming another seller still prices that seller.
    other = others.split(", ")[0]
    assert call_cost(model, provider=other, on=ON, table=TABLE, **COUNTS).provider == other


def test_a_name_only_one_provider_sells_has_no_maker_note() -> None:
    cost = call_cost("gemini-2.5-flash", on=ON, table=TABLE, **COUNTS)
    assert cost.provider == "google"
    assert "also sold by" not in cost.notes


def test_no_maker_among_the_sellers_still_needs_the_provider() -> None:
    with pytest.raises(InputError, match=r"`provider`: .*several providers \(groq, ovhcloud\)"):
        call_cost("deepseek-r1-distill-llama-70b", on=ON, table=TABLE, **COUNTS)


def test_makers_come_from_the_registry_then_the_name(tmp_path: Path) -> None:
    assert maker_of("o3-mini") == "openai"  # cotplan.backends.known_models
    assert maker_of("openai/gpt-4o") == "openai"
    assert maker_of("grok-4") == "x-ai"  # the prefix table
    assert maker_of("deepseek-reasoner") == "deepseek"
    assert maker_of("nobody-knows-7b") is None
    assert pick_maker("grok-4", ["openrouter", "x-ai"]) == "x-ai"
    assert pick_maker("grok-4", ["openrouter", "groq"]) is None


def test_a_price_file_with_two_sellers_prices_the_maker(tmp_path: Path) -> None:
    file = tmp_path / "prices.csv"
    header = (
        "provider,model,input_per_mtok,cached_input_per_mtok,output_per_mtok,"
        "reasoning_billing,batch_discount,as_of,source_url,aliases"
    )
    file.write_text(
        f"{header}\n"
        "openai,house-o9,1,0.1,4,in_completion,0,2026-11-28,contract A,o3-house\n"
        "azure,house-o9-az,2,0.2,8,in_completion,0,2026-11-28,contract B,o3-house\n"
        "groq,mystery-1,1,1,1,in_completion,0,2026-11-28,contract C,\n"
        "together,mystery-1-t,2,2,2,in_completion,0,2026-11-28,contract D,mystery-1\n"
    )
    table = price_table(file, builtin=False)
    row = table.lookup("o3-house", on=ON)
    assert (row.provider, row.model) == ("openai", "house-o9")
    assert "also sold by azure" in row.notes
    with pytest.raises(InputError, match=r"several providers \(groq, together\)"):
        table.lookup("mystery-1", on=ON)
