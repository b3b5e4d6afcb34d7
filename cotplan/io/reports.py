"""Report folders written as a unit: every command that saves a report goes through here.

A report's folder is named when the command starts (`report_name`: the time plus a random
suffix, so two runs in the same second never share one) under one root, `reports/` in the
working folder (`COTPLAN_REPORTS` overrides it). Files are written into a hidden staging
folder beside the target (`.NAME.partial-XXXX`, same parent, so same file system) and moved
into place together by `commit`:

- a new folder appears whole, in one rename, with its `manifest.json` inside;
- into an existing folder (`--out` given, or `plan` writing beside its calibration) each file
  is moved in with an atomic rename, the files a reader trusts (`last`, e.g. plan.json) after
  the rest, and `manifest.json` last of all; every file that replaced one of an earlier run is
  listed in `Committed.replaced`, for the command to say so.

An interrupted or failed run discards its staging folder, so a report folder never holds a mix
of two runs' files; a killed one (``kill -9``) leaves only the hidden staging folder.
`check_report_file` compares a file about to be read with the manifest of its folder.
`save_chart` writes one chart into a report (a chart that fails to render is skipped with a
`ChartNotSavedWarning`, never claimed, and never loses the tables written before it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cotplan.errors import InputError
from cotplan.io import write_text

__all__ = [
    "MANIFEST",
    "REPORTS_ENV",
    "ChartNotSavedWarning",
    "Committed",
    "ReportFolder",
    "check_report_file",
    "report_name",
    "reports_root",
    "save_chart",
]

#: The environment variable that moves the root of default report folders.
REPORTS_ENV = "COTPLAN_REPORTS"
#: Written last into every report folder: each file's size and SHA-256.
MANIFEST = "manifest.json"
_STAGING_MARK = ".partial-"


def reports_root() -> Path:
    """Where default report folders go: `COTPLAN_REPORTS`, else `reports/` here."""
    return Path(os.environ.get(REPORTS_ENV) or "reports").expanduser()


def report_name(kind: str = "", label: str = "", *, now: datetime | None = None) -> str:
    """`[KIND-]YYYYmmdd-HHMMSS-RANDOM[-LABEL]`: the time orders folders, the random part keeps
    two runs that start in the same second apart; `label` (a model name) is made file-safe."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:40]
    return "-".join(part for part in (kind, stamp, secrets.token_hex(3), slug) if part)


@dataclass(frozen=True)
class Committed:
    """What `ReportFolder.commit` did: the folder, the files now in it, those it replaced."""

    folder: Path
    files: tuple[str, ...]
    replaced: tuple[str, ...] = ()


