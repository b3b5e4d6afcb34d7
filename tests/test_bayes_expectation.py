"""Bayes in expectation with one prior shared across lengths: exact Bayesians pass, a planted
affine non-Bayesian fails, and one length alone cannot tell them apart (issue 48)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from cotplan.errors import InputError
from cotplan.research.experiments.bayes_expectation import bayes_in_expectation
from cotplan.research.experiments.predictors import BetaBernoulli, FloatArray, Predictor, laplace
from cotplan.research.experiments.priors import fit_beta_prior


class Affine(Predictor):
    """Not Bayesian: 0.2 + 0.6·k/t, the same weight on the frequency at every length."""

    name = "planted affine"
    exchangeable = True

    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        return np.array([0.2 + 0.6 * sum(p) / len(p) for p in prefixes])


class BayesInExpectationOnly(Predictor):
    """Laplace plus a recency term whose mean over orderings is 0: Bayesian in expectation,
    not in realization (the paper's claim 2 and 1 together)."""

    name = "noisy Laplace"

    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        out = []
        for p in prefixes:
            k, t = sum(p), len(p)
            out.append((k + 1) / (t + 2) + 0.05 * (p[-1] - k / t))
        return np.array(out)


def test_exact_bayesians_pass_with_one_prior_across_lengths() -> None:
    for reference in (laplace(), BetaBernoulli(3.0, 1.0)):
        result = bayes_in_expectation(reference, n_orderings=8, n_boot=20)
        assert result.verdict == "reproduced", result.why
        assert result.scaled_gap < 1e-3


def test_a_planted_affine_predictor_fails_across_lengths() -> None:
    result = bayes_in_expectation(Affine(), n_orderings=8, n_boot=20)
    assert result.verdict == "not reproduced", result.why
    assert result.scaled_gap_ci.low > 1.0


def test_one_length_cannot_tell_the_affine_predictor_from_a_bayesian() -> None:
    # The old reading: three multisets at t = 20. The affine predictor is a Beta predictive
    # there exactly (slope 0.03 = 1/(a + b + 20), intercept 0.2 = a/(a + b + 20)).
    at_20 = ((20, 5), (20, 10), (20, 15))
    predictions = Affine().prob_one([[1] * k + [0] * (20 - k) for _, k in at_20])
    fit = fit_beta_prior([5, 10, 15], 20, predictions)
    assert fit.max_gap < 1e-6  # passes the one-length fit
    result = bayes_in_expectation(Affine(), at_20, n_orderings=8, n_boot=20)
    assert result.verdict == "not testable"
    assert "one length only" in result.why


def test_bayesian_in_expectation_but_not_in_realization_passes() -> None:
    result = bayes_in_expectation(BayesInExpectationOnly(), n_orderings=200, n_boot=100)
    assert result.verdict == "reproduced", result.why
    frame = result.to_frame()
    assert list(frame.columns) == ["t", "k", "averaged", "prior_predictive", "gap", "margin"]


def test_bad_multisets_name_the_field() -> None:
    with pytest.raises(InputError, match="multisets"):
        bayes_in_expectation(laplace(), ((10, 11),))
