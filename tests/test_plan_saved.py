"""The saved plan as a deployable file: strict JSON, what it records, and `plan.cap(n)`."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotplan.errors import InfeasibleTargetError, InputError
from cotplan.planner import Budget, BudgetPlanner
from cotplan.planner.records import PlanCap
from cotplan.planner.run import DEFAULT_REACH, SCHEMA_VERSION, SavedPlan


def calibration(items: int, *, seed: int = 0, sizes: tuple[int, ...] = (4, 8)) -> pd.DataFrame:
    """Answers drawn from the paper's law (e0 = 0.1, e_base = 0.9, c = 3, α = 1/2), with the
    model and mode columns a real calibration has."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        for i in range(items):
            for k in (0, 4, 8, 16, 32, 64):
                error = 0.1 + 0.8 * np.exp(-k / (3.0 * np.sqrt(n)))
                rows.append(
                    {
                        "item": f"parity-n{n}-{i:04d}",
                        "n": n,
                        "k": k,
                        "correct": bool(rng.random() >= error),
                        "model": "smollm2-135m-instruct@b179c9523d0e",
                        "mode": "template",
                    }
                )
    return pd.DataFrame(rows)


def saved_plan(
    tmp_path: Path, frame: pd.DataFrame, eps: float, *, reach: float = DEFAULT_REACH
) -> tuple[SavedPlan, BudgetPlanner]:
    path = tmp_path / "calibration.csv"
    frame.to_csv(path, index=False)
    planner = BudgetPlanner(n_bootstrap=30, random_state=0).fit(frame)
    budgets = [planner.budget(n, eps) for n in planner.sizes_]
    plan = SavedPlan.from_planner(planner, budgets, eps, str(path), frame=frame, reach=reach)
    return plan, planner


def _no_constants(name: str) -> float:
    raise ValueError(f"not strict JSON: {name}")


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> tuple[SavedPlan, BudgetPlanner]:
    """30 items a size: ε = 0.3 is certified at both calibrated sizes."""
    return saved_plan(tmp_path_factory.mktemp("certified"), calibration(30), 0.3)


def test_plan_json_is_strict_and_records_what_it_was_made_from(
    tmp_path: Path, certified: tuple[SavedPlan, BudgetPlanner]
) -> None:
    plan, planner = certified
    path = plan.save(tmp_path / "plan.json")
    text = path.read_text(encoding="utf-8")
    record = json.loads(text, parse_constant=_no_constants)  # raises on NaN or Infinity
    assert record["schema_version"] == SCHEMA_VERSION
    assert record["model"] == "smollm2-135m-instruct@b179c9523d0e"
    assert record["mode"] == "template"
    assert (record["eps"], record["delta"], record["law"]) == (0.3, 0.05, planner.law_)
    assert record["reach"] == DEFAULT_REACH
    assert len(record["calibration_sha256"]) == 64
    assert record["calibration_cost_usd"] is None  # no price: null, not NaN
    caps = {row["n"]: row for row in record["caps"]}
    assert set(caps) == {4.0, 8.0}
    assert all(row["certified"] and row["basis"] == "certified" for row in caps.values())
    assert record["nothing_certified"] is False


def test_a_saved_plan_loads_back_with_the_same_caps(
    tmp_path: Path, certified: tuple[SavedPlan, BudgetPlanner]
) -> None:
    plan, _ = certified
    back = SavedPlan.load(plan.save(tmp_path / "plan.json"))
    assert back.schema_version == SCHEMA_VERSION
    assert (back.model, back.mode) == (plan.model, plan.mode)
    assert back.certificates == plan.certificates
    pd.testing.assert_frame_equal(back.to_frame(), plan.to_frame())
    for n in (3, 4, 6, 8, 12):
        assert back.cap(n) == plan.cap(n)


def test_an_unbounded_interval_survives_the_round_trip(tmp_path: Path) -> None:
    budget = Budget(
        n=4,
        eps=0.1,
        k_star=12.0,
        low=8.0,
        high=math.inf,
        tokens=12,
        log_base="e",
        c_in_base=1.0,
        formula="k*",
        baselines={"paper": math.nan},
    )  # one budget whose resamples do not all reach ε: its upper end is infinite
    plan = SavedPlan(
        eps=0.1,
        delta=0.05,
        law="paper",
        status_="helps",
        verdict_="v",
        calibration="none.csv",
        budgets=(budget,),
        schema_version=SCHEMA_VERSION,
    )
    text = plan.save(tmp_path / "plan.json").read_text(encoding="utf-8")
    json.loads(text, parse_constant=_no_constants)
    back = SavedPlan.load(tmp_path / "plan.json").budgets[0]
    assert back.high == math.inf
    assert math.isnan(back.error_bound)
    assert math.isnan(back.baselines["paper"])


def test_cap_is_certified_at_calibrated_sizes_and_scaled_between_and_beyond(
    certified: tuple[SavedPlan, BudgetPlanner],
) -> None:
    plan, planner = certified
    at_4 = plan.cap(4)
    assert at_4.certified
    assert at_4.basis == "certified"
    assert at_4.calibrated
    assert at_4.tokens == planner.budget(4, 0.3).tokens
    assert at_4.error_bound <= 0.3
    between, beyond = plan.cap(6), plan.cap(16)
    for cap in (between, beyond):
        assert not cap.certified
        assert cap.basis == "scaled"
        assert not cap.calibrated
        assert "not certified at n = " in cap.note
    assert between.reference == 8  # nearest in log n: |ln 6 − ln 8| < |ln 6 − ln 4|
    assert beyond.reference == 8
    assert beyond.reach == 2.0
    assert at_4.tokens <= between.tokens <= beyond.tokens  # k* grows with n under this law
    frame = between.to_frame()
    assert frame.loc[0, "basis"] == "scaled"
    assert list(frame.columns)[:3] == ["n", "eps", "tokens"]


