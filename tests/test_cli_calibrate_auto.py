"""`cotplan calibrate` with the auto grid: the estimate printed before the first request, the
question before a paid backend, and the grid sized from the loopback server's thinking."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.errors import InputError
from cotplan.loopback import LoopbackReasoner, arithmetic_items
from cotplan.planner.calibrate import CostUnknownWarning

runner = CliRunner()


def _tasks(path: Path, count: int) -> Path:
    lines = [
        json.dumps({"id": it.id, "prompt": it.prompt, "answer": it.answer, "kind": it.kind,
                    "n": it.n})
        for it in arithmetic_items(count, n=8)
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibrate_sizes_its_grid_and_says_what_it_will_take(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path / "tasks.jsonl", 12)
    server = LoopbackReasoner(mean_thinking=400).start()
    try:
        # The loopback model has no price: said once, as a warning.
        with pytest.warns(CostUnknownWarning):
            result = runner.invoke(
                app,
                ["calibrate", "--tasks", str(tasks), "--backend", "openai:loopback-r1",
                 "--base-url", server.base_url, "--protocol", "think", "--no-progress",
                 "--out", str(tmp_path / "report")],
            )  # fmt: skip
    finally:
        server.stop()
    requests = server.stats.requests
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "calibration: 12 items at sizes 8; budgets auto" in text
    assert "at most 168 requests (one run per item serves every budget)" in text
    assert "auto grid at n = 8: uncapped thinking over 12 items" in text
    frame = pd.read_csv(tmp_path / "report" / "calibration.csv")
    assert frame["k"].nunique() == 13
    assert requests <= 168


def test_a_paid_backend_is_asked_first_and_nothing_is_sent_on_no(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    tasks = _tasks(tmp_path / "tasks.jsonl", 4)
    result = runner.invoke(
        app,
        ["calibrate", "--tasks", str(tasks), "--backend", "openai:gpt-4o-mini",
         "--budgets", "0,64,256", "--no-progress", "--out", str(tmp_path / "report")],
        input="n\n",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "at most 16 requests" in text
    assert "at most USD" in text
    assert "may charge for these requests. Start?" in text
    assert "not started: no requests sent" in text


def test_eps_needs_the_auto_grid(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path / "tasks.jsonl", 2)
    result = runner.invoke(
        app,
        ["calibrate", "--tasks", str(tasks), "--budgets", "0,8", "--eps", "0.1",
         "--no-progress"],
    )  # fmt: skip
    assert isinstance(result.exception, InputError)
    assert "`eps`: --eps refines the auto grid" in str(result.exception)
