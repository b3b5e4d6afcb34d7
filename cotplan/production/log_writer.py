"""The gateway's call log, written in batches by a thread of its own.

`CallLog.append` commits one row per call in the caller's thread: right for the wrapper (one
team's client, a few calls a second), but on the gateway's event loop a commit per call is a
disk write on the critical path of every reply. `BatchedCallLog` takes the row and returns at
once; a writer thread inserts what has queued in one transaction every `FLUSH_SECONDS`,
and writes the rest when the log is closed (the
gateway closes it when it stops, on SIGTERM or Ctrl-C as well).

What a crash can lose: a process killed outright (SIGKILL, the machine losing power) loses
the rows of the calls answered in the last `FLUSH_SECONDS` (50 ms) or so, plus however long
the file was locked by another writer at that moment: they were answered but not yet
written. The file is the same SQLite file in write-ahead-log mode with a busy timeout
(`cotplan.production.log`), so several gateway workers append to it at once.
"""

from __future__ import annotations

import atexit
import logging
import math
import threading
import weakref
from collections import deque
from pathlib import Path
from typing import Any

from cotplan.errors import CacheError, InputError
from cotplan.production.log import LOG_COLUMNS, CallLog, LogRecord

__all__ = ["FLUSH_SECONDS", "BatchedCallLog"]

#: The gateway's logger (`cotplan.production.gateway_errors`).
logger = logging.getLogger("cotplan.gateway")

#: The longest a row waits before it is written (and what a killed process can lose).
FLUSH_SECONDS = 0.05

_INSERT = (
    f"INSERT INTO calls ({', '.join(LOG_COLUMNS)}) "
    f"VALUES ({', '.join(f':{name}' for name in LOG_COLUMNS)})"
)

#: Logs still open at exit are flushed then (a gateway stopped without `close`).
_OPEN: weakref.WeakSet[BatchedCallLog] = weakref.WeakSet()


def _close_all() -> None:
    for log in list(_OPEN):
        log.close()


atexit.register(_close_all)


def _row(record: LogRecord) -> dict[str, Any]:
    if not isinstance(record, LogRecord):
        raise InputError(f"must be a LogRecord, got {type(record).__name__}", field="record")
    # Field by field: every field is a scalar, and `asdict`'s deep copy cost more than the rest
    # of the row.
    row = {name: getattr(record, name) for name in LOG_COLUMNS}
    row["cap_bitten"] = int(record.cap_bitten)
    row["answer_forced"] = int(record.answer_forced)
    # NULL, not NaN, for "no price", as `CallLog.append` writes it.
    row["cost_usd"] = None if math.isnan(record.cost_usd) else record.cost_usd
    return row


class BatchedCallLog(CallLog):
    """A `CallLog` whose `append` queues the row for a writer thread (see the module).
    `flush()` waits until every row appended so far is in the file; `records()` flushes
    first; `close()` writes the rest and stops the thread (appending after it writes at
    once, as `CallLog` does)."""

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__(path)
        # A deque: appending and popping are atomic, so a row costs its caller no lock, and
        # the writer is woken once per batch, not once per row.
        self._pending: deque[dict[str, Any] | threading.Event] = deque()
        self._wake = threading.Event()  # rows are waiting
        self._now = threading.Event()  # write them without waiting out the interval
        self._stopping = False
        self._writer: threading.Thread | None = None
        self._start_lock = threading.Lock()
        #: Rows the writer could not write (the error is logged; the gateway keeps serving).
        self.lost = 0

    def append(self, record: LogRecord) -> None:
        """Queue one row (written within `FLUSH_SECONDS`)."""
        row = _row(record)
        if self._stopping:
            with self._lock, self._connect() as db:
                db.execute(_INSERT, row)
            return
        if self._writer is None:
            self._start()
        self._pending.append(row)
        if not self._wake.is_set():
            self._wake.set()

    def _start(self) -> None:
        with self._start_lock:
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_forever, name="cotplan-call-log", daemon=True
                )
                self._writer.start()
                _OPEN.add(self)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every row appended before this call is written."""
        writer = self._writer
        if writer is None or not writer.is_alive():
            return
        done = threading.Event()
        self._pending.append(done)  # after every row queued so far: set once they are written
        self._now.set()
        self._wake.set()
        done.wait(timeout)

    def close(self) -> None:
        """Write what is queued, stop the writer, close its connection."""
        self._stopping = True
        writer, self._writer = self._writer, None
        if writer is not None and writer.is_alive():
            self._now.set()
            self._wake.set()
            writer.join(timeout=10.0)
        _OPEN.discard(self)
        super().close()

    def records(self) -> list[LogRecord]:
        self.flush()
        return super().records()

    def _write_forever(self) -> None:
        while True:
            self._wake.wait()  # an idle gateway costs nothing here
            self._wake.clear()
            if not self._stopping:
                # Let the batch fill for one interval: one transaction for the lot.
                self._now.wait(FLUSH_SECONDS)
            self._now.clear()
            items = [self._pending.popleft() for _ in range(len(self._pending))]
            self._write([item for item in items if isinstance(item, dict)])
            for item in items:
                if isinstance(item, threading.Event):
                    item.set()
            if self._stopping and not self._pending:
                self._drop()  # this thread's connection
                return

    def _write(self, batch: list[dict[str, Any]]) -> None:
        if not batch:
            return
        try:
            with self._lock, self._connect() as db:
                db.executemany(_INSERT, batch)
        except CacheError as exc:
            # The calls were answered (and paid for); the operator must hear of the gap.
            self.lost += len(batch)
            logger.error("%d call log rows were not written: %s", len(batch), exc)
