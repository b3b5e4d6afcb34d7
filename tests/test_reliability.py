"""Faults, crashes and resumption, against the real embedded model behind a fault proxy."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotplan import calibrate
from cotplan.backends.cache import CallCache
from cotplan.backends.local import LocalModel
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.testing import FAULT_KINDS, FaultProxy
from cotplan.errors import InputError
from cotplan.research.experiments import MARTINGALE_QUICK, BackendPredictor, martingale_gap
from cotplan.tasks import make_tasks

pytestmark = pytest.mark.model

PROMPTS = [" ".join("01"[(i * 7919 >> b) & 1] for b in range(10)) + " " for i in range(16)]


# The client's timeout: far above the time any of these small requests takes, even on a busy
# 2-core machine, so only an injected slow fault (held past it, and never forwarded: the server
# does no abandoned work) times out. Each slow fault costs one full TIMEOUT.
TIMEOUT = 15.0
SLOW = TIMEOUT + 10.0
NOT_SLOW = tuple(kind for kind in FAULT_KINDS if kind != "slow")


def _client(model: LocalModel, url: str, cache: CallCache | None = None) -> OpenAICompatibleBackend:
    """The embedded model's backend, sent to `url` (the proxy or the server itself)."""
    return model.backend(cache=cache, base_url=url, timeout=TIMEOUT, max_retries=8)


def _faults(proxy: FaultProxy) -> int:
    return sum(proxy.stats.faults.values())


def _scores(backend: OpenAICompatibleBackend, prompts: list[str]) -> list[tuple[float, str]]:
    out = []
    for prompt in prompts:
        probs = backend.next_token_probs(prompt, ["0", "1"])
        text = backend.generate(prompt, max_tokens=3).text
        out.append((round(probs.probs["1"], 6), text))
    return out


@pytest.mark.slow  # tens of seconds: each slow fault costs a full TIMEOUT
def test_twenty_percent_faults_do_not_change_results(local_model: LocalModel) -> None:
    # Seed 65 on these 16 requests draws each of the five kinds, "slow" once: every kind is
    # seen, and only one request waits out a TIMEOUT.
    prompts = PROMPTS[:8]
    clean = _scores(_client(local_model, local_model.base_url), prompts)
    with FaultProxy(local_model.base_url, rate=0.2, seed=65, slow_seconds=SLOW) as proxy:
        backend = _client(local_model, proxy.base_url)
        faulty = _scores(backend, prompts)
    assert faulty == clean
    assert _faults(proxy) > 0
    assert backend.stats.retries >= _faults(proxy)
    assert set(proxy.stats.faults) >= {"500", "429", "slow", "drop", "truncate"}
    # Every slow fault timed out and was never forwarded: the server answered each prompt's
    # two requests once, plus one per truncated answer (read in full, then cut).
    assert proxy.stats.forwarded_total == 2 * len(prompts) + proxy.stats.faults["truncate"]


@pytest.mark.slow
def test_a_calibration_through_twenty_percent_faults_matches_a_clean_one(
    local_model: LocalModel,
) -> None:
    items = make_tasks("count", n=3, count=3, seed=0)
    budgets = [0, 16]
    clean = calibrate(_client(local_model, local_model.base_url), items, budgets, progress=False)
    with FaultProxy(local_model.base_url, rate=0.2, seed=11, slow_seconds=SLOW) as proxy:
        faulty = calibrate(_client(local_model, proxy.base_url), items, budgets, progress=False)
    # Everything but the clock: answers, correctness, token counts, costs.
    columns = [c for c in clean.frame.columns if c != "latency_s"]
    pd.testing.assert_frame_equal(faulty.frame[columns], clean.frame[columns])
    assert _faults(proxy) > 0
    assert faulty.retries >= _faults(proxy)


@pytest.mark.slow
def test_a_martingale_experiment_through_twenty_percent_faults_matches_a_clean_one(
    local_model: LocalModel,
) -> None:
    # A coarser grid than the quick preset's, fewer sequences; no slow faults (each would cost
    # a full TIMEOUT, and the first test already checks them).
    preset = {**MARTINGALE_QUICK, "ns": list(range(10, 41, 4)), "n_sequences": 3, "n_boot": 200}
    clean = martingale_gap(BackendPredictor(_client(local_model, local_model.base_url)), **preset)
    with FaultProxy(local_model.base_url, rate=0.2, kinds=NOT_SLOW, seed=12) as proxy:
        faulty = martingale_gap(BackendPredictor(_client(local_model, proxy.base_url)), **preset)
    np.testing.assert_array_equal(faulty.gap, clean.gap)
    np.testing.assert_array_equal(faulty.excess, clean.excess)
    assert faulty.fit_log.as_dict() == clean.fit_log.as_dict()
    assert faulty.run.requests == clean.run.requests
    assert _faults(proxy) > 0
    assert faulty.run.retries >= _faults(proxy)


