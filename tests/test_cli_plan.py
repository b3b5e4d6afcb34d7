"""`cotplan calibrate`, `cotplan plan`, `cotplan run` and `cotplan demo` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app, main
from cotplan.errors import InputError
from cotplan.io.reports import ChartNotSavedWarning
from cotplan.planner.run import SCHEMA_VERSION, SavedPlan
from cotplan.validation import require_ints

runner = CliRunner()


def planted_calibration(path: Path, seed: int = 0) -> Path:
    """Answers drawn from the planner's own model (e0 = 0.1, e_base = 0.9, k0 = 0, c = 3,
    α = 1/2) at sizes 4 and 8: reasoning helps, so the fit has something to find."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in (4, 8):
        for i in range(30):
            for k in (0, 4, 8, 16, 32, 64):
                error = 0.1 + 0.8 * np.exp(-k / (3.0 * np.sqrt(n)))
                rows.append(
                    {"item": f"parity-n{n}-s9-{i:04d}", "n": n, "k": k,
                     "correct": bool(rng.random() >= error)}
                )  # fmt: skip
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_require_ints_accepts_commas_and_repeats() -> None:
    assert require_ints(["4,8", "16"], "n") == [4, 8, 16]
    assert require_ints(None, "n") == []
    with pytest.raises(InputError, match="`n`: must be whole numbers, got 'x'"):
        require_ints(["4,x"], "n")


