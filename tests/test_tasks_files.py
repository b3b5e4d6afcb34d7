"""The JSONL calibration file: round trips and one line-numbered error per kind of bad row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cotplan.errors import InputError
from cotplan.tasks import TaskItem, load_tasks, make_tasks, save_tasks

GOOD = {"id": "q1", "prompt": "What is 2 + 3?", "answer": "5"}


def _write(tmp_path: Path, *rows: object) -> Path:
    path = tmp_path / "tasks.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    items = [
        *make_tasks("coin_flip", n=3, count=3, seed=0),
        *make_tasks("last_letter", n=2, count=2, seed=0),
        TaskItem(
            "chat-1",
            ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}),
            "4",
            "integer",
        ),
    ]
    path = save_tasks(items, tmp_path / "out.jsonl")
    assert load_tasks(path) == items


def test_minimal_rows_infer_their_kind(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        GOOD,
        "",
        {"id": 2, "prompt": "Capital of France?", "answer": "Paris"},
        {"id": "q3", "prompt": "Pick", "answer": "B", "choices": ["A", "B"], "n": 2},
        {"id": "q4", "prompt": "Bit?", "answer": 1, "kind": "binary"},
    )
    items = load_tasks(path)
    assert [i.id for i in items] == ["q1", "2", "q3", "q4"]
    assert [i.kind for i in items] == ["integer", "text", "choice", "binary"]
    assert items[0].n is None
    assert items[2].n == 2
    assert items[2].choices == ("A", "B")
    assert items[3].answer == "1"
    assert items[0].family == "custom"


BAD_ROWS = [
    ("{not json", r"line 2: not valid JSON"),
    ('["a", "b"]', r"line 2: expected a JSON object, got list"),
    ({"prompt": "x", "answer": "1"}, r"line 2, `id`: missing"),
    ({"id": ["a"], "prompt": "x", "answer": "1"}, r"line 2, `id`: must be a string or integer"),
    ({"id": True, "prompt": "x", "answer": "1"}, r"line 2, `id`: must be a string or integer"),
    ({"id": "a", "answer": "1"}, r"line 2, `prompt`: give exactly one of `prompt` or `messages`"),
    (
        {"id": "a", "prompt": "x", "messages": [{"role": "user", "content": "x"}], "answer": "1"},
        r"line 2, `prompt`: give exactly one",
    ),
    ({"id": "a", "prompt": 3, "answer": "1"}, r"line 2, `prompt`: must be a string, got int"),
    ({"id": "a", "prompt": "  ", "answer": "1"}, r"line 2, `prompt`: must not be empty"),
    ({"id": "a", "messages": "hi", "answer": "1"}, r"line 2, `messages`: must be a list"),
    (
        {"id": "a", "messages": [{"role": "robot", "content": "x"}], "answer": "1"},
        r"line 2: `messages\[0\].role`: unknown role 'robot'",
    ),
    ({"id": "a", "prompt": "x"}, r"line 2, `answer`: missing"),
    ({"id": "a", "prompt": "x", "answer": None}, r"line 2, `answer`: must be a string or number"),
    ({"id": "a", "prompt": "x", "answer": False}, r"line 2, `answer`: must be a string or number"),
    ({"id": "a", "prompt": "x", "answer": "1", "n": 0}, r"line 2, `n`: must be a positive integer"),
    ({"id": "a", "prompt": "x", "answer": "1", "n": -3}, r"line 2, `n`: must be a positive"),
    ({"id": "a", "prompt": "x", "answer": "1", "n": "4"}, r"line 2, `n`: must be a positive"),
    ({"id": "a", "prompt": "x", "answer": "1", "n": 2.0}, r"line 2, `n`: must be a positive"),
    ({"id": "a", "prompt": "x", "answer": "1", "n": 10**7}, r"line 2, `n`: 10000000 is too large"),
    ({"id": "a", "prompt": "x", "anwser": "1"}, r"line 2: unknown field\(s\) 'anwser'"),
    (
        {"id": "a", "prompt": "x", "answer": "C", "choices": ["A", "B"]},
        r"line 2, `answer`: 'C' is not one of the choices",
    ),
    (
        {"id": "a", "prompt": "x", "answer": "A", "choices": ["A"]},
        r"line 2, `choices`: must be a list of at least two",
    ),
    (
        {"id": "a", "prompt": "x", "answer": "1", "kind": "number"},
        r"line 2, `kind`: must be one of integer, choice, binary, text",
    ),
    (
        {"id": "a", "prompt": "x", "answer": "five", "kind": "integer"},
        r"line 2, `answer`: 'five' is not an integer",
    ),
    (
        {"id": "a", "prompt": "x", "answer": "2", "kind": "binary"},
        r"line 2, `answer`: '2' is not 0 or 1",
    ),
    ({"id": "a", "prompt": "x", "answer": "A", "kind": "choice"}, r"`choices`: a `choice` item"),
    ({"id": "q1", "prompt": "x", "answer": "1"}, r"line 2, `id`: duplicate id 'q1' \(first on"),
]


@pytest.mark.parametrize(("row", "message"), BAD_ROWS)
def test_bad_rows_name_their_line_and_field(tmp_path: Path, row: object, message: str) -> None:
    path = _write(tmp_path, GOOD, row)
    with pytest.raises(InputError, match=message) as info:
        load_tasks(path)
    assert info.value.line == 2
    assert info.value.source == str(path)


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD, "", "", {"id": "x", "prompt": "p"})
    with pytest.raises(InputError, match=r"line 4, `answer`: missing"):
        load_tasks(path)


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file_is_an_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=r"empty.jsonl, `path`: no items \(the file is empty\)"):
        load_tasks(path)


def test_missing_file_and_non_utf8(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope.jsonl, `path`: no such file"):
        load_tasks(tmp_path / "nope.jsonl")
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes('{"id": "é"}'.encode("latin-1"))
    with pytest.raises(InputError, match=r"not UTF-8 text"):
        load_tasks(bad)


def test_save_refuses_duplicates_and_nothing(tmp_path: Path) -> None:
    item = make_tasks("parity", n=2, count=1)[0]
    with pytest.raises(InputError, match=r"`items`: duplicate id"):
        save_tasks([item, item], tmp_path / "dup.jsonl")
    with pytest.raises(InputError, match=r"`items`: no items to save"):
        save_tasks([], tmp_path / "none.jsonl")
    assert not (tmp_path / "dup.jsonl").exists()
