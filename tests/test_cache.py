"""The SQLite call cache: replay, concurrency, file mode."""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
from pathlib import Path

import pytest

from cotplan.backends.cache import CallCache, canonical_key
from cotplan.errors import CacheError


def test_key_is_canonical() -> None:
    assert canonical_key({"a": 1, "b": [1, 2]}) == canonical_key({"b": [1, 2], "a": 1})
    assert canonical_key({"a": 1}) != canonical_key({"a": 2})


def test_first_recording_wins_and_counts(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", model="m", operation="chat", request={"x": 1}, response={"v": 1})
    cache.put("k", model="m", operation="chat", request={"x": 1}, response={"v": 2})
    assert cache.get("k") == {"v": 1}
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    assert stat.S_IMODE(os.stat(cache.path).st_mode) == 0o600


def _writer(path: str, start: int) -> None:
    cache = CallCache(path)
    for i in range(start, start + 200):
        cache.put(f"k{i % 300}", model="m", operation="op", request={}, response={"i": i})


@pytest.mark.slow
def test_concurrent_processes_and_threads_do_not_corrupt(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    CallCache(path)
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_writer, args=(path, s)) for s in (0, 100)]
    for process in processes:
        process.start()
    threads = [threading.Thread(target=_writer, args=(path, s)) for s in (50, 150)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for process in processes:
        process.join()
        assert process.exitcode == 0
    cache = CallCache(path)
    assert len(cache) == 300
    assert cache._connection().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_unopenable_cache_is_a_cache_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CacheError, match="cannot open the call cache"):
        CallCache(blocker / "sub" / "c.sqlite")
