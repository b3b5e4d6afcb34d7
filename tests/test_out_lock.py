"""One run per report folder: a second run naming the same `--out` is refused before it starts
a model (before, both ran and the second replaced the first's calibration); the lock dies with
a killed run; staging folders killed runs left are removed by the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cotplan.cli import main
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.errors import InputError
from cotplan.io.folder_lock import lock_folder, unlock_folder


def test_a_second_run_into_the_same_folder_is_refused_until_the_first_is_done(
    tmp_path: Path,
) -> None:
    out = tmp_path / "report"
    first = start_report(out, command="calibrate")
    (first.path / "calibration.csv").write_text("item,n,k,correct\n")
    with pytest.raises(InputError, match=r"`out`: .*being written by another cotplan run") as info:
        start_report(out, command="calibrate")
    assert f"process {os.getpid()}" in str(info.value)
    assert first.path.is_dir()  # the refused run left the first one's staging alone
    finish_report(first)
    assert (out / "calibration.csv").is_file()
    second = start_report(out, command="calibrate")  # free again
    second.discard()
    third = start_report(out, command="calibrate")
    third.discard()
    assert not list(tmp_path.glob(".report.lock"))


def test_calibrate_into_a_folder_in_use_is_one_line_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    out = tmp_path / "report"
    held = lock_folder(out)
    try:
        argv = ["calibrate", "--family", "count", "--n", "3", "--count", "1", "--budgets", "0"]
        argv += ["--backend", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-progress"]
        with pytest.raises(SystemExit) as info:
            main([*argv, "--out", str(out)])
    finally:
        unlock_folder(out, held)
    err = " ".join(capsys.readouterr().err.split())
    assert info.value.code == 2
    assert err.startswith("error: `out`:")
    assert "another cotplan run" in err
    assert not out.exists()


def test_a_killed_run_frees_the_folder_and_its_staging_is_removed(tmp_path: Path) -> None:
    out = tmp_path / "report"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from cotplan.cli.report_folders import start_report; "
            f"r = start_report(Path({str(out)!r})); print(r.path, flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout is not None
        staging = Path(holder.stdout.readline().strip())
        assert staging.is_dir()
        with pytest.raises(InputError, match="another cotplan run"):
            start_report(out)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        holder.kill()
    time.sleep(0.1)
    report = start_report(out)  # the kernel dropped the killed run's lock
    assert not staging.exists()  # its empty staging folder is gone
    assert [p.name for p in tmp_path.glob(".report.partial-*")] == [report.path.name]
    report.discard()
    assert not list(tmp_path.glob(".report.partial-*"))
