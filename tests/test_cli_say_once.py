"""Said once, and said plainly: `calibrate`'s short-grid note appears one time, and the law's
sentence says when the exponent of n could not be estimated instead of printing a
zero-width interval as if it were certain."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotplan.cli import main
from cotplan.loopback import LoopbackReasoner, arithmetic_items
from cotplan.planner import BudgetPlanner
from cotplan.planner.calibrate import load_calibration
from cotplan.render.plan import law_sentence

FIXTURE = Path(__file__).parent / "data" / "calibration_three_sizes.csv"


def test_a_short_grid_is_noted_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one note, one line
    tasks = tmp_path / "tasks.jsonl"
    lines = [
        json.dumps({"id": it.id, "prompt": it.prompt, "answer": it.answer, "n": it.n})
        for it in arithmetic_items(4, n=8)
    ]
    tasks.write_text("\n".join(lines) + "\n")
    server = LoopbackReasoner(mean_thinking=400).start()
    try:
        with pytest.raises(SystemExit) as stopped:
            main(
                ["calibrate", "--tasks", str(tasks), "--backend", "openai:loopback-r1",
                 "--base-url", server.base_url, "--protocol", "think", "--budgets", "0,8",
                 "--no-progress", "--out", str(tmp_path / "report")]
            )  # fmt: skip
    finally:
        server.stop()
    assert stopped.value.code in (0, None)
    out = capsys.readouterr()
    text = out.out + out.err
    assert text.count("the grid's top k = 8 cut the thinking") == 1, text


def _steep_calibration() -> pd.DataFrame:
    """Error that falls within a few tokens at n = 4 and needs hundreds at n = 16: every
    bootstrap resample puts the exponent of n at the fit's upper bound."""
    rng = np.random.default_rng(0)
    rows = []
    for n, scale in ((4, 4.0), (8, 60.0), (16, 1000.0)):
        for i in range(30):
            for k in (0, 8, 16, 32, 64, 128):
                wrong = 0.9 - 0.8 * (1 - np.exp(-k / scale))
                rows.append({"item": f"n{n}-{i}", "n": n, "k": k, "correct": rng.random() > wrong})
    return pd.DataFrame(rows)


def test_an_exponent_without_spread_is_said_not_estimated() -> None:
    planner = BudgetPlanner(n_bootstrap=30).fit(_steep_calibration())
    alpha = planner.report().constants["alpha"]
    assert f"{alpha.interval.low:.2f}" == f"{alpha.interval.high:.2f}"  # the case at hand
    sentence = law_sentence(planner)
    assert "could not be estimated" in sentence
    assert "95% CI" not in sentence
    assert "n^" not in sentence


def test_an_exponent_with_spread_keeps_its_interval() -> None:
    planner = BudgetPlanner(n_bootstrap=30).fit(load_calibration(FIXTURE).frame)
    alpha = planner.report().constants["alpha"]
    assert f"{alpha.interval.low:.2f}" != f"{alpha.interval.high:.2f}"
    sentence = law_sentence(planner)
    assert "budget grows as n^" in sentence
    assert "95% CI" in sentence
    assert "could not be estimated" not in sentence


def test_an_exponent_at_the_top_of_its_range_is_said_to_be_a_lower_bound() -> None:
    # Budgets growing about as n^1.9 over sizes 2..8 with 12 items a size: the paper law's
    # exponent is fitted at its ceiling of 2 while the bootstrap still spreads below it.
    rng = np.random.default_rng(0)
    rows = []
    for n in (2, 4, 6, 8):
        for i in range(12):
            for k in (0, 4, 8, 16, 32, 64, 128, 256):
                wrong = 0.9 - 0.8 * (1 - np.exp(-k / (2.0 * n**1.9)))
                rows.append({"item": f"n{n}-{i}", "n": n, "k": k, "correct": rng.random() > wrong})
    planner = BudgetPlanner(n_bootstrap=30).fit(pd.DataFrame(rows))
    alpha = planner.report().constants["alpha"]
    assert alpha.value == pytest.approx(2.0)
    assert alpha.interval.low < 1.9
    sentence = law_sentence(planner)
    assert f"grows at least as fast as n^{alpha.interval.low:.2f}" in sentence
    assert "n^2.00" not in sentence
    assert "95% CI" not in sentence
