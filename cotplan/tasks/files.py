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
import math
import os
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, get_args

from cotplan.errors import InputError
from cotplan.io import write_text
from cotplan.messages import Message, validate_prompt
from cotplan.tasks.item import AnswerKind, TaskItem

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_N",
    "TaskSplit",
    "item_from_dict",
    "item_to_dict",
    "load_tasks",
    "save_tasks",
    "split_task_file",
    "split_tasks",
]

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


_Fail = Callable[..., InputError]


def _item_id(row: dict[str, Any], fail: _Fail) -> str:
    if "id" not in row:
        raise fail("missing", "id")
    raw_id = row["id"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise fail(f"must be a string or integer, got {type(raw_id).__name__}", "id")
    item_id = str(raw_id)
    if not item_id.strip():
        raise fail("must not be empty", "id")
    return item_id


def _item_prompt(row: dict[str, Any], fail: _Fail) -> str | tuple[Message, ...]:
    has_prompt, has_messages = "prompt" in row, "messages" in row
    if has_prompt == has_messages:
        raise fail("give exactly one of `prompt` or `messages`", "prompt")
    if has_prompt:
        if not isinstance(row["prompt"], str):
            raise fail(f"must be a string, got {type(row['prompt']).__name__}", "prompt")
        if not row["prompt"].strip():
            raise fail("must not be empty", "prompt")
        return str(row["prompt"])
    messages = row["messages"]
    if not isinstance(messages, list):
        raise fail(f"must be a list of messages, got {type(messages).__name__}", "messages")
    try:
        validate_prompt(messages, field_name="messages")
    except InputError as exc:
        raise fail(str(exc)) from exc
    if any(not isinstance(m["content"], str) for m in messages):
        raise fail("every message `content` must be a string", "messages")
    for index, message in enumerate(messages):
        # Only the role and the content are kept: another field would vanish unseen.
        extra = sorted(set(message) - {"role", "content"})
        if extra:
            raise fail(
                f"unknown field(s) {', '.join(map(repr, extra))}; a message has `role` "
                "and `content`",
                f"messages[{index}]",
            )
    return tuple({"role": m["role"], "content": m["content"]} for m in messages)


def _item_answer(row: dict[str, Any], fail: _Fail) -> str:
    if "answer" not in row:
        raise fail("missing", "answer")
    raw_answer = row["answer"]
    if isinstance(raw_answer, bool) or not isinstance(raw_answer, str | int | float):
        raise fail(f"must be a string or number, got {type(raw_answer).__name__}", "answer")
    if isinstance(raw_answer, float) and not math.isfinite(raw_answer):
        raise fail(f"must be a finite number, got {raw_answer!r}", "answer")
    answer = raw_answer if isinstance(raw_answer, str) else json.dumps(raw_answer)
    if not answer.strip():
        raise fail("must not be empty", "answer")
    return answer


def _item_choices(row: dict[str, Any], answer: str, fail: _Fail) -> tuple[str, ...] | None:
    if row.get("choices") is None:
        return None
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
    return choices


def _item_kind(
    row: dict[str, Any], answer: str, choices: tuple[str, ...] | None, fail: _Fail
) -> AnswerKind:
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
    return kind


def _item_n(row: dict[str, Any], fail: _Fail) -> int | None:
    if row.get("n") is None:
        return None
    raw_n = row["n"]
    if isinstance(raw_n, bool) or not isinstance(raw_n, int):
        raise fail(f"must be a positive integer, got {raw_n!r}", "n")
    if raw_n < 1:
        raise fail(f"must be a positive integer, got {raw_n}", "n")
    if raw_n > MAX_N:
        raise fail(f"{raw_n} is too large (at most {MAX_N:,})", "n")
    return raw_n


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
    item_id = _item_id(row, fail)
    prompt = _item_prompt(row, fail)
    answer = _item_answer(row, fail)
    choices = _item_choices(row, answer, fail)
    kind = _item_kind(row, answer, choices, fail)
    n = _item_n(row, fail)
    family = row.get("family", "custom")
    if not isinstance(family, str) or not family.strip():
        raise fail("must be a non-empty string", "family")
    return TaskItem(item_id, prompt, answer, kind, choices, n, family)


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _RepeatedKeyError(key)
        seen[key] = value
    return seen


class _RepeatedKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _parse_line(raw: str, *, line: int, source: str) -> Any:
    """One JSON line, strictly: no key given twice in an object (JSON keeps the last
    silently), nothing past what the parser can hold. NaN and Infinity parse, and each field's
    check refuses them by name."""
    try:
        return json.loads(raw, object_pairs_hook=_no_repeated_keys)
    except _RepeatedKeyError as exc:
        raise InputError(
            "given twice in one object (JSON would keep only the last)",
            field=exc.key,
            line=line,
            source=source,
        ) from None
    except json.JSONDecodeError as exc:
        hint = ""
        if line == 1 and raw.strip() == "[":
            hint = "; the file is one JSON array, and cotplan reads one object per line (JSONL)"
        raise InputError(
            f"not valid JSON ({exc.msg} at column {exc.colno}){hint}", line=line, source=source
        ) from None
    except (ValueError, RecursionError) as exc:
        # Python's own limits: an integer of more than 4,300 digits, nesting past the stack.
        reason = (
            "nested too deeply"
            if isinstance(exc, RecursionError)
            else "a number of more than 4,300 digits"
        )
        raise InputError(f"cannot be read ({reason})", line=line, source=source) from None


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
    # Lines end at "\n" only, as editors count them: str.splitlines would also split inside a
    # JSON string at U+2028 or a form feed, which are valid there.
    for number, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")
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
        row = _parse_line(raw, line=number, source=source)
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


@dataclass(frozen=True)
class TaskSplit:
    """Items split into a calibration set and a held-out set (`split_tasks`), in file order."""

    calibration: tuple[TaskItem, ...]
    held_out: tuple[TaskItem, ...]
    fraction: float
    seed: int

    def to_frame(self) -> pd.DataFrame:
        """One row per item: id, family, n and `set` ("calibration" or "held_out")."""
        import pandas as pd

        return pd.DataFrame(
            [
                {"id": item.id, "family": item.family, "n": item.n, "set": name}
                for name, items in (("calibration", self.calibration), ("held_out", self.held_out))
                for item in items
            ],
            columns=["id", "family", "n", "set"],
        )


def split_tasks(items: Iterable[TaskItem], held_out: float, *, seed: int = 0) -> TaskSplit:
    """Split `items` by item into calibration and held-out sets, reproducibly from `seed`.

    Within each (family, n), about `held_out` of the items (rounded, at least one where the
    group has two or more) go to the held-out set, so every size is tested. Items that ask the
    same question (same prompt) go to the same side: an answer to a question calibration saw
    is not held-out evidence (the rule `cotplan run` applies with `drop_seen`).
    """
    if isinstance(held_out, bool) or not isinstance(held_out, int | float):
        raise InputError(f"must be a fraction in (0, 1), got {held_out!r}", field="held_out")
    if not 0.0 < float(held_out) < 1.0:
        raise InputError(f"must be a fraction in (0, 1), got {held_out!r}", field="held_out")
    chosen = list(items)
    if len(chosen) < 2:
        raise InputError(f"needs at least 2 items to split, got {len(chosen)}", field="items")
    groups: dict[tuple[str, int], dict[str, list[int]]] = {}
    for index, item in enumerate(chosen):
        prompt = item.prompt if isinstance(item.prompt, str) else repr(item.prompt)
        stratum = (item.family, -1 if item.n is None else item.n)
        groups.setdefault(stratum, {}).setdefault(prompt, []).append(index)
    rng = random.Random(seed)
    held: set[int] = set()
    for stratum in sorted(groups):
        questions = list(groups[stratum].values())
        rng.shuffle(questions)
        size = sum(len(q) for q in questions)
        want = round(float(held_out) * size)
        if size >= 2 and len(questions) >= 2:
            want = min(max(want, 1), size - 1)
        taken = 0
        for question in questions:
            if taken >= want:
                break
            held.update(question)
            taken += len(question)
    if not held or len(held) == len(chosen):
        raise InputError(
            f"{held_out:g} of {len(chosen)} items leaves one side empty (items asking the "
            "same question stay together); choose another fraction or add items",
            field="held_out",
        )
    return TaskSplit(
        calibration=tuple(item for i, item in enumerate(chosen) if i not in held),
        held_out=tuple(item for i, item in enumerate(chosen) if i in held),
        fraction=float(held_out),
        seed=seed,
    )


def split_task_file(
    path: Path, held_out: float, *, seed: int = 0, out: Path | None = None
) -> list[tuple[int, Path]]:
    """Split the task file at `path` (`split_tasks`) into NAME.calibration.jsonl and
    NAME.held-out.jsonl in `out` (default: the file's folder); the items and the file written,
    per side. `held_out` and `out` are checked before the file is read."""
    if not 0.0 < held_out < 1.0:
        raise InputError(f"must be a fraction in (0, 1), got {held_out!r}", field="held_out")
    if out is not None and out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file; name a folder", field="out")
    split = split_tasks(load_tasks(path), held_out, seed=seed)
    folder = out or path.parent
    stem = path.name.removesuffix(".jsonl")
    return [
        (
            len(split.calibration),
            save_tasks(split.calibration, folder / f"{stem}.calibration.jsonl"),
        ),
        (len(split.held_out), save_tasks(split.held_out, folder / f"{stem}.held-out.jsonl")),
    ]
