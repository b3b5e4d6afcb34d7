"""What a reproduction ran on: cotplan's version and commit, the llama.cpp build, model digests.

A referee needs to know which code and which model file produced a report's numbers. Every
field here is best effort: a field that cannot be read says why ("unknown", "not found: ...")
and never raises, because a report without a commit is still worth writing, and a run must not
fail at its end over a missing `git`.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
import sys
from pathlib import Path

from cotplan.errors import CotplanError

__all__ = ["UNKNOWN", "git_commit", "lab_weight_digests", "provenance"]

UNKNOWN = "unknown"
_PACKAGE = Path(__file__).resolve().parent
_LAB_WEIGHTS = _PACKAGE / "lab" / "reasoning" / "weights"


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(checkout: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def git_commit(package: Path = _PACKAGE) -> str:
    """The commit of the checkout `package` lies in, "+ modified files" when the tree differs
    from it; "unknown" for an installed package (no `.git` above it) or without `git`."""
    checkout = package.parent
    if not (checkout / ".git").exists():
        return UNKNOWN
    commit = _git(checkout, "rev-parse", "HEAD")
    if not commit:
        return UNKNOWN
    changes = _git(checkout, "status", "--porcelain", "--untracked-files=no")
    return f"{commit} + modified files" if changes else commit


def _model_digest() -> str:
    from cotplan.backends.models import DEFAULT_MODEL, locate, sha256_file

    try:
        path, _model_id = locate(DEFAULT_MODEL)
        return f"{sha256_file(path)} ({path.name})"
    except CotplanError as exc:
        return f"not found: {exc}"


def _adapter_digest() -> str:
    # The adapter is checked against this record when it is loaded, so the record's digest is
    # the file's; reading it costs no hashing of the file.
    from cotplan.backends.adapters import KNOWN_ADAPTERS

    try:
        return "; ".join(f"{name}: {spec.sha256}" for name, spec in KNOWN_ADAPTERS.items())
    except CotplanError as exc:
        return f"not found: {exc}"


def lab_weight_digests(names: list[str]) -> dict[str, str]:
    """The SHA-256 each shipped lab weight file's record gives, by name (``lab-lamp-long``)."""
    digests: dict[str, str] = {}
    for name in names:
        try:
            record = json.loads((_LAB_WEIGHTS / f"{name}.json").read_text())
            digests[name] = str(record["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            digests[name] = "not shipped (trained on first use)"
    return digests


def provenance(*, local_model: bool = True) -> dict[str, str]:
    """Versions, commit and model digests, as labelled strings (none of them ever raises).

    `local_model` hashes the embedded GGUF (under a second, cached by file time); a run on an
    exact reference or a hosted model says the embedded model was not used instead.
    """
    return {
        "cotplan version": _version("cotplan"),
        "cotplan commit": git_commit(),
        "llama.cpp build (xllamacpp)": _version("xllamacpp"),
        "embedded model SHA-256": _model_digest() if local_model else "not used",
        "shipped adapter SHA-256 (its record)": _adapter_digest(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
