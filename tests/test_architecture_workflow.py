"""`cotplan.workflow`: the demo's steps as library calls (the CLI only prints them)."""

from __future__ import annotations

import pytest

from cotplan.errors import InputError
from cotplan.workflow import FULL, QUICK, demo_family, demo_setup


def test_setup_draws_disjoint_calibration_and_held_out_items() -> None:
    setup = demo_setup("count", preset=QUICK, count=3, held_out=2)
    assert setup.family == "count"
    assert (setup.preset.count, setup.preset.held_out) == (3, 2)
    assert setup.preset.uncapped == QUICK.uncapped
    assert len(setup.items) == 3 * len(setup.sizes)
    assert {it.n for it in setup.items} == set(setup.sizes)
    seen = {it.prompt for it in setup.items} | {it.id for it in setup.items}
    assert setup.held_out
    assert not {it.prompt for it in setup.held_out} & seen
    assert not {it.id for it in setup.held_out} & seen


def test_setup_defaults_to_the_measured_demo_family_and_the_full_preset() -> None:
    setup = demo_setup()
    assert setup.family == demo_family()
    assert (setup.preset.count, setup.preset.held_out) == (FULL.count, FULL.held_out)


def test_a_lab_backend_brings_its_own_family_sizes_and_budgets() -> None:
    setup = demo_setup("count", backend="lab:lab-parity", preset=QUICK)
    assert setup.family == "lab-parity"
    assert setup.preset.budgets is not None
    assert setup.preset.grid(4) == list(setup.preset.budgets)


@pytest.mark.parametrize("field", ["count", "held_out"])
def test_setup_refuses_fewer_than_one_item(field: str) -> None:
    with pytest.raises(InputError, match=f"`{field}`"):
        demo_setup("count", **{field: 0})  # type: ignore[arg-type]
