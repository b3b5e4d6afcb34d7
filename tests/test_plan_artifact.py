"""The plan as an artifact: its protocol, its request fields, the folder the library writes.

No model starts here: plans are made from planted calibrations, and the CLI's model start is
replaced by a guard that fails the test if it is reached.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cotplan.backends.budgets import request_fields
from cotplan.charts import CHARTS, chart
from cotplan.cli import main
from cotplan.errors import InputError
from cotplan.planner import PlanResult, plan_from_calibration
from cotplan.planner.binding import check_plan_protocol, planned_protocol
from cotplan.planner.saved_plan import SCHEMA_VERSION, SavedPlan


def planted(path: Path, *, protocol: str | None = "think", model: str = "lab-model@1234") -> Path:
    """Answers from the paper's law (e0 = 0.1, e_base = 0.9, c = 3, α = 1/2) at n = 4 and 8."""
    rng = np.random.default_rng(0)
    rows = [
        {
            "item": f"p-n{n}-{i:04d}",
            "n": n,
            "k": k,
            "correct": bool(rng.random() >= 0.1 + 0.8 * np.exp(-k / (3.0 * np.sqrt(n)))),
            "model": model,
            **({} if protocol is None else {"protocol": protocol}),
        }
        for n in (4, 8)
        for i in range(30)
        for k in (0, 4, 8, 16, 32, 64)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> PlanResult:
    folder = tmp_path_factory.mktemp("plan")
    return plan_from_calibration(
        planted(folder / "calibration.csv"), 0.3, sizes=[4, 8], n_bootstrap=20
    )


# --- the protocol is part of the plan -------------------------------------------------------


def test_the_plan_records_the_calibrations_protocol(result: PlanResult, tmp_path: Path) -> None:
    assert result.plan.protocol == "think"
    path = result.plan.save(tmp_path / "plan.json")
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["schema_version"] == SCHEMA_VERSION == 3
    assert record["protocol"] == "think"
    assert SavedPlan.load(path).protocol == "think"


def test_a_calibration_without_one_or_with_several_records_none(tmp_path: Path) -> None:
    bare = plan_from_calibration(planted(tmp_path / "a.csv", protocol=None), 0.3, n_bootstrap=0)
    assert bare.plan.protocol is None
    mixed = pd.read_csv(planted(tmp_path / "b.csv"))
    mixed.loc[mixed.index[::2], "protocol"] = "plain"
    mixed.to_csv(tmp_path / "b.csv", index=False)
    assert plan_from_calibration(tmp_path / "b.csv", 0.3, n_bootstrap=0).plan.protocol is None


def test_a_version_2_file_loads_with_no_protocol(result: PlanResult, tmp_path: Path) -> None:
    record = json.loads(result.plan.to_json())
    record["schema_version"] = 2
    del record["protocol"]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    old = SavedPlan.load(path)
    assert old.protocol is None
    assert old.cap(4) == result.plan.cap(4)
    assert check_plan_protocol(old, "plain") == ""  # nothing recorded: nothing to refuse


def test_a_protocol_that_is_not_text_is_refused_on_load(result: PlanResult, tmp_path: Path) -> None:
    record = json.loads(result.plan.to_json())
    record["protocol"] = 7
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    with pytest.raises(InputError, match=r"line \d+, `protocol`: must be text"):
        SavedPlan.load(path)


def test_another_protocol_is_refused_unless_allowed(result: PlanResult) -> None:
    with pytest.raises(InputError, match=r"`protocol`: the plan was made under .*'think'"):
        check_plan_protocol(result.plan, "plain")
    note = check_plan_protocol(result.plan, "plain", allow_other_model=True)
    assert "not certified for this way of thinking" in note
    assert check_plan_protocol(result.plan, "think") == ""
    assert check_plan_protocol(result.plan, None) == ""  # not known before the model starts


def test_the_protocol_a_run_will_use_is_known_from_the_option_or_the_name() -> None:
    assert planned_protocol("qwen3", None) == "qwen3"
    assert planned_protocol("auto", "Qwen3-8B") == "qwen3"
    assert planned_protocol("auto", "smollm2-135m-instruct@abc") == "plain"
    assert planned_protocol("auto", None) is None


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model was started")

    monkeypatch.setattr("cotplan.backends.connect", refuse)
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)


