"""`cotplan.validation`: the shared one-argument checks and their messages."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from cotplan.errors import InputError
from cotplan.validation import (
    MAX_BUDGET,
    require_budget,
    require_choice,
    require_file,
    require_folder_target,
    require_int,
    require_ints,
    require_number,
    require_positive,
    require_text,
    require_unit,
)


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


def test_the_shared_checks_give_plain_values_or_name_the_field(tmp_path: Path) -> None:
    assert require_unit(np.float64(0.25), "eps") == 0.25
    assert require_unit(1, "target_width", closed_high=True) == 1.0
    assert require_positive(3, "n") == 3.0
    assert require_number(2, "reach", low=1.0) == 2.0
    assert require_budget(np.int64(8), "k") == 8
    assert require_choice("paper", "law", ["auto", "paper"]) == "paper"
    assert require_ints(["4,8", " 16 ", ""], "n", low=1) == [4, 8, 16]
    assert require_folder_target(None) is None
    assert require_folder_target(tmp_path / "new" / "report") == tmp_path / "new" / "report"
    (tmp_path / "a.csv").write_text("x\n", encoding="utf-8")
    assert require_file(tmp_path / "a.csv", "calibration") == tmp_path / "a.csv"


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: require_unit(1.0, "eps"), r"`eps`: must be in \(0, 1\), got 1"),
        (lambda: require_unit("0.1", "eps"), r"`eps`: must be a number between 0 and 1"),
        (lambda: require_unit(0, "p", closed_high=True), r"`p`: must be in \(0, 1\], got 0"),
        (lambda: require_positive(-1, "n"), r"`n`: must be a positive number, got -1"),
        (lambda: require_number(math.nan, "reach", low=1), r"`reach`: must be at least 1"),
        (lambda: require_number(True, "x"), r"`x`: must be a finite number, got True"),
        (lambda: require_number(9, "t", low=0, high=5), r"`t`: must be a number from 0 to 5"),
        (lambda: require_budget(1e300, "k"), r"`k`: must be a whole number of tokens"),
        (lambda: require_budget(MAX_BUDGET + 1, "k"), rf"`k`: must be .* in 0\.\.{MAX_BUDGET}"),
        (lambda: require_choice("x", "law", ["a", "b"]), r"`law`: must be one of a, b, got 'x'"),
        (lambda: require_ints(["4,x"], "n"), r"`n`: must be whole numbers, got 'x'"),
        (lambda: require_ints(["0"], "n", low=1), r"`n`: must be at least 1, got 0"),
    ],
)
def test_each_shared_check_names_the_field(check: Callable[[], object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        check()


def test_paths_are_checked_for_what_they_are(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"`calibration`: no such file"):
        require_file(tmp_path / "none.csv", "calibration")
    with pytest.raises(InputError, match=r"`calibration`: .* is a folder"):
        require_file(tmp_path, "calibration")
    (tmp_path / "taken").write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match=r"`out`: .*taken exists and is not a folder"):
        require_folder_target(tmp_path / "taken")
    with pytest.raises(InputError, match=r"`out`: cannot create .*taken is not a folder"):
        require_folder_target(tmp_path / "taken" / "report")
