"""Where a batch calibration keeps what it has submitted and received: the report folder.

Everything lives under ``<report>/batch/``, so a run killed at any point (or the next morning's
run on another machine with the folder) picks up where it stood:

- ``state.json``: one entry per batch file, with its provider ids (input file, batch, output
  and error files) as soon as each is known, and its last status. It is rewritten whole
  (`cotplan.io.write_text`) after every change.
- ``input-NNN.jsonl``: the batch files themselves, written before anything is uploaded; the
  requests in flight are read back from them.
- ``results.jsonl``: every answer received (custom_id and the response body), appended and
  synced as it arrives, checked again when read.
- ``failures.jsonl``: every request the provider failed (custom_id, batch, why), kept as the
  record of what was retried.

A submission is written down in two steps, so that a kill between them cannot submit twice:
the input file's id before the batch is created (and the batch is created with that file and
the run's token in its metadata), the batch id right after. A rerun that finds a file id
without a batch id asks the provider for a batch made from that file before making one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.io import parse_json, read_json, write_text

__all__ = ["TERMINAL", "BatchEntry", "BatchFolder", "BatchStatus"]

#: Batch statuses after which nothing more will change (OpenAI's names; a file batch run by an
#: executor is "completed" once its output was read).
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_VERSION = 1


@dataclass
class BatchEntry:
    """One batch file and what became of it (mutable: the folder rewrites it as it learns)."""

    name: str
    requests: int
    kind: str  # "openai" (submitted through the SDK) or "file" (run by an executor)
    input_file_id: str | None = None
    id: str | None = None
    status: str = "written"
    output_file_id: str | None = None
    error_file_id: str | None = None
    harvested: bool = False
    submitted_at: str = ""
    completed: int = 0
    failed: int = 0

    @property
    def file(self) -> str:
        return f"{self.name}.jsonl"

    @property
    def open(self) -> bool:
        """Submitted (or written for an executor) and not yet read back."""
        return not self.harvested


@dataclass(frozen=True)
class BatchStatus:
    """Where a batch calibration stands, from its folder: `to_frame()` has one row per batch."""

    folder: Path
    model: str
    endpoint: str
    entries: tuple[BatchEntry, ...]
    answered: int
    failed: int
    updated: str

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "batch": e.name,
                    "kind": e.kind,
                    "id": e.id or "",
                    "requests": e.requests,
                    "status": e.status,
                    "completed": e.completed,
                    "failed": e.failed,
                    "read_back": e.harvested,
                    "submitted_at": e.submitted_at,
                }
                for e in self.entries
            ],
            columns=[
                "batch",
                "kind",
                "id",
                "requests",
                "status",
                "completed",
                "failed",
                "read_back",
                "submitted_at",
            ],
        )

    @property
    def in_flight(self) -> int:
        return sum(e.requests for e in self.entries if e.open)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class BatchFolder:
    """The ``batch/`` folder of one calibration report (see the module docstring)."""

    def __init__(self, report: str | os.PathLike[str]) -> None:
        self.path = Path(report) / "batch"
        self.entries: list[BatchEntry] = []
        self.model = ""
        self.endpoint = ""
        self.token = ""
        self.updated = ""
        if (self.path / "state.json").exists():
            self._load()

    @property
    def exists(self) -> bool:
        return (self.path / "state.json").exists()

    def bind(self, model: str, endpoint: str) -> None:
        """Tie the folder to one model and endpoint: a folder started for another model is
        refused, since its answers are not this model's."""
        if self.model and self.model != model:
            raise InputError(
                f"{self.path} holds batches of {self.model!r}, not {model!r}: use another --out",
                field="out",
            )
        self.model, self.endpoint = model, endpoint
        self.token = self.token or secrets.token_hex(8)
        self.save()

    def _load(self) -> None:
        source = self.path / "state.json"
        raw = read_json(source)
        if not isinstance(raw, dict) or raw.get("version") != _VERSION:
            raise InputError("is not a batch state this cotplan wrote", source=str(source))
        try:
            self.model = str(raw["model"])
            self.endpoint = str(raw.get("endpoint", ""))
            self.token = str(raw.get("token", ""))
            self.updated = str(raw.get("updated", ""))
            self.entries = [BatchEntry(**entry) for entry in raw["batches"]]
        except (KeyError, TypeError) as exc:
            raise InputError(f"is damaged: {exc}", source=str(source)) from None

    def save(self) -> None:
        self.updated = _now()
        state = {
            "version": _VERSION,
            "model": self.model,
            "endpoint": self.endpoint,
            "token": self.token,
            "updated": self.updated,
            "batches": [vars(entry) for entry in self.entries],
        }
        write_text(self.path / "state.json", json.dumps(state, indent=1) + "\n")

    # -- batch files ----------------------------------------------------------------------------

    def new_entry(self, text: str, requests: int, kind: str) -> BatchEntry:
        """Write the next input file and record it (before anything is uploaded)."""
        entry = BatchEntry(name=f"input-{len(self.entries) + 1:03d}", requests=requests, kind=kind)
        write_text(self.path / entry.file, text)
        self.entries.append(entry)
        self.save()
        return entry

    def input_ids(self, entry: BatchEntry) -> list[str]:
        """The custom_ids of an input file, in order."""
        ids = []
        for number, line in enumerate(self.input_text(entry).splitlines(), start=1):
            if line.strip():
                parsed = parse_json(line, source=str(self.path / entry.file))
                if not isinstance(parsed, dict) or not isinstance(parsed.get("custom_id"), str):
                    raise InputError(
                        "has a line without `custom_id`",
                        line=number,
                        source=str(self.path / entry.file),
                    )
                ids.append(parsed["custom_id"])
        return ids

    def input_text(self, entry: BatchEntry) -> str:
        try:
            return (self.path / entry.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot read: {exc.strerror or exc}", source=str(self.path / entry.file)
            ) from None

    # -- answers and failures -------------------------------------------------------------------

    def add_results(self, answers: dict[str, dict[str, Any]]) -> None:
        self._append("results.jsonl", ({"custom_id": k, "body": v} for k, v in answers.items()))

    def add_failures(self, failures: dict[str, str], batch: str) -> None:
        lines = ({"custom_id": k, "batch": batch, "error": v} for k, v in failures.items())
        self._append("failures.jsonl", lines)

    def _append(self, name: str, lines: Iterator[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        if not text:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.path / name
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    def results(self) -> dict[str, dict[str, Any]]:
        """Every answer received so far, by custom_id."""
        return {line["custom_id"]: line["body"] for line in self._read("results.jsonl")}

    def failure_counts(self) -> dict[str, int]:
        """How often each request failed."""
        counts: dict[str, int] = {}
        for line in self._read("failures.jsonl"):
            counts[line["custom_id"]] = counts.get(line["custom_id"], 0) + 1
        return counts

    def _read(self, name: str) -> Iterator[dict[str, Any]]:
        source = self.path / name
        if not source.exists():
            return
        lines = source.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                parsed = parse_json(line, source=str(source))
            except InputError:
                if number == len(lines):
                    # The last line of a run killed mid-write: its answer is asked for again.
                    return
                raise
            if isinstance(parsed, dict) and isinstance(parsed.get("custom_id"), str):
                yield parsed
            else:
                raise InputError(
                    "is not a line this cotplan wrote", line=number, source=str(source)
                )

    def status(self) -> BatchStatus:
        failed = 0
        answered = self.results()
        with contextlib.suppress(InputError):
            failed = sum(1 for k in self.failure_counts() if k not in answered)
        return BatchStatus(
            folder=self.path.parent,
            model=self.model,
            endpoint=self.endpoint,
            entries=tuple(self.entries),
            answered=len(answered),
            failed=failed,
            updated=self.updated,
        )
