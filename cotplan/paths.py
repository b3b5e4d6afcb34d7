"""Where cotplan keeps its files: one user folder, overridable with `COTPLAN_HOME`.

Tests and CI point `COTPLAN_HOME` at a temporary folder so nothing leaks between runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from cotplan.errors import ConfigError

__all__ = ["cache_path", "home", "models_dir", "subfolder"]


def home() -> Path:
    """The user folder (created on first use, private to the user); `ConfigError` naming
    COTPLAN_HOME when it cannot be a folder (a file is there, or its parent is not writable)."""
    configured = os.environ.get("COTPLAN_HOME")
    root = Path(configured or Path.home() / ".cotplan").expanduser()
    _folder(root, "COTPLAN_HOME" if configured else "the user folder (set COTPLAN_HOME)")
    return root


def models_dir() -> Path:
    """Where `cotplan models pull` puts model files."""
    return subfolder("models")


def subfolder(name: str) -> Path:
    """`home()/name`, made on first use; `ConfigError` naming COTPLAN_HOME when something
    else (a file) is in its place."""
    path = home() / name
    _folder(path, f"the {name} folder in COTPLAN_HOME")
    return path


def _folder(path: Path, what: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        # mkdir's own error names the path but not the setting that chose it.
        reason = "is a file, not a folder" if path.is_file() else f"cannot be made: {exc.strerror}"
        raise ConfigError(f"{what} {path} {reason}: point COTPLAN_HOME at a folder") from exc


def cache_path() -> Path:
    """The SQLite call cache (`COTPLAN_CACHE` overrides the file; `off` disables it)."""
    override = os.environ.get("COTPLAN_CACHE")
    if override and override.lower() not in {"off", "0", "false", "no"}:
        return Path(override).expanduser()
    return home() / "cache.sqlite"
