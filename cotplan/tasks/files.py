"""The calibration file format: one JSON object per line.

    {"id": "q1", "prompt": "What is 2 + 3?", "answer": "5"}
    {"id": "q2", "messages": [{"role": "user", "content": "Pick one"}], "answer": "B",
     "choices": ["A", "B", "C"], "n": 3}

Fields: `id` (string or integer, unique), exactly one of `prompt` (string) or `messages` (chat
messages), `answer` (string or number), and optionally `kind` ("integer", "choice", "binary",
"text"; inferred when absent), `choices` (strings; `answer` must be one), `n` (the item's size, a
positive integer; absent means "the prompt's token count"), `family` (a label). Blank lines are
skipped. Any other field is an error, so a typo such as "anwser" is caught rather than ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast, get_args

from cotplan.errors import InputError
from cotplan.io import write_text
from cotplan.messages import Message, validate_prompt
from cotplan.tasks.item import AnswerKind, TaskItem

__all__ = ["MAX_LINE_CHARS", "MAX_N", "item_from_dict", "item_to_dict", "load_tasks", "save_tasks"]

#: The largest size accepted for an item (a million: beyond any context window).
MAX_N = 1_000_000
#: The longest line accepted (a million characters: some 250k tokens, beyond any context window).
MAX_LINE_CHARS = 1_000_000

_FIELDS = ("id", "prompt", "messages", "answer", "kind", "choices", "n", "family")
_KINDS: tuple[str, ...] = get_args(AnswerKind)


def _infer_kind(answer: str, choices: tuple[str, ...] | None) -> AnswerKind:
    if choices is not None:
        return "choice"
    try:
        int(answer.strip())
    except ValueError:
        return "text"
    return "integer"


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    return False


def item_from_dict(
    row: dict[str, Any], *, line: int | None = None, source: str | None = None
) -> TaskItem:
    """Validate one record of the file format and build its `TaskItem`."""

    def fail(message: str, field: str | None = None) -> InputError:
        return InputError(message, field=field, line=line, source=source)

    if not isinstance(row, dict):
        raise fail(f"expected a JSON object, got {type(row).__name__}")
    unknown = sorted(set(row) - set(_FIELDS))
    if unknown:
        raise fail(
            f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(_FIELDS)}"
        )
    for name, value in row.items():
        if _has_lone_surrogate(value):
            raise fail(
                "holds a lone surrogate escape (e.g. \\ud800): not text any model accepts", name
            )
    if "id" not in row:
        raise fail("missing", "id")
    raw_id = row["id"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise fail(f"must be a string or integer, got {type(raw_id).__name__}", "id")
    item_id = str(raw_id)
    if not item_id.strip():
        raise fail("must not be empty", "id")

    has_prompt, has_messages = "prompt" in row, "messages" in row
    if has_prompt == has_messages:
        raise fail("give exactly one of `prompt` or `messages`", "prompt")
    prompt: str | tuple[Message, ...]
    if has_prompt:
        if not isinstance(row["prompt"], str):
            raise fail(f"must be a string, got {type(row['prompt']).__name__}", "prompt")
        if not row["prompt"].strip():
            raise fail("must not be empty", "prompt")
        prompt = row["prompt"]
    else:
        messages = row["messages"]
        if not isinstance(messages, list):
            raise fail(f"must be a list of messages, got {type(messages).__name__}", "messages")
        try:
            validate_prompt(messages, field_name="messages")
        except InputError as exc:
            raise fail(str(exc)) from exc
        if any(not isinstance(m["content"], str) for m in messages):
            raise fail("every message `content` must be a string", "messages")
        prompt = tuple({"role": m["role"], "content": m["content"]} for m in messages)

    if "answer" not in row:
        raise fail("missing", "answer")
    raw_answer = row["answer"]
    if isinstance(raw_answer, bool) or not isinstance(raw_answer, str | int | float):
        raise fail(f"must be a string or number, got {type(raw_answer).__name__}", "answer")
    answer = raw_answer if isinstance(raw_answer, str) else json.dumps(raw_answer)
    if not answer.strip():
        raise fail("must not be empty", "answer")

    choices: tuple[str, ...] | None = None
    if row.get("choices") is not None:
        raw_choices = row["choices"]
        if (
            not isinstance(raw_choices, list)
            or len(raw_choices) < 2
            or not all(isinstance(c, str) and c.strip() for c in raw_choices)
        ):
            raise fail("must be a list of at least two non-empty strings", "choices")
        if len(set(raw_choices)) != len(raw_choices):
            raise fail("must not repeat a choice", "choices")
        choices = tuple(raw_choices)
        if answer not in choices:
            raise fail(f"{answer!r} is not one of the choices {list(choices)!r}", "answer")

    if row.get("kind") is None:
        kind = _infer_kind(answer, choices)
    else:
        if row["kind"] not in _KINDS:
            raise fail(f"must be one of {', '.join(_KINDS)}, got {row['kind']!r}", "kind")
        kind = cast(AnswerKind, row["kind"])
    if kind == "choice" and choices is None:
        raise fail("a `choice` item needs `choices`", "choices")
    if kind == "integer":
        try:
            int(answer.strip().replace(",", ""))
        except ValueError:
            raise fail(f"{answer!r} is not an integer (kind is `integer`)", "answer") from None
    if kind == "binary" and answer.strip() not in {"0", "1"}:
        raise fail(f"{answer!r} is not 0 or 1 (kind is `binary`)", "answer")

    n: int | None = None
    if row.get("n") is not None:
        raw_n = row["n"]
        if isinstance(raw_n, bool) or not isinstance(raw_n, int):
            raise fail(f"must be a positive integer, got {raw_n!r}", "n")
        if raw_n < 1:
            raise fail(f"must be a positive integer, got {raw_n}", "n")
        if raw_n > MAX_N:
            raise fail(f"{raw_n} is too large (at most {MAX_N:,})", "n")
        n = raw_n

    family = row.get("family", "custom")
    if not isinstance(family, str) or not family.strip():
        raise fail("must be a non-empty string", "family")
    return TaskItem(item_id, prompt, answer, kind, choices, n, family)


def load_tasks(path: str | os.PathLike[str]) -> list[TaskItem]:
    """Read a calibration file; every problem is an `InputError` naming its line and field."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", field="path", source=source) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", field="path", source=source) from exc
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", field="path", source=source) from exc
    if text.startswith("\ufeff"):
        raise InputError(
            "starts with a byte-order mark (BOM); save it as UTF-8 without BOM",
            field="path",
            line=1,
            source=source,
        )
    items: list[TaskItem] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if "\x00" in raw:
            raise InputError(
                "holds a NUL byte: a binary file, not JSON lines",
                field="path",
                line=number,
                source=source,
            )
        if len(raw) > MAX_LINE_CHARS:
            raise InputError(
                f"is {len(raw):,} characters long (at most {MAX_LINE_CHARS:,}: beyond any "
                "model's context)",
                field="path",
                line=number,
                source=source,
            )
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON ({exc.msg} at column {exc.colno})", line=number, source=source
            ) from exc
        item = item_from_dict(row, line=number, source=source)
        if item.id in first_line:
            raise InputError(
                f"duplicate id {item.id!r} (first on line {first_line[item.id]})",
                field="id",
                line=number,
                source=source,
            )
        first_line[item.id] = number
        items.append(item)
    if not items:
        raise InputError("no items (the file is empty)", field="path", source=source)
    return items


def item_to_dict(item: TaskItem) -> dict[str, Any]:
    """The file-format record of `item` (the inverse of `item_from_dict`)."""
    row: dict[str, Any] = {"id": item.id}
    if isinstance(item.prompt, str):
        row["prompt"] = item.prompt
    else:
        row["messages"] = [dict(m) for m in item.prompt]
    row["answer"] = item.answer
    row["kind"] = item.kind
    if item.choices is not None:
        row["choices"] = list(item.choices)
    if item.n is not None:
        row["n"] = item.n
    row["family"] = item.family
    return row


def save_tasks(items: Iterable[TaskItem], path: str | os.PathLike[str]) -> Path:
    """Write `items` as a calibration file (UTF-8 JSONL) and return its path.

    Ids must be unique, as `load_tasks` requires; the file is written whole or not at all.
    """
    items = list(items)
    if not items:
        raise InputError("no items to save", field="items")
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise InputError(f"duplicate id {item.id!r}", field="items")
        seen.add(item.id)
    lines = [json.dumps(item_to_dict(item), ensure_ascii=False) for item in items]
    return write_text(path, "\n".join(lines) + "\n")
