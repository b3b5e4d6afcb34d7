"""Writing files the way a user trusting cotplan with their work expects.

Every write goes to a temporary file in the same folder and is renamed over the target, so a
crash or a bad input midway never leaves half a file or destroys the previous one. Files that hold
prompts, responses or results are private to the user (mode 0600) by default.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cotplan.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "parse_json",
    "read_document",
    "read_json",
    "read_json_text",
    "write_bytes",
    "write_csv",
    "write_text",
]

#: The deepest nesting any JSON cotplan reads may have. Plans, price files, calibration records
#: and request bodies nest a handful of levels; Python's parser recurses once per level and
#: ends in RecursionError (a bare traceback) near 1,000.
MAX_JSON_DEPTH = 64
#: The largest JSON document read whole (files and request bodies): 64 MiB.
MAX_JSON_BYTES = 64 * 1024 * 1024


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
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        # A write to an open file fails without a file name (a full disk is `[Errno 28] No
        # space left on device` and nothing more): name the file the user asked for.
        if exc.filename is None or exc.filename == tmp_name:
            raise type(exc)(exc.errno, exc.strerror or str(exc), str(target)) from exc
        raise
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


def _nesting_depth(text: str) -> int:
    """The deepest bracket nesting of `text`, brackets inside strings not counted. Linear and
    iterative, so it can look at input the recursive parser would choke on."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKeyError(key)
        out[key] = value
    return out


class _RepeatedKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def parse_json(
    text: str | bytes,
    *,
    source: str,
    max_depth: int = MAX_JSON_DEPTH,
    max_bytes: int = MAX_JSON_BYTES,
    repeated_keys: bool = False,
    line: int | None = None,
    allow_nan: bool = True,
) -> Any:
    """Parse one JSON document from an untrusted file or request body.

    Every failure is an InputError naming `source` (a path or "request body") and, for syntax,
    the line: bytes that are not UTF-8, more than `max_bytes`, nesting deeper than `max_depth`,
    bad JSON, and (unless `repeated_keys`) an object that names one key twice, where the last
    would silently win. `line` is the file line where the document starts (one record of a
    JSONL file): every error then names the file line. A number of more digits than Python
    converts (4,300) is refused; so are ``NaN`` and ``Infinity`` unless `allow_nan` (a request
    body must be JSON as its standard has it: what it holds is sent on as JSON).
    """
    size = len(text.encode("utf-8") if isinstance(text, str) else text)
    if size > max_bytes:
        raise InputError(
            f"{size:,} bytes is more than the {max_bytes:,} allowed", line=line, source=source
        )
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (byte {exc.start})", line=line, source=source
            ) from None
    if _nesting_depth(text) > max_depth:
        raise InputError(f"nested more than {max_depth} levels deep", line=line, source=source)
    hook = None if repeated_keys else _refuse_repeated_keys
    try:
        if allow_nan:
            return json.loads(text, object_pairs_hook=hook)
        return json.loads(text, object_pairs_hook=hook, parse_constant=_refuse_constant)
    except _ConstantError as exc:
        raise InputError(
            f"{exc.args[0]} is not a JSON number: give a finite number", line=line, source=source
        ) from None
    except _RepeatedKeyError as exc:
        raise InputError(
            f"the key {exc.key!r} appears twice in one object", line=line, source=source
        ) from None
    except json.JSONDecodeError as exc:
        at = exc.lineno if line is None else line + exc.lineno - 1
        raise InputError(f"not valid JSON: {exc.msg}", line=at, source=source) from None
    except RecursionError:  # nesting the bracket count missed; never a bare traceback
        raise InputError(
            f"nested more than {max_depth} levels deep", line=line, source=source
        ) from None
    except ValueError:  # a number past Python's 4,300 digits: no JSONDecodeError
        raise InputError(
            "holds a number of more than 4,300 digits: not a number this can take",
            line=line,
            source=source,
        ) from None


class _ConstantError(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` where only JSON's own numbers are taken."""


def _refuse_constant(name: str) -> Any:
    raise _ConstantError(name)


def read_json_text(path: str | os.PathLike[str], **limits: Any) -> tuple[Any, str]:
    """`read_json`, with the file's text (for line numbers of what is checked after parsing)."""
    target = Path(path)
    try:
        with target.open("rb") as handle:
            data = handle.read(limits.get("max_bytes", MAX_JSON_BYTES) + 1)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(target)) from None
    value = parse_json(data, source=str(target), **limits)
    return value, data.decode("utf-8")


def read_json(path: str | os.PathLike[str], **limits: Any) -> Any:
    """`parse_json` of the file at `path`; a missing or unreadable file is an InputError that
    names it."""
    return read_json_text(path, **limits)[0]


def read_document(path: str | os.PathLike[str]) -> Any:
    """A user's settings file, TOML or JSON by its suffix (JSON through `parse_json`'s limits).
    Unreadable, not UTF-8, bad syntax or nested too deep: an InputError naming the file."""
    import tomllib

    file = Path(path).expanduser()
    source = str(file)
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    if file.suffix.lower() == ".json":
        return parse_json(text, source=source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", source=source) from None
    except RecursionError:
        raise InputError("nested too deep to read", source=source) from None
