"""What no option check catches still ends in one line, never a traceback: a folder or file the
user named that cannot be used, bytes that are not UTF-8, a number past what floats hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from cotplan.cli import main


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return int(info.value.code or 0), " ".join(err.split())


def test_a_file_where_a_folder_goes_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    (tmp_path / "afile").write_text("hi\n")
    code, err = _fails(["cost", "prices", "--csv", str(tmp_path / "afile" / "x.csv")], capsys)
    assert code == 1
    assert err.startswith("error: ")
    assert "afile" in err


def test_a_file_that_is_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    profile = tmp_path / "hours.csv"
    profile.write_bytes(b"\xff\xfehour,share\n")
    argv = ["cost", "project", "gpt-6.2-sol", "--queries-per-day", "1000", "--prompt-mean"]
    argv += ["500", "--output-mean", "200", "--draws", "1000", "--hour-profile", str(profile)]
    code, err = _fails(argv, capsys)
    assert code in (1, 2)
    assert err.startswith("error: ")


def test_a_negative_experiment_seed_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["experiment", "martingale", "-b", "mle", "--quick", "--no-charts", "--seed", "-1"]
    code, err = _fails(argv, capsys)
    assert code == 2
    assert "--seed" in err