def test_plan_prints_constants_and_k_star_and_writes_artefacts(tmp_path: Path) -> None:
    calibration = planted_calibration(tmp_path / "calibration.csv")
    result = runner.invoke(
        app,
        ["plan", "--calibration", str(calibration), "--eps", "0.3", "--n", "4,16",
         "--bootstrap", "30", "--details"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "reasoning helps" in result.output
    assert "Fitted constants" in result.output
    # The α = 0 boundary test is printed with its mixture reference.
    assert "for α = 0 against ½χ²₀ + ½χ²₁" in " ".join(result.output.split())
    assert "k* for ε = 0.3" in result.output
    assert "Error laws by held-out log-likelihood" in result.output
    assert "law: paper" in result.output
    assert "Certified budgets" in result.output
    assert "calibration spend: 360 answers of 60 items" in result.output
    saved = SavedPlan.load(tmp_path / "plan.json")
    assert saved.eps == 0.3
    assert saved.sizes_ == (4, 16)
    assert saved.budget(16, 0.3).extrapolated  # 16 is twice the largest calibrated size
    laws = pd.read_csv(tmp_path / "laws.csv")
    assert set(laws["law"]) == {"paper", "paper-half", "logistic", "step", "monotone"}
    certified = pd.read_csv(tmp_path / "certified.csv")
    assert certified["n"].tolist() == [4, 8]
    plan = pd.read_csv(tmp_path / "plan.csv")
    assert plan["n"].tolist() == [4, 16]
    # k* grows with n, and at n = 4 it is near the planted 3 · 2 · ln(0.8 / 0.2) = 8.3.
    assert plan["k_star"].iloc[1] > plan["k_star"].iloc[0]
    assert 4 < plan["k_star"].iloc[0] < 16
    constants = pd.read_csv(tmp_path / "constants.csv")
    assert {"e0", "e_base", "k0", "c", "alpha"} <= set(constants["parameter"])
    assert (tmp_path / "calibration.png").stat().st_size > 1000
    assert (tmp_path / "budget.png").stat().st_size > 1000


def test_plan_lists_only_the_files_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calibration = planted_calibration(tmp_path / "calibration.csv")
    # A chart renderer that fails (as vl-convert can): its PNGs must not be claimed.
    for drawer in ("calibration_chart", "plan_budget_chart"):
        monkeypatch.setattr(f"cotplan.charts.planner.{drawer}", lambda result: _Unrenderable())
    with pytest.warns(ChartNotSavedWarning, match="could not render"):
        result = runner.invoke(
            app,
            ["plan", "--calibration", str(calibration), "--eps", "0.3", "--bootstrap", "0",
             "--details"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    wrote = output[output.index("wrote ") :]
    assert ".png" not in wrote
    assert not list(tmp_path.glob("*.png"))
    for name in ("plan.json", "plan.csv", "constants.csv", "laws.csv", "certified.csv"):
        assert name in wrote
        assert (tmp_path / name).is_file()
    assert "Caps to deploy for ε = 0.3" in output
    record = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"), parse_constant=_bad)
    assert record["schema_version"] == SCHEMA_VERSION
    assert [cap["certified"] for cap in record["caps"]] == [True, True]


class _Unrenderable:
    """A chart whose rendering fails, as vl-convert's can."""

    def save(self, path: str) -> None:
        raise RuntimeError("vl-convert failed")


def _bad(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")


def test_an_unattainable_target_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    calibration = planted_calibration(tmp_path / "calibration.csv")
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "--calibration", str(calibration), "--eps", "0.01", "--bootstrap", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert "unattainable" in err
    assert len(err.strip().splitlines()) <= 2  # one message (rich may wrap it)


def test_calibrate_needs_a_family_or_a_task_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["calibrate", "--n", "4"])
    assert exit_info.value.code == 2
    assert "give exactly one of --family and --tasks" in capsys.readouterr().err


def test_plan_names_a_missing_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    with pytest.raises(SystemExit):
        main(["plan", "--calibration", str(tmp_path / "none.csv"), "--eps", "0.2"])
    assert "`calibration`: no such file" in capsys.readouterr().err


@pytest.mark.model
def test_calibrate_then_run_on_the_embedded_model(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = runner.invoke(
        app,
        ["calibrate", "--family", "parity", "--n", "4", "--count", "2", "--budgets", "0,4",
         "--out", str(out), "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out / "calibration.csv")
    assert len(frame) == 4
    assert sorted(frame["k"].unique()) == [0, 4]
    assert "Calibration: accuracy" in result.output
    assert "requests" in result.output

    planted = planted_calibration(tmp_path / "planted.csv")
    result = runner.invoke(
        app, ["plan", "--calibration", str(planted), "--eps", "0.5", "--bootstrap", "0"]
    )
    assert result.exit_code == 0, result.output
    saved = SavedPlan.load(tmp_path / "plan.json")
    result = runner.invoke(
        app,
        # The planted calibration names no model, so its plan is applied to this one on purpose.
        ["run", "--plan", str(tmp_path / "plan.json"), "--family", "parity", "--n", "4",
         "--count", "2", "--uncapped", "8", "--out", str(out), "--no-progress",
         "--allow-other-model"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # The caps run are the ones the plan file holds (no refit).
    run_plan = pd.read_csv(out / "run_plan.csv")
    assert run_plan["tokens"].tolist() == [min(saved.budget(4, 0.5).tokens, 8)]
    comparison = pd.read_csv(out / "comparison.csv")
    assert comparison["policy"].tolist() == ["planned", "uncapped"]
    assert (comparison["items"] == 2).all()
    assert "Planned vs uncapped" in result.output
    assert (out / "run.csv").exists()


@pytest.mark.model
@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = runner.invoke(
        app,
        ["demo", "--quick", "--count", "4", "--held-out", "1", "--out", str(out),
         "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for heading in ("1. calibrate", "2. plan", "3. run the plan", "4. projected cost"):
        assert heading in result.output
    assert "Law:" in result.output
    assert "what-if" in result.output
    for name in ("calibration.csv", "constants.csv", "run.csv", "comparison.csv", "costs.csv"):
        assert (out / name).exists(), name
    costs = pd.read_csv(out / "costs.csv")
    local = costs[costs["pricing"] == "this model"]
    assert (local["usd_per_query"] == 0.0).all()
    what_if = costs[costs["pricing"] == "what-if"]
    assert (what_if["usd_per_query"] > 0.0).all()
