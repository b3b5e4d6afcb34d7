"""Ctrl-C stops a run: pending requests are cancelled, finished answers are kept, and the same
command resumes from the call cache.

The endpoint is a `ScriptedEndpoint` on 127.0.0.1 that answers a few requests and then hangs
(accepts and never answers), as an overloaded or wedged server does; `cotplan calibrate` runs
as a real subprocess with its default `--timeout` and `--max-retries`, so nothing but the
interrupt can end the hung requests within the test's time.
"""

from __future__ import annotations

import _thread
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt
from cotplan.backends.testing import HangAfter, ScriptedEndpoint, echo_answer

#: Requests the endpoint answers before it hangs.
ANSWERED = 3
#: How long the interrupted process may take to exit (the issue's bound).
EXIT_WITHIN_S = 10.0


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"COTPLAN_DEBUG", "COTPLAN_CACHE", "COTPLAN_KEY_FILE", "OPENAI_API_KEY"}
    }
    return {**env, "COTPLAN_HOME": str(home)}


def _calibrate(url: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cotplan",
        "calibrate",
        "--family",
        "count",
        "--n",
        "3",
        "--count",
        "4",
        "--budgets",
        "0,8",
        "--backend",
        "m",
        "--base-url",
        url,
        "--concurrency",
        "2",
        "--no-progress",
        "--out",
        str(out),
    ]


def _ctrl_c_as_in_a_terminal() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow  # two interpreter starts and a full calibration
def test_ctrl_c_stops_calibrate_against_a_hung_endpoint_and_the_rerun_resumes(
    tmp_path: Path,
) -> None:
    hang = HangAfter(ANSWERED)
    env = _env(tmp_path / "home")
    out = tmp_path / "report"
    with ScriptedEndpoint(hang) as endpoint:
        try:
            process = subprocess.Popen(
                _calibrate(endpoint.base_url, out),
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                # As a terminal starts it: Ctrl-C neither ignored nor blocked, whatever an
                # earlier test in this process left behind (children inherit both).
                preexec_fn=_ctrl_c_as_in_a_terminal,
            )
            # Both workers stuck on a hung request: the run can go no further on its own.
            # (Generous: a cold interpreter imports for seconds on a busy machine.)
            assert _wait_for(lambda: hang.hung >= 2, 120.0), "the run never reached the hang"
            before = endpoint.requests
            process.send_signal(signal.SIGINT)
            try:
                _, stderr = process.communicate(timeout=EXIT_WITHIN_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                pytest.fail(f"still running {EXIT_WITHIN_S:g} s after Ctrl-C")
            time.sleep(1.0)  # a request sent just before the exit would have arrived by now
            assert process.returncode == 130, stderr
            assert endpoint.requests == before, "requests were sent after Ctrl-C"
            message = " ".join(stderr.split())
            assert "Run the same command again to resume" in message, message
            assert "Traceback" not in stderr
            assert not out.exists(), "an interrupted run left a partial report folder"

            # Healed, the same command pays only for what did not finish.
            endpoint.answer = echo_answer
            hang.release()
            rerun = subprocess.run(
                _calibrate(endpoint.base_url, out),
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=180,
            )
        finally:
            hang.release()
    assert rerun.returncode == 0, rerun.stderr
    counts = re.search(r"(\d+) requests, (\d+) answered by the call cache", rerun.stdout)
    assert counts is not None, rerun.stdout
    assert int(counts.group(2)) == ANSWERED
    assert (out / "calibration.csv").is_file()


class _Slow(Backend):
    """A backend that only maps: `started` lists the items whose call began."""

    model = "slow"

    def __init__(self) -> None:
        self.started: list[int] = []

    def generate(self, prompt: Prompt, *, max_tokens: int, **options: Any) -> Completion:
        raise NotImplementedError

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


def test_map_raises_the_earliest_failure_and_starts_nothing_after_it() -> None:
    backend = _Slow()

    def call(item: int) -> int:
        backend.started.append(item)
        if item == 1:
            raise ValueError("item 1 failed")
        time.sleep(0.05)
        return item * 10

    with pytest.raises(ValueError, match="item 1"):
        backend.map(call, range(40), concurrency=2)
    assert len(backend.started) < 40  # the failure stopped the rest from starting
    assert backend.map(lambda item: item * 10, range(9), concurrency=3) == [
        item * 10 for item in range(9)
    ]


def test_map_returns_at_once_on_keyboard_interrupt() -> None:
    """The caller's Ctrl-C does not wait for running calls; pending ones never start."""
    backend = _Slow()
    release = threading.Event()
    finished: list[int] = []

    def call(item: int) -> int:
        backend.started.append(item)
        release.wait(60)
        finished.append(item)
        return item

    def interrupt() -> None:
        time.sleep(0.3)
        _thread.interrupt_main()  # what Ctrl-C does to the main thread

    # Ctrl-C as Python handles it by default, whatever a library imported earlier set.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            backend.map(call, range(10), concurrency=2)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert finished == []  # map returned while both calls still ran: it did not wait for them
    release.set()
    time.sleep(0.2)
    assert sorted(backend.started) == [0, 1]  # the two running calls; nothing pending started


def test_timeout_and_retries_reach_the_client_and_bound_a_hung_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--timeout 1 --max-retries 1`: a hung endpoint costs two attempts of about a second,
    not the SDK's 60 s x 5, and the command ends with one error line."""
    from cotplan.cli import main

    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    hang = HangAfter(0)
    with ScriptedEndpoint(hang) as endpoint:
        argv = _calibrate(endpoint.base_url, tmp_path / "report")[3:]
        argv[argv.index("--count") + 1] = "1"
        argv[argv.index("--budgets") + 1] = "0"
        try:
            with pytest.raises(SystemExit) as exit_info:
                main([*argv, "--timeout", "1", "--max-retries", "1"])
        finally:
            hang.release()
    assert exit_info.value.code == 2
    assert endpoint.requests == 2  # the first attempt and one retry, then the error
    assert "did not answer in time" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "report").exists()
