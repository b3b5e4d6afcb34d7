"""A record/replay cache of model calls in SQLite.

A rerun of a calibration or experiment replays recorded answers instead of paying again, and a
run killed halfway resumes where it stopped. The key is a canonical hash of everything that
decides the answer (endpoint namespace, model, operation, parameters, prompt); API keys and
headers are never part of a request body, so they never reach the file.

Safe for concurrent writers: WAL journal, a busy timeout, one short transaction per write, and
`INSERT OR IGNORE` so two processes recording the same call agree on the first answer. The file
is created with mode 0600 because it holds prompts and responses.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from cotplan.errors import CacheError

__all__ = ["CallCache", "canonical_key"]

_SCHEMA_VERSION = 1
_MIGRATIONS = {
    1: """
        CREATE TABLE IF NOT EXISTS calls (
            key TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            operation TEXT NOT NULL,
            request TEXT NOT NULL,
            response TEXT NOT NULL,
            created REAL NOT NULL
        )
    """,
}


def canonical_key(payload: dict[str, Any]) -> str:
    """sha256 of the payload as sorted, compact JSON (stable across runs and machines)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class CallCache:
    """SQLite-backed map from request payloads to recorded responses."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self._counter_lock = threading.Lock()
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

    def _connection(self) -> sqlite3.Connection:
        # sqlite3 connections must not cross threads; backends call from a thread pool.
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        for target in range(version + 1, _SCHEMA_VERSION + 1):
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(_MIGRATIONS[target])
                conn.execute(f"PRAGMA user_version = {target}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def get(self, key: str) -> dict[str, Any] | None:
        """The recorded response for `key`, or None."""
        try:
            row = (
                self._connection()
                .execute("SELECT response FROM calls WHERE key = ?", (key,))
                .fetchone()
            )
        except sqlite3.Error as exc:
            raise CacheError(f"cannot read the call cache at {self.path}: {exc}") from exc
        with self._counter_lock:
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        return None if row is None else dict(json.loads(row[0]))

    def put(
        self, key: str, *, model: str, operation: str, request: dict[str, Any], response: Any
    ) -> None:
        """Record a response; the first recording of a key wins."""
        try:
            self._connection().execute(
                "INSERT OR IGNORE INTO calls (key, model, operation, request, response, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    operation,
                    json.dumps(request, sort_keys=True),
                    json.dumps(response),
                    time.time(),
                ),
            )
        except sqlite3.Error as exc:
            raise CacheError(f"cannot write the call cache at {self.path}: {exc}") from exc

    def __len__(self) -> int:
        return int(self._connection().execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def clear(self) -> None:
        """Forget every recorded call."""
        self._connection().execute("DELETE FROM calls")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
