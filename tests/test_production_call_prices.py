"""A capped call's price: the model's row looked up once, then reused, and the same cost as
`recorded_cost` gives the same call; an unpriced model gets its note, not a price."""

from __future__ import annotations

import math

import pytest

from cotplan.backends.base import Completion, Usage
from cotplan.generate.call_cost import recorded_cost
from cotplan.production import call_prices
from cotplan.production.calls import cost_of_requests


def test_the_row_is_looked_up_once_and_prices_as_recorded_cost_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    usage = Usage(prompt_tokens=1200, completion_tokens=800, reasoning_tokens=500)
    expected = float(recorded_cost(Completion("", "stop", usage=usage, model="o3-mini")).usd)
    monkeypatch.setattr(call_prices, "_ROWS", {})
    asked: list[str] = []
    table = call_prices.price_table()

    class Counting:
        def lookup(self, model: str, **options: object) -> object:
            asked.append(model)
            return table.lookup(model, **options)

    monkeypatch.setattr(call_prices, "price_table", Counting)
    first = cost_of_requests("o3-mini", [usage])
    second = cost_of_requests("o3-mini", [usage, usage])
    assert first == (pytest.approx(expected), "")
    assert second == (pytest.approx(2 * expected), "")
    assert asked == ["o3-mini"]  # the second call found the row kept


def test_an_unpriced_model_gets_a_note_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(call_prices, "_ROWS", {})
    for _ in range(2):
        cost, note = cost_of_requests("acme-nonesuch-7", [Usage(10, 5)])
        assert math.isnan(cost)
        assert note.startswith("no price for acme-nonesuch-7")
