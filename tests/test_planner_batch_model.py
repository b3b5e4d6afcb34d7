"""A calibration through batch files, on the real embedded thinking model, against the live one.

The batches go through the real `openai` SDK to a loopback server implementing OpenAI's batch
endpoints (tests/batch_server.py), which runs them on the same llama.cpp server the live
calibration uses. The calibrations are kept to two items and two budgets: the embedded model
is slow on a loaded machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from batch_server import BatchServer

from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.planner.batch import calibrate_batch
from cotplan.planner.batch_providers import OpenAIBatches
from cotplan.planner.calibrate import Calibration, calibrate
from cotplan.tasks.families import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("parity", n=4, count=2, seed=0)
BUDGETS = [0, 24]
MODE = "hidden"


class _Killed(BaseException):
    """Stands for the process dying: nothing after it runs, nothing catches it."""


def _die(seconds: float) -> None:
    raise _Killed


@pytest.fixture(scope="module")
def live(thinking_backend: LocalBackend) -> Calibration:
    return calibrate(thinking_backend, ITEMS, BUDGETS, mode=MODE, progress=False)


def _same_table(batch: pd.DataFrame, live: pd.DataFrame) -> None:
    # Latency is measured live and not in a batch; every other column must agree.
    assert batch["latency_s"].isna().all()
    pd.testing.assert_frame_equal(batch.drop(columns="latency_s"), live.drop(columns="latency_s"))


def _run(model: LocalModel, server: BatchServer, folder: Path, **options: Any) -> Any:
    backend = model.backend(cache=None, base_url=server.base_url)
    service = OpenAIBatches(base_url=server.base_url, api_key="none")
    return calibrate_batch(
        backend, ITEMS, BUDGETS, mode=MODE, folder=folder, service=service, poll_s=0.05, **options
    )


def test_a_killed_partly_failed_batch_run_resumes_to_the_live_table(
    thinking_model: LocalModel, live: Calibration, tmp_path: Path
) -> None:
    failing: set[str] = set()

    def fail(custom_id: str) -> bool:
        # The first request of the first batch fails once: a partly failed batch.
        if not failing:
            failing.add(custom_id)
        return custom_id in failing

    with BatchServer(thinking_model.base_url, fail=fail) as server:
        server.hold()
        with pytest.raises(_Killed):
            _run(thinking_model, server, tmp_path, sleep=_die)
        state = json.loads((tmp_path / "batch" / "state.json").read_text())
        assert server.creates == 1
        assert [b["status"] for b in state["batches"]] == ["validating"]
        # The second window a kill can hit: the batch was created, its id never written down.
        state["batches"][0]["id"] = None
        (tmp_path / "batch" / "state.json").write_text(json.dumps(state))
        server.release()
        result = _run(thinking_model, server, tmp_path)

    assert not server.crashes
    assert result.done
    _same_table(result.calibration.frame, live.frame)
    # Submitted once each, but the failed one, which went into a follow-up batch once more.
    (failed,) = failing
    assert server.submitted[failed] == 2
    assert {k: v for k, v in server.submitted.items() if k != failed} == dict.fromkeys(
        set(server.submitted) - {failed}, 1
    )
    assert server.creates == len(result.status.entries)
    assert server.live_requests == 0
    failures = (tmp_path / "batch" / "failures.jsonl").read_text().splitlines()
    assert [json.loads(line)["custom_id"] for line in failures] == [failed]
    # A request several budgets share (the answer asked for alone) is paid once in a batch.
    assert result.calibration.requests == len(server.submitted) <= live.requests


def test_visible_thinking_in_batch_files_takes_two_rounds_and_gives_the_live_table(
    thinking_model: LocalModel, thinking_backend: LocalBackend, tmp_path: Path
) -> None:
    # Visible thinking (the embedded model's own mode, "auto": the written-out template): the
    # reasoning runs first, then the answers forced at each budget, cut from the one run.
    live = calibrate(thinking_backend, ITEMS, BUDGETS, progress=False)
    assert set(live.frame["mode"]) == {"template"}
    # No service: the files are written for an executor (vLLM's run-batch). This one runs
    # each line against the embedded server and writes the output beside the input.
    backend = thinking_model.backend(cache=None)
    origin = thinking_model.base_url.removesuffix("/v1")
    rounds = 0
    while True:
        result = calibrate_batch(backend, ITEMS, BUDGETS, folder=tmp_path)
        if result.done:
            break
        rounds += 1
        for path in result.waiting:
            lines = [json.loads(line) for line in path.read_text().splitlines()]
            with httpx.Client(timeout=600.0) as client:
                out = [
                    {
                        "id": f"r{i}",
                        "custom_id": line["custom_id"],
                        "response": {
                            "status_code": 200,
                            "body": client.post(origin + line["url"], json=line["body"]).json(),
                        },
                        "error": None,
                    }
                    for i, line in enumerate(lines)
                ]
            path.with_suffix(".output.jsonl").write_text("".join(json.dumps(o) + "\n" for o in out))
    assert rounds == 2
    _same_table(result.calibration.frame, live.frame)