def test_run_refuses_a_plan_for_another_protocol_before_starting(
    result: PlanResult, tmp_path: Path, no_model: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = result.plan.save(tmp_path / "plan.json")
    argv = ["run", "--plan", str(path), "--family", "parity", "--n", "4", "--count", "2"]
    argv += ["--backend", "lab:lab-model", "--no-progress", "--out", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--protocol", "plain"])
    assert info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "`protocol`: the plan was made under reasoning protocol 'think', not 'plain'" in err
    assert "--allow-other-model" in err
    assert not (tmp_path / "r").exists()
    # Allowed, it goes on to the model (the guard), having said why it is not certified.
    with pytest.raises(AssertionError, match="a model was started"):
        main([*argv, "--protocol", "plain", "--allow-other-model"])
    out = " ".join(capsys.readouterr().out.split())
    assert "protocol 'think' with protocol 'plain' (--allow-other-model)" in out


def test_plan_prints_what_the_plan_is_made_for(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cotplan.cli import app

    calibration = planted(tmp_path / "calibration.csv")
    printed = CliRunner().invoke(
        app, ["plan", "--calibration", str(calibration), "--eps", "0.3", "--bootstrap", "0"]
    )
    assert printed.exit_code == 0, printed.output
    assert "made for model lab-model@1234, protocol think" in " ".join(printed.output.split())


# --- request fields for a cap ---------------------------------------------------------------


def test_request_fields_hold_the_cap_with_room_for_the_answer(tmp_path: Path) -> None:
    made = plan_from_calibration(
        planted(tmp_path / "c.csv", model="Qwen3-8B"), 0.3, sizes=[4], n_bootstrap=20
    )
    plan = made.plan
    for n in (4, 6):  # a certified size and a scaled one
        cap = plan.cap(n).tokens
        fields = plan.request_fields(n)
        assert fields == dict(request_fields("openai-compatible", "Qwen3-8B", cap).params)
        roomy = plan.request_fields(n, answer_tokens=64)
        expected = request_fields("openai-compatible", "Qwen3-8B", cap, answer_tokens=64)
        assert roomy == dict(expected.params)
    hosted = plan.request_fields(4, provider="anthropic")
    assert hosted == dict(request_fields("anthropic", "Qwen3-8B", plan.cap(4).tokens).params)


def test_the_plan_records_who_served_the_calibration_and_gives_its_fields(
    tmp_path: Path,
) -> None:
    frame = pd.read_csv(planted(tmp_path / "d.csv", model="Qwen3-8B"))
    frame = frame.assign(provider="openrouter", family="count")
    frame.to_csv(tmp_path / "d.csv", index=False)
    plan = plan_from_calibration(tmp_path / "d.csv", 0.3, sizes=[4], n_bootstrap=0).plan
    assert (plan.provider, plan.family) == ("openrouter", "count")
    loaded = SavedPlan.load(plan.save(tmp_path / "plan.json"))
    assert (loaded.provider, loaded.family) == ("openrouter", "count")
    # OpenRouter's own thinking cap, not an OpenAI-compatible server's plain max_tokens.
    cap = loaded.cap(4).tokens
    fields = loaded.request_fields(4)
    assert fields == dict(request_fields("openrouter", "Qwen3-8B", cap).params)
    assert fields["reasoning"] == {"max_tokens": cap}


def test_a_plan_without_a_provider_loads_and_asks_a_compatible_server(
    result: PlanResult, tmp_path: Path
) -> None:
    path = result.plan.save(tmp_path / "plan.json")
    record = json.loads(path.read_text(encoding="utf-8"))
    del record["provider"], record["family"]
    path.write_text(json.dumps(record), encoding="utf-8")
    old = SavedPlan.load(path)
    assert (old.provider, old.family) == (None, None)
    cap = old.cap(4).tokens
    assert old.request_fields(4) == dict(request_fields("openai-compatible", old.model, cap).params)


def test_request_fields_refuse_what_cap_refuses(result: PlanResult) -> None:
    with pytest.raises(InputError, match="`n`: n = 40 is beyond this plan's reach"):
        result.plan.request_fields(40)
    with pytest.raises(InputError, match="`model`: the plan does not record the model"):
        replace(result.plan, model="").request_fields(4)
    with pytest.raises(InputError, match="`provider`: unknown provider"):
        result.plan.request_fields(4, provider="nowhere")


# --- the plan folder: decided by the library ------------------------------------------------


def test_the_library_decides_what_a_plan_folder_holds(result: PlanResult, tmp_path: Path) -> None:
    written = result.save(tmp_path / "tables")
    assert [p.name for p in written] == [
        "plan.json",
        "plan.csv",
        "constants.csv",
        "laws.csv",
        "certified.csv",
    ]
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == sorted(
        p.name for p in written
    )
    certified = pd.read_csv(tmp_path / "tables" / "certified.csv")
    # One ε certified once: the table, the plan and the result hold the same certificates.
    assert certified["k"].tolist() == [c.k for c in result.certificates]
    assert [c.k for c in result.plan.certificates] == [c.k for c in result.certificates]


def test_charts_are_drawn_in_charts_from_the_results(result: PlanResult, tmp_path: Path) -> None:
    entries = {name for _, name in CHARTS}
    assert {"BudgetPlanner", "PlanResult", "PlanRun"} <= entries
    assert chart(result.planner).to_dict()["$schema"].startswith("https://vega.github.io/")
    assert chart(result).to_dict()["$schema"].startswith("https://vega.github.io/")
    written = result.save(tmp_path, draw=chart)
    assert {"calibration.png", "budget.png"} <= {p.name for p in written}


def test_the_planner_imports_no_charts() -> None:
    import ast

    import cotplan.planner

    folder = Path(cotplan.planner.__file__).parent
    for module in folder.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert not name.startswith(("altair", "cotplan.charts")), (module.name, name)
