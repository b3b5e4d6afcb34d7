"""Writing files the way a user trusting cotplan with their work expects.

Every write goes to a temporary file in the same folder and is renamed over the target, so a
crash or a bad input midway never leaves half a file or destroys the previous one. Files that hold
prompts, responses or results are private to the user (mode 0600) by default.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["write_bytes", "write_csv", "write_text"]


def write_bytes(path: str | os.PathLike[str], data: bytes, *, private: bool = True) -> Path:
    """Write `data` to `path` whole or not at all; mode 0600 unless `private` is False."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o600 if private else 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return target


def write_text(path: str | os.PathLike[str], text: str, *, private: bool = True) -> Path:
    """`write_bytes` for UTF-8 text."""
    return write_bytes(path, text.encode("utf-8"), private=private)


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str], *, private: bool = True) -> Path:
    """A DataFrame as CSV (no index), written atomically and privately."""
    return write_text(path, frame.to_csv(index=False), private=private)