@dataclass
class ReportFolder:
    """A report folder being written; write into `path`, then `commit()` (or `discard()`).

    Use `ReportFolder.start(out)` in a ``with`` block: leaving the block by an error or Ctrl-C
    discards whatever was written, so no half report is ever in the target.
    """

    target: Path
    path: Path
    command: str = ""
    _created: list[Path] = field(default_factory=list, repr=False)
    _done: bool = field(default=False, repr=False)

    @classmethod
    def start(
        cls,
        out: Path | None = None,
        *,
        default: Path | None = None,
        kind: str = "",
        label: str = "",
        command: str = "",
        field_name: str = "out",
    ) -> ReportFolder:
        """Name the folder now (`out`, else `default`, else a new `report_name` under
        `reports_root()`) and open its staging folder beside it.

        Raises `InputError` naming `field_name` when the target is a file or cannot be made.
        """
        target = Path(out or default or reports_root() / report_name(kind, label))
        if target.exists() and not target.is_dir():
            raise InputError(f"{target} exists and is not a folder", field=field_name)
        parent = target.absolute().parent
        created = _missing_parents(parent)
        try:
            parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}{_STAGING_MARK}", dir=parent))
        except OSError as exc:
            _remove_empty(created)
            raise InputError(f"cannot create {target}: {exc.strerror}", field=field_name) from exc
        return cls(target=target, path=staging, command=command, _created=created)

    def __enter__(self) -> ReportFolder:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: Any) -> None:
        if kind is not None and not self._done:
            self.discard()

    def discard(self) -> None:
        """Remove the staging folder and anything written into it (the target is untouched)."""
        if self._done:
            return
        self._done = True
        shutil.rmtree(self.path, ignore_errors=True)
        _remove_empty(self._created)

    def commit(self, *, last: Iterable[str] = ()) -> Committed:
        """Move what was written into the target, the files named in `last` after the rest
        and the manifest last of all; returns the files and those an earlier run had there."""
        if self._done:
            raise RuntimeError("this report folder was already committed or discarded")
        written = sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.is_file())
        late = [name for name in last if name in written]
        order = [name for name in written if name not in late] + late
        entries = {name: _entry(self.path / name) for name in order if name != MANIFEST}
        if not self.target.exists():
            # A new folder appears whole: staged, manifest included, then renamed in one step.
            _write_manifest(self.path / MANIFEST, entries, self.command)
            try:
                os.rename(self.path, self.target)
            except OSError:
                pass  # another run made the folder meanwhile: move the files in, below
            else:
                self._done = True
                return Committed(self.target, tuple(order))
        replaced: list[str] = []
        for name in order:
            if name == MANIFEST:
                continue
            destination = self.target / name
            if destination.exists():
                replaced.append(name)
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.path / name, destination)
        previous = _read_manifest(self.target / MANIFEST) or {}
        files = {**previous.get("files", {}), **entries}
        _write_manifest(self.target / MANIFEST, files, self.command)
        self._done = True
        shutil.rmtree(self.path, ignore_errors=True)
        return Committed(self.target, tuple(order), tuple(replaced))


def check_report_file(path: Path) -> str | None:
    """A note when `path` differs from what its folder's manifest recorded (edited by hand, or
    a write cut short), None when it matches or no manifest lists it. Reading goes on: a
    hand-edited file is the user's to make, and is validated on load like any other."""
    manifest = _read_manifest(Path(path).parent / MANIFEST)
    if manifest is None or not Path(path).is_file():
        return None
    recorded = manifest.get("files", {}).get(Path(path).name)
    if not isinstance(recorded, dict) or "sha256" not in recorded:
        return None
    if _sha256(Path(path)) == recorded["sha256"]:
        return None
    return (
        f"{path} differs from what cotplan wrote there ({MANIFEST} of its folder): edited by "
        "hand, or an earlier write was cut short"
    )


class ChartNotSavedWarning(RuntimeWarning):
    """A chart could not be rendered (vl-convert failed): its file was not written."""


def save_chart(chart: Any, path: Path) -> Path | None:
    """Render `chart` (anything with Altair's `save(path)`) to `path`; the path, or None with a
    `ChartNotSavedWarning` when rendering fails. Ctrl-C is not a rendering failure: it stops."""
    try:
        chart.save(str(path))
    except Exception as exc:  # a renderer's failure must not lose the tables already written
        warnings.warn(
            ChartNotSavedWarning(f"could not render {Path(path).name}: {exc}"), stacklevel=2
        )
        return None
    return Path(path)


# -- helpers ---------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _entry(path: Path) -> dict[str, Any]:
    return {"sha256": _sha256(path), "bytes": path.stat().st_size}


def _write_manifest(path: Path, files: dict[str, Any], command: str) -> None:
    record = {
        "schema_version": 1,
        "command": command,
        "written": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": dict(sorted(files.items())),
    }
    write_text(path, json.dumps(record, indent=2) + "\n")


def _read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest's record; None when absent or unreadable (a damaged manifest is replaced
    on the next commit, never trusted)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _missing_parents(folder: Path) -> list[Path]:
    """The folders `mkdir(parents=True)` would create for `folder`, deepest first."""
    missing: list[Path] = []
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove folders this run created and left empty (deepest first)."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()
