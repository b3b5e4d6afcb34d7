"""`cotplan plan --exit certified` and `cotplan run --exit certified` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_planner_early_exit import _frame
from typer.testing import CliRunner

from cotplan.cli import app, main
from cotplan.generate.probing import StoppingRule
from cotplan.planner.early_exit import certify_early_exit
from cotplan.planner.exit_plan import load_exit_plan
from cotplan.planner.plan_result import plan_from_calibration
from cotplan.planner.run import SavedPlan

runner = CliRunner()


def planted_calibration(path: Path) -> Path:
    """Answers from the planner's own model (as in test_cli_plan.py), without forced answers."""
    rng = np.random.default_rng(0)
    rows = [
        {"item": f"parity-n{n}-s9-{i:04d}", "n": n, "k": k,
         "correct": bool(rng.random() >= 0.1 + 0.8 * np.exp(-k / (3.0 * np.sqrt(n))))}
        for n in (4, 8) for i in range(30) for k in (0, 4, 8, 16, 32, 64)
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def one_line_error(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    # One message (rich wraps it at the terminal's width), no traceback.
    assert err.startswith("error:")
    assert err.count("error:") == 1
    assert "Traceback" not in err
    return " ".join(err.split())


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_bad_exit_is_refused_naming_the_option(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Neither file exists: the option is refused before anything is read or started.
    args = (
        ["plan", "--calibration", str(tmp_path / "none.csv"), "--eps", "0.2"]
        if command == "plan"
        else ["run", "--plan", str(tmp_path / "plan.json"), "--family", "parity", "--n", "4"]
    )
    err = one_line_error([*args, "--exit", "maybe"], capsys, monkeypatch)
    assert "`exit`: must be one of none, certified, got 'maybe'" in err


def test_a_bad_probe_interval_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calibration = planted_calibration(tmp_path / "calibration.csv")
    args = ["plan", "--calibration", str(calibration), "--eps", "0.5", "--bootstrap", "0"]
    err = one_line_error([*args, "--exit", "certified", "--probe-every", "0"], capsys, monkeypatch)
    assert "`probe_every`" in err
    assert not (tmp_path / "plan.json").exists()


def test_a_calibration_without_forced_answers_writes_the_plan_but_no_exit(
    tmp_path: Path,
) -> None:
    calibration = planted_calibration(tmp_path / "calibration.csv")
    result = runner.invoke(
        app,
        ["plan", "--calibration", str(calibration), "--eps", "0.5", "--bootstrap", "0",
         "--exit", "certified"],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "no exit plan written" in result.output
    assert "missing column(s) extracted" in " ".join(result.output.split())
    assert (tmp_path / "plan.json").exists()
    assert not (tmp_path / "exit.json").exists()


def test_run_refuses_a_missing_exit_plan_before_the_model_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calibration = planted_calibration(tmp_path / "calibration.csv")
    main_ok(["plan", "--calibration", str(calibration), "--eps", "0.5", "--bootstrap", "0"])
    plan = tmp_path / "plan.json"
    # A backend that cannot start here: reaching it would be a different error.
    run = ["run", "--plan", str(plan), "--family", "parity", "--n", "4",
           "--backend", "openai:no-such-model", "--allow-other-model"]  # fmt: skip
    err = one_line_error([*run, "--exit", "certified"], capsys, monkeypatch)
    assert f"`exit_plan`: no exit plan at {tmp_path / 'exit.json'}" in err
    err = one_line_error([*run, "--exit-plan", str(plan)], capsys, monkeypatch)
    assert "`exit_plan`: is read only with --exit certified" in err


@pytest.mark.torch
@pytest.mark.slow
def test_plan_and_run_with_a_certified_exit_on_the_lab_model(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    lab = ["--backend", "lab:parity-overthink", "--n", "8", "--no-progress"]
    cal = tmp_path / "cal"
    main_ok(["calibrate", "--family", "parity", *lab, "--count", "16",
             "--budgets", "0,4,8,12,16,20,24,28,32,40", "--out", str(cal)])  # fmt: skip
    main_ok(["plan", "--calibration", str(cal / "calibration.csv"), "--eps", "0.3",
             "--bootstrap", "0", "--exit", "certified", "--probe-every", "4"])  # fmt: skip
    saved = SavedPlan.load(cal / "plan.json")
    made = load_exit_plan(cal / "exit.json")
    assert made.eps == saved.eps
    assert made.model == saved.model
    # The exit's ceiling is the plan's certified cap.
    assert made.sizes[8].ceiling == saved.cap(8).tokens
    assert made.sizes[8].every == 4

    # A rule that always probes (whatever this small calibration certified), to see probes
    # counted: it needs two probes, so every item pays at least one probe's answer.
    data = made.to_dict()
    data["sizes"]["8"]["rule"] = {"agree": 2, "min_prob": None}
    probing = tmp_path / "probing.json"
    probing.write_text(json.dumps(data))
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        ["run", "--plan", str(cal / "plan.json"), "--family", "parity", *lab, "--count", "4",
         "--seed", "3", "--uncapped", "64", "--allow-other-model", "--exit", "certified",
         "--exit-plan", str(probing), "--out", str(out)],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "certified exit on 4 of 4 items" in text
    assert "probe tokens" in text
    exited = pd.read_csv(out / "run_exit.csv")
    assert (exited["probe_answer_tokens"] >= 1).all()
    assert (exited["thinking_tokens"] <= made.sizes[8].ceiling).all()
    comparison = pd.read_csv(out / "comparison.csv")
    assert comparison["policy"].tolist() == ["planned", "fixed cap", "uncapped"]
    rows = pd.read_csv(out / "run.csv")
    planned = rows[rows["policy"] == "planned"].set_index("item")
    # Probe answers count as reasoning spent.
    spent = exited.set_index("item")
    assert (
        planned["reasoning_tokens"] == spent["thinking_tokens"] + spent["probe_answer_tokens"]
    ).all()


def main_ok(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def test_exit_family_is_checked_first_and_reaches_the_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No calibration file: the option is refused before anything is read.
    args = ["plan", "--calibration", str(tmp_path / "none.csv"), "--eps", "0.2"]
    err = one_line_error(
        [*args, "--exit", "certified", "--exit-family", "vibes"], capsys, monkeypatch
    )
    assert "`exit_family`: must be one of auto, agreement, confidence, both, all" in err
    err = one_line_error([*args, "--exit-family", "all"], capsys, monkeypatch)
    assert "`exit_family`: is read only with --exit certified" in err

    frame = pd.concat([_frame(120, seed=21, n=8), _frame(120, seed=22, n=16)])
    calibration = tmp_path / "calibration.csv"
    frame.to_csv(calibration, index=False)
    for family in ("all", "agreement"):
        result = plan_from_calibration(
            calibration, 0.1, delta=0.1, n_bootstrap=0, exit="certified",
            exit_family=family, probe_every=4,
        )  # fmt: skip
        assert result.exit is not None, result.exit_note
        ceilings = {n: rule.ceiling for n, rule in result.exit.sizes.items()}
        direct = certify_early_exit(
            frame, 0.1, delta=0.1, ceilings=ceilings, every=4, family=family
        )
        for n in ceilings:
            assert result.exit.rule_at(n).rule == (direct.rule_at(n) or StoppingRule())
