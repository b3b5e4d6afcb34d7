"""Held-out items minus what calibration saw: one rule for the demo and `cotplan run`.

An item counts as seen when its id or its prompt was: another seed gives new ids but, where a
family has few distinct questions (4 parities of 2 bits), the same prompts, and an answer to a
question calibration already saw is not held-out evidence. A calibration table keeps only ids,
so `seen` may hold bare ids beside items.
"""

from __future__ import annotations

from collections.abc import Iterable

from cotplan.tasks.item import TaskItem

__all__ = ["drop_seen"]


def _prompt_key(item: TaskItem) -> str:
    return item.prompt if isinstance(item.prompt, str) else repr(item.prompt)


def drop_seen(
    items: Iterable[TaskItem], seen: Iterable[TaskItem | str]
) -> tuple[list[TaskItem], int]:
    """`items` minus those whose id or prompt is in `seen`, and how many were dropped.

    An entry of `seen` is an item (its id and its prompt count) or an id (a calibration
    table's `item` column)."""
    ids: set[str] = set()
    prompts: set[str] = set()
    for entry in seen:
        if isinstance(entry, TaskItem):
            ids.add(entry.id)
            prompts.add(_prompt_key(entry))
        else:
            ids.add(str(entry))
    chosen = list(items)
    kept = [it for it in chosen if it.id not in ids and _prompt_key(it) not in prompts]
    return kept, len(chosen) - len(kept)