def test_cap_refuses_beyond_the_reach_naming_n(
    certified: tuple[SavedPlan, BudgetPlanner],
) -> None:
    plan, planner = certified
    with pytest.raises(InputError, match=r"`n`: n = 17 is beyond this plan's reach") as info:
        plan.cap(17)
    assert "from 2 to 16" in str(info.value)
    with pytest.raises(InputError, match=r"`n`: n = 1.5 is beyond"):
        plan.cap(1.5)
    with pytest.raises(InputError, match="`n`: must be a positive number"):
        plan.cap(0)
    wide = SavedPlan.from_planner(planner, [], 0.3, "none.csv", reach=3.0)
    assert wide.cap(24).basis == "scaled"
    with pytest.raises(InputError, match=r"`reach`: must be at least 1, got 0\.5"):
        SavedPlan.from_planner(planner, [], 0.3, "none.csv", reach=0.5)


def test_where_nothing_is_certified_the_cap_is_the_laws_conservative_end(tmp_path: Path) -> None:
    # 8 items a size: even 0 errors bound the error only by 1 − 0.05^(1/8) = 0.31 > ε = 0.3.
    plan, planner = saved_plan(tmp_path, calibration(8), 0.3)
    assert planner.status_ == "helps"
    assert plan.nothing_certified
    for n in (4, 6, 8):
        cap = plan.cap(n)
        assert cap.nothing_certified
        assert not cap.certified
        assert cap.basis == "law"
        assert cap.conservative
        assert cap.tokens == math.ceil(cap.high - 1e-9)
        point = planner.budget(n, 0.3)  # the planner's own point estimate
        assert cap.tokens >= point.k_star
        assert "upper end" in cap.note
    budget = planner.budget(4, 0.3)
    assert plan.cap(4).tokens > math.ceil(budget.k_star)  # strictly above the point
    assert plan.cap(4).tokens == budget.tokens  # the planner's own cap is as conservative
    record = json.loads(plan.to_json(), parse_constant=_no_constants)
    assert record["nothing_certified"] is True


def test_without_a_bootstrap_the_point_estimate_is_used_and_said(tmp_path: Path) -> None:
    frame = calibration(8)
    path = tmp_path / "calibration.csv"
    frame.to_csv(path, index=False)
    planner = BudgetPlanner(n_bootstrap=0).fit(frame)
    plan = SavedPlan.from_planner(planner, [planner.budget(4, 0.3)], 0.3, str(path), frame=frame)
    cap = plan.cap(4)
    assert cap.basis == "law"
    assert not cap.conservative
    assert "misses ε about half the time" in cap.note


def test_an_unattainable_target_is_refused_naming_eps(tmp_path: Path) -> None:
    plan, _ = saved_plan(tmp_path, calibration(8), 0.3)
    below_floor = replace(plan, eps=0.01)
    with pytest.raises(InfeasibleTargetError, match=r"`eps`: ε = 0\.01 is unattainable at n = 4"):
        below_floor.cap(4)


def test_a_plan_without_benefit_caps_at_zero(tmp_path: Path) -> None:
    flat = pd.DataFrame(
        {
            "item": [f"q{i}" for i in range(10) for _ in (0, 8)],
            "n": 4,
            "k": [0, 8] * 10,
            "correct": [i % 2 == 0 for i in range(10) for _ in (0, 8)],
        }
    )
    path = tmp_path / "flat.csv"
    flat.to_csv(path, index=False)
    planner = BudgetPlanner(n_bootstrap=0).fit(flat)
    plan = SavedPlan.from_planner(planner, [], 0.5, str(path), frame=flat)
    cap = plan.cap(40)
    assert (cap.tokens, cap.basis, cap.certified) == (0, "not_credited", False)
    assert plan.model == ""  # the calibration has no model column


def _version_1_plan() -> str:
    """A plan.json as cotplan wrote it before `schema_version`: NaN included."""
    budget = Budget(
        n=4,
        eps=0.1,
        k_star=12.0,
        low=8.0,
        high=16.0,
        tokens=12,
        log_base="e",
        c_in_base=1.0,
        formula="k*",
        law="step",
    )
    record = {
        "eps": 0.1,
        "delta": 0.05,
        "law": "step",
        "status_": "helps",
        "verdict_": "v",
        "calibration": "none.csv",
        "budgets": [asdict(budget)],
    }
    return json.dumps(record)


def test_a_version_1_file_still_loads_with_its_sizes_only(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(_version_1_plan(), encoding="utf-8")
    assert "NaN" in path.read_text(encoding="utf-8")
    plan = SavedPlan.load(path)
    assert plan.schema_version == 1
    assert plan.model == ""
    cap = plan.cap(4)
    assert isinstance(cap, PlanCap)
    assert cap.tokens == 12
    assert not cap.certified
    with pytest.raises(InputError, match=r"`n`: the plan has no cap for n = 8"):
        plan.cap(8)
    # Saved again, it is strict JSON of the current version.
    json.loads(plan.to_json(), parse_constant=_no_constants)


def test_a_newer_or_broken_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"schema_version": 99, "eps": 0.1}), encoding="utf-8")
    with pytest.raises(InputError, match=r"`schema_version`: must be 1 to 3 .* got 99"):
        SavedPlan.load(path)
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(InputError, match="`plan`: not a plan written by `cotplan plan`"):
        SavedPlan.load(path)
