"""A call cache locked by another process past the busy timeout: answers already paid for are
held, replayed, written when the lock frees (retried with backoff), and spilled beside the file
when it never does; the next open records them. Before, the write raised `CacheError` and the
paid answer was lost (bought again on the rerun).

The lock is held as another process holds it: a second SQLite connection inside an open write
transaction (`BEGIN IMMEDIATE`); the cache's busy timeout is shortened so the test waits 0.2 s,
not 30.
"""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import pytest

from cotplan.backends.cache import CacheBusyWarning, CallCache

ANSWER = {"response": {"choices": [{"text": "7"}]}, "latency_s": 0.1}


def _lock(path: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def _put(cache: CallCache, key: str) -> None:
    cache.put(key, model="m", operation="chat", request={"q": key}, response=ANSWER)


def test_an_answer_paid_for_while_the_cache_is_locked_is_kept_and_written_later(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.sqlite"
    cache = CallCache(path, busy_timeout=0.2)
    holder = _lock(path)
    with pytest.warns(CacheBusyWarning, match="never bought again"):
        _put(cache, "a")  # before: CacheError, and the answer gone
    assert cache.get("a") == ANSWER  # replayed within the run, not bought again
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per stretch of locking, not one per call
        _put(cache, "b")
    holder.execute("COMMIT")
    holder.close()
    assert cache.flush(force=True) == 0
    again = CallCache(path)
    assert again.get("a") == ANSWER
    assert again.get("b") == ANSWER
    assert len(again) == 2


def test_answers_still_held_at_close_are_spilled_and_recorded_by_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cotplan.backends.cache as cache_module

    monkeypatch.setattr(cache_module, "_CLOSE_PATIENCE_S", 0.5)
    path = tmp_path / "cache.sqlite"
    cache = CallCache(path, busy_timeout=0.1)
    holder = _lock(path)
    with pytest.warns(CacheBusyWarning):
        _put(cache, "a")
    with pytest.warns(CacheBusyWarning, match="were kept in") as said:
        cache.close()
    spills = list(tmp_path.glob("cache.sqlite.pending-*.jsonl"))
    assert len(spills) == 1
    assert str(spills[0]) in str(said[-1].message)
    assert spills[0].stat().st_mode & 0o777 == 0o600  # prompts and answers: private
    holder.execute("COMMIT")
    holder.close()
    reopened = CallCache(path)
    assert reopened.get("a") == ANSWER
    assert not list(tmp_path.glob("cache.sqlite.pending-*.jsonl"))


def test_a_spill_edited_by_hand_is_not_replayed(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = CallCache(path, busy_timeout=0.1)
    holder = _lock(path)
    with pytest.warns(CacheBusyWarning):
        _put(cache, "a")
    import cotplan.backends.cache as cache_module

    cache_module._CLOSE_PATIENCE_S, saved = 0.0, cache_module._CLOSE_PATIENCE_S
    try:
        with pytest.warns(CacheBusyWarning):
            cache.close()
    finally:
        cache_module._CLOSE_PATIENCE_S = saved
    holder.execute("COMMIT")
    holder.close()
    (spilled,) = tmp_path.glob("cache.sqlite.pending-*.jsonl")
    spilled.write_text(spilled.read_text().replace('\\"7\\"', '\\"8\\"'))
    reopened = CallCache(path)
    with pytest.warns(UserWarning, match="checksum"):
        assert reopened.get("a") is None  # the checksum caught the edit
