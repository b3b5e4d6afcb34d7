"""Trained lab models in the cotplan user folder, keyed by everything that shaped them.

A model is saved as ``<home>/lab/<kind>/<key>/`` holding ``weights.pt`` (the state dict) and
``meta.json`` (the config, the training settings and whatever the trainer measured). The key is a
hash of the config and training settings, so changing any of them trains a new model instead of
loading a stale one, and two settings never overwrite each other.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cotplan import paths
from cotplan.errors import InputError, ModelFileError
from cotplan.io import write_bytes, write_text
from cotplan.research.lab._torch import require_torch

__all__ = ["StoredModel", "lab_dir", "load", "model_key", "save"]

_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,40}$")


def lab_dir() -> Path:
    """Where the lab keeps trained models (``<home>/lab``)."""
    return paths.subfolder("lab")


def model_key(settings: Mapping[str, Any]) -> str:
    """A short stable hash of JSON-able `settings` (config + training parameters)."""
    try:
        canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    except TypeError as exc:
        raise InputError(f"must be JSON-serialisable: {exc}", field="settings") from exc
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _folder(kind: str, settings: Mapping[str, Any]) -> Path:
    if not _KIND.match(kind):
        raise InputError(f"must be a short lowercase name; got {kind!r}", field="kind")
    return lab_dir() / kind / model_key(settings)


@dataclasses.dataclass(frozen=True)
class StoredModel:
    """What `load` returns: the state dict, its settings, and what the trainer measured."""

    state: dict[str, Any]
    settings: dict[str, Any]
    meta: dict[str, Any]


def save(
    kind: str,
    settings: Mapping[str, Any],
    state: Mapping[str, Any],
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Save a state dict under `kind` and `settings`; returns the folder."""
    torch = require_torch()
    folder = _folder(kind, settings)
    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    # Weights first, metadata last: a folder with meta.json always has its weights.
    write_bytes(folder / "weights.pt", buffer.getvalue())
    document = {"settings": dict(settings), "meta": dict(meta or {})}
    write_text(folder / "meta.json", json.dumps(document, indent=2, sort_keys=True) + "\n")
    return folder


def load(kind: str, settings: Mapping[str, Any]) -> StoredModel | None:
    """The model saved under `kind` and `settings`, or None when there is none yet."""
    torch = require_torch()
    folder = _folder(kind, settings)
    meta_path, weights_path = folder / "meta.json", folder / "weights.pt"
    if not meta_path.exists():
        return None
    try:
        document = json.loads(meta_path.read_text(encoding="utf-8"))
        state = torch.load(weights_path, map_location="cpu", weights_only=True)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelFileError(f"cannot read the lab model in {folder}: {exc}") from exc
    return StoredModel(state, document.get("settings", {}), document.get("meta", {}))
