"""The lab's verdict rules are two-sided (issue 32): an interval that settles nothing reads
"not testable", never "reproduced" or "not reproduced"."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cotplan.intervals import Interval
from cotplan.research.lab.reasoning.report import EXPONENT_MARGIN, exponent_verdict


def test_the_exponent_rule_reads_an_uninformative_interval_as_not_testable() -> None:
    # Holds 1/2 and 1 alike: it cannot tell √n from linear growth.
    assert exponent_verdict(Interval(0.1, 1.4))[0] == "not testable"
    assert exponent_verdict(Interval(0.4, 0.6))[0] == "reproduced"
    assert exponent_verdict(Interval(0.8, 1.3))[0] == "not reproduced"  # outside 1/2 ± 0.1
    # Excluding exactly 1/2 is not enough: a tight 0.55 is √n at the stated ±0.1 margin, and a
    # wide interval that reaches into the band excludes nothing.
    assert exponent_verdict(Interval(0.54, 0.56))[0] == "reproduced"
    assert exponent_verdict(Interval(0.55, 3.0))[0] == "not testable"
    assert exponent_verdict(None)[0] == "not testable"
    assert exponent_verdict(Interval(math.nan, math.nan))[0] == "not testable"
    edge = 0.5 + EXPONENT_MARGIN
    assert exponent_verdict(Interval(0.45, edge + 0.01))[0] == "not testable"


def _ablation(
    variance: tuple[float, float, float], gap: tuple[float, float, float], ref_gap: float
) -> object:
    pytest.importorskip("torch")
    from cotplan.research.lab.ablation import PEAblationResult, Variant

    label = "rope"
    order = pd.DataFrame(
        {
            "model": [label],
            "t": [20],
            "variance": [variance[0]],
            "variance_low": [variance[1]],
            "variance_high": [variance[2]],
            "variance_float32": [variance[0]],
            "v2_variance": [math.nan],
        }
    )
    martingale = pd.DataFrame(
        {
            "model": [label],
            "vs_none": [gap[0]],
            "vs_none_low": [gap[1]],
            "vs_none_high": [gap[2]],
            "ref_gap": [ref_gap],
        }
    )
    training = pd.DataFrame({"model": [label], "d_model": [32], "n_layers": [2], "steps": [10]})
    return PEAblationResult(
        preset="quick",
        seed=0,
        variants=(Variant("rope", "tokens"),),
        ts=(20,),
        n_orderings=8,
        training=training,
        curves=pd.DataFrame(),
        order=order,
        martingale=martingale,
        gaps=pd.DataFrame(),
        reference="Laplace",
        wall_s=0.0,
        models={},
        martingale_results={},
    )


def test_the_ablation_variance_rule_is_two_sided() -> None:
    from cotplan.research.experiments.order import V2_ORDER_VARIANCE

    v2 = V2_ORDER_VARIANCE["RoPE"]

    def verdict(low: float, high: float) -> str:
        result = _ablation((math.sqrt(low * high), low, high), (0.0, -1.0, 1.0), 1.0)
        return str(result._variance_rows()[0].verdict)  # type: ignore[attr-defined]

    assert verdict(v2 / 2, v2 * 2) == "reproduced"
    assert verdict(v2 * 20, v2 * 50) == "not reproduced"
    # Spans a hundred-fold on either side of v2's value: settles nothing.
    assert verdict(v2 / 100, v2 * 100) == "not testable"


def test_the_ablation_gap_rule_needs_a_share_of_the_bayes_gap_not_a_sign() -> None:
    pytest.importorskip("torch")
    from cotplan.research.lab.ablation import GAP_SHARE

    def verdict(low: float, high: float) -> str:
        result = _ablation((1e-7, 1e-8, 1e-6), ((low + high) / 2, low, high), 1.0)
        return str(result._gap_rows()[0].verdict)  # type: ignore[attr-defined]

    assert verdict(2 * GAP_SHARE, 3 * GAP_SHARE) == "reproduced"
    # Above zero but far under a tenth of the Bayes gap: a sign, not a rate.
    assert verdict(1e-4, 2e-4) == "not reproduced"
    # Uninformative: from below zero to past the share.
    assert verdict(-0.5, 0.5) == "not testable"
