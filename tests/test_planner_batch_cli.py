"""`cotplan calibrate --batch-file`, `--batch-output` and `--status` through the real CLI.

Nothing is sent: the batch file is written for an executor, and the executor's output file is
written here by hand in OpenAI's documented line format (the double: what a provider returns).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app

runner = CliRunner()
ARGS = [
    "calibrate",
    "--backend",
    "openai:o4-mini",
    "--family",
    "parity",
    "--n",
    "8",
    "--count",
    "2",
    "--budgets",
    "0,256",
]


@pytest.mark.clock("2026-12-01")
def test_batch_files_are_written_priced_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-sent")
    out = tmp_path / "report"
    first = runner.invoke(app, [*ARGS, "--batch-file", "--out", str(out)])
    assert first.exit_code == 0, first.output
    text = " ".join(first.output.split())
    assert "expected cost: 4 requests to o4-mini" in text
    assert "at batch rates (USD" in text
    lines = [json.loads(line) for line in (out / "batch" / "input-001.jsonl").open()]
    assert len(lines) == 4
    assert {line["url"] for line in lines} == {"/v1/chat/completions"}
    assert all(line["body"]["model"] == "o4-mini" for line in lines)
    assert not (out / "calibration.csv").exists()

    status = runner.invoke(app, ["calibrate", "--status", str(out)])
    assert status.exit_code == 0, status.output
    assert "4 request(s) in batches not yet read back" in " ".join(status.output.split())

    answers = tmp_path / "executor-output.jsonl"
    answers.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"r{i}",
                    "custom_id": line["custom_id"],
                    "response": {
                        "status_code": 200,
                        "body": {
                            "choices": [
                                {
                                    "message": {"role": "assistant", "content": "Answer: 1"},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": 40,
                                "completion_tokens": 20,
                                "completion_tokens_details": {"reasoning_tokens": 16},
                            },
                        },
                    },
                    "error": None,
                }
            )
            + "\n"
            for i, line in enumerate(lines)
        )
    )
    second = runner.invoke(
        app, [*ARGS, "--batch-file", "--out", str(out), "--batch-output", str(answers)]
    )
    assert second.exit_code == 0, second.output
    text = " ".join(second.output.split())
    assert "batch spend: 4 requests, 0 from the cache" in text
    assert "at live rates" in text
    frame = pd.read_csv(out / "calibration.csv")
    assert len(frame) == 4
    assert (frame["reasoning_tokens"] == 16).all()
    assert frame["latency_s"].isna().all()
    # o4-mini's batch price is half its list price, row by row.
    live = 40 * 1.10e-6 + 20 * 4.40e-6
    assert frame["cost_usd"].tolist() == pytest.approx([live / 2] * 4)


def test_the_batch_options_are_checked_before_anything_starts(tmp_path: Path) -> None:
    no_out = runner.invoke(app, [*ARGS, "--batch"])
    assert no_out.exit_code != 0
    assert "--out" in " ".join(str(no_out.exception).split()) + no_out.output
    both = runner.invoke(app, [*ARGS, "--batch", "--batch-file", "--out", str(tmp_path)])
    assert both.exit_code != 0
    assert "one of --batch and --batch-file" in str(both.exception) + both.output
    none = runner.invoke(app, ["calibrate", "--status", str(tmp_path / "nothing")])
    assert none.exit_code != 0
    assert "holds no batch calibration" in str(none.exception) + none.output
    refine = runner.invoke(
        app, [*ARGS, "--budgets", "auto", "--eps", "0.1", "--batch", "--out", str(tmp_path)]
    )
    assert refine.exit_code != 0
    assert "--eps is not available on the batch path" in str(refine.exception) + refine.output
