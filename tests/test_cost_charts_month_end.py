"""The month-end charts: spend by team and the reconciliation at a glance."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pandas as pd
import pytest

from cotplan.charts.costs import reconciliation_chart, spend_by_chart
from cotplan.errors import InputError
from cotplan.pricing.attribution import spend_by
from cotplan.pricing.reconcile import LoggedCall


def test_spend_by_team_is_one_bar_a_month_stacked_by_team() -> None:
    calls = [
        LoggedCall(date(2026, 11, 3), "openai", "gpt-4o-mini", Decimal("1.25"), {"team": "a"}),
        LoggedCall(date(2026, 11, 4), "openai", "gpt-4o-mini", Decimal("0.75"), {"team": "b"}),
        LoggedCall(date(2026, 12, 1), "openai", "gpt-4o-mini", Decimal("2.00"), {}),
    ]
    frame = spend_by(calls, ["team"])
    spec = spend_by_chart(frame, "team").to_dict()
    values = spec["datasets"][next(iter(spec["datasets"]))]
    assert {(v["month"], v["team"], v["usd"]) for v in values} == {
        ("2026-11", "a", 1.25), ("2026-11", "b", 0.75), ("2026-12", "(untagged)", 2.0)}  # fmt: skip
    assert spec["encoding"]["y"]["stack"] == "zero"
    with pytest.raises(InputError, match=r"`by`: the table has no 'feature' column"):
        spend_by_chart(frame, "feature")


def test_the_reconciliation_chart_draws_stated_beside_priced() -> None:
    frame = pd.DataFrame([{"month": "2026-11", "provider": "openai", "model": "gpt-4o-mini",
                           "project": "p", "stated_usd": Decimal("2.10"),
                           "priced_usd": Decimal("2.10"), "status": "matched"}])  # fmt: skip
    spec = reconciliation_chart(frame).to_dict()
    values = spec["datasets"][next(iter(spec["datasets"]))]
    assert sorted(v["amount"] for v in values) == ["priced", "stated"]
    assert all(v["usd"] == 2.1 for v in values)
