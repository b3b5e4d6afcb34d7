"""A calibration of a Responses API model (`/v1/responses`) through OpenAI's Batch API, on the
real embedded thinking model, against the live one: the hidden reasoning is read from each
answer's ``usage.output_tokens_details.reasoning_tokens`` as the live client reads it.

The loopback server (tests/batch_server.py) answers ``/v1/responses`` live and as batch lines
on the same llama.cpp server. Two items, two budgets: the embedded model is slow on a loaded
machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from batch_server import BatchServer

from cotplan.backends.local import LocalModel
from cotplan.backends.responses import OpenAIResponsesBackend
from cotplan.planner.batch import calibrate_batch, service_for
from cotplan.planner.calibrate import calibrate
from cotplan.tasks.families import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("parity", n=4, count=2, seed=0)
BUDGETS = [0, 32]


def test_responses_requests_go_in_batch_lines_and_give_the_live_table(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    with BatchServer(thinking_model.base_url) as server:
        backend = OpenAIResponsesBackend(
            "o4-mini", base_url=server.base_url, api_key="unused", timeout=600.0
        )
        live = calibrate(backend, ITEMS, BUDGETS, mode="hidden", progress=False)
        assert server.live_requests == live.requests > 0
        result = calibrate_batch(
            backend,
            ITEMS,
            BUDGETS,
            mode="hidden",
            folder=tmp_path,
            service=service_for(backend),
            poll_s=0.05,
        )
        lines = [
            json.loads(line)
            for line in (tmp_path / "batch" / "input-001.jsonl").read_text().splitlines()
        ]

    assert not server.crashes
    assert result.done
    assert {line["url"] for line in lines} == {"/v1/responses"}
    assert all("max_output_tokens" in line["body"] for line in lines)
    frame = result.calibration.frame
    assert frame["latency_s"].isna().all()
    assert frame["reasoning_tokens"].sum() > 0
    pd.testing.assert_frame_equal(
        frame.drop(columns=["latency_s", "cost_usd"]),
        live.frame.drop(columns=["latency_s", "cost_usd"]),
    )
    # At batch rates: half of o4-mini's live price, row by row.
    ratio = frame["cost_usd"] / live.frame["cost_usd"]
    assert ratio.round(6).eq(0.5).all()
    assert set(server.submitted.values()) == {1}
