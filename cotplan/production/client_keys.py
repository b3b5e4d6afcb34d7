"""The gateway's own client keys: who may call it (`cotplan serve --client-keys-file`).

A file of keys, one a line (blank lines and ``#`` comments skipped), or a comma-separated
list in an environment variable. They are the gateway's, given to its clients; the upstream's
key stays with the gateway and is never one of them.
"""

from __future__ import annotations

import os
from pathlib import Path

from cotplan.errors import InputError

__all__ = ["keys_from_env", "read_client_keys"]

#: The shortest key taken: a short key is guessed.
MIN_KEY_CHARS = 16


def _checked(keys: list[str], source: str) -> tuple[str, ...]:
    if not keys:
        raise InputError("holds no key", source=source)
    for number, key in enumerate(keys, start=1):
        if len(key) < MIN_KEY_CHARS or any(ch.isspace() for ch in key):
            raise InputError(
                f"key {number} must be at least {MIN_KEY_CHARS} characters with no spaces",
                source=source,
            )
    return tuple(keys)


def read_client_keys(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The keys in the file at `path` (see the module)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read: {exc}", source=str(file)) from None
    keys = [line.strip() for line in text.splitlines()]
    return _checked([k for k in keys if k and not k.startswith("#")], str(file))


def keys_from_env(name: str) -> tuple[str, ...]:
    """The comma-separated keys in the environment variable `name`."""
    value = os.environ.get(name, "")
    return _checked([k.strip() for k in value.split(",") if k.strip()], f"${name}")
