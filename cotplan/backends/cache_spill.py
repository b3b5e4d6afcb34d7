"""Answers the call cache could not write yet, kept so that nothing paid for is lost.

Another process can hold the cache's write lock for longer than a write waits (a `cotplan cache
clear` compacting a large file, a second run, a backup tool). An answer that arrived meanwhile
has been paid for, so `CallCache.put` keeps it in memory and writes it later, retrying with
backoff; what is still unwritten when the process ends is spilled beside the cache, in a
private JSON-lines file (`<cache>.pending-<pid>-<random>.jsonl`), and the next `CallCache` on
that file records it and removes the spill.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from cotplan.io import parse_json, write_text

__all__ = ["read_spills", "spill"]

#: One cache row as `CallCache` inserts it: key, model, operation, request, response, created,
#: checksum.
Row = tuple[str, str, str, str, str, float, str]


def spill(cache: Path, rows: list[Row]) -> Path:
    """Write `rows` beside `cache` (mode 0600: they hold prompts and answers); the file's path."""
    name = f"{cache.name}.pending-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
    text = "".join(json.dumps(list(row), ensure_ascii=False) + "\n" for row in rows)
    return write_text(cache.with_name(name), text)


def read_spills(cache: Path) -> list[tuple[Path, list[Row]]]:
    """Every spill beside `cache` and its rows; a line that is not a row is skipped (its
    checksum is checked again when the row is replayed)."""
    found: list[tuple[Path, list[Row]]] = []
    for path in sorted(cache.parent.glob(f"{cache.name}.pending-*.jsonl")):
        rows: list[Row] = []
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                with contextlib.suppress(ValueError):
                    value: Any = parse_json(line, source=str(path), line=number)
                    if isinstance(value, list) and len(value) == 7:
                        rows.append(tuple(value))
        found.append((path, rows))
    return found
