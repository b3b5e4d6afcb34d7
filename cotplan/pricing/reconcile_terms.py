"""A terms file in a reconciliation: volume tiers explain a bill below list price, and credits
are applied to the invoice check only while they last (one past its expiry is not, and the
line says so). `cotplan.pricing.reconcile.reconcile(..., terms=...)` calls both.

Tiers are marginal on a provider's month (`cotplan.pricing.terms`): the month's list-price
total, after the commitment's discount, pays each tier's discount on the part above its
threshold. A row's share of that saving is pro rata to its list price, so a row that was
flagged is explained when its stated cost is its price at the month's effective rate.
Credits apply per provider in month order, the soonest to expire first, up to what the month
owes before tax, from the month they were granted through the month they expire.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pandas as pd

from cotplan.pricing.terms import Terms, tiered

__all__ = ["apply_credits", "explain_tiers"]

_ZERO = Decimal(0)
#: How far two amounts may differ and still agree (the reconciliation's own rule).
Tolerance = Callable[[Decimal], Decimal]


def _signed(amount: Decimal) -> str:
    return f"{'+' if amount >= 0 else '-'}{abs(amount):,.2f}"


def explain_tiers(frame: pd.DataFrame, terms: Terms, tolerance: Tolerance) -> pd.DataFrame:
    """`frame` (a reconciliation's rows) with flagged differences a volume tier explains
    marked explained, the tier, the month's list price and its effective rate named."""
    out = frame.copy()
    records: list[dict[Any, Any]] = out.to_dict("records")
    totals: dict[tuple[str, str], Decimal] = defaultdict(lambda: _ZERO)
    for month, provider, priced in zip(
        out["month"], out["provider"], out["priced_usd"], strict=True
    ):
        if priced is not None and not pd.isna(priced):
            totals[(month, provider)] += Decimal(priced)
    for row in records:
        if row["status"] != "flagged" or not str(row["why"]).startswith("unexplained"):
            continue
        tiers = [t for t in terms.tiers if t.provider == str(row["provider"]).lower()]
        total = totals.get((row["month"], row["provider"]), _ZERO)
        if not tiers or not total or row["stated_usd"] is None:
            continue
        cut = terms.discounts(str(row["month"])).get(str(row["provider"]).lower(), _ZERO)
        listed = float(total) * (1 - float(cut))
        rate = Decimal(str(float(tiered(listed, tiers)) / float(total)))
        stated, priced = Decimal(row["stated_usd"]), Decimal(row["priced_usd"])
        if abs(stated - priced * rate) > tolerance(stated):
            continue
        crossed = [t for t in sorted(tiers, key=lambda t: t.from_usd) if listed > t.from_usd]
        named = ", ".join(
            f"{(t.discount * 100).normalize():f}% above ${t.from_usd:,}" for t in crossed
        )
        row["status"] = "explained"
        row["why"] = (
            f"volume tier ({named}; terms file): the month's list price ${total:,.2f} pays "
            f"{rate * 100:.2f}% of list; difference {_signed(stated - priced)}"
        )
    return pd.DataFrame(records, columns=frame.columns)


def apply_credits(checks: pd.DataFrame, terms: Terms, tolerance: Tolerance) -> pd.DataFrame:
    """The invoice checks with the terms file's credits applied while they last: added to
    `credits_usd`, taken off `expected_usd`, the status judged again; a credit whose expiry
    has passed with a balance left is not applied, and the month's line says so."""
    rows: list[dict[Any, Any]] = checks.to_dict("records")
    left = {id(c): c.usd for c in terms.credits}
    told: set[int] = set()
    for rec in sorted(rows, key=lambda r: (str(r["provider"]), str(r["month"]))):
        month, provider = str(rec["month"]), str(rec["provider"]).lower()
        mine = sorted((c for c in terms.credits if c.provider == provider), key=lambda c: c.expires)
        notes: list[str] = []
        tax = Decimal(rec["tax_usd"])
        owed = Decimal(rec["expected_usd"]) - tax
        used_here = _ZERO
        for credit in mine:
            if credit.expires < month:
                if left[id(credit)] > 0 and id(credit) not in told:
                    told.add(id(credit))
                    notes.append(
                        f"a credit of ${credit.usd:,} (granted {credit.granted}) expired "
                        f"{credit.expires}: ${left[id(credit)]:,.2f} not applied"
                    )
                continue
            if credit.granted > month or owed <= 0:
                continue
            use = min(left[id(credit)], owed)
            if use > 0:
                left[id(credit)] -= use
                owed -= use
                used_here += use
                notes.append(f"credit -{use:,.2f} (terms file, expires {credit.expires})")
        if not notes:
            continue
        expected = owed + tax
        rec["credits_usd"] = Decimal(rec["credits_usd"]) + used_here
        rec["expected_usd"] = expected
        total = rec["invoice_usd"]
        why = str(rec["why"])
        if total is not None and not pd.isna(total):
            invoice = Decimal(total)
            if abs(expected - invoice) <= tolerance(invoice):
                rec["status"] = "explained"
                why = f"stated, credits and tax = invoice {invoice:,.2f}"
            else:
                rec["status"] = "flagged"
                why = (
                    "invoice differs from stated costs, credits and tax by "
                    f"{_signed(invoice - expected)}"
                )
        rec["why"] = "; ".join([why, *notes])
    return pd.DataFrame(rows, columns=checks.columns)
