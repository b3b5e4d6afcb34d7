"""Calibration task sets: the `TaskItem` record, the JSONL file format, built-in families, and
answer scoring."""

from cotplan.tasks.answers import extract_answer, is_correct, normalize_text
from cotplan.tasks.dedup import drop_seen
from cotplan.tasks.families import FamilyInfo, families, get_family, list_families, make_tasks
from cotplan.tasks.files import item_from_dict, item_to_dict, load_tasks, save_tasks
from cotplan.tasks.item import AnswerKind, TaskItem
from cotplan.tasks.size import item_size

__all__ = [
    "AnswerKind",
    "FamilyInfo",
    "TaskItem",
    "drop_seen",
    "extract_answer",
    "families",
    "get_family",
    "is_correct",
    "item_from_dict",
    "item_size",
    "item_to_dict",
    "list_families",
    "load_tasks",
    "make_tasks",
    "normalize_text",
    "save_tasks",
]
