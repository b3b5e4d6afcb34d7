"""The verdict on "the n-exponent of k* is 1/2": one two-sided rule at a stated margin.

Kept apart from `cotplan.research.lab.reasoning.report` so that the premise test and the report can
both use it without importing each other.
"""

from __future__ import annotations

import math

from cotplan.intervals import Interval
from cotplan.research.experiments.verdicts import NOT_TESTABLE, Verdict, margin_verdict

__all__ = ["EXPONENT_MARGIN", "exponent_verdict"]


#: How far from 1/2 an exponent may lie and still read as √n (the prose's ±0.1): the claim
#: "the n-exponent is 1/2" is the band [0.4, 0.6], decided two-sided like every other row.
EXPONENT_MARGIN = 0.1


def exponent_verdict(interval: Interval | None) -> tuple[Verdict, str]:
    """The two-sided verdict on "the exponent is 1/2 ± `EXPONENT_MARGIN`" and the rule in words
    (`cotplan.research.experiments.verdicts.margin_verdict`).

    Equivalence: an interval wholly inside the band is "reproduced" (a tight 0.55 [0.54,
    0.56] is √n at this margin); exclusion: one wholly outside it is "not reproduced"; any
    other (it holds 1/2 but is wider than the band, crosses an edge, or none computed) is "not
    testable". Excluding exactly 1/2 is not enough for "not reproduced".
    """
    low, high = 0.5 - EXPONENT_MARGIN, 0.5 + EXPONENT_MARGIN
    rule = (
        f"reproduced when the 95% interval lies within [{low:g}, {high:g}], not reproduced "
        "when it lies wholly outside it, not testable otherwise"
    )
    if interval is None or math.isnan(interval.low) or math.isnan(interval.high):
        return NOT_TESTABLE, f"no interval could be computed; {rule}"
    return margin_verdict(interval, 0.5, EXPONENT_MARGIN), rule
