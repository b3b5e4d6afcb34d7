"""The report folder's lock, now `cotplan.io.folder_lock` (kept importable here)."""

from cotplan.io.folder_lock import lock_folder, remove_leftovers, unlock_folder

__all__ = ["lock_folder", "remove_leftovers", "unlock_folder"]
