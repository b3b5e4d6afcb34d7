"""The quick presets on the real embedded model (SmolLM2-135M under llama.cpp)."""

from __future__ import annotations

import numpy as np
import pytest

from cotplan.experiments import (
    ENTROPY_QUICK,
    FALCK_QUICK,
    MARTINGALE_QUICK,
    ORDER_QUICK,
    BackendPredictor,
    entropy_efficiency,
    falck_tests,
    martingale_gap,
    order_variance,
    planned_predictions,
)

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def predictor(local_backend) -> BackendPredictor:  # type: ignore[no-untyped-def]
    return BackendPredictor(local_backend)


def test_prompt_format_matches_the_tokenizer(predictor: BackendPredictor) -> None:
    # SmolLM2 splits digits and spaces: bits are written "0 1 1 " and read as "0"/"1".
    assert predictor.resolved_style == "space-separated"
    assert predictor.prompt([0, 1, 1]) == ("0 1 1 ", ("0", "1"))


def test_martingale_quick_on_the_model(predictor: BackendPredictor) -> None:
    r = martingale_gap(predictor, **MARTINGALE_QUICK)
    assert r.run.requests + r.run.cache_hits == planned_predictions("martingale", MARTINGALE_QUICK)
    assert r.run.mean_covered_mass > 0.5
    assert np.all(np.isfinite(r.gap))
    assert np.all(r.gap > 0)
    assert np.all(r.ref_gap > 0)  # the exact Bayes reference on the same sequences
    assert len(r.versus_paper()) == 4


def test_order_quick_on_the_model(predictor: BackendPredictor) -> None:
    r = order_variance(predictor, **ORDER_QUICK)
    assert r.run.predictions == 64
    # A transformer with positional encodings is not exchangeable: orderings disagree.
    assert r.sigma > 0
    assert not r.exchangeable


def test_entropy_quick_on_the_model(predictor: BackendPredictor) -> None:
    r = entropy_efficiency(predictor, **ENTROPY_QUICK)
    # Every prefix but the empty one (a bare prompt cannot be empty: position 1 gets 1/2).
    n_seq, n_max = ENTROPY_QUICK["n_sequences"], ENTROPY_QUICK["n_max"]
    assert r.run.predictions == n_seq * (n_max - 1)
    assert planned_predictions("entropy", ENTROPY_QUICK) == n_seq * n_max
    mine = r.curves[r.curves["predictor"] == predictor.name]
    assert np.all(np.isfinite(mine["cross_entropy"]))
    assert len(mine) == 40


def test_falck_quick_on_the_model(predictor: BackendPredictor) -> None:
    r = falck_tests(predictor, **FALCK_QUICK)
    assert r.run.predictions == planned_predictions("falck", FALCK_QUICK)
    assert len(r.versus_paper()) == 3
