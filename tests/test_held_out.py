"""Which held-out items a saved plan runs on, and whether it may run on this model: decided by
the library (`cotplan.planner.held_out`, `cotplan.workflow.held_out_items`), so a notebook
chooses the items `cotplan run` would."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cotplan.errors import InputError
from cotplan.planner.calibrate import load_calibration
from cotplan.planner.held_out import (
    HeldOut,
    binding_notes,
    calibrated_caps,
    choose_held_out,
    plan_savings,
)
from cotplan.planner.plan_result import PlanResult, plan_from_calibration
from cotplan.tasks import make_tasks
from cotplan.workflow import held_out_items

FIXTURE = Path(__file__).parent / "data" / "calibration_three_sizes.csv"


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    folder = tmp_path_factory.mktemp("plan")
    calibration = folder / "calibration.csv"
    shutil.copyfile(FIXTURE, calibration)
    return plan_from_calibration(calibration, 0.2, law="paper", n_bootstrap=20)


def test_items_the_calibration_answered_are_dropped(planned: PlanResult) -> None:
    # The fixture's items are the parity family's at seed 7: the same seed draws them again.
    held = held_out_items(planned.plan, family="parity", tasks=None, sizes=[4], count=6, seed=7)
    calibrated = set(load_calibration(FIXTURE).frame["item"].astype(str))
    assert isinstance(held, HeldOut)
    assert held.dropped > 0
    assert held.note == f"dropped {held.dropped} held-out item(s) seen in calibration"
    assert not {item.id for item in held.items} & calibrated
    assert held.sizes == (4,)
    assert len(held.to_frame()) == len(held.items)


def test_fresh_items_are_all_kept_at_the_plans_own_sizes(planned: PlanResult) -> None:
    held = held_out_items(planned.plan, family="parity", tasks=None, count=2, seed=1234)
    assert held.dropped == 0
    assert held.note == ""
    assert held.sizes == tuple(planned.plan.sizes_)
    assert len(held.items) == 2 * len(held.sizes)


def test_a_size_beyond_the_plans_reach_is_refused_before_any_model(planned: PlanResult) -> None:
    items = make_tasks("parity", n=4, count=1, seed=99)
    with pytest.raises(InputError, match="10000"):
        choose_held_out(planned.plan, items, sizes=[10_000])


def test_a_task_files_items_bring_their_own_sizes(planned: PlanResult) -> None:
    items = [*make_tasks("parity", n=8, count=2, seed=99), *make_tasks("parity", n=4, count=1)]
    held = choose_held_out(planned.plan, items)
    assert held.sizes == (4, 8)


def test_a_plan_for_another_model_is_refused_unless_allowed(planned: PlanResult) -> None:
    saved = planned.plan
    assert saved.model == "example-model"
    with pytest.raises(InputError, match="example-model"):
        binding_notes(saved, backend="openai:another-model")
    notes = binding_notes(saved, backend="openai:another-model", allow_other_model=True)
    assert any("another-model" in note for note in notes)


def test_caps_and_savings_are_the_plans_own(planned: PlanResult) -> None:
    caps, savings = plan_savings(planned)
    saved = planned.plan
    assert caps == calibrated_caps(saved, [4, 8, 16])
    assert all(caps[n] == saved.cap(n).tokens for n in caps)
    assert savings is None or savings.sentence
