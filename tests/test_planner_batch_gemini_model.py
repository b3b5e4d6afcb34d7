"""A calibration through Gemini's Batch Mode, by the real `google-genai` SDK, on the real
embedded thinking model, against the live one.

The loopback server (tests/gemini_batch_server.py) implements the Batch Mode endpoints and runs
each GenerateContent request on the embedded llama.cpp server, each request's thinking budget
as llama.cpp's own per-request thinking cap; the live calibration goes to the same server's
OpenAI-compatible endpoint, as it would to Gemini's. Two items, two budgets: the embedded
model is slow on a loaded machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("google.genai")

from gemini_batch_server import GeminiBatchServer

from cotplan.backends.local import LocalModel
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.planner.batch import calibrate_batch, service_for
from cotplan.planner.batch_gemini import GeminiBatches
from cotplan.planner.calibrate import calibrate
from cotplan.tasks.families import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("parity", n=4, count=2, seed=0)
BUDGETS = [0, 32]
MODEL = "gemini-2.5-flash"


class _Killed(BaseException):
    """Stands for the process dying: nothing after it runs, nothing catches it."""


def _die(seconds: float) -> None:
    raise _Killed


def _backend(server: GeminiBatchServer) -> OpenAICompatibleBackend:
    return OpenAICompatibleBackend(
        MODEL,
        base_url=server.base_url,
        api_key="unused",
        provider="google",
        cache=None,
        timeout=600.0,
    )


def _run(server: GeminiBatchServer, folder: Path, **options: Any) -> Any:
    backend = _backend(server)
    service = service_for(backend)
    assert isinstance(service, GeminiBatches)
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


def test_a_killed_gemini_batch_run_resumes_to_the_live_table_submitting_nothing_twice(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    first = tmp_path / "killed"
    with GeminiBatchServer(thinking_model.base_url) as server:
        live = calibrate(_backend(server), ITEMS, BUDGETS, mode="hidden", progress=False)
        assert server.live_requests == live.requests > 0
        server.hold()
        with pytest.raises(_Killed):
            _run(server, first, sleep=_die)
        state = json.loads((first / "batch" / "state.json").read_text())
        assert server.creates == 1
        assert [b["kind"] for b in state["batches"]] == ["gemini"]
        # The second window a kill can hit: the batch was created, its name never written down.
        state["batches"][0]["id"] = None
        (first / "batch" / "state.json").write_text(json.dumps(state))
        server.release()
        result = _run(server, first)

    assert not server.crashes
    assert result.done
    frame = result.calibration.frame
    assert frame["latency_s"].isna().all()
    pd.testing.assert_frame_equal(
        frame.drop(columns=["latency_s", "cost_usd"]),
        live.frame.drop(columns=["latency_s", "cost_usd"]),
    )
    # Every request submitted once, by the custom_id its inline request's metadata carries.
    assert set(server.submitted.values()) == {1}
    assert server.creates == len(result.status.entries) == 1
    # Each budget's request carried its own thinking budget and cap (budget + 16 answer tokens).
    configs = {
        (c["thinkingConfig"]["thinkingBudget"], c["maxOutputTokens"])
        for c in (r["generationConfig"] for r in server.generate_requests.values())
    }
    assert configs == {(0, 16), (32, 48)}


def test_a_partly_failed_gemini_batch_is_asked_again_and_nothing_is_lost(
    thinking_model: LocalModel, tmp_path: Path
) -> None:
    failing: set[str] = set()

    def fail(custom_id: str) -> bool:
        # The first request the server sees fails once (Gemini's per-request error).
        if not failing:
            failing.add(custom_id)
        return custom_id in failing

    with GeminiBatchServer(thinking_model.base_url, fail=fail) as server:
        result = _run(server, tmp_path)
    assert not server.crashes
    assert result.done
    (bad,) = failing
    # The failed request went into a follow-up batch, the others were submitted once.
    assert server.submitted[bad] == 2
    assert {n for cid, n in server.submitted.items() if cid != bad} == {1}
    assert server.creates == 2
    failures = (tmp_path / "batch" / "failures.jsonl").read_text()
    assert bad in failures
    assert "injected" in failures
    assert len(result.calibration.frame) == len(ITEMS) * len(BUDGETS)
