"""One run at a time per report folder: the command line's name for `cotplan.io.folder_lock`
(the lock and its rules are documented there)."""

from __future__ import annotations

from cotplan.io.folder_lock import folder_locked, lock_folder, remove_leftovers, unlock_folder

__all__ = ["folder_locked", "lock_folder", "remove_leftovers", "unlock_folder"]
