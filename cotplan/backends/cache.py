"""A record/replay cache of model calls in SQLite.

A rerun of a calibration or experiment replays recorded answers instead of paying again, and a
run killed halfway resumes where it stopped. The key is a canonical hash of everything that
decides the answer (endpoint namespace, model, operation, parameters, prompt); API keys and
headers are never part of a request body, so they never reach the file. The namespace is the
normalised endpoint (`endpoint_namespace`), so spellings of one URL share their answers.

Nothing damaged is replayed: every row carries a sha256 of its content, and a row that fails it
(a digit changed in place, JSON cut short) is discarded with a `DamagedCacheWarning` and the call
asked again. Backends check an answer before they record it, so a bad answer is never stored.

Safe for concurrent writers: WAL journal, a busy timeout, one short transaction per write, and
`INSERT OR IGNORE` so two processes recording the same call agree on the first answer. The file
is created with mode 0600 because it holds prompts and responses.

An answer is never dropped once paid for: when another process holds the file's write lock
past the busy timeout (or the write fails otherwise), `put` keeps the row in memory, replays it
to `get`, and writes it later, retrying with backoff; what is still unwritten when the process
ends is spilled beside the file (`cotplan.backends.cache_spill`) and recorded by the next
`CallCache` that opens it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import ipaddress
import json
import math
import os
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cotplan.backends.cache_spill import Row, read_spills, spill
from cotplan.errors import CacheError, CotplanError, InputError

__all__ = [
    "CacheBusyWarning",
    "CacheInfo",
    "CallCache",
    "DamagedCacheWarning",
    "DamagedRow",
    "RecordedCall",
    "VerifyReport",
    "canonical_key",
    "check_clear_filters",
    "endpoint_namespace",
]

_SCHEMA_VERSION = 2
_SECONDS_PER_DAY = 86_400.0
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Names of this machine's loopback that one server listening on both stacks answers under.
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


class DamagedCacheWarning(UserWarning):
    """A cache row failed its checksum or its answer's checks; it was discarded, not replayed."""


class CacheBusyWarning(UserWarning):
    """The cache could not be written (locked by another process): answers are held and
    written later, or spilled beside it; none is lost."""


#: Waits between attempts to write held answers: doubling from the first, up to the last.
_RETRY_FIRST_S = 0.5
_RETRY_MAX_S = 30.0
#: How long closing the cache keeps retrying held answers before it spills them.
_CLOSE_PATIENCE_S = 10.0


def canonical_key(payload: dict[str, Any]) -> str:
    """sha256 of the payload as sorted, compact JSON (stable across runs and machines)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def endpoint_namespace(url: str) -> str:
    """The endpoint `url` names, spelled one way: what identifies it in cache keys.

    Scheme and host in lower case, ``localhost`` and ``::1`` as ``127.0.0.1``, the port left out
    when it is the scheme's default, no trailing slash, no credentials. Anything that is not an
    http(s) URL (the embedded model's ``local:<weights>``) is already canonical and is returned
    as it is. A default port is left out rather than written in so that keys recorded under the
    usual spelling (``https://api.openai.com/v1``) stay valid.
    """
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return url
    host = host.lower().rstrip(".")
    with contextlib.suppress(ValueError):
        host = str(ipaddress.ip_address(host))  # one spelling of an IPv6 address
    if host in _LOOPBACK:
        host = "127.0.0.1"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}{query}"


def _checksum(key: str, model: str, operation: str, request: str, response: str) -> str:
    # Over the stored text, not the parsed values: any byte changed in place is caught.
    text = json.dumps([key, model, operation, request, response], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _migrate_1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS calls (
            key TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            operation TEXT NOT NULL,
            request TEXT NOT NULL,
            response TEXT NOT NULL,
            created REAL NOT NULL
        )
        """
    )


def _migrate_2(conn: sqlite3.Connection) -> None:
    # Rows recorded before checksums existed are sealed as they are; the backend still checks
    # each answer it replays, so a bad answer recorded by an older version is not replayed.
    conn.execute("ALTER TABLE calls ADD COLUMN checksum TEXT")
    rows = conn.execute("SELECT key, model, operation, request, response FROM calls").fetchall()
    conn.executemany(
        "UPDATE calls SET checksum = ? WHERE key = ?", [(_checksum(*row), row[0]) for row in rows]
    )


_MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_1, 2: _migrate_2}

