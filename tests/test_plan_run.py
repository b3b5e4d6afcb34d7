"""`run` with a saved plan: bound to its model, judged against ε per size.

No model starts here: the model check runs before any backend is made, `run_plan` is driven
with a stand-in for the answering step, and the CLI's model start is replaced by a guard that
fails the test if it is reached.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.backends.models import KNOWN_MODELS
from cotplan.cli import app, main
from cotplan.errors import InputError
from cotplan.generate import BudgetedAnswer
from cotplan.planner import BudgetPlanner
from cotplan.planner.records import SizeChecks
from cotplan.planner.run import (
    SavedPlan,
    backend_model,
    check_against_eps,
    check_plan_model,
    run_plan,
)
from cotplan.tasks import TaskItem, make_tasks

runner = CliRunner()
LOCAL_ID = KNOWN_MODELS["smollm2-135m-instruct"].model_id


def calibration(items: int, seed: int = 0) -> pd.DataFrame:
    """Answers drawn from the paper's law (e0 = 0.1, e_base = 0.9, c = 3, α = 1/2) at n = 4, 8,
    made by the model 'lab-model@1234'."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            "item": f"p-n{n}-{i:04d}",
            "n": n,
            "k": k,
            "correct": bool(rng.random() >= 0.1 + 0.8 * np.exp(-k / (3.0 * np.sqrt(n)))),
            "model": "lab-model@1234",
        }
        for n in (4, 8)
        for i in range(items)
        for k in (0, 4, 8, 16, 32, 64)
    ]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> SavedPlan:
    """A plan for ε = 0.3, certified at n = 4 and 8, made for model 'lab-model@1234'."""
    folder = tmp_path_factory.mktemp("plan")
    frame = calibration(30)
    frame.to_csv(folder / "calibration.csv", index=False)
    planner = BudgetPlanner(n_bootstrap=30, random_state=0).fit(frame)
    budgets = [planner.budget(n, 0.3) for n in planner.sizes_]
    saved = SavedPlan.from_planner(
        planner, budgets, 0.3, str(folder / "calibration.csv"), frame=frame
    )
    saved.save(folder / "plan.json")
    return saved


# --- bound to its model ---------------------------------------------------------------------


def test_a_plan_for_another_model_is_refused_in_one_line(plan: SavedPlan) -> None:
    with pytest.raises(InputError, match=r"`backend`: the plan was made for model") as info:
        check_plan_model(plan, "gpt-4o-mini")
    message = str(info.value)
    assert "'lab-model@1234'" in message
    assert "'gpt-4o-mini'" in message
    assert "--allow-other-model" in message
    assert "\n" not in message
    assert check_plan_model(plan, "lab-model@1234") == ""


def test_allow_other_model_applies_it_and_says_so(plan: SavedPlan) -> None:
    note = check_plan_model(plan, "gpt-4o-mini", allow_other_model=True)
    assert "made for model 'lab-model@1234'" in note
    assert "not certified for this model" in note


def test_the_backend_spec_is_checked_before_anything_starts(plan: SavedPlan) -> None:
    assert backend_model("local") == LOCAL_ID  # from the model table, no server
    assert backend_model("openai:gpt-4o-mini") == "gpt-4o-mini"
    assert backend_model("my-model", "http://127.0.0.1:9/v1") == "my-model"
    assert backend_model("lab:parity") is None  # the weights are known once loaded
    with pytest.raises(InputError, match=rf"not '{LOCAL_ID}'"):
        check_plan_model(plan, backend="local")
    with pytest.raises(InputError, match=r"not 'other'"):
        check_plan_model(plan, backend="openai:other")
    # A lab spec is checked by family: the plan's model is 'lab-model@...'.
    assert check_plan_model(plan, backend="lab:lab-model") == ""
    with pytest.raises(InputError, match="not 'lab:parity'"):
        check_plan_model(plan, backend="lab:parity")
    # A real lab model's id carries the "lab-" its spec does not.
    shipped = replace(plan, model="lab-parity-overthink@8861eaa24778")
    assert check_plan_model(shipped, backend="lab:parity-overthink") == ""
    with pytest.raises(InputError, match="not 'lab:parity'"):
        check_plan_model(shipped, backend="lab:parity")


