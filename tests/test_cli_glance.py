"""Answer-first output that fits the terminal: `plan`, `calibrate`, `run` and `demo` at 80 and
120 columns (and in a pipe: CliRunner's output is not a terminal). No number is cut to '…', no
line is wider than the terminal, and `plan` says what a product engineer came for first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from test_report_page import open_in_browser
from typer.testing import CliRunner

from cotplan.cli import app, options, report_folders
from cotplan.planner.calibrate import load_calibration
from cotplan.planner.run import SavedPlan
from cotplan.planner.savings import calibration_savings
from cotplan.render.calibration import print_calibration

runner = CliRunner()
FIXTURE = Path(__file__).parent / "data" / "calibration_three_sizes.csv"


@pytest.fixture
def columns(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> int:
    """The terminal's width for this test: COLUMNS set, and the consoles made to read it at
    print time (as they do in a fresh process)."""
    width = int(request.param)
    monkeypatch.setenv("COLUMNS", str(width))
    for console in (options.console, report_folders.console):
        monkeypatch.setattr(console, "_width", None)
    return width


def fits(text: str, width: int) -> list[str]:
    """The lines of `text`, checked to fit `width` with no number cut short."""
    lines = text.splitlines()
    assert "…" not in text, text
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, "\n".join(too_wide)
    return lines


def calibration_copy(tmp_path: Path) -> Path:
    path = tmp_path / "calibration.csv"
    shutil.copyfile(FIXTURE, path)
    return path


@pytest.mark.parametrize("columns", [80, 120], indirect=True)
def test_plan_prints_the_caps_first_in_a_few_lines(tmp_path: Path, columns: int) -> None:
    calibration = calibration_copy(tmp_path)
    result = runner.invoke(
        app,
        ["plan", "--calibration", str(calibration), "--eps", "0.2", "--n", "4,8,16,32",
         "--bootstrap", "20"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = fits(result.output, columns)
    assert len(lines) <= 40, result.output
    assert lines[0].startswith("Reasoning caps for error ≤ 0.2")
    saved = SavedPlan.load(tmp_path / "plan.json")
    # One number per fact: each size's row holds the cap plan.cap(n) returns, and plan.csv too.
    rows = {line.split()[0]: line.split() for line in lines[3:7]}
    for n in (4, 8, 16, 32):
        cap = saved.cap(n)
        assert rows[str(n)][1] == str(cap.tokens)
        assert rows[str(n)][2] == ("yes" if cap.certified else "no")
    planned = pd.read_csv(tmp_path / "plan.csv").set_index("n")["tokens"]
    assert {n: int(planned[n]) for n in (4, 8, 16, 32)} == {
        n: saved.cap(n).tokens for n in (4, 8, 16, 32)
    }
    text = " ".join(result.output.split())
    for heading in ("Saves:", "Ship it", "Law:", "--details"):
        assert heading in text
    assert f"Ship it (P = {tmp_path / 'plan.json'})" in text
    assert "cotplan serve --plan P --upstream URL" in text
    assert "cotplan.capped(" in text
    # The statistics are one option away, not in the default output.
    assert "Error laws by held-out log-likelihood" not in text


@pytest.mark.parametrize("columns", [80], indirect=True)
def test_plan_details_keep_the_statistics_and_fit(tmp_path: Path, columns: int) -> None:
    calibration = calibration_copy(tmp_path)
    result = runner.invoke(
        app,
        ["plan", "--calibration", str(calibration), "--eps", "0.2", "--bootstrap", "20",
         "--details"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    fits(result.output, columns)
    text = " ".join(result.output.split())
    assert "Error laws by held-out log-likelihood" in text
    assert "Caps to deploy for ε = 0.2" in text
    # The law's table shows k* only: the cap is printed once, as plan.cap(n).
    assert "cap (tokens)" in text  # in the caps table
    assert text.count("cap (tokens)") == 1


@pytest.mark.parametrize("columns", [80, 120], indirect=True)
def test_the_calibration_grid_fits(columns: int, capsys: pytest.CaptureFixture[str]) -> None:
    print_calibration(options.console, load_calibration(FIXTURE))
    out = capsys.readouterr().out
    lines = fits(out, columns)
    assert "n=4" in out
    assert "n=16" in out
    row = next(line for line in lines if line.split()[:1] == ["32"])
    assert len(row.split()) == 1 + 2 * 3  # k, then accuracy and (tokens) per size


@pytest.mark.parametrize("columns", [80], indirect=True)
def test_a_grid_of_many_sizes_is_split_not_cut(
    tmp_path: Path, columns: int, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = pd.read_csv(FIXTURE)
    many = pd.concat(
        [frame.assign(n=frame["n"] * 100 + j, item=frame["item"] + f"-{j}") for j in range(9)]
    )
    path = tmp_path / "many.csv"
    many.to_csv(path, index=False)
    print_calibration(options.console, load_calibration(path))
    out = capsys.readouterr().out
    fits(out, columns)
    for n in sorted(many["n"].unique()):
        assert f"n={n}" in out


def test_savings_are_measured_at_the_budget_above_the_cap() -> None:
    frame = pd.read_csv(FIXTURE)
    savings = calibration_savings(frame, {4: 32, 8: 20})
    assert savings is not None
    rows = savings.to_frame().set_index("n")
    assert rows.loc[4, "at"] == 32
    assert rows.loc[8, "at"] == 32  # a cap of 20 spends at most what k = 32 spent
    at_32 = frame[(frame["k"] == 32) & (frame["n"] == 4)]["reasoning_tokens"].mean()
    assert rows.loc[4, "tokens_at"] == pytest.approx(at_32)
    top = frame[frame["k"] == 128].groupby("n")["reasoning_tokens"].mean()
    expected = 1 - rows["tokens_at"].mean() / top.loc[[4, 8]].mean()
    assert savings.share == pytest.approx(expected)
    assert "at least" in savings.sentence
    assert calibration_savings(frame, {99: 10}) is None


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 120], indirect=True)
def test_demo_and_run_fit_on_the_lab_model(tmp_path: Path, columns: int) -> None:
    pytest.importorskip("torch")
    lab = ["--backend", "lab:parity-overthink", "--no-progress"]
    out = tmp_path / "demo"
    demo = runner.invoke(app, ["demo", "--quick", *lab, "--out", str(out)])
    assert demo.exit_code == 0, demo.output
    fits(demo.output, columns)
    text = " ".join(demo.output.split())
    for heading in ("Reasoning caps for error", "Held-out check", "Projected cost", "Law:"):
        assert heading in text
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") >= 3  # error against budget, tokens saved, spend bands
    assert "Projected cost" in page
    planned = runner.invoke(
        app,
        ["plan", "--calibration", str(out / "calibration.csv"), "--eps", "0.3",
         "--bootstrap", "0"],
    )  # fmt: skip
    assert planned.exit_code == 0, planned.output
    fits(planned.output, columns)
    ran = runner.invoke(
        app,
        ["run", "--plan", str(out / "plan.json"), "--family", "parity", "--count", "2", *lab,
         "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    lines = fits(ran.output, columns)
    assert len(lines) <= 40, ran.output
    assert "Held-out check against ε = 0.3" in ran.output
    assert "Conclusion:" in ran.output
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert page.index("Held-out check") < page.index("<h2>Charts")
    if columns == 120:  # the pages do not depend on the width: opened once
        # The demo's three charts (error against budget, tokens saved, spend bands); the run's
        # error against budget with the caps marked.
        shown = ((out, "Projected cost", 3), (tmp_path / "run", "Held-out check", 1))
        for folder, said, charts in shown:
            dom = open_in_browser(folder / "report.html", tmp_path / folder.name)
            assert dom.count("<svg") >= charts, folder.name  # rendered in the page
            assert said in dom
