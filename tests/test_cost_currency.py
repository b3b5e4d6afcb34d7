"""Currency conversion at dated rates from the user's own file."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from cotplan.errors import InputError
from cotplan.pricing.currency import read_rates

RATES = "date,currency,per_usd\n2026-11-01,EUR,0.93\n2026-11-28,EUR,0.95\n2026-11-01,GBP,0.79\n"


def test_an_amount_converts_at_the_latest_rate_on_or_before_its_day(tmp_path: Path) -> None:
    path = tmp_path / "rates.csv"
    path.write_text(RATES)
    rates = read_rates(path)
    usd, used = rates.to_usd(Decimal("93"), "eur", date(2026, 11, 27))
    assert (usd, used.day) == (Decimal(100), date(2026, 11, 1))
    eur, used = rates.from_usd(Decimal(100), "EUR", date(2026, 12, 5))
    assert (eur, used.label) == (Decimal("95.00"), "0.95 EUR per USD, rate of 2026-11-28")
    with pytest.raises(InputError, match=r"no EUR rate on or before 2026-10-31; the first is"):
        rates.rate("EUR", date(2026, 10, 31))
    with pytest.raises(InputError, match=r"no JPY rate in the rates file \(it has EUR, GBP\)"):
        rates.rate("JPY", date(2026, 11, 5))


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("date,currency\n", r"needs the columns date, currency, per_usd"),
        ("date,currency,per_usd\n2026-11-01,EUR,-1\n", r"line 2, `per_usd`: must be a number"),
        ("date,currency,per_usd\n2026-11-01,EUR,1\n2026-11-01,EUR,2\n",
         r"line 3, `date`: a second EUR rate for 2026-11-01"),
        ("date,currency,per_usd\n11/01/2026,EUR,1\n", r"line 2, `date`: must be YYYY-MM-DD"),
    ],
)  # fmt: skip
def test_a_bad_rates_file_names_the_line(tmp_path: Path, text: str, pattern: str) -> None:
    path = tmp_path / "rates.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=pattern):
        read_rates(path)


def test_a_cost_stated_in_euros_reconciles_at_the_dated_rate(tmp_path: Path) -> None:
    from cotplan.pricing import price_table
    from cotplan.pricing.exports import read_anthropic_costs, read_anthropic_usage
    from cotplan.pricing.reconcile import reconcile

    day = {"starting_at": "2026-11-10T00:00:00Z", "ending_at": "2026-11-11T00:00:00Z"}
    usage = {"data": [{**day, "results": [{"uncached_input_tokens": 1_000_000,
                                           "output_tokens": 100_000,
                                           "model": "claude-sonnet-4-5"}]}]}  # fmt: skip
    # $3 + $1.50 = $4.50 at list price, stated as EUR 4.185 (0.93 EUR per USD), in cents.
    costs = {"data": [{**day, "results": [{"amount": "418.5", "currency": "EUR",
                                           "model": "claude-sonnet-4-5"}]}]}  # fmt: skip
    (tmp_path / "u.json").write_text(json.dumps(usage))
    (tmp_path / "c.json").write_text(json.dumps(costs))
    (tmp_path / "rates.csv").write_text(RATES)
    lines = [*read_anthropic_usage(tmp_path / "u.json"), *read_anthropic_costs(tmp_path / "c.json")]
    table = price_table()
    plain = reconcile(lines, table=table)
    assert plain.frame["why"].iloc[0] == "stated in EUR: give a rates file"
    converted = reconcile(lines, table=table, rates=read_rates(tmp_path / "rates.csv"))
    row = converted.frame.iloc[0]
    assert (row["status"], row["stated_usd"]) == ("matched", Decimal("4.5"))
    assert "converted at 0.93 EUR per USD, rate of 2026-11-01" in row["why"]
