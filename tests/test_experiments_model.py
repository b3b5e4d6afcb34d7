"""The quick presets on the real embedded model (SmolLM2-135M under llama.cpp).

The quick report runs every experiment once, with the same presets the experiments' own
functions take; the tests below read its results rather than running each experiment again
(the model's answers are the same either way: one slot, prompts evaluated a token at a time).
"""

from __future__ import annotations

import numpy as np
import pytest

from cotplan.research.experiments import (
    ENTROPY_QUICK,
    FALCK_QUICK,
    MARTINGALE_QUICK,
    PRESETS,
    BackendPredictor,
    ReproductionReport,
    planned_predictions,
    reproduction_report,
)

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def predictor(local_backend) -> BackendPredictor:  # type: ignore[no-untyped-def]
    return BackendPredictor(local_backend)


@pytest.fixture(scope="module")
def quick_report(predictor: BackendPredictor) -> ReproductionReport:
    assert PRESETS["quick"]["martingale"] is MARTINGALE_QUICK  # what the tests below read
    return reproduction_report(predictor, "quick")


def test_prompt_format_matches_the_tokenizer(predictor: BackendPredictor) -> None:
    # SmolLM2 splits digits and spaces: bits are written "0 1 1 " and read as "0"/"1".
    assert predictor.resolved_style == "space-separated"
    assert predictor.prompt([0, 1, 1]) == ("0 1 1 ", ("0", "1"))


def test_martingale_quick_on_the_model(quick_report: ReproductionReport) -> None:
    r = quick_report.results["martingale"]
    assert r.run.requests + r.run.cache_hits == planned_predictions("martingale", MARTINGALE_QUICK)
    assert r.run.mean_covered_mass > 0.5
    assert np.all(np.isfinite(r.gap))
    assert np.all(r.gap > 0)
    assert np.all(r.ref_gap > 0)  # the exact Bayes reference on the same sequences
    assert len(r.versus_paper()) == 4


def test_order_quick_on_the_model(quick_report: ReproductionReport) -> None:
    r = quick_report.results["order"]
    assert r.run.predictions == 64
    # A transformer with positional encodings is not exchangeable: orderings disagree.
    assert r.sigma > 0
    assert not r.exchangeable


def test_entropy_quick_on_the_model(
    predictor: BackendPredictor, quick_report: ReproductionReport
) -> None:
    r = quick_report.results["entropy"]
    # Every prefix but the empty one (a bare prompt cannot be empty: position 1 gets 1/2).
    n_seq, n_max = ENTROPY_QUICK["n_sequences"], ENTROPY_QUICK["n_max"]
    assert r.run.predictions == n_seq * (n_max - 1)
    assert planned_predictions("entropy", ENTROPY_QUICK) == n_seq * n_max
    mine = r.curves[r.curves["predictor"] == predictor.name]
    assert np.all(np.isfinite(mine["cross_entropy"]))
    assert len(mine) == 40


def test_falck_quick_on_the_model(
    predictor: BackendPredictor, quick_report: ReproductionReport
) -> None:
    r = quick_report.results["falck"]
    assert r.run.predictions == planned_predictions("falck", FALCK_QUICK)
    assert len(r.versus_paper()) == 4  # T1, T2 (bayes_icl's), T3, T2 (cotplan's check)
    assert r.predictor == predictor.name
    # The numbers, not only their count: each setting's T1 lies on its exact null's support,
    # with an ordered band, a p-value, and a flag that agrees with them.
    t = r.t1t2
    assert len(t) > 0
    assert np.all(np.isfinite(t["T1"]))
    assert (t["T1_low"] <= t["T1_high"]).all()
    assert t["T1_p"].between(0.0, 1.0).all()
    assert r.t1_violations == int(t["T1_outside"].sum())
    inside = (t["T1_low"] <= t["T1"]) & (t["T1"] <= t["T1_high"])
    assert not (inside & t["T1_outside"]).any(), "a T1 inside its band cannot be a violation"
    # T3: the spread of path means per n, non-negative, with an ordered Bayes band and a slope.
    assert len(r.t3) == len(FALCK_QUICK["t3_ns"])
    assert (r.t3["iqr"] > 0).all(), "paths of a model that updates on its data spread apart"
    assert (r.t3["bayes_low"] <= r.t3["bayes_high"]).all()
    assert np.isfinite(r.t3_slope)


@pytest.mark.slow  # three quick reports, one of them on the model: about a minute idle
def test_planted_and_exact_predictors_do_not_outscore_the_model(
    quick_report: ReproductionReport,
) -> None:
    """On claims about models, a 12-line recency predictor and exact Laplace must not score more
    "reproduced" rows than a real model: before the verdicts were separated, recency did."""
    from cotplan.research.experiments import Recency, laplace

    model = quick_report
    claims = model.model_claims()
    assert model.kind == "model"
    # The model tests structural claims for real: some rows reach a verdict either way. Since
    # verdicts are two-sided, an interval that straddles a claim's threshold reads "not
    # testable", and on the quick preset's few items most rows do (two reached a verdict).
    assert claims["reproduced"] + claims["not reproduced"] >= 2
    for control in (Recency(0.8), laplace()):
        other = reproduction_report(control, "quick")
        assert other.model_claims()["reproduced"] <= claims["reproduced"], control.name
        assert other.model_claims()["not reproduced"] == 0, control.name
    assert "can test the paper's structural claims" in model.capability()
