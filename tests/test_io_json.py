"""`cotplan.io.parse_json` on numbers Python cannot or JSON does not hold: one `InputError`
naming the source and line, never a bare ValueError (issue 43's rerun found both through the
gateway's request bodies)."""

from __future__ import annotations

import math

import pytest

from cotplan.errors import InputError
from cotplan.io import parse_json


def test_a_number_past_4300_digits_is_an_input_error_naming_the_source() -> None:
    text = '{"a": 1,\n "b": ' + "9" * 5000 + "}"
    with pytest.raises(InputError, match="4,300 digits") as info:
        parse_json(text, source="request body")
    assert info.value.source == "request body"
    assert parse_json('{"b": ' + "9" * 4000 + "}", source="x")["b"] > 0  # within the limit


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_where_asked(constant: str) -> None:
    text = '{"temperature": ' + constant + "}"
    value = parse_json(text, source="plan.json")["temperature"]  # files keep their NaN
    assert math.isnan(value) or math.isinf(value)
    with pytest.raises(InputError, match=f"{constant} is not a JSON number") as info:
        parse_json(text, source="request body", allow_nan=False)
    assert info.value.source == "request body"
