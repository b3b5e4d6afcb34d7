"""How the command line ends: a debug traceback that shows no key, one line for a bug, and
SIGTERM handled as Ctrl-C is (a message, the resume hint, 128 + the signal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cotplan.backends.testing import HangAfter, ScriptedEndpoint
from cotplan.cli import main

#: A key of no known shape: only the process's own knowledge of it can mask it.
CANARY = "canary7f3a9c1e5b2d4f60a8e1"


def _echoes_the_key(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    # An upstream that quotes the credentials it was sent back in its error body.
    return 401, {"error": {"message": f"invalid key {CANARY} (header X-Key: {CANARY})"}}


def _calibrate(url: str, out: Path) -> list[str]:
    return [
        "calibrate",
        "--family",
        "count",
        "--n",
        "3",
        "--count",
        "1",
        "--budgets",
        "0",
        "--backend",
        "m",
        "--base-url",
        url,
        "--max-retries",
        "0",
        "--no-progress",
        "--out",
        str(out),
    ]


def test_the_debug_traceback_masks_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COTPLAN_CACHE", "off")
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("COTPLAN_DEBUG", "1")
    with ScriptedEndpoint(_echoes_the_key) as endpoint, pytest.raises(SystemExit) as info:
        main(_calibrate(endpoint.base_url, tmp_path / "out"))
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "Traceback" in err
    assert "401" in err
    assert CANARY not in err


def test_a_bug_is_one_line_without_debug_and_a_masked_traceback_with_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import cotplan.cli as cli

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"upstream said Authorization: Bearer {CANARY}")

    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setattr(cli, "app", broken)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    # In-process the bug propagates as it is; the process's last word is the hook's.
    with pytest.raises(RuntimeError) as info:
        main(["anything"])
    assert sys.excepthook is not sys.__excepthook__
    sys.excepthook(RuntimeError, info.value, info.value.__traceback__)
    err = capsys.readouterr().err
    assert err.startswith("error: internal error: RuntimeError")
    assert "Traceback" not in err
    assert CANARY not in err
    monkeypatch.setenv("COTPLAN_DEBUG", "1")
    sys.excepthook(RuntimeError, info.value, info.value.__traceback__)
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "Bearer ***" in err
    assert CANARY not in err


@pytest.mark.slow  # one interpreter start
def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path: Path) -> None:
    hang = HangAfter(0)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"COTPLAN_DEBUG", "COTPLAN_KEY_FILE", "OPENAI_API_KEY"}
    }
    env |= {"COTPLAN_HOME": str(tmp_path / "home"), "COTPLAN_CACHE": "off"}
    out = tmp_path / "report"
    with ScriptedEndpoint(hang) as endpoint:
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "cotplan", *_calibrate(endpoint.base_url, out)],
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            deadline = time.monotonic() + 120
            while hang.hung < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert hang.hung >= 1, "the run never reached the hung endpoint"
            process.send_signal(signal.SIGTERM)
            try:
                _, stderr = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                pytest.fail("still running 30 s after SIGTERM")
        finally:
            hang.release()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    message = " ".join(stderr.split())
    assert "interrupted" in message
    assert "Run the same command again to resume" in message
    assert "Traceback" not in stderr
    assert not out.exists()


def test_a_full_disk_names_the_file_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from cotplan import io

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as the kernel says it

    monkeypatch.setattr(io.os, "fsync", full)
    target = tmp_path / "report" / "calibration.csv"
    with pytest.raises(OSError, match="No space left on device") as info:
        io.write_text(target, "item,n,k,correct\n")
    assert info.value.filename == str(target)  # before: None, so `[Errno 28]` named no file
    assert not list(target.parent.iterdir())  # no temporary file left behind
    # Through the CLI: one line that names the file.
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["tasks", "make", "count", "--n", "3", "--out", str(tmp_path / "tasks.jsonl")])
    err = " ".join(capsys.readouterr().err.split())
    assert exited.value.code == 1
    assert err.startswith("error: No space left on device:")
    assert "tasks.jsonl" in err
