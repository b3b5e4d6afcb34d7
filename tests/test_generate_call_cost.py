"""Recorded costs of finished calls: a name several providers sell costs its maker's rates."""

from __future__ import annotations

import pytest

from cotplan.backends.base import Completion, Usage
from cotplan.errors import UnknownModelError
from cotplan.generate.call_cost import recorded_cost
from cotplan.pricing import cost_of_completion, price_table


def _call(model: str, *, from_cache: bool = False) -> Completion:
    usage = Usage(prompt_tokens=1_000, completion_tokens=500, reasoning_tokens=200)
    return Completion("x", "stop", usage, model, from_cache=from_cache)


@pytest.mark.parametrize(
    ("model", "maker"),
    [("claude-3-5-haiku", "anthropic"), ("o3-2025-04-16", "openai")],
)
def test_a_name_several_providers_sell_is_priced_at_its_makers_rates(
    model: str, maker: str
) -> None:
    assert price_table().lookup(model).provider == maker
    expected = cost_of_completion(_call(model), provider=maker)
    cost = recorded_cost(_call(model))
    assert cost.usd == expected.usd
    assert cost.usd > 0


def test_a_cached_call_costs_nothing_and_an_unknown_model_still_raises() -> None:
    assert recorded_cost(_call("gpt-4o-mini", from_cache=True)).usd == 0
    with pytest.raises(UnknownModelError):
        recorded_cost(_call("no-such-model-xyz"))