def test_the_proxy_only_fronts_loopback() -> None:
    with pytest.raises(InputError, match="loopback"):
        FaultProxy("http://10.0.0.1:8000/v1")


CALIBRATION_SCRIPT = """
import sys
from cotplan import calibrate
from cotplan.backends.cache import CallCache
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.tasks import make_tasks

base_url, cache_file, out, model_id = sys.argv[1:5]
backend = OpenAICompatibleBackend(
    model_id, base_url=base_url, text_completions=True, cache=CallCache(cache_file),
    cache_namespace=f"local:{model_id}", concurrency=1,
)
items = make_tasks("count", n=3, count=3, seed=0) + make_tasks("arithmetic", n=2, count=3)
calibrate(backend, items, [0, 16, 32], progress=False).to_csv(out)
"""


@pytest.mark.slow  # three Python processes
def test_a_sigkilled_calibration_resumes_from_the_cache_without_asking_twice(
    local_model: LocalModel, tmp_path: Path
) -> None:
    script = tmp_path / "calibrate.py"
    script.write_text(CALIBRATION_SCRIPT)

    def start(url: str, name: str) -> subprocess.Popen[bytes]:
        args = [url, str(tmp_path / f"{name}.sqlite"), str(tmp_path / f"{name}.csv")]
        return subprocess.Popen([sys.executable, str(script), *args, local_model.model_id])

    with FaultProxy(local_model.base_url, rate=0.0) as counter:
        assert start(counter.base_url, "uninterrupted").wait(timeout=600) == 0
    with FaultProxy(local_model.base_url, rate=0.0, hold_after=10) as proxy:
        first = start(proxy.base_url, "resumed")
        deadline = time.monotonic() + 300
        # Held at the proxy: every answer the run received so far is complete and cached.
        while proxy.stats.held == 0 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.stats.held == 1, "the run should be waiting on its 11th request"
        first.send_signal(signal.SIGKILL)
        first.wait()
        proxy.release()
        assert start(proxy.base_url, "resumed").wait(timeout=600) == 0
    assert proxy.stats.max_forwards_of_one_request == 1  # nothing was asked twice
    assert proxy.stats.forwarded_total == counter.stats.forwarded_total
    resumed = pd.read_csv(tmp_path / "resumed.csv")
    uninterrupted = pd.read_csv(tmp_path / "uninterrupted.csv")
    columns = [c for c in uninterrupted.columns if c not in {"latency_s", "from_cache"}]
    pd.testing.assert_frame_equal(resumed[columns], uninterrupted[columns])
    assert resumed["from_cache"].sum() > 0


@pytest.mark.slow
def test_concurrent_runs_sharing_one_cache_agree_and_leave_it_whole(
    local_model: LocalModel, tmp_path: Path
) -> None:
    cache_file = tmp_path / "shared.sqlite"
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from cotplan.backends.cache import CallCache
            from cotplan.backends.openai_compat import OpenAICompatibleBackend
            prompts = {PROMPTS!r}
            backend = OpenAICompatibleBackend(
                {local_model.model_id!r}, base_url=sys.argv[1], text_completions=True,
                cache=CallCache({str(cache_file)!r}),
                cache_namespace="local:{local_model.model_id}",
            )
            order = prompts if sys.argv[2] == "forward" else prompts[::-1]
            probs = {{p: backend.next_token_probs(p, ["0", "1"]).probs["1"] for p in order}}
            for prompt in prompts:
                print(repr(probs[prompt]))
            """
        )
    )
    runs = [
        subprocess.Popen(
            [sys.executable, str(script), local_model.base_url, direction],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for direction in ("forward", "backward", "forward")
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (_, stderr) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, stderr
    assert outputs[0][0] == outputs[1][0] == outputs[2][0]
    cache = CallCache(cache_file)
    assert len(cache) == len(PROMPTS)  # every prompt stored once, whoever asked first
    connection = sqlite3.connect(cache_file)
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    connection.close()