_INSERT = (
    "INSERT OR IGNORE INTO calls (key, model, operation, request, response, created, checksum)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _close_at_exit(ref: weakref.ReferenceType[CallCache]) -> None:
    # A run that ends (finished, interrupted, failed) while answers are held writes or spills
    # them: backends do not close the cache they were given.
    cache = ref()
    if cache is not None and cache._held:
        with contextlib.suppress(CotplanError):
            cache.close()


def check_clear_filters(model: str | None, older_than_days: float | None) -> None:
    """Raise `InputError` unless these are filters `CallCache.clear` accepts (None: no filter)."""
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise InputError("must be a non-empty model name", field="model")
    days = older_than_days
    if days is not None and (
        isinstance(days, bool) or not isinstance(days, int | float) or not 0 <= days < float("inf")
    ):
        raise InputError(f"must be a finite number of days >= 0, got {days!r}", field="older_than")


@dataclass(frozen=True)
class RecordedCall:
    """One row of the cache as stored: what `verify` and its `check` look at."""

    key: str
    model: str
    operation: str
    request: str
    response: str
    checksum: str | None
    created: float

    def damage(self) -> str | None:
        """Why this row cannot be replayed (checksum, JSON), or None when it is intact."""
        if self.checksum is None:
            return "it has no checksum"
        expected = _checksum(self.key, self.model, self.operation, self.request, self.response)
        if expected != self.checksum:
            return "its content does not match its checksum"
        try:
            value = json.loads(self.response)
        except ValueError:
            return "its `response` is not valid JSON"
        if not isinstance(value, dict):
            return "its `response` is not a JSON object"
        return None


@dataclass(frozen=True)
class DamagedRow:
    """A row `verify` found unfit to replay, and why."""

    key: str
    model: str
    operation: str
    reason: str


@dataclass
class VerifyReport:
    """What `CallCache.verify` found: rows checked, rows damaged, and how many it removed."""

    checked: int = 0
    damaged: list[DamagedRow] = field(default_factory=list)
    discarded: int = 0

    @property
    def ok(self) -> bool:
        return not self.damaged


@dataclass(frozen=True)
class CacheInfo:
    """What a cache file holds: rows per model, its size, and when it was first and last written."""

    path: Path
    rows: int
    size_bytes: int
    by_model: dict[str, int]
    oldest: float | None
    newest: float | None


class CallCache:
    """SQLite-backed map from request payloads to recorded responses."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self._counter_lock = threading.Lock()
        # Rows paid for but not yet written (the file was locked), by key; see the module doc.
        self._held: dict[str, Row] = {}
        self._held_lock = threading.Lock()
        self._next_try = 0.0
        self._wait = _RETRY_FIRST_S
        atexit.register(_close_at_exit, weakref.ref(self))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                # Create with 0600 before SQLite opens it, so the data is never world-readable.
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
            os.chmod(self.path, 0o600)
            self._migrate(self._connection())
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(f"cannot open the call cache at {self.path}: {exc}") from exc
        self._record_spills()

    def _connection(self) -> sqlite3.Connection:
        # sqlite3 connections must not cross threads; backends call from a thread pool.
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @classmethod
    def existing(cls, path: str | os.PathLike[str]) -> CallCache | None:
        """The cache at `path`, or None when there is no file (nothing was recorded yet)."""
        return cls(path) if Path(path).exists() else None

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        if conn.execute("PRAGMA user_version").fetchone()[0] >= _SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")  # two processes opening an old file migrate it once
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for target in range(version + 1, _SCHEMA_VERSION + 1):
                _MIGRATIONS[target](conn)
                conn.execute(f"PRAGMA user_version = {target}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._connection().execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise CacheError(f"cannot read the call cache at {self.path}: {exc}") from exc

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        try:
            return int(self._connection().execute(sql, args).rowcount)
        except sqlite3.Error as exc:
            raise CacheError(f"cannot write the call cache at {self.path}: {exc}") from exc

    def get(self, key: str) -> dict[str, Any] | None:
        """The recorded response for `key`, or None (also when the row was damaged: then it is
        discarded with a `DamagedCacheWarning`, so the caller asks again)."""
        with self._held_lock:
            held = self._held.get(key)
        # A row paid for in this process and not written yet is replayed as a stored one is.
        rows = (
            [(*held[:5], held[6], held[5])]
            if held is not None
            else self._read(
                "SELECT key, model, operation, request, response, checksum, created"
                " FROM calls WHERE key = ?",
                (key,),
            )
        )
        value: dict[str, Any] | None = None
        if rows:
            row = RecordedCall(*rows[0])
            reason = row.damage()
            if reason is None:
                value = dict(json.loads(row.response))
            else:
                self.discard(key, reason, model=row.model, operation=row.operation)
        with self._counter_lock:
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
        return value

    def discard(self, key: str, reason: str, *, model: str = "", operation: str = "") -> None:
        """Remove a row that must not be replayed, and say so with a `DamagedCacheWarning`."""
        # By key alone: if another process re-recorded the call meanwhile, its good row goes
        # too, which costs one more request later and never replays anything wrong.
        self._write("DELETE FROM calls WHERE key = ?", (key,))
        what = " ".join(part for part in (model, operation, "call") if part)
        warnings.warn(
            DamagedCacheWarning(
                f"the call cache {self.path} held a damaged answer for a {what} ({reason}); "
                "it was discarded and the call is asked again"
            ),
            stacklevel=3,
        )

    def put(
        self, key: str, *, model: str, operation: str, request: dict[str, Any], response: Any
    ) -> None:
        """Record a response; the first recording of a key wins. A write the file refuses
        (locked by another process past the busy timeout) never loses the answer: it is held,
        replayed by `get`, and written later (see the module doc)."""
        request_text = json.dumps(request, sort_keys=True)
        response_text = json.dumps(response)
        row: Row = (
            key,
            model,
            operation,
            request_text,
            response_text,
            time.time(),
            _checksum(key, model, operation, request_text, response_text),
        )
        with self._held_lock:
            self._held.setdefault(key, row)
        self.flush()

    def flush(self, *, force: bool = False) -> int:
        """Write the held rows; returns how many are still held. Between failures it waits
        (doubling, up to 30 s) before trying again, unless `force`."""
        with self._held_lock:
            if not self._held or (not force and time.monotonic() < self._next_try):
                return len(self._held)
            rows = list(self._held.values())
        try:
            self._connection().executemany(_INSERT, rows)
        except sqlite3.Error as exc:
            with self._held_lock:
                first = self._next_try == 0.0
                self._next_try = time.monotonic() + self._wait
                self._wait = min(self._wait * 2, _RETRY_MAX_S)
                held = len(self._held)
            if first:
                warnings.warn(
                    CacheBusyWarning(
                        f"the call cache {self.path} cannot be written now ({exc}): {held} "
                        "answer(s) are kept and written when it frees, never bought again"
                    ),
                    stacklevel=3,
                )
            return held
        with self._held_lock:
            for row in rows:
                self._held.pop(row[0], None)
            self._next_try, self._wait = 0.0, _RETRY_FIRST_S
            return len(self._held)

    def _record_spills(self) -> None:
        # Answers an earlier process could not write: recorded now, then their file removed.
        for path, rows in read_spills(self.path):
            try:
                if rows:
                    self._connection().executemany(_INSERT, rows)
            except sqlite3.Error:
                continue  # still locked: the next open tries again
            with contextlib.suppress(OSError):
                path.unlink()

    def __len__(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM calls")[0][0])

    def rows(self) -> Iterator[RecordedCall]:
        """Every stored row, as stored (nothing checked)."""
        for row in self._read(
            "SELECT key, model, operation, request, response, checksum, created FROM calls"
        ):
            yield RecordedCall(*row)

    def info(self) -> CacheInfo:
        """Rows per model, the file's size and the first and last recording times."""
        by_model = dict(self._read("SELECT model, COUNT(*) FROM calls GROUP BY model"))
        oldest, newest = self._read("SELECT MIN(created), MAX(created) FROM calls")[0]
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"))
            if p.exists()  # the WAL holds recent writes until a checkpoint
        )
        return CacheInfo(
            path=self.path,
            rows=sum(by_model.values()),
            size_bytes=size,
            by_model=by_model,
            oldest=oldest,
            newest=newest,
        )

    def verify(
        self,
        check: Callable[[RecordedCall], None] | None = None,
        *,
        discard: bool = False,
    ) -> VerifyReport:
        """Check every row's checksum and JSON, and `check` (which raises a `CotplanError`
        saying what is wrong) on the intact ones; with `discard`, remove the damaged rows."""
        report = VerifyReport()
        for row in self.rows():
            report.checked += 1
            reason = row.damage()
            if reason is None and check is not None:
                try:
                    check(row)
                except CotplanError as exc:
                    reason = str(exc)
            if reason is not None:
                report.damaged.append(DamagedRow(row.key, row.model, row.operation, reason))
        if discard:
            for bad in report.damaged:
                report.discarded += self._write("DELETE FROM calls WHERE key = ?", (bad.key,))
            self._compact(report.discarded)
        return report

    def clear(self, *, model: str | None = None, older_than_days: float | None = None) -> int:
        """Forget recorded calls: all, or those of `model`, or recorded over `older_than_days`
        ago (both: those of `model` that are that old). Returns how many were removed."""
        check_clear_filters(model, older_than_days)
        clauses: list[str] = []
        args: list[Any] = []
        if model is not None:
            clauses.append("model = ?")
            args.append(model)
        if older_than_days is not None:
            if math.isfinite(older_than_days):
                clauses.append("created < ?")
                args.append(time.time() - older_than_days * _SECONDS_PER_DAY)
            else:
                clauses.append("0")  # nothing is infinitely old
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        removed = self._write(f"DELETE FROM calls{where}", tuple(args))
        self._compact(removed)
        return removed

    def _compact(self, removed: int) -> None:
        # Deleted prompts and answers would otherwise linger in free pages of a private file
        # that the user asked to forget them; best effort, as another process may hold it.
        if removed:
            with contextlib.suppress(sqlite3.Error):
                self._connection().execute("VACUUM")

    def close(self) -> None:
        """Write what is held (retrying with backoff for up to 10 s, then spilling it beside
        the file, with a warning naming the spill), and close this thread's connection."""
        deadline = time.monotonic() + _CLOSE_PATIENCE_S
        wait = _RETRY_FIRST_S
        while self.flush(force=True) and time.monotonic() + wait < deadline:
            time.sleep(wait)
            wait = min(wait * 2, _RETRY_MAX_S)
        with self._held_lock:
            rows, self._held = list(self._held.values()), {}
        if rows:
            try:
                where = spill(self.path, rows)
            except OSError as exc:
                raise CacheError(
                    f"{len(rows)} answer(s) could not be written to the call cache {self.path} "
                    f"nor kept beside it ({exc})"
                ) from exc
            warnings.warn(
                CacheBusyWarning(
                    f"the call cache {self.path} stayed locked: {len(rows)} answer(s) were kept "
                    f"in {where} and are recorded the next time the cache is opened"
                ),
                stacklevel=2,
            )
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
