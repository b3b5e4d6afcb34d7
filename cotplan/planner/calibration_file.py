"""A calibration CSV checked as it is read, before anything is fitted or any model starts.

`load_calibration` reads the file with pandas and hands the frame here with the file line of
each record, so every error names the file, the line a user sees in an editor (the header is
line 1; blank lines count) and the column. Refused: an item, size, budget or outcome that is
missing or out of range (a budget of 1e300), the same item and budget recorded twice with
different outcomes, one item at two sizes, answers of more than one model, a column given twice,
and recorded columns out of their range (negative token counts or cost, a probability above 1,
a protocol or mode cotplan does not know): a plan fitted on a calibration that disagrees with
itself would certify nothing it claims.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from cotplan.backends.known_models import PROTOCOL_NAMES
from cotplan.errors import InputError

__all__ = [
    "MAX_CALIBRATION_K",
    "MAX_CALIBRATION_N",
    "check_calibration_frame",
    "record_lines",
    "usage_note",
]

#: The largest budget a calibration row may hold: no model writes a million tokens in one
#: answer, so a larger k is a damaged or hand-edited file.
MAX_CALIBRATION_K = 1_000_000
#: The largest size: beyond it n is a damaged number, not a task.
MAX_CALIBRATION_N = 1_000_000_000

#: Builds the error for (0-based row, column, message), naming the row's file line.
_Fail = Callable[[int, str, str], InputError]


def record_lines(path: str | os.PathLike[str]) -> list[int]:
    """The file line where each data record starts, in the order pandas reads them (blank lines
    skipped, as `pd.read_csv` skips them; a quoted field may span lines)."""
    lines: list[int] = []
    header = False
    try:
        with Path(path).open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            start = 1
            for row in reader:
                if row and header:
                    lines.append(start)
                header = header or bool(row)  # the first non-blank record is the header
                start = reader.line_num + 1
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(
            f"not a readable CSV: {exc}", field="calibration", source=str(path)
        ) from exc
    return lines


def check_calibration_frame(frame: pd.DataFrame, source: str, lines: list[int]) -> None:
    """Raise `InputError` (file, line, column) at the first row a planner must not trust."""

    def line_of(row: int) -> int | None:
        return lines[row] if 0 <= row < len(lines) else None

    def fail(row: int, field: str, message: str) -> InputError:
        return InputError(message, field=field, line=line_of(row), source=source)

    items = frame["item"]
    for row in range(len(frame)):
        if pd.isna(items.iloc[row]) or not str(items.iloc[row]).strip():
            raise fail(row, "item", "is missing")
    n = _whole_numbers(frame, "n", 1, MAX_CALIBRATION_N, fail)
    k = _whole_numbers(frame, "k", 0, MAX_CALIBRATION_K, fail)
    correct = _outcomes(frame, fail)
    _same_model(frame, fail, line_of)
    _recorded_columns(
        frame,
        fail,
        header=lambda field, message: InputError(message, field=field, line=1, source=source),
    )
    seen_size: dict[str, tuple[int, int]] = {}
    seen_answer: dict[tuple[str, int], tuple[int, float]] = {}
    for row in range(len(frame)):
        item = str(items.iloc[row])
        size, budget, outcome = int(n[row]), int(k[row]), correct[row]
        first = seen_size.setdefault(item, (row, size))
        if first[1] != size:
            raise fail(
                row,
                "n",
                f"item {item!r} is at n = {size} here but n = {first[1]} on line "
                f"{line_of(first[0])}: one item has one size",
            )
        earlier = seen_answer.setdefault((item, budget), (row, outcome))
        if earlier[1] != outcome:
            raise fail(
                row,
                "correct",
                f"item {item!r} at k = {budget} is {outcome:g} here but {earlier[1]:g} on line "
                f"{line_of(earlier[0])}: the calibration disagrees with itself",
            )


def _whole_numbers(
    frame: pd.DataFrame, column: str, low: int, high: int, fail: _Fail
) -> list[float]:
    raw = frame[column]
    values = pd.to_numeric(raw.astype(object), errors="coerce").to_numpy(dtype=float)
    for row, value in enumerate(values):
        if raw.dtype == bool or isinstance(raw.iloc[row], bool):
            raise fail(row, column, f"must be a whole number, got {raw.iloc[row]!r}")
        if not math.isfinite(value) or value != round(value):
            raise fail(row, column, f"must be a whole number, got {raw.iloc[row]!r}")
        if not low <= value <= high:
            raise fail(row, column, f"must be in {low}..{high:,}, got {value:g}")
    return [float(v) for v in values]


def _outcomes(frame: pd.DataFrame, fail: _Fail) -> list[float]:
    raw = frame["correct"]
    values = pd.to_numeric(raw.astype(object), errors="coerce").to_numpy(dtype=float)
    for row, value in enumerate(values):
        if value not in (0.0, 1.0):
            raise fail(
                row,
                "correct",
                f"must be True/False or 1/0 (drop failed calls first), got {raw.iloc[row]!r}",
            )
    return [float(v) for v in values]


def _same_model(frame: pd.DataFrame, fail: _Fail, line_of: Callable[[int], int | None]) -> None:
    if "model" not in frame.columns:
        return
    models = frame["model"]
    first: tuple[int, str] | None = None
    for row in range(len(frame)):
        if pd.isna(models.iloc[row]):
            continue
        model = str(models.iloc[row])
        if first is None:
            first = (row, model)
        elif model != first[1]:
            raise fail(
                row,
                "model",
                f"{model!r} here but {first[1]!r} on line {line_of(first[0])}: a calibration "
                "holds one model's answers (a plan for a mix fits neither)",
            )


#: Columns a calibration records beside the outcome, and the range each must lie in (blank
#: cells are allowed: an unpriced call has no cost, a backend without logprobs no probability).
_COUNTS = ("prompt_tokens", "question_tokens", "reasoning_tokens", "answer_tokens", "cost_usd")
_LABELS = {"protocol": PROTOCOL_NAMES, "mode": ("template", "chat", "hidden")}


def _recorded_columns(
    frame: pd.DataFrame, fail: _Fail, *, header: Callable[[str, str], InputError]
) -> None:
    for column in frame.columns:
        # pandas renames a repeated header `x` to `x.1`: which of the two to trust is unknown.
        base, dot, suffix = str(column).rpartition(".")
        if dot and suffix.isdigit() and base in frame.columns:
            raise header(base, "is a column given twice in the header")
    for column in (*_COUNTS, "answer_prob"):
        if column not in frame.columns:
            continue
        raw = frame[column]
        values = pd.to_numeric(raw.astype(object), errors="coerce").to_numpy(dtype=float)
        high = 1.0 if column == "answer_prob" else math.inf
        for row, value in enumerate(values):
            blank = pd.isna(raw.iloc[row]) or not str(raw.iloc[row]).strip()
            if not blank and not (math.isfinite(value) and 0.0 <= value <= high):
                wanted = "a probability in [0, 1]" if high == 1.0 else "a number ≥ 0"
                raise fail(row, column, f"must be {wanted} or blank, got {raw.iloc[row]!r}")
    for column, known in _LABELS.items():
        if column not in frame.columns:
            continue
        for row, value in enumerate(frame[column]):
            if not pd.isna(value) and str(value) and str(value) not in known:
                raise fail(row, column, f"must be one of {', '.join(known)}, got {value!r}")


def usage_note(frame: pd.DataFrame) -> str:
    """What a plan must say about answers whose token counts are unknown ("" when every count
    was measured): the server sent no `usage`, or counts that cannot be right. Their token
    columns are blank and left out of the spend, and no shorter budget was cut from their runs
    (`cotplan.generate.budgeted.cut_run`): each budget was asked on its own."""
    if "usage_trusted" not in frame.columns or not len(frame):
        return ""
    flags = frame["usage_trusted"].map(lambda v: str(v).strip().lower() in {"false", "0"})
    unknown = int(flags.sum())
    if not unknown:
        return ""
    return (
        f"the token counts of {unknown} of {len(frame)} answers are unknown (the server sent no "
        "`usage`, or counts that cannot be right): their tokens are left out of the spend, and "
        "each of their budgets must be asked on its own (a calibration from a cotplan that read "
        "them as 0 let small budgets reuse a longer thought: calibrate again)"
    )
