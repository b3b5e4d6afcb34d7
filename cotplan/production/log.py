"""The production call log: one SQLite row per capped chat completion.

`capped` clients and `cotplan serve` append a row for every call they answer, so that spend and
how often the cap bites can be checked against the plan later. The file is
``$COTPLAN_HOME/production.sqlite`` unless a path is given (`COTPLAN_HOME` moves the whole user
folder, which is how tests keep it out of the real one).

Schema (table ``calls``, one row per call; version in ``PRAGMA user_version``):

===================  =======  =====================================================================
column               type     meaning
===================  =======  =====================================================================
id                   INTEGER  row id, in call order
time                 TEXT     when the call finished, ISO 8601 UTC (seconds)
model                TEXT     the model asked for (the request's `model`)
size                 REAL     the item size n the cap was taken for
cap                  INTEGER  the reasoning cap k applied (`SavedPlan.cap(size).tokens`)
basis                TEXT     what backs the cap: certified, scaled, law or not_credited
mode                 TEXT     how it was applied: template (two-phase), hidden (one request), or
                              fields (the LiteLLM callback: the request's fields only)
reasoning_tokens     INTEGER  reasoning tokens generated (from the usage, never re-counted);
                              NULL when the counts are unknown (`usage_trusted` 0)
answer_tokens        INTEGER  visible answer tokens; NULL when unknown
prompt_tokens        INTEGER  prompt tokens of every request the call made; NULL when unknown
cap_bitten           INTEGER  1 when the cap stopped the reasoning, else 0
answer_forced        INTEGER  1 when the answer was asked for after such a cut, else 0
cost_usd             REAL     list price of the call's requests; NULL when the model has no price
via                  TEXT     who answered: ``wrapper``, ``gateway`` or ``litellm``
call_id              TEXT     the reply's `id` (what a labels file names, `cotplan monitor`);
                              "" in rows written before schema 2
outcome              TEXT     ``complete``; for a streamed call, ``stopped`` when the caller
                              closed the stream before its end, ``error`` when the upstream
                              failed mid-stream (the row then holds what was seen; see
                              `cotplan.production.streaming`); ``complete`` in older rows
exit_rule            TEXT     the certified early exit's rule (`capped(..., exit="certified")`,
                              `cotplan serve --exit certified`); "" when the call kept the fixed
                              cap (and in rows written before schema 4)
stopped_by           TEXT     under the exit, what stopped the thinking: ``rule`` (the rule
                              fired), ``ended`` (the model closed it) or ``ceiling`` (the cap);
                              "" otherwise
stop_k               INTEGER  under the exit, the thinking tokens where it stopped; NULL otherwise
probe_tokens         INTEGER  what probing added to the counts above: the earlier probes' answer
                              tokens (in reasoning_tokens) and, where the exit plan bills them,
                              the prompts probing sent again (in prompt_tokens); 0 otherwise
tags                 TEXT     the call's tags (team, feature, ...) as a JSON object, from its
                              metadata, a ``tags=`` argument or the gateway's ``X-Cotplan-Tags``
                              header (`cotplan.production.tags`); "" for none and in rows
                              written before schema 5
usage_trusted        INTEGER  1 when every request's usage was a measurement; 0 when the upstream
                              sent none (or counts that cannot be right,
                              `cotplan.backends.parsing.read_usage`; a stream that finished
                              without it): the three counts are then NULL, unknown, never 0, and
                              `cotplan monitor` and `cotplan cost actuals` leave the call out of
                              token averages and spend, saying how many they left out. Rows
                              written before schema 6 are judged when the file is migrated (or
                              read): a complete call with 0 prompt tokens had no usage (every
                              request has a prompt), so its counts become unknown
===================  =======  =====================================================================

Changes to the schema are numbered migration functions (`MIGRATIONS`), applied in order to any
older file, so a log written by an older cotplan keeps its rows.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from cotplan import paths
from cotplan.errors import CacheError, InputError

__all__ = ["LOG_COLUMNS", "TOKEN_COLUMNS", "CallLog", "LogRecord", "default_log_path"]


@dataclass(frozen=True)
class LogRecord:
    """One call, as a row of the log (see the module docstring for each field)."""

    time: str
    model: str
    size: float
    cap: int
    basis: str
    mode: str
    reasoning_tokens: int | None
    answer_tokens: int | None
    prompt_tokens: int | None
    cap_bitten: bool
    answer_forced: bool
    cost_usd: float
    via: str
    call_id: str = ""
    outcome: str = "complete"
    exit_rule: str = ""
    stopped_by: str = ""
    stop_k: int | None = None
    probe_tokens: int = 0
    tags: str = ""
    usage_trusted: bool = True

    @property
    def tokens_known(self) -> bool:
        """Whether the call's token counts are a measurement (all three known)."""
        return self.usage_trusted and None not in (
            self.reasoning_tokens,
            self.answer_tokens,
            self.prompt_tokens,
        )


