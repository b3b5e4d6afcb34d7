"""The experiment commands and the reproduction take their report folder's lock as calibrate
does: a second run naming a folder in use is refused before it starts anything (before, the
two ran side by side and the later one's files replaced the earlier one's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_reproduce import FakeRunner, _fake_steps

from cotplan.cli import main
from cotplan.errors import InputError
from cotplan.io.folder_lock import folder_locked, lock_folder, unlock_folder
from cotplan.research.reproduce_plan import plan_reproduction, run_plan


@pytest.mark.parametrize("name", ["martingale", "order", "entropy"])
def test_an_experiment_into_a_folder_in_use_is_one_line_before_it_starts(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    out = tmp_path / "report"
    held = lock_folder(out)
    try:
        with pytest.raises(SystemExit) as info:
            main(["experiment", name, "--quick", "-b", "laplace", "--out", str(out)])
    finally:
        unlock_folder(out, held)
    err = " ".join(capsys.readouterr().err.split())
    assert info.value.code == 2
    assert err.startswith("error: `out`:"), err
    assert "another cotplan run" in err
    assert not out.exists()
    assert not list(tmp_path.glob(".report.partial-*"))


def test_a_reproduction_into_a_folder_in_use_is_refused_before_any_step(tmp_path: Path) -> None:
    out = tmp_path / "repro"
    runner = FakeRunner()
    plan = plan_reproduction("quick", "laplace", out, steps=_fake_steps())
    with folder_locked(out), pytest.raises(InputError, match=r"`out`: .*another cotplan run"):
        run_plan(plan, runner)
    assert runner.calls == []
    # Free again once the holder is done; the lock's file goes with it.
    written = run_plan(plan, runner)
    assert [call[1] for call in runner.calls] == ["a", "b"]
    assert all(path.is_file() for path in written)
    assert not list(tmp_path.glob(".repro.lock"))


def test_the_lock_removes_staging_folders_a_killed_run_left(tmp_path: Path) -> None:
    out = tmp_path / "report"
    leftover = tmp_path / ".report.partial-abc123"
    leftover.mkdir()
    with folder_locked(out):
        assert not leftover.exists()
