"""The demo's set-up for a model that thinks natively: its budget grid, its uncapped run, and
enough calibration items to certify the demo's target (no model started)."""

from __future__ import annotations

import pytest

from cotplan.workflow import (
    FULL,
    QUICK,
    THINKING_BUDGETS,
    THINKING_COUNT,
    THINKING_UNCAPPED,
    demo_setup,
    native_thinker,
)


@pytest.mark.parametrize(
    ("spec", "thinks"),
    [
        ("local:thinking", True),
        ("openai:smollm2-135m-thinking", True),
        ("openai:Qwen/Qwen3-8B", True),
        ("local", False),
        ("openai:gpt-4o-mini", False),
        ("lab:parity-overthink", False),
    ],
)
def test_native_thinkers_are_known_by_name(spec: str, thinks: bool) -> None:
    assert native_thinker(spec) is thinks


def test_a_thinker_gets_budgets_past_its_over_thinking_and_items_to_certify() -> None:
    setup = demo_setup(backend="local:thinking", preset=FULL)
    assert setup.preset.budgets == THINKING_BUDGETS["full"]
    assert setup.preset.uncapped == THINKING_UNCAPPED
    assert setup.preset.count == THINKING_COUNT
    assert len(setup.items) == THINKING_COUNT * len(setup.sizes)
    # 0 errors in 16 items bound the error by 0.171 at 95%: below the demo's usual ε = 0.2.
    assert 1 - 0.05 ** (1 / THINKING_COUNT) < 0.2
    quick = demo_setup(backend="local:thinking", preset=QUICK)
    assert quick.preset.budgets == THINKING_BUDGETS["quick"]
    assert quick.preset.count == QUICK.count


def test_the_users_count_wins() -> None:
    setup = demo_setup(backend="local:thinking", preset=FULL, count=4, held_out=1)
    assert setup.preset.count == 4
    assert setup.preset.held_out == 1
    plain = demo_setup(backend="local", preset=FULL)
    assert plain.preset.budgets is None
    assert plain.preset.count == FULL.count
