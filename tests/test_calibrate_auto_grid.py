"""The auto budget grid and one run per item, against the loopback reasoning server (a load
generator that thinks hundreds of tokens an item), and the server's own wire shape."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import httpx2 as httpx
import numpy as np
import pytest

from cotplan.backends import connect
from cotplan.errors import InputError
from cotplan.loopback import LoopbackReasoner, arithmetic_items
from cotplan.planner.auto_grid import GridShortWarning, auto_budgets
from cotplan.planner.calibrate import (
    CostUnknownWarning,
    calibrate,
    calibrate_to_file,
    load_calibration,
)


def test_the_auto_grid_tops_out_between_the_90th_percentile_and_twice_the_95th() -> None:
    lengths = np.random.default_rng(3).lognormal(np.log(1500), 0.6, 200).round().astype(int)
    grid = auto_budgets(list(lengths))
    assert grid[0] == 0
    assert np.quantile(lengths, 0.9) <= grid[-1] <= 2 * np.quantile(lengths, 0.95)
    ratios = np.diff(np.log(grid[1:]))
    assert np.allclose(ratios, ratios.mean(), atol=0.02)  # geometric
    assert auto_budgets([0, 0, 0]) == [0]
    with pytest.raises(InputError, match="`lengths`"):
        auto_budgets([])


def _backend(server: LoopbackReasoner) -> object:
    return connect("openai:loopback-r1", base_url=server.base_url, protocol="think", cache=None)


def test_the_loopback_server_speaks_chat_completions_with_reasoning_content() -> None:
    with LoopbackReasoner(mean_thinking=300) as server:
        body = {
            "model": "loopback-r1",
            "messages": [{"role": "user", "content": "What is 2 + 3?"}],
            "logprobs": True,
        }
        reply = httpx.post(server.base_url + "/chat/completions", json=body).json()
        message = reply["choices"][0]["message"]
        assert message["content"] == "Answer: 5"
        assert len(message["reasoning_content"].split()) > 50
        usage = reply["usage"]
        assert usage["completion_tokens_details"]["reasoning_tokens"] < usage["completion_tokens"]
        raw = "".join(t["token"] for t in reply["choices"][0]["logprobs"]["content"])
        assert raw.startswith("<think>\n")
        assert raw.endswith("</think>\n\nAnswer: 5")
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with httpx.stream("POST", server.base_url + "/chat/completions", json=streamed) as r:
            lines = [line for line in r.iter_lines() if line.startswith("data: ")]
        assert lines[-1] == "data: [DONE]"
        chunks = [json.loads(line[6:]) for line in lines[:-1]]
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        thought = "".join(d.get("reasoning_content", "") for d in deltas)
        assert thought.strip().removeprefix("<think>").strip() == message["reasoning_content"]
        assert "".join(d.get("content", "") for d in deltas).endswith("Answer: 5")
        assert chunks[-1]["usage"] == usage
        capped = httpx.post(
            server.base_url + "/chat/completions", json={**body, "max_tokens": 20}
        ).json()
        assert capped["choices"][0]["finish_reason"] == "length"
        assert capped["choices"][0]["message"]["content"] == ""


def test_auto_calibration_generates_each_items_thinking_once() -> None:
    items = arithmetic_items(16, n=6)
    with LoopbackReasoner(mean_thinking=600) as server:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CostUnknownWarning)
            result = calibrate(_backend(server), items, progress=False, pilot=12)
        one_run_each = sum(server._draw(str(item.prompt))[0] + 3 for item in items)
        assert server.stats.thinking_tokens <= 1.05 * one_run_each
        (profile,) = result.thinking
        assert len(profile.lengths) == 12
        assert np.quantile(profile.lengths, 0.9) <= profile.top <= 2 * profile.quantile(0.95)
        budgets = sorted(result.frame["k"].unique())
        assert budgets == list(profile.budgets)
        # One run per item, and at most one answer per budget (none where the run had ended
        # below the budget: its own answer is the answer there).
        assert len(items) * 3 < server.stats.requests <= len(items) * (1 + len(budgets))
        accuracy = result.frame.groupby("k")["correct"].mean()
        assert accuracy.iloc[0] == 0.0
        assert accuracy.iloc[-1] >= 0.8


def test_a_short_given_grid_warns_with_the_numbers() -> None:
    items = arithmetic_items(10, n=6)
    with (
        LoopbackReasoner(mean_thinking=600) as server,
        pytest.warns(GridShortWarning, match=r"top k = 128 cut the thinking of 10 of 10"),
    ):
        calibrate(_backend(server), items, [0, 32, 128], progress=False)


def test_calibrate_to_file_streams_the_same_rows(tmp_path: Path) -> None:
    items = arithmetic_items(12, n=5)
    with LoopbackReasoner(mean_thinking=200) as server, warnings.catch_warnings():
        warnings.simplefilter("ignore", CostUnknownWarning)
        warnings.simplefilter("ignore", GridShortWarning)  # the grid is short on purpose
        backend = _backend(server)
        in_memory = calibrate(backend, items, [0, 50, 400], progress=False)
        written = calibrate_to_file(
            backend, items, tmp_path / "cal.csv", [0, 50, 400], progress=False, chunk=5
        )
    assert written.rows == len(in_memory.frame) == 36
    back = load_calibration(written.path).frame
    assert list(back["correct"]) == list(in_memory.frame["correct"])
    assert list(back["reasoning_tokens"]) == list(in_memory.frame["reasoning_tokens"])
    assert (written.path.stat().st_mode & 0o777) == 0o600
