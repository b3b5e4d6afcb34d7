"""`cotplan experiment ...` on exact references (fast) and its error paths."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app, main
from cotplan.errors import InputError
from cotplan.research.experiments import exact_predictor

runner = CliRunner()


@pytest.mark.parametrize("command", ["martingale", "order", "entropy", "falck", "debias"])
def test_quick_commands_on_an_exact_reference(command: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / command
    result = runner.invoke(
        app,
        [
            "experiment",
            command,
            "--backend",
            "recency:0.9",
            "--quick",
            "-o",
            str(out),
            "--no-charts",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{command}_vs_paper.csv" in {p.name for p in out.iterdir()}
    assert "saved" in result.output
    # The files hold the run, not just their names: every CSV has rows; the comparison with
    # the paper has a claim, a measurement and a verdict on every row, all of this experiment.
    for path in out.glob("*.csv"):
        assert len(pd.read_csv(path)) > 0, path.name
    versus = pd.read_csv(out / f"{command}_vs_paper.csv")
    assert {"experiment", "claim", "paper", "measured", "verdict"} <= set(versus.columns)
    assert len(versus) >= 3
    assert (versus["experiment"] == command).all()
    assert versus[["claim", "measured", "verdict"]].notna().all().all()


def test_martingale_then_debias_from_the_saved_gaps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    runs = tmp_path / "m"
    first = runner.invoke(
        app, ["experiment", "martingale", "-b", "laplace", "--quick", "-o", str(runs)]
    )
    assert first.exit_code == 0, first.output
    assert (runs / "martingale.png").stat().st_size > 1000
    second = runner.invoke(
        app,
        [
            "experiment",
            "debias",
            "--from",
            str(runs),
            "--quick",
            "-o",
            str(tmp_path / "d"),
            "--no-charts",
        ],
    )
    assert second.exit_code == 0, second.output
    assert (tmp_path / "d" / "debias_summary.csv").exists()


def test_report_command(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(
        app,
        [
            "experiment",
            "report",
            "-b",
            "kt",
            "--quick",
            "--only",
            "order,entropy",
            "-o",
            str(tmp_path),
            "--no-charts",
        ],
    )
    assert result.exit_code == 0, result.output
    text = (tmp_path / "report.md").read_text()
    assert "Reproduction report: KT" in text


def test_exact_predictor_specs() -> None:
    assert exact_predictor("laplace").name == "Laplace"  # type: ignore[union-attr]
    assert exact_predictor("beta:2,3").name == "Beta(2,3)"  # type: ignore[union-attr]
    assert exact_predictor("local") is None
    assert exact_predictor("openai:gpt-4o-mini") is None
    with pytest.raises(InputError, match="`backend`: cannot read"):
        exact_predictor("beta:x")


def test_bad_spec_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["experiment", "order", "-b", "oracle:2", "--quick"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "`p`: must lie in (0, 1)" in err


def test_table_shows_limit_and_verdict(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(
        app,
        ["experiment", "entropy", "-b", "laplace", "--quick", "-o", str(tmp_path), "--no-charts"],
        env={"COLUMNS": "240"},
    )
    assert result.exit_code == 0, result.output
    assert "efficiency 0.9567 at n = 20, 99% first at n = 97" in result.output
    assert "not a model claim: fails" in result.output  # Laplace needs 80 at p = 0.3
    assert "Laplace is the Bayes-optimal predictor" in result.output
