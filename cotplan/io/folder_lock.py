"""One run at a time per report folder: a lock taken when a command names its folder, held
until the folder is committed or discarded.

Two runs sharing `--out` used to both run to the end, and the second's files replaced the
first's (a `note:` said so after the fact: the first run's results were gone). Now the second is
refused before it starts a model, naming the process that holds the folder. The lock is an
advisory `flock` on a hidden file beside the folder (`.NAME.lock`), so a run killed with
SIGKILL frees it: the kernel drops the lock with the process. Staging folders that such a run
left (`.NAME.partial-*`) are removed by the next run that takes the lock: while it is held, no
other run can be writing into them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from pathlib import Path

from cotplan.errors import InputError

__all__ = ["lock_folder", "remove_leftovers", "unlock_folder"]


def _lock_path(target: Path) -> Path:
    return target.absolute().parent / f".{target.name}.lock"


def lock_folder(target: Path, field: str = "out") -> int:
    """Take the folder's lock (a file descriptor to pass to `unlock_folder`); `InputError`
    naming `field` when another run holds it."""
    path = _lock_path(target)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise InputError(
                f"{target} is being written by another cotplan run (process {holder}): wait for "
                "it to finish, or give this run another folder",
                field=field,
            ) from None
        # The holder before us removes the file as it lets go: a lock on a removed file
        # guards nothing, so take it again on the file that is there now.
        with contextlib.suppress(FileNotFoundError):
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def unlock_folder(target: Path, fd: int) -> None:
    """Let go of the lock `lock_folder` took, and remove its file."""
    with contextlib.suppress(OSError):
        _lock_path(target).unlink()
    with contextlib.suppress(OSError):
        os.close(fd)


def remove_leftovers(target: Path, keep: Path) -> list[Path]:
    """Remove the staging folders of `target` that killed runs left (all but `keep`); call
    only while holding the folder's lock. Returns what was removed."""
    parent = target.absolute().parent
    removed = []
    for leftover in parent.glob(f".{target.name}.partial-*"):
        if leftover.is_dir() and leftover.absolute() != keep.absolute():
            shutil.rmtree(leftover, ignore_errors=True)
            removed.append(leftover)
    return removed
