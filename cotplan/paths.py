"""Where cotplan keeps its files: one user folder, overridable with `COTPLAN_HOME`.

Tests and CI point `COTPLAN_HOME` at a temporary folder so nothing leaks between runs.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_path", "home", "models_dir"]


def home() -> Path:
    """The user folder (created on first use, private to the user)."""
    root = Path(os.environ.get("COTPLAN_HOME") or Path.home() / ".cotplan").expanduser()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def models_dir() -> Path:
    """Where `cotplan models pull` puts model files."""
    path = home() / "models"
    path.mkdir(exist_ok=True, mode=0o700)
    return path


def cache_path() -> Path:
    """The SQLite call cache (`COTPLAN_CACHE` overrides the file; `off` disables it)."""
    override = os.environ.get("COTPLAN_CACHE")
    if override and override.lower() not in {"off", "0", "false", "no"}:
        return Path(override).expanduser()
    return home() / "cache.sqlite"
