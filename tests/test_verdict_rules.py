"""Every verdict follows from its interval (issue 48), checked on constructed intervals.

"reproduced" needs the 95% interval wholly inside the paper's value ± its margin, a miss
needs it wholly outside, and anything between (it holds the paper's value, or crosses an
edge) is "not testable"; "not comparable (model)" is only a miss of the paper's model's own
magnitude on another model.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.intervals import Interval
from cotplan.research.experiments.verdicts import (
    NOT_COMPARABLE_MODEL,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    OUTSIDE_PREMISE,
    REPRODUCED,
    VERDICTS,
    margin_verdict,
    model_claims,
    value_verdict,
)
from cotplan.research.lab.reasoning.report import (
    EXPONENT_MARGIN,
    calibration_premise,
    exponent_verdict,
    heldout_check,
)

finite = st.floats(-10, 10, allow_nan=False)
margins = st.floats(0, 3, allow_nan=False)


@st.composite
def intervals(draw: st.DrawFn) -> Interval:
    low = draw(finite)
    return Interval(low, low + draw(st.floats(0, 10, allow_nan=False)))


@settings(max_examples=300, deadline=None)
@given(ci=intervals(), value=finite, margin=margins, magnitude=st.booleans(), own=st.booleans())
def test_the_margin_rule_earns_each_word(
    ci: Interval, value: float, margin: float, magnitude: bool, own: bool
) -> None:
    verdict = margin_verdict(ci, value, margin, magnitude=magnitude, paper_model=own)
    low, high = value - margin, value + margin
    inside = low <= ci.low and ci.high <= high
    outside = ci.high < low or ci.low > high
    if verdict == REPRODUCED:
        assert inside
    elif verdict in (NOT_REPRODUCED, NOT_COMPARABLE_MODEL):
        assert outside
        assert value not in ci  # an interval that holds the paper's value is never a miss
    else:
        assert verdict == NOT_TESTABLE
        assert not inside
        assert not outside
    if verdict == NOT_COMPARABLE_MODEL:
        assert magnitude
        assert not own
    if value in ci and not inside:
        assert verdict == NOT_TESTABLE


@settings(max_examples=200, deadline=None)
@given(ci=intervals(), value=finite, err=st.floats(0.001, 3, allow_nan=False))
def test_a_magnitude_row_is_never_stronger_than_its_interval(
    ci: Interval, value: float, err: float
) -> None:
    mine, _ = value_verdict(ci, value, err, predictor="smollm2", paper_model="GPT-3")
    theirs, _ = value_verdict(
        ci, value, err, predictor="openai:text-davinci-002", paper_model="GPT-3"
    )
    assert mine == margin_verdict(ci, value, err, magnitude=True, paper_model=False)
    assert theirs == margin_verdict(ci, value, err)
    assert mine != NOT_REPRODUCED  # another model cannot refute GPT-3's magnitude
    assert theirs != NOT_COMPARABLE_MODEL


@settings(max_examples=200, deadline=None)
@given(ci=intervals())
def test_the_lab_exponent_rule_is_two_sided_at_the_stated_margin(ci: Interval) -> None:
    verdict, rule = exponent_verdict(ci)
    assert verdict == margin_verdict(ci, 0.5, EXPONENT_MARGIN)
    assert f"[{0.5 - EXPONENT_MARGIN:g}, {0.5 + EXPONENT_MARGIN:g}]" in rule


def test_the_named_rows_read_as_their_intervals_say() -> None:
    # The full run's variance change holds the paper's −14.1% ± 5%: not testable.
    assert margin_verdict(Interval(-0.197, 0.0274), -0.141, 0.05, magnitude=True) == NOT_TESTABLE
    # A tight 0.55 [0.54, 0.56] is √n at ±0.1; excluding exactly 1/2 is no refutation.
    assert exponent_verdict(Interval(0.54, 0.56))[0] == REPRODUCED
    assert exponent_verdict(Interval(1.0, 1.0))[0] == NOT_REPRODUCED
    assert exponent_verdict(Interval(math.nan, math.nan))[0] == NOT_TESTABLE


def test_outside_the_premise_is_a_verdict_on_a_model_claim() -> None:
    assert OUTSIDE_PREMISE in VERDICTS
    assert model_claims([])[OUTSIDE_PREMISE] == 0


def _calibration(correct_at: dict[int, float], n: int = 8, items: int = 40) -> pd.DataFrame:
    """Items × budgets: an item is right at budget k with probability correct_at[k]."""
    rng = np.random.default_rng(0)
    rows = [
        {"item": f"{n}-{i}", "n": n, "k": k, "correct": bool(rng.random() < p)}
        for i in range(items)
        for k, p in correct_at.items()
    ]
    return pd.DataFrame(rows)


def test_a_trace_that_pays_off_only_at_its_end_is_outside_the_premise() -> None:
    # One step per input, the answer only once the last is written: the error stays at chance
    # and drops at the end, the opposite of "B falls fastest first".
    late = _calibration({0: 0.5, 6: 0.5, 12: 0.5, 18: 0.5, 24: 1.0})
    assert calibration_premise(late)["premise"].tolist() == ["fails"]
    early = _calibration({0: 0.1, 6: 0.9, 12: 0.97, 18: 1.0, 24: 1.0})
    assert calibration_premise(early)["premise"].tolist() != ["fails"]


def test_meets_eps_needs_the_wilson_upper_end_below_eps() -> None:
    # 1 of 15 held-out sums wrong: 0.07, but its Wilson upper end is about 0.30.
    plan = pd.DataFrame({"heldout_items": [15, 15], "heldout_right": [15, 14]})
    met, words = heldout_check(plan, 0.1)
    assert met is None
    assert "cannot tell" in words
    many = pd.DataFrame({"heldout_items": [400], "heldout_right": [396]})
    assert heldout_check(many, 0.1)[0] is True
    bad = pd.DataFrame({"heldout_items": [100], "heldout_right": [60]})
    assert heldout_check(bad, 0.1)[0] is False