def test_a_plan_that_records_no_model_is_refused_unless_told(plan: SavedPlan) -> None:
    old = replace(plan, model="")
    with pytest.raises(InputError, match="`backend`: the plan does not record the model"):
        check_plan_model(old, "anything")
    with pytest.raises(InputError, match="does not record the model"):
        check_plan_model(old, backend="local")
    assert "applying it anyway" in check_plan_model(old, "anything", allow_other_model=True)


# --- judged against ε per size ------------------------------------------------------------


def test_six_of_eight_right_is_not_read_as_meeting_eps() -> None:
    # The case: 6 of 8 right under an uncapped-like cap, against ε = 0.05. Exactly,
    # 2 errors in 8 do not exclude ε = 0.05 at 95% (P(≥ 2 errors) = 0.057 there), so the
    # verdict is open, and it shows the error and its interval rather than "no difference".
    checks = check_against_eps([8] * 8, [True] * 6 + [False] * 2, 0.05)
    (size,) = checks.sizes
    assert (size.items, size.errors, size.verdict) == (8, 2, "undecided")
    assert size.low < 0.05 < size.high
    assert "at n = 8 (error 0.25 [0.03, 0.65])" in str(checks)
    # Half of them wrong is a miss beyond doubt.
    missed = check_against_eps([8] * 8, [True] * 4 + [False] * 4, 0.05)
    assert missed.verdict == "misses"
    assert str(missed).startswith("the plan MISSES ε = 0.05 at n = 8: error 0.50")


def test_each_size_is_judged_apart() -> None:
    sizes = [4] * 80 + [8] * 10
    correct = [True] * 80 + [True] * 9 + [False]
    checks = check_against_eps(sizes, correct, 0.1)
    verdicts = {s.n: s.verdict for s in checks.sizes}
    # 0 of 80 wrong: the exact upper end (0.045) is below ε; 1 of 10 straddles it.
    assert verdicts == {4: "meets", 8: "undecided"}
    assert checks.verdict == "undecided"
    assert "cannot tell whether the plan meets ε = 0.1 at n = 8" in str(checks)
    frame = checks.to_frame()
    assert frame["n"].tolist() == [4, 8]
    assert {"error", "low", "high", "verdict", "cap", "certified"} <= set(frame.columns)
    met = check_against_eps([4] * 80, [True] * 80, 0.1)
    assert str(met) == "the plan meets ε = 0.1 at every size run"


def test_the_eps_check_validates_its_input() -> None:
    with pytest.raises(InputError, match="`correct`: must be as long as `sizes`"):
        check_against_eps([4, 4], [True], 0.1)
    with pytest.raises(InputError, match="`eps`: must be in"):
        check_against_eps([4], [True], 1.5)


def _answer(item: TaskItem, k: int, correct: bool) -> BudgetedAnswer:
    return BudgetedAnswer(
        item=item.id,
        family=item.family,
        n=item.n or 0,
        k=k,
        expected=item.answer,
        extracted=item.answer if correct else "?",
        correct=correct,
        reasoning="",
        answer_text="",
        truncated=False,
        forced=False,
        prompt_tokens=20,
        question_tokens=20,
        reasoning_tokens=min(k, 40),
        answer_tokens=2,
        cost_usd=0.0,
        latency_s=0.1,
        answer_prob=math.nan,
        cap_held=True,
        overrun=0,
        from_cache=False,
        calls=2,
        model="lab-model@1234",
        mode="template",
    )


