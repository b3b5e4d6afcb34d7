"""A terms file in a reconciliation: a volume tier explains a month billed below list price,
and a credit is applied to the invoice only until it expires (past that, the line says so)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from cotplan.pricing import price_table
from cotplan.pricing.exports import ExportLine
from cotplan.pricing.reconcile import Invoice, reconcile
from cotplan.pricing.terms import Credit, Terms, VolumeTier

DAY = date(2026, 11, 10)
USAGE = ExportLine(
    "openai",
    "usage",
    DAY,
    "gpt-4o-mini",
    project="proj_a",
    input_tokens=100_000_000,
    output_tokens=20_000_000,
    requests=1_000,
)
TIER = VolumeTier("openai", Decimal(10), Decimal("0.1"))
# Expired before November with all of it left, and one that runs through December.
CREDITS = (
    Credit("openai", Decimal(10), "2026-09", "2026-10"),
    Credit("openai", Decimal(5), "2026-10", "2026-12"),
)


def _cost(usd: Decimal) -> ExportLine:
    return ExportLine("openai", "cost", DAY, "gpt-4o-mini", project="proj_a", usd=usd)


def _list_price() -> Decimal:
    table = price_table()
    (priced,) = reconcile([USAGE], table=table).frame["priced_usd"]
    return Decimal(priced)


def test_a_volume_tier_explains_a_month_billed_below_list_price() -> None:
    listed = _list_price()
    # Marginal: 10% off the part of the month above $10.
    billed = (listed - Decimal("0.1") * (listed - 10)).quantize(Decimal("0.01"))
    lines = [USAGE, _cost(billed)]
    plain = reconcile(lines).frame
    assert list(plain["status"]) == ["flagged"]
    (row,) = reconcile(lines, terms=Terms(tiers=(TIER,))).frame.to_dict("records")
    assert row["status"] == "explained"
    assert row["why"].startswith("volume tier (10% above $10; terms file)")
    assert f"${listed:,.2f}" in row["why"]
    # A tier that does not account for the difference leaves it flagged.
    deeper = Terms(tiers=(VolumeTier("openai", Decimal(10), Decimal("0.3")),))
    assert list(reconcile(lines, terms=deeper).frame["status"]) == ["flagged"]


def test_a_credit_applies_until_it_expires_and_an_expired_one_says_so() -> None:
    listed = _list_price()
    lines = [USAGE, _cost(listed)]
    terms = Terms(credits=CREDITS)
    right = reconcile(lines, invoices=[Invoice("openai", "2026-11", listed - 5)], terms=terms)
    (check,) = right.invoices.to_dict("records")
    assert check["status"] == "explained"
    assert check["credits_usd"] == 5
    assert "a credit of $10 (granted 2026-09) expired 2026-10: $10.00 not applied" in check["why"]
    assert "credit -5.00 (terms file, expires 2026-12)" in check["why"]
    # An invoice that took the expired credit off too is flagged, the expiry named.
    wrong = reconcile(lines, invoices=[Invoice("openai", "2026-11", listed - 15)], terms=terms)
    (flagged,) = wrong.invoices.to_dict("records")
    assert flagged["status"] == "flagged"
    assert "invoice differs from stated costs, credits and tax by -10.00" in flagged["why"]
    assert "expired 2026-10" in flagged["why"]