#: The columns of the `calls` table after the id, in order.
LOG_COLUMNS: tuple[str, ...] = tuple(LogRecord.__dataclass_fields__)
#: The columns every schema has (version 1's): a `calls` table without them is someone else's.
_FIRST_COLUMNS = LOG_COLUMNS[: LOG_COLUMNS.index("call_id")]


def _v1(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE calls (
            id INTEGER PRIMARY KEY,
            time TEXT NOT NULL,
            model TEXT NOT NULL,
            size REAL NOT NULL,
            cap INTEGER NOT NULL,
            basis TEXT NOT NULL,
            mode TEXT NOT NULL,
            reasoning_tokens INTEGER NOT NULL,
            answer_tokens INTEGER NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            cap_bitten INTEGER NOT NULL,
            answer_forced INTEGER NOT NULL,
            cost_usd REAL,
            via TEXT NOT NULL
        )
        """
    )


def _v2(db: sqlite3.Connection) -> None:
    # Labels for the monitor name a call by its reply's id, which version 1 did not keep.
    db.execute("ALTER TABLE calls ADD COLUMN call_id TEXT NOT NULL DEFAULT ''")


def _v3(db: sqlite3.Connection) -> None:
    # A streamed call may end before its reply does; its row must say so.
    db.execute("ALTER TABLE calls ADD COLUMN outcome TEXT NOT NULL DEFAULT 'complete'")


def _v4(db: sqlite3.Connection) -> None:
    # The certified early exit: whether it applied, where it stopped, what probing cost.
    db.execute("ALTER TABLE calls ADD COLUMN exit_rule TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE calls ADD COLUMN stopped_by TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE calls ADD COLUMN stop_k INTEGER")
    db.execute("ALTER TABLE calls ADD COLUMN probe_tokens INTEGER NOT NULL DEFAULT 0")


def _v5(db: sqlite3.Connection) -> None:
    # Spend by team and feature at month end needs each call's tags.
    db.execute("ALTER TABLE calls ADD COLUMN tags TEXT NOT NULL DEFAULT ''")


#: The token columns, NULL when the call's usage was no measurement.
TOKEN_COLUMNS: tuple[str, ...] = ("reasoning_tokens", "answer_tokens", "prompt_tokens")

#: Which rows written before schema 6 had no usage: a complete call counted 0 prompt tokens,
#: which no request that reached a model has (a streamed call cut short kept what it showed).
_UNMEASURED = "outcome = 'complete' AND prompt_tokens = 0"


def _unmeasured(row: dict[str, object]) -> bool:
    """`_UNMEASURED` for a row read from a file older than schema 6 (not migrated)."""
    return row.get("outcome", "complete") == "complete" and row.get("prompt_tokens") == 0


def _v6(db: sqlite3.Connection) -> None:
    # Unknown token counts are NULL with a flag, never 0: a call whose upstream sent no usage
    # was logged as 0 tokens and averaged in. SQLite cannot drop NOT NULL from a column, so
    # the table is rebuilt with the same rows (ids kept) and the flag set for the old rows
    # that had no usage.
    db.execute(
        """
        CREATE TABLE calls_v6 (
            id INTEGER PRIMARY KEY,
            time TEXT NOT NULL,
            model TEXT NOT NULL,
            size REAL NOT NULL,
            cap INTEGER NOT NULL,
            basis TEXT NOT NULL,
            mode TEXT NOT NULL,
            reasoning_tokens INTEGER,
            answer_tokens INTEGER,
            prompt_tokens INTEGER,
            cap_bitten INTEGER NOT NULL,
            answer_forced INTEGER NOT NULL,
            cost_usd REAL,
            via TEXT NOT NULL,
            call_id TEXT NOT NULL DEFAULT '',
            outcome TEXT NOT NULL DEFAULT 'complete',
            exit_rule TEXT NOT NULL DEFAULT '',
            stopped_by TEXT NOT NULL DEFAULT '',
            stop_k INTEGER,
            probe_tokens INTEGER NOT NULL DEFAULT 0,
            tags TEXT NOT NULL DEFAULT '',
            usage_trusted INTEGER NOT NULL DEFAULT 1
        )
        """
    )
    old = ", ".join(("id", *LOG_COLUMNS[: LOG_COLUMNS.index("usage_trusted")]))
    db.execute(f"INSERT INTO calls_v6 ({old}) SELECT {old} FROM calls")
    nulls = ", ".join(f"{name} = NULL" for name in TOKEN_COLUMNS)
    db.execute(f"UPDATE calls_v6 SET usage_trusted = 0, {nulls} WHERE {_UNMEASURED}")
    db.execute("DROP TABLE calls")
    db.execute("ALTER TABLE calls_v6 RENAME TO calls")


#: Migration n + 1 takes a file at `user_version` n to n + 1.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_v1, _v2, _v3, _v4, _v5, _v6)


def _create_private(path: Path) -> None:
    """Create `path` readable by its owner alone (0600) unless it exists: the log says what a
    team asked its models, and SQLite would create it as the umask allows (often 0644)."""
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(descriptor)


def default_log_path() -> Path:
    """``production.sqlite`` in the user folder (`cotplan.paths.home`)."""
    return paths.home() / "production.sqlite"


class CallLog:
    """The SQLite call log at `path` (default `default_log_path()`), created on first use.

    Safe to share between threads (the gateway answers calls in a thread pool): each thread
    writes through a connection of its own, under one lock, since SQLite connections are not
    to be shared across threads; the file is in write-ahead-log mode, so gateway workers in
    several processes append to it safely.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = default_log_path() if path is None else Path(path).expanduser()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._ready = False

    def __repr__(self) -> str:
        return f"CallLog({str(self.path)!r})"

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection to the log, in a transaction committed on leaving. Kept
        open between writes: opening and closing a connection per row cost tens of ms of
        disk flushes on a busy machine (closing the last one checkpoints the write-ahead log).
        """
        try:
            db = getattr(self._local, "db", None)
            if db is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if not self._ready:
                    _create_private(self.path)
                db = sqlite3.connect(self.path, timeout=30.0)
                # Write-ahead logging: a row costs no flush of its own (synchronous=NORMAL
                # keeps every committed row through a crash of the process, not of the
                # machine), and several gateway workers append to one file without blocking
                # its readers.
                db.execute("PRAGMA synchronous=NORMAL")
                self._local.db = db
            with db:
                if not self._ready:
                    self._migrate(db)
                    self._ready = True
                yield db
        except sqlite3.Error as exc:
            self._drop()
            raise CacheError(f"the call log {self.path} cannot be used: {exc}") from exc
        except OSError as exc:
            raise CacheError(f"the call log {self.path} cannot be used: {exc}") from exc

    def _drop(self) -> None:
        db = getattr(self._local, "db", None)
        self._local.db = None
        if db is not None:
            db.close()

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        self._drop()

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > len(MIGRATIONS):
            raise CacheError(
                f"the call log was written by a newer cotplan (schema {version}, this one "
                f"knows {len(MIGRATIONS)}); upgrade cotplan or log to another file"
            )
        if version == 0 and db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            # Tables but no schema version: another program's database, not ours to add to.
            raise CacheError("the file is a SQLite database but not a cotplan call log")
        for number, migrate in enumerate(MIGRATIONS[version:], start=version + 1):
            migrate(db)
            db.execute(f"PRAGMA user_version = {number}")
        db.commit()  # journal_mode cannot change inside a transaction
        db.execute("PRAGMA journal_mode=WAL")

    def append(self, record: LogRecord) -> None:
        """Write one row."""
        if not isinstance(record, LogRecord):
            raise InputError(f"must be a LogRecord, got {type(record).__name__}", field="record")
        row = asdict(record)
        row["cap_bitten"] = int(record.cap_bitten)
        row["answer_forced"] = int(record.answer_forced)
        # NULL, not NaN, for "no price": other tools reading the file expect SQL's own missing.
        row["cost_usd"] = None if math.isnan(record.cost_usd) else record.cost_usd
        # Unknown counts are NULL whatever placeholder the record holds, and any NULL count
        # makes the row's usage untrusted: the flag and the columns never disagree.
        trusted = record.tokens_known
        row["usage_trusted"] = int(trusted)
        for name in TOKEN_COLUMNS:
            row[name] = row[name] if trusted else None
        names = ", ".join(LOG_COLUMNS)
        marks = ", ".join(f":{name}" for name in LOG_COLUMNS)
        with self._lock, self._connect() as db:
            db.execute(f"INSERT INTO calls ({names}) VALUES ({marks})", row)

    @contextmanager
    def _reading(self) -> Iterator[tuple[sqlite3.Connection, list[str]]]:
        """The file opened read-only, with the columns of its `calls` table (none for an empty
        database): reading never migrates, creates or changes anything in it."""
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        try:
            with closing(sqlite3.connect(uri, uri=True, timeout=30.0)) as db:
                yield db, self._columns(db)
        except sqlite3.Error as exc:
            raise CacheError(f"the call log {self.path} cannot be read: {exc}") from exc

    def _columns(self, db: sqlite3.Connection) -> list[str]:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > len(MIGRATIONS):
            raise CacheError(
                f"the call log {self.path} was written by a newer cotplan (schema {version}, "
                f"this one knows {len(MIGRATIONS)}); upgrade cotplan"
            )
        columns = [str(row[1]) for row in db.execute("PRAGMA table_info(calls)")]
        tables = int(db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
        if not columns and (tables or version):
            raise CacheError(
                f"{self.path} is a SQLite database but not a cotplan call log (it has no "
                "`calls` table)"
            )
        missing = [name for name in _FIRST_COLUMNS if columns and name not in columns]
        if missing:
            raise CacheError(
                f"{self.path} is not a cotplan call log (its `calls` table has no "
                f"`{missing[0]}` column)"
            )
        return columns

    def check(self) -> None:
        """Refuse, before any call is answered, a log that could not take its rows: a folder,
        a file in a folder that is missing or not writable, or a file that is not a call log
        (another SQLite database, text, a newer schema). Writes nothing."""
        problem = self._unwritable()
        if problem is not None:
            raise InputError(f"{self.path} {problem}", field="log")
        if self.path.exists():
            try:
                with self._reading():
                    pass
            except CacheError as exc:
                raise InputError(str(exc), field="log") from exc

    def _unwritable(self) -> str | None:
        folder = self.path.parent
        if self.path.is_dir():
            return "is a folder; name a file in it, e.g. production.sqlite"
        if not folder.is_dir():
            return f"cannot be created: the folder {folder} does not exist"
        # SQLite writes a journal beside the file, so the folder must be writable too.
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"cannot be written: the folder {folder} is not writable"
        if self.path.exists() and not os.access(self.path, os.R_OK | os.W_OK):
            return "is not writable"
        return None

    def records(self) -> list[LogRecord]:
        """Every row, in call order (read-only: see `_reading`). An older schema's missing
        columns read as their defaults."""
        if not self.path.exists():
            return []
        with self._lock, self._reading() as (db, columns):
            present = [name for name in LOG_COLUMNS if name in columns]
            rows = (
                db.execute(f"SELECT {', '.join(present)} FROM calls ORDER BY id").fetchall()
                if columns
                else []
            )
        defaults = {name: LogRecord.__dataclass_fields__[name].default for name in LOG_COLUMNS}
        out = []
        for row in rows:
            values = {**defaults, **dict(zip(present, row, strict=True))}
            values["cap_bitten"] = bool(values["cap_bitten"])
            values["answer_forced"] = bool(values["answer_forced"])
            values["cost_usd"] = math.nan if values["cost_usd"] is None else values["cost_usd"]
            if "usage_trusted" not in present:  # an older file, read as migrating would
                values["usage_trusted"] = not _unmeasured(values)
            values["usage_trusted"] = bool(values["usage_trusted"])
            if not values["usage_trusted"]:
                values.update(dict.fromkeys(TOKEN_COLUMNS))
            out.append(LogRecord(**values))
        return out

    def to_frame(self) -> pd.DataFrame:
        """The log as a frame, one row per call (columns: `LOG_COLUMNS`)."""
        return pd.DataFrame([asdict(r) for r in self.records()], columns=list(LOG_COLUMNS))
