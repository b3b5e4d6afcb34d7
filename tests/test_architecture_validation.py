"""`cotplan.validation`: the shared one-argument checks and their messages."""

from __future__ import annotations

import numpy as np
import pytest

from cotplan.errors import InputError
from cotplan.validation import require_int, require_text


def test_integers_come_back_as_plain_ints() -> None:
    assert require_int(3, "n") == 3
    value = require_int(np.int64(7), "n", low=1, high=7)
    assert value == 7
    assert type(value) is int


@pytest.mark.parametrize(
    ("value", "low", "high", "message"),
    [
        (2.5, None, None, r"`n`: must be an integer, got 2.5"),
        (True, 1, None, r"`n`: must be an integer >= 1, got True"),
        (0, 1, None, r"`n`: must be an integer >= 1, got 0"),
        (9, None, 8, r"`n`: must be an integer <= 8, got 9"),
        ("4", 2, 50, r"`n`: must be an integer between 2 and 50, got '4'"),
        (51, 2, 50, r"`n`: must be an integer between 2 and 50, got 51"),
    ],
)
def test_a_bad_integer_is_named_with_its_bounds(
    value: object, low: int | None, high: int | None, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        require_int(value, "n", low=low, high=high)


def test_text_must_have_something_in_it() -> None:
    assert require_text(" a ", "query") == " a "
    for bad in ("", "  ", None, 3):
        with pytest.raises(InputError, match=r"`query`: must be a non-empty string"):
            require_text(bad, "query")
