"""The k* law at real lengths, end to end at a tiny item count: `cotplan calibrate` with the
auto grid at sizes 10..64 (each size its own grid, sized from the model's own thinking), then
`cotplan plan`'s law verdict over them. The model is the loopback reasoning server made to
think in proportion to n (12n tokens, spread item to item), as a long thinker does on `find`
or `count`; the full run on the long thinker is in docs/long-thinking.md."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.loopback import LoopbackReasoner, arithmetic_items
from cotplan.planner.calibrate import CostUnknownWarning

runner = CliRunner()
SIZES = (10, 16, 24, 40, 64)
TOKENS_PER_STEP = 12


class _GrowingThinker(LoopbackReasoner):
    """Thinks about 12n words on ``What is i + n?`` (its n the second term), the answer
    settling after 40% of them."""

    def _draw(self, question: str) -> tuple[int, int, str]:
        words, settle, answer = super()._draw(question)
        found = re.search(r"What is \d+ \+ (\d+)\?", question)
        n = int(found.group(1)) if found else 8
        scale = TOKENS_PER_STEP * n / self.mean_thinking
        return max(4, round(words * scale)), max(1, round(settle * scale)), answer


def _tasks(path: Path, count: int) -> Path:
    lines = [
        json.dumps({"id": it.id, "prompt": it.prompt, "answer": it.answer, "kind": it.kind,
                    "n": it.n})
        for n in SIZES
        for it in arithmetic_items(count, n=n)
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_the_law_verdict_over_sizes_10_to_64_from_auto_grids(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path / "tasks.jsonl", 6)
    report = tmp_path / "report"
    with _GrowingThinker(mean_thinking=100, spread=0.2) as server:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CostUnknownWarning)  # the loopback has no price
            calibrated = runner.invoke(
                app,
                ["calibrate", "--tasks", str(tasks), "--backend", "openai:loopback-r1",
                 "--base-url", server.base_url, "--protocol", "think", "--no-progress",
                 "--out", str(report)],
            )  # fmt: skip
        assert calibrated.exit_code == 0, calibrated.output
        planned = runner.invoke(
            app, ["plan", "--calibration", str(report / "calibration.csv"), "--eps", "0.2"]
        )
    assert planned.exit_code == 0, planned.output
    frame = pd.read_csv(report / "calibration.csv")
    # Each size got its own grid, topping out near its own thinking (about 12n tokens).
    tops = frame.groupby("n")["k"].max()
    assert sorted(tops.index) == list(SIZES)
    assert all(tops[n] >= 0.9 * TOKENS_PER_STEP * n for n in SIZES)
    assert tops[64] > 4 * tops[10]
    text = " ".join(planned.output.split())
    # The law's verdict in a sentence, with the exponent the paper's law fits over 10..64 and
    # its interval against √n (or its lower end, where the fit sits at the top of its range:
    # these thinking lengths grow like n); a cap for every size, growing with n.
    assert re.search(
        r"Law: .*grows (at least as fast )?as n\^\d+\.\d+ \((95% CI [\d.]+–[\d.]+|its exponent)",
        text,
    ), text
    caps = [int(m) for m in re.findall(r"\b(?:10|16|24|40|64) (\d+) (?:yes|no)\b", text)]
    assert len(caps) == len(SIZES), text
    assert caps == sorted(caps)
    assert caps[-1] > 3 * caps[0]
