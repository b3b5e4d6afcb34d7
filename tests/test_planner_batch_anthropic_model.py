"""A calibration through Anthropic's Message Batches, by the real `anthropic` SDK, on the real
embedded thinking model, against the live one.

The loopback server (tests/batch_server.py) implements the Message Batches endpoints and runs
each Messages request on the embedded llama.cpp server, the thinking budget of each request as
llama.cpp's own per-request thinking cap; the live calibration goes to the same server's chat
endpoint as it would to Anthropic's OpenAI-compatible one. Two items, two budgets: the
embedded model is slow on a loaded machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from batch_server import BatchServer

from cotplan.backends.local import LocalModel
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.planner.batch import calibrate_batch, service_for
from cotplan.planner.batch_anthropic import AnthropicBatches
from cotplan.planner.calibrate import calibrate
from cotplan.tasks.families import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("parity", n=4, count=2, seed=0)
# Adaptive thinking (Claude 4.6 and later): per request an effort level and `max_tokens` over
# thinking and answer; a budget-form model's 1,024-token minimum is too long a think for the
# embedded model on a loaded machine (its per-request budget: test_planner_batch_anthropic.py).
BUDGETS = [0, 32]
MODEL = "claude-opus-5"


class _Killed(BaseException):
    """Stands for the process dying: nothing after it runs, nothing catches it."""


def _die(seconds: float) -> None:
    raise _Killed


def _backend(server: BatchServer) -> OpenAICompatibleBackend:
    return OpenAICompatibleBackend(
        MODEL,
        base_url=server.base_url,
        api_key="unused",
        provider="anthropic",
        cache=None,
        timeout=600.0,
    )


def _run(server: BatchServer, folder: Path, **options: Any) -> Any:
    backend = _backend(server)
    service = service_for(backend)
    assert isinstance(service, AnthropicBatches)
    return calibrate_batch(
        backend,
        ITEMS,
        BUDGETS,
        mode="hidden",
        folder=folder,
        service=service,
        poll_s=0.05,
        **options,
    )


def test_a_killed_message_batch_run_resumes_to_the_live_table_submitting_nothing_twice(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    with BatchServer(thinking_model.base_url) as server:
        live = calibrate(_backend(server), ITEMS, BUDGETS, mode="hidden", progress=False)
        assert server.live_requests == live.requests > 0
        server.hold()
        with pytest.raises(_Killed):
            _run(server, tmp_path, sleep=_die)
        state = json.loads((tmp_path / "batch" / "state.json").read_text())
        assert server.creates == 1
        assert [b["kind"] for b in state["batches"]] == ["anthropic"]
        # The second window a kill can hit: the batch was created, its id never written down.
        state["batches"][0]["id"] = None
        (tmp_path / "batch" / "state.json").write_text(json.dumps(state))
        server.release()
        result = _run(server, tmp_path)

    assert not server.crashes
    assert result.done
    frame = result.calibration.frame
    assert frame["latency_s"].isna().all()
    pd.testing.assert_frame_equal(
        frame.drop(columns=["latency_s", "cost_usd"]),
        live.frame.drop(columns=["latency_s", "cost_usd"]),
    )
    # Every request submitted once, by the custom_id its batch line carries.
    assert set(server.submitted.values()) == {1}
    assert server.creates == len(result.status.entries)
    # Each budget's request carried its own cap: adaptive thinking, `max_tokens` = budget + 16
    # answer tokens (besides, the answer asked for alone where a cap ate the reply).
    caps = {
        p["max_tokens"]
        for p in server.anthropic_params.values()
        if p.get("thinking", {}).get("type") == "adaptive"
    }
    assert caps == {0 + 16, 32 + 16}
