"""The gateway's call log is written in batches off the event loop: every row appended reaches
the file (on flush, on close, within the interval), none is written twice, and the rows read
back as `CallLog` writes them."""

from __future__ import annotations

import contextlib
import math
import sqlite3
import threading
import time
from pathlib import Path

from production_support import record

from cotplan.production.log import CallLog
from cotplan.production.log_writer import FLUSH_SECONDS, BatchedCallLog


def rows_in(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM calls").fetchone()[0])


def test_rows_from_many_threads_all_reach_the_file_once(tmp_path: Path) -> None:
    log = BatchedCallLog(tmp_path / "log.sqlite")

    def write(thread: int) -> None:
        for i in range(50):
            log.append(record(call_id=f"{thread}-{i}", cost_usd=0.5 if i % 2 else math.nan))

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = log.records()  # flushes first
    expected = sorted(f"{t}-{i}" for t in range(4) for i in range(50))
    assert sorted(r.call_id for r in rows) == expected
    assert {r.cost_usd for r in rows if not math.isnan(r.cost_usd)} == {0.5}
    assert rows == CallLog(log.path).records()  # the same file, read as the wrapper's log
    log.close()
    assert rows_in(log.path) == 200


def test_a_row_is_written_within_the_interval_without_a_flush(tmp_path: Path) -> None:
    log = BatchedCallLog(tmp_path / "log.sqlite")
    log.append(record(call_id="one"))
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        # the writer creates the file, then its table: poll until both are there
        with contextlib.suppress(sqlite3.OperationalError):
            if log.path.exists() and rows_in(log.path) == 1:
                break
        time.sleep(FLUSH_SECONDS / 5)
    assert rows_in(log.path) == 1
    log.close()


def test_close_writes_what_is_queued_and_later_rows_go_straight_in(tmp_path: Path) -> None:
    log = BatchedCallLog(tmp_path / "log.sqlite")
    for i in range(30):
        log.append(record(call_id=str(i)))
    log.close()
    assert rows_in(log.path) == 30
    log.append(record(call_id="late"))  # after close: written at once, not lost
    assert rows_in(log.path) == 31
    assert (log.path.stat().st_mode & 0o777) == 0o600
