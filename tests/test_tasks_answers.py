"""Answer extraction and scoring, one rule per answer kind."""

from __future__ import annotations

import pytest

from cotplan.errors import InputError
from cotplan.tasks import TaskItem, extract_answer, is_correct, item_size, normalize_text

INT = TaskItem("i", "What is 3 + 4?", "7", "integer")
BIN = TaskItem("b", "Parity?", "1", "binary")
YESNO = TaskItem("c", "Still heads?", "no", "choice", ("yes", "no"))
TEXT = TaskItem("t", "Last letters?", "ere", "text")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7", "7"),
        (" 7.", "7"),
        ("3 + 4 = 7", "7"),
        ("Answer: 3 + 4 = 7", "7"),
        ("First 3 + 1 = 4, then 4 + 3 = 7.\nAnswer: 7\n\nQuestion: 5 + 5?", "7"),
        ("The answer is 7 apples.", "7"),
        ("Final answer: -3", "-3"),
        ("The total is 1,234", "1234"),
        ("It is 3.5", None),
        ("no idea", None),
        ("Answer:\n\n  12", "12"),
    ],
)
def test_integer_answers(text: str, expected: str | None) -> None:
    assert extract_answer(text, INT) == expected


def test_prefilled_reads_only_the_first_line() -> None:
    rambling = " 7\n\nQuestion: What is 5 + 3?\nAnswer: 8"
    assert extract_answer(rambling, INT, prefilled=True) == "7"
    assert is_correct(rambling, INT, prefilled=True)
    # Without the hint the first marker wins, which here is the wrong one.
    assert extract_answer(rambling, INT) == "8"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1", "1"), ("The parity is 0.", "0"), ("Answer: 1 (three ones)", "1"), ("odd", None)],
)
def test_binary_answers(text: str, expected: str | None) -> None:
    assert extract_answer(text, BIN) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("No", "no"),
        ("no.", "no"),
        ("Yes, the coin is still heads up.", "yes"),
        ("Answer: no, because it was flipped once", "no"),
        ("The coin is not heads up", None),
        ("I know", None),
    ],
)
def test_choice_answers(text: str, expected: str | None) -> None:
    assert extract_answer(text, YESNO) == expected


@pytest.mark.parametrize(
    ("text", "correct"),
    [
        ("ere", True),
        ("ERE.", True),
        ('The answer is "ere".', True),
        ("Answer: e r e", False),
        ("eer", False),
        ("", False),
    ],
)
def test_text_answers(text: str, correct: bool) -> None:
    assert is_correct(text, TEXT) is correct


def test_is_correct_by_kind() -> None:
    assert is_correct("Answer: 7", INT)
    assert not is_correct("Answer: 8", INT)
    assert is_correct("NO", YESNO)
    assert not is_correct("yes", YESNO)
    assert is_correct("1", BIN)
    assert not is_correct("0", BIN)


def test_normalize_text() -> None:
    assert normalize_text("  Hello,   World! ") == "hello world"


def test_item_size_uses_n_then_the_prompt_token_count() -> None:
    assert item_size(TaskItem("a", "one two three", "x", n=5)) == 5
    sized = item_size(TaskItem("a", "one two three", "x"), counter=lambda s: len(s.split()))
    assert sized == 3
    with pytest.raises(InputError, match=r"`n`: item 'a' has no `n`; pass `model` or `counter`"):
        item_size(TaskItem("a", "one two three", "x"))
