"""Facts a run reports that were wrong (issue 43, "wrong or missing facts"): a `Retry-After` of
`nan` or `inf` said "not retried" after 3 attempts; an answer far larger than its cap was cached
and its untrusted count added to the spend; a seeded bootstrap depended on the calibration's
row order.

The server is a loopback `_Server` from tests/test_faults.py (status, headers and body decided
per request); the SDK's sleeps are recorded, not slept.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from test_faults import _backend, _error, _good, _Server, serve  # noqa: F401 (a fixture)

from cotplan.backends.cache import CallCache
from cotplan.backends.testing import Answer, ScriptedEndpoint
from cotplan.errors import APIStatusError, RateLimitError, ResponseFormatError


@pytest.mark.parametrize("value", ["nan", "inf", "NaN", "-inf", "Infinity"])
@pytest.mark.parametrize(
    ("status", "error"), [(429, RateLimitError), (503, APIStatusError)], ids=["429", "503"]
)
def test_a_retry_after_of_nan_or_inf_is_retried_and_the_error_says_so(
    serve: Callable[..., _Server],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    status: int,
    error: type[Exception],
) -> None:
    monkeypatch.setattr(openai._base_client.time, "sleep", lambda seconds: None)
    server = serve(lambda headers, body: _error(status, "busy", **{"Retry-After": value}))
    with pytest.raises(error) as info:
        _backend(server.base_url, max_retries=2).generate("x", max_tokens=8)
    message = str(info.value)
    assert len(server.seen) == 3  # the SDK ignores such a wait and retries on its own backoff
    assert "after 3 attempts" in message
    assert "not retried" not in message  # before: "asked to wait forever ... not retried"
    assert "Retry-After" not in message


def test_a_retry_after_of_nan_then_an_answer_succeeds(
    serve: Callable[..., _Server],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(openai._base_client.time, "sleep", sleeps.append)
    answers = [_error(429, "busy", **{"Retry-After": "nan"})]
    server = serve(lambda headers, body: answers.pop(0) if answers else _good(body))
    backend = _backend(server.base_url, max_retries=2)
    assert backend.generate("x", max_tokens=8).text.startswith("answer ")
    assert backend.stats.retries == 1
    assert len(sleeps) == 1
    assert 0 < sleeps[0] <= 1.0  # the SDK's own backoff, not an endless wait


def test_a_retry_after_too_large_for_a_float_is_not_retried(
    serve: Callable[..., _Server],  # noqa: F811
) -> None:
    server = serve(lambda headers, body: _error(429, "busy", **{"Retry-After": "1e400"}))
    with pytest.raises(RateLimitError, match=r"wait forever \(Retry-After\).*not retried"):
        _backend(server.base_url, max_retries=2).generate("x", max_tokens=8)
    assert len(server.seen) == 1


# -- an answer far larger than its cap ------------------------------------------------------------


def _huge(path: str, body: dict[str, Any]) -> Answer:
    """A 20 MB answer, whatever the cap, with the count a server would send for it."""
    text = "word " * 4_000_000
    usage = {"prompt_tokens": 5, "completion_tokens": 4_194_307, "total_tokens": 4_194_312}
    if path.endswith("/chat/completions"):
        choice: dict[str, Any] = {"message": {"role": "assistant", "content": text}}
    else:
        choice = {"text": text}
    return 200, {"choices": [{**choice, "finish_reason": "length"}], "usage": usage}


def test_an_answer_far_larger_than_its_cap_is_not_cached_and_not_counted(
    tmp_path: Path,
) -> None:
    cache = CallCache(tmp_path / "cache.sqlite")
    with ScriptedEndpoint(_huge) as endpoint:
        backend = _backend(endpoint.base_url, cache=cache, max_retries=1)
        with pytest.raises(ResponseFormatError, match=r"capped at 16 tokens") as info:
            backend.generate("x", max_tokens=16)
        assert endpoint.requests == 2  # retried like any broken answer, then reported
    assert "20,000,000 characters" in str(info.value)
    assert len(cache) == 0  # before: cached, and replayed on every rerun
    assert backend.stats.requests == 1


def test_a_long_answer_within_its_cap_is_kept(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "cache.sqlite")
    with ScriptedEndpoint(_huge) as endpoint:
        backend = _backend(endpoint.base_url, cache=cache)
        completion = backend.generate("x", max_tokens=4_194_304)
    assert len(completion.text) == 20_000_000
    assert len(cache) == 1


# -- a seeded bootstrap and the calibration's row order --------------------------------------------


@pytest.mark.slow  # three plans, each with its bootstrap
def test_a_seeded_plan_does_not_depend_on_the_calibrations_row_order(tmp_path: Path) -> None:
    import pandas as pd
    from test_plan_artifact import planted

    from cotplan.planner.plan_result import plan_from_calibration

    forward = planted(tmp_path / "forward.csv")
    frame = pd.read_csv(forward)
    frame.iloc[::-1].to_csv(tmp_path / "reversed.csv", index=False)
    shuffled = frame.sample(frac=1.0, random_state=3)
    shuffled.to_csv(tmp_path / "shuffled.csv", index=False)
    plans = [
        plan_from_calibration(tmp_path / name, 0.3, sizes=[4, 8], n_bootstrap=20, seed=1)
        for name in ("forward.csv", "reversed.csv", "shuffled.csv")
    ]
    first = plans[0]
    for other in plans[1:]:
        # Before: the same seed drew other items when the rows came in another order, and the
        # bootstrap interval (and the cap at its conservative end) moved.
        assert [(b.low, b.high, b.tokens) for b in other.budgets] == [
            (b.low, b.high, b.tokens) for b in first.budgets
        ]
        assert other.plan.law_draws == first.plan.law_draws