def test_run_plan_applies_the_plans_caps_and_judges_each_size(
    plan: SavedPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: dict[str, list[int]] = {}

    def answer_items(backend: Any, items: Any, budgets_of: Any, **_: Any) -> list[BudgetedAnswer]:
        # Stands in for the model: capped answers at n = 6 are wrong half the time.
        out = []
        for index, item in enumerate(items):
            asked[item.id] = budgets_of(item)
            for k in asked[item.id]:
                wrong = k < 512 and item.n == 6 and index % 2 == 0
                out.append(_answer(item, k, not wrong))
        return out

    monkeypatch.setattr("cotplan.planner.run.answer_items", answer_items)
    backend = SimpleNamespace(
        model="lab-model@1234",
        count_tokens=len,
        stats=SimpleNamespace(requests=0, cache_hits=0, retries=0),
    )
    items = [*make_tasks("parity", n=4, count=6, seed=5), *make_tasks("parity", n=6, count=6)]
    result = run_plan(backend, plan, items, 0.3, progress=False, n_bootstrap=50)  # type: ignore[arg-type]
    # n = 6 was never calibrated: the cap is the plan's scaled one, not an error.
    assert asked[items[-1].id] == sorted({plan.cap(6).tokens, 512})
    rows = result.plan.set_index("n")
    assert rows.loc[4, "certified"]
    assert rows.loc[6, "basis"] == "scaled"
    assert isinstance(result.by_size, SizeChecks)
    assert [s.n for s in result.by_size.sizes] == [4, 6]
    assert result.by_size.sizes[1].errors == 3
    assert result.by_size.sizes[0].cap == plan.cap(4).tokens
    assert result.conclusion.startswith("held-out items cannot tell whether the plan meets")
    assert "; against uncapped: " in result.conclusion
    with pytest.raises(InputError, match=r"`eps`: the plan was made for ε = 0.3, not 0.2"):
        run_plan(backend, plan, items, 0.2, progress=False)  # type: ignore[arg-type]


# --- through the command line, stopped before any model starts --------------------------


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model was started")

    monkeypatch.setattr("cotplan.backends.connect", refuse)
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)


def test_run_refuses_a_plan_for_another_model_before_starting_it(
    plan: SavedPlan, tmp_path: Path, no_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = Path(plan.calibration).parent / "plan.json"
    with pytest.raises(SystemExit) as info:
        main(
            [
                *("run", "--plan", str(path), "--family", "parity", "--n", "4"),
                *("--count", "2", "--out", str(tmp_path), "--no-progress"),
            ]
        )
    assert info.value.code == 2
    err = capsys.readouterr().err
    # One message; rich wraps it at the terminal's width, so it is read with spaces joined.
    assert err.count("error:") == 1
    assert "Traceback" not in err
    assert " ".join(err.split()) == (
        f"error: `backend`: the plan was made for model 'lab-model@1234', not '{LOCAL_ID}' "
        "(calibrate this one, or --allow-other-model)"
    )
    assert not list(tmp_path.iterdir())


def test_run_refuses_a_size_beyond_the_plans_reach(
    plan: SavedPlan, no_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = Path(plan.calibration).parent / "plan.json"
    with pytest.raises(SystemExit):
        main(
            [
                *("run", "--plan", str(path), "--family", "parity", "--n", "24"),
                *("--backend", "lab:lab-model", "--no-progress"),
            ]
        )
    assert "`n`: n = 24 is beyond this plan's reach" in " ".join(capsys.readouterr().err.split())


def test_n_with_tasks_is_an_error_naming_both(
    plan: SavedPlan, tmp_path: Path, no_model: None
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "2+2?", "answer": "4", "n": 4}\n', encoding="utf-8")
    path = Path(plan.calibration).parent / "plan.json"
    for argv in (
        ["run", "--plan", str(path), "--tasks", str(tasks), "--n", "4"],
        ["calibrate", "--tasks", str(tasks), "--n", "4"],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code != 0
        assert isinstance(result.exception, InputError), result.output
        assert "--n cannot be used with --tasks" in str(result.exception)
        assert result.exception.field == "n"
