"""Pull an answer out of model text and compare it with a `TaskItem`'s exact answer.

One rule per answer kind, so every part of cotplan scores the same text the same way:

- an answer marker ("Answer:", "Final answer:", "the answer is") narrows the text to the first
  non-empty line after the FIRST marker; without a marker the whole text is read;
- `integer`: the last integer in that text ("Answer: 3 + 4 = 7" gives 7);
- `binary`: the last standalone 0 or 1;
- `choice`: the choice that appears first (whole words, case-insensitive), or an exact match;
- `text`: the quoted part if there is one, else the line, normalised (case, whitespace and
  punctuation dropped) and compared whole.

Budgeted generation usually ends its prompt with "Answer:" and passes only what followed; say so
with `prefilled=True`, and the first non-empty line is read as if a marker preceded it. This keeps
a small model's rambling ("7\\n\\nQuestion: what is 5 + 3? ... 8") from being scored as 8.
"""

from __future__ import annotations

import re
import string

from cotplan.tasks.item import TaskItem

__all__ = ["extract_answer", "is_correct", "normalize_text"]

_MARKER = re.compile(r"(?:final\s+answer|answer)\s*(?::|is\b|=)", re.IGNORECASE)
_INTEGER = re.compile(r"(?<![\w.])[-−]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?![\w]|\.\d)")
_BIT = re.compile(r"(?<![\w.])[01](?![\w]|\.\d)")
_QUOTED = re.compile(r"[\"“”'‘’`]([^\"“”'‘’`]+)[\"“”'‘’`]")
_PUNCT = str.maketrans("", "", string.punctuation + "“”‘’…")


def normalize_text(text: str) -> str:
    """Lower-case, drop punctuation, and collapse whitespace (for `text` answers)."""
    return " ".join(text.lower().translate(_PUNCT).split())


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _answer_region(text: str, prefilled: bool) -> str:
    if prefilled:
        return _first_line(text)
    match = _MARKER.search(text)
    if match is None:
        return text
    return _first_line(text[match.end() :])


def _extract_integer(region: str) -> str | None:
    found = _INTEGER.findall(region)
    if not found:
        return None
    raw = found[-1].replace(",", "").replace("−", "-")
    try:
        return str(int(raw))
    except ValueError:  # a lone "-" or "," cannot reach here, but stay total
        return None


def _extract_choice(region: str, choices: tuple[str, ...]) -> str | None:
    norm_region = normalize_text(region)
    for choice in choices:
        if norm_region == normalize_text(choice):
            return choice
    best: tuple[int, str] | None = None
    padded = f" {norm_region} "
    for choice in choices:
        norm_choice = normalize_text(choice)
        if not norm_choice:
            continue
        pos = padded.find(f" {norm_choice} ")
        if pos >= 0 and (best is None or pos < best[0]):
            best = (pos, choice)
    return None if best is None else best[1]


def _extract_text(region: str) -> str | None:
    quoted = _QUOTED.search(region)
    candidate = quoted.group(1) if quoted else _first_line(region)
    norm = normalize_text(candidate)
    return norm or None


def extract_answer(text: str, item: TaskItem, *, prefilled: bool = False) -> str | None:
    """The answer `text` gives for `item`, in canonical form, or None when there is none.

    Canonical forms: integers as `str(int)`, binary as "0"/"1", choices as the item's own
    choice string, text normalised by `normalize_text`.
    """
    region = _answer_region(text, prefilled)
    if item.kind == "integer":
        return _extract_integer(region)
    if item.kind == "binary":
        bits = _BIT.findall(region)
        return bits[-1] if bits else None
    if item.kind == "choice":
        return _extract_choice(region, item.choices or ())
    return _extract_text(region)


def _canonical_expected(item: TaskItem) -> str:
    if item.kind == "integer":
        return str(int(item.answer.strip().replace(",", "")))
    if item.kind == "binary":
        return item.answer.strip()
    if item.kind == "choice":
        return item.answer
    return normalize_text(item.answer)


def is_correct(text_or_answer: str, item: TaskItem, *, prefilled: bool = False) -> bool:
    """True when the answer found in `text_or_answer` equals `item.answer` (per its kind)."""
    got = extract_answer(text_or_answer, item, prefilled=prefilled)
    if got is None:
        return False
    expected = _canonical_expected(item)
    if item.kind == "choice":
        return normalize_text(got) == normalize_text(expected)
    return got == expected
