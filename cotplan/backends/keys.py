"""Where API keys come from: the environment, or a key file the user names. Nowhere else.

A key file holds ``NAME=value`` lines (dotenv style; ``#`` comments and ``export`` prefixes
allowed), e.g. ``OPENAI_API_KEY=sk-...``. Name it with ``api_key_file=`` or the environment
variable ``COTPLAN_KEY_FILE``. Like ssh, cotplan refuses a key file that other users can read.
Keys read here are handed to the client and never written anywhere by cotplan.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from cotplan.errors import ConfigError, InputError

__all__ = ["KEY_FILE_ENV", "find_key", "read_key_file", "scrub_secrets"]

#: Names a key file for every command, without a flag.
KEY_FILE_ENV = "COTPLAN_KEY_FILE"


def read_key_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``NAME=value`` pairs of a key file (errors never show a value)."""
    source = Path(path).expanduser()
    try:
        mode = source.stat().st_mode
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such key file", field="api_key_file", source=str(source)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read the key file: {type(exc).__name__}",
            field="api_key_file",
            source=str(source),
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"{source} is readable by other users; keys need a private file: chmod 600 {source}"
        )
    pairs: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.removeprefix("export ").partition("=")
        if not sep or not name.strip():
            raise InputError(
                "expected NAME=value", field="api_key_file", line=number, source=str(source)
            )
        pairs[name.strip()] = value.strip().strip("'\"")
    return pairs


def find_key(env_var: str, key_file: str | os.PathLike[str] | None = None) -> str | None:
    """The key for `env_var`: the environment first, then the named key file (argument, else
    ``COTPLAN_KEY_FILE``); None when neither has it."""
    value = os.environ.get(env_var)
    if value:
        return value
    named = key_file if key_file is not None else os.environ.get(KEY_FILE_ENV)
    if not named:
        return None
    return read_key_file(named).get(env_var) or None


#: What a secret looks like in text a server echoes back (a gateway quoting our request, its
#: headers or its URL): a bearer token, an OpenAI-style key, a key-like header or query
#: parameter, the password in a URL. Each keeps its name and loses its value.
_SECRET_SHAPES = (
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[^\s'\",;}]+"), r"\1\2***"),
    (re.compile(r"\b(sk-)[\w-]{4,}"), r"\1***"),
    (
        re.compile(
            r"(?i)\b((?:x-)?api[_-]?key|key|access[_-]?token|token|secret|password|"
            r"authorization)(['\"]?\s*[:=]\s*['\"]?)(?!\*\*\*|(?:bearer|basic)\s)[^\s'\"&,;}]+"
        ),
        r"\1\2***",
    ),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@:]+:[^\s/@]+@"), r"\1***@"),
)


def scrub_secrets(text: object, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret masked: the values in `secrets` (the key a client holds)
    wherever they appear, and anything shaped like a key (`Bearer ...`, `sk-...`,
    ``api_key=...``, ``Authorization: ...``, ``https://user:password@``). Every error line
    that quotes a server or a URL passes through here before anyone sees it."""
    out = str(text)
    for secret in secrets:
        if secret and len(secret) >= 4:  # too short a value would mask ordinary words
            out = out.replace(secret, "***")
    for shape, replacement in _SECRET_SHAPES:
        out = shape.sub(replacement, out)
    return out
