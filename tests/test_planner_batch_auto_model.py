"""The auto grid through batch files: a first batch round of uncapped runs (each size's pilot
items) sizes the grid, then the budget round is written; the table is the live auto-grid
calibration's, on the real embedded thinking model with hidden reasoning. The uncapped runs
are capped at 48 tokens: the embedded model is slow on a loaded machine."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from batch_server import BatchServer

from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.planner.batch import calibrate_batch
from cotplan.planner.batch_providers import OpenAIBatches
from cotplan.planner.calibrate import calibrate
from cotplan.tasks.families import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("parity", n=4, count=2, seed=0)
OPTIONS = {"mode": "hidden", "uncapped_tokens": 48, "pilot": 1}


def test_the_auto_grid_takes_a_pilot_round_then_gives_the_live_table(
    thinking_model: LocalModel, thinking_backend: LocalBackend, tmp_path: Path
) -> None:
    live = calibrate(thinking_backend, ITEMS, "auto", progress=False, **OPTIONS)
    with BatchServer(thinking_model.base_url) as server:
        result = calibrate_batch(
            thinking_model.backend(cache=None, base_url=server.base_url),
            ITEMS,
            "auto",
            folder=tmp_path,
            service=OpenAIBatches(base_url=server.base_url, api_key="none"),
            poll_s=0.05,
            **OPTIONS,
        )
    assert not server.crashes
    assert result.done
    # The pilot's batch first (one item of the one size), then the budget round.
    assert result.status.entries[0].requests == 1
    assert len(result.status.entries) >= 2
    assert set(server.submitted.values()) == {1}
    assert [p.budgets for p in result.calibration.thinking] == [p.budgets for p in live.thinking]
    frame = result.calibration.frame
    pd.testing.assert_frame_equal(
        frame.drop(columns="latency_s"), live.frame.drop(columns="latency_s")
    )
