"""Faults, crashes and resumption, against the real embedded model behind a fault proxy."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotplan import calibrate
from cotplan.backends.cache import CallCache
from cotplan.backends.local import LocalModel
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import InputError
from cotplan.experiments import MARTINGALE_QUICK, BackendPredictor, martingale_gap
from cotplan.tasks import make_tasks
from cotplan.testing import FaultProxy

pytestmark = pytest.mark.model

PROMPTS = [" ".join("01"[(i * 7919 >> b) & 1] for b in range(10)) + " " for i in range(16)]


def _client(model: LocalModel, url: str, cache: CallCache | None = None) -> OpenAICompatibleBackend:
    """The client `LocalModel.backend()` builds, pointed at `url` (the proxy or the server)."""
    return OpenAICompatibleBackend(
        model.model_id,
        base_url=url,
        cache=cache,
        cache_namespace=f"local:{model.model_id}",
        text_completions=True,
        tokenizer=lambda text: len(model.tokenize(text)),
        concurrency=model.parallel,
        timeout=2.0,
        max_retries=8,
    )


def _faults(proxy: FaultProxy) -> int:
    return sum(proxy.stats.faults.values())


def _scores(backend: OpenAICompatibleBackend) -> list[tuple[float, str]]:
    out = []
    for prompt in PROMPTS:
        probs = backend.next_token_probs(prompt, ["0", "1"])
        text = backend.generate(prompt, max_tokens=3).text
        out.append((round(probs.probs["1"], 6), text))
    return out


def test_twenty_percent_faults_do_not_change_results(local_model: LocalModel) -> None:
    clean = _scores(_client(local_model, local_model.base_url))
    with FaultProxy(local_model.base_url, rate=0.2, seed=7, slow_seconds=3.0) as proxy:
        backend = _client(local_model, proxy.base_url)
        faulty = _scores(backend)
    assert faulty == clean
    assert _faults(proxy) > 0
    assert backend.stats.retries >= _faults(proxy)
    assert set(proxy.stats.faults) >= {"500", "429", "drop", "truncate"}


def test_a_calibration_through_twenty_percent_faults_matches_a_clean_one(
    local_model: LocalModel,
) -> None:
    items = make_tasks("count", n=3, count=3, seed=0)
    budgets = [0, 16]
    clean = calibrate(_client(local_model, local_model.base_url), items, budgets, progress=False)
    with FaultProxy(local_model.base_url, rate=0.2, seed=11, slow_seconds=3.0) as proxy:
        faulty = calibrate(_client(local_model, proxy.base_url), items, budgets, progress=False)
    # Everything but the clock: answers, correctness, token counts, costs.
    columns = [c for c in clean.frame.columns if c != "latency_s"]
    pd.testing.assert_frame_equal(faulty.frame[columns], clean.frame[columns])
    assert _faults(proxy) > 0
    assert faulty.retries >= _faults(proxy)


def test_a_martingale_experiment_through_twenty_percent_faults_matches_a_clean_one(
    local_model: LocalModel,
) -> None:
    # The quick preset's grid of n with fewer sequences: each slow fault costs a full timeout.
    preset = {**MARTINGALE_QUICK, "n_sequences": 4}
    clean = martingale_gap(BackendPredictor(_client(local_model, local_model.base_url)), **preset)
    with FaultProxy(local_model.base_url, rate=0.2, seed=12, slow_seconds=2.5) as proxy:
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


def test_sigkilled_run_resumes_from_the_cache_without_asking_twice(
    local_model: LocalModel, tmp_path: Path
) -> None:
    cache_file = tmp_path / "calls.sqlite"
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
            for i, prompt in enumerate(prompts):
                p = backend.next_token_probs(prompt, ["0", "1"]).probs["1"]
                print(i, repr(p), flush=True)
            """
        )
    )
    with FaultProxy(local_model.base_url, rate=0.0) as proxy:
        env = dict(os.environ)
        first = subprocess.Popen(
            [sys.executable, str(script), proxy.base_url],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert first.stdout is not None
        for _ in range(8):
            first.stdout.readline()
        first.send_signal(signal.SIGKILL)
        first.wait()
        resumed = subprocess.run(
            [sys.executable, str(script), proxy.base_url],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
    assert proxy.stats.max_forwards_of_one_request == 1
    assert proxy.stats.forwarded_total == len(PROMPTS)
    uninterrupted = _client(local_model, local_model.base_url)
    expected = [
        f"{i} {uninterrupted.next_token_probs(p, ['0', '1']).probs['1']!r}"
        for i, p in enumerate(PROMPTS)
    ]
    assert resumed.stdout.strip().splitlines() == expected


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
