"""A certified early exit saved as plain JSON and applied (`exit="certified"`, issue 29)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.probing import ExitRule, StoppingRule, probe_answer
from cotplan.planner.early_exit import certify_early_exit
from cotplan.planner.exit_plan import (
    ExitPlan,
    answer_with_exit,
    exit_from_calibration,
    exit_plan_for,
    load_exit_plan,
)

PLAN = ExitPlan(
    model="lab-parity-overthink@8861eaa24778",
    eps=0.1,
    delta=0.05,
    sizes={
        8: ExitRule(ceiling=40, every=4, rule=StoppingRule(agree=3)),
        16: ExitRule(ceiling=72, every=4),
    },
)


def test_saved_and_loaded_unchanged(tmp_path: Path) -> None:
    path = PLAN.save(tmp_path / "exit.json")
    data = json.loads(path.read_text())
    assert data["kind"] == "cotplan-exit"
    assert data["schema"] == 1
    assert data["sizes"]["8"] == {"ceiling": 40, "every": 4, "rule": {"agree": 3, "min_prob": None}}
    assert load_exit_plan(path) == PLAN
    assert list(PLAN.to_frame()["rule"]) == ["same answer at 3 probes", "fixed cap (no early exit)"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"schema": 2}, "`schema`"),
        ({"eps": 1.5}, "`eps`"),
        ({"extra": 1}, "unknown key"),
        ({"sizes": {"x": {}}}, "`sizes.x`"),
        ({"sizes": {"8": {"ceiling": -1, "every": 4, "rule": {}}}}, "`sizes.8.ceiling`"),
        ({"sizes": {"8": {"ceiling": 8, "every": 4, "rule": {"agree": "3"}}}}, "`sizes.8.rule"),
    ],
)
def test_bad_files_name_the_file_and_field(
    tmp_path: Path, change: dict[str, object], match: str
) -> None:
    path = tmp_path / "exit.json"
    path.write_text(json.dumps({**PLAN.to_dict(), **change}))
    with pytest.raises(InputError, match=match) as info:
        load_exit_plan(path)
    assert str(path) in str(info.value)


def test_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "exit.json"
    path.write_text('{\n  "schema": 1,\n  oops\n}')
    with pytest.raises(InputError, match="line 3"):
        load_exit_plan(path)


def test_a_size_without_a_certified_exit_says_so() -> None:
    with pytest.raises(InputError, match=r"no certified exit at n = 4.*8, 16"):
        PLAN.rule_at(4)


def test_built_from_a_certification() -> None:
    rows = []
    for i in range(60):
        for k in (4, 8, 12, 16):
            rows.append(
                {
                    "item": f"i{i}",
                    "n": 8,
                    "k": k,
                    "extracted": "a",
                    "correct": True,
                    "answer_prob": 0.99,
                    "reasoning_tokens": k,
                    "answer_tokens": 1,
                }
            )
    frame = pd.DataFrame(rows)
    result = certify_early_exit(frame, 0.1, every=4)
    plan = ExitPlan.from_early_exit(result, model="m", every=4, frame=frame)
    (rule,) = plan.sizes.values()
    assert rule.ceiling == result.ceilings[8]
    assert rule.every == 4
    assert rule.rule == (result.rule_at(8) or StoppingRule())
    with pytest.raises(InputError, match="`every`"):
        ExitPlan.from_early_exit(result, model="m", every=8, frame=frame)


def test_a_grid_without_every_probe_is_refused() -> None:
    rows = [
        {"item": f"i{i}", "n": 8, "k": k, "extracted": "a", "correct": True, "answer_prob": 0.99,
         "reasoning_tokens": k, "answer_tokens": 1}
        for i in range(60)
        for k in (4, 8, 16)
    ]  # fmt: skip
    frame = pd.DataFrame(rows)
    result = certify_early_exit(frame, 0.1, ceilings={8: 16}, family="agreement")
    assert result.rule_at(8) is not None  # a rule that probes, so its probes must be calibrated
    with pytest.raises(InputError, match=r"`frame`.*k = \[12\]"):
        ExitPlan.from_early_exit(result, model="m", every=4, frame=frame)


def test_from_a_calibration_says_why_it_made_none() -> None:
    rows = [
        {"item": f"i{i}", "n": 8, "k": k, "extracted": "a", "correct": True, "answer_prob": 0.99,
         "reasoning_tokens": k, "answer_tokens": 1}
        for i in range(60)
        for k in (4, 8, 16, 32)
    ]  # fmt: skip
    frame = pd.DataFrame(rows)
    made, note = exit_from_calibration(frame, {8: 32}, 0.1, delta=0.05, model="m", every=16)
    assert made is not None
    assert note == ""
    assert made.sizes[8].ceiling == 32
    # Probes every 4 tokens would read k = 12, 20, 24, 28, never calibrated.
    made, note = exit_from_calibration(frame, {8: 32}, 0.1, delta=0.05, model="m", every=4)
    assert made is None
    assert "k = [12, 20, 24, 28]" in note
    assert exit_from_calibration(frame, {}, 0.1, delta=0.05, model="m")[0] is None
    with pytest.raises(InputError, match="`eps`"):  # bad options still raise
        exit_from_calibration(frame, {8: 32}, 1.5, delta=0.05, model="m")


def test_read_for_a_plan_checks_its_target_and_model(tmp_path: Path) -> None:
    PLAN.save(tmp_path / "exit.json")
    plan_path = tmp_path / "plan.json"
    assert exit_plan_for(None, plan_path, eps=PLAN.eps, model=PLAN.model) == PLAN
    with pytest.raises(InputError, match="`eps`: certified for ε"):
        exit_plan_for(None, plan_path, eps=PLAN.eps / 2, model=PLAN.model)
    with pytest.raises(InputError, match="`model`"):
        exit_plan_for(None, plan_path, eps=PLAN.eps, model="other")
    with pytest.raises(InputError, match="`exit_plan`: no exit plan at"):
        exit_plan_for(tmp_path / "none.json", plan_path, eps=PLAN.eps, model=PLAN.model)


@pytest.fixture(scope="module")
def lab() -> Iterator[Backend]:
    pytest.importorskip("torch")
    from cotplan.backends import connect

    with connect("lab:parity-overthink") as backend:
        yield backend


def test_applied_at_the_items_size(lab: Backend) -> None:
    from cotplan.research.lab.reasoning import make_lab_tasks

    items = make_lab_tasks("lab-parity-overthink", n=8, count=4, seed=5)
    answers = [answer_with_exit(lab, item, PLAN) for item in items]
    assert all(a.ceiling == 40 and a.thinking_tokens <= 40 for a in answers)
    assert all(a.rule == "same answer at 3 probes" for a in answers)
    assert answers == [probe_answer(lab, item, PLAN.rule_at(8)) for item in items]
    with pytest.raises(InputError, match="`n`"):
        answer_with_exit(lab, items[0], PLAN, n=9)
