"""The fitted Beta prior: the best exchangeable baseline for "Bayesian in expectation"."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.errors import InputError
from cotplan.research.experiments import fit_beta_prior
from cotplan.research.experiments.predictors import laplace
from cotplan.research.experiments.priors import refit_max_gaps


def test_the_issues_averaged_predictions_are_a_bayesian_with_a_strong_prior() -> None:
    # Issue 32: the embedded model's averaged predictions for 5, 10 and 15 ones in 20 miss
    # Laplace by up to 0.29, yet a Beta(16.2, 1.3) prior predicts them within 0.002.
    ones, predictions = [5, 10, 15], [0.564, 0.700, 0.831]
    fit = fit_beta_prior(ones, 20, predictions)
    assert fit.alpha == pytest.approx(16.2, abs=0.05)
    assert fit.beta == pytest.approx(1.3, abs=0.05)
    assert fit.max_gap <= 0.002
    assert fit.dof == 1
    assert not fit.at_bound
    lap = laplace().from_counts(np.array(ones, dtype=float), np.full(3, 20.0))
    assert np.max(np.abs(np.array(predictions) - lap)) > 0.29  # Laplace alone reads "not Bayes"
    assert fit.predictor().from_counts(np.array([5.0]), np.array([20.0]))[0] == pytest.approx(
        fit.predictive[0]
    )


@settings(max_examples=40, deadline=None)
@given(
    a=st.floats(0.05, 200.0),
    b=st.floats(0.05, 200.0),
    n=st.integers(2, 200),
    data=st.data(),
)
def test_a_bayesians_own_predictions_are_fitted_exactly(
    a: float, b: float, n: int, data: st.DataObject
) -> None:
    # Any Beta(a, b) posterior predictive at two or more distinct counts is recovered: the
    # grid's last step is below 1e-4 in logit and log strength, so a gap below 1e-4 is the fit's
    # tolerance, not luck.
    ones = sorted(data.draw(st.sets(st.integers(0, n), min_size=2, max_size=5)))
    k = np.array(ones, dtype=float)
    truth = (k + a) / (n + a + b)
    fit = fit_beta_prior(k, n, truth)
    assert fit.max_gap < 1e-4


def test_one_multiset_fits_any_prediction_exactly_so_it_cannot_test() -> None:
    fit = fit_beta_prior([10], 20, [0.682])
    assert fit.max_gap < 1e-4
    assert fit.dof < 1  # what `OrderResult` reads as "not testable"


def test_predictions_that_fall_with_the_count_fit_no_beta_prior() -> None:
    fit = fit_beta_prior([5, 10, 15], 20, [0.7, 0.5, 0.3])
    assert fit.at_bound  # the best "prior" is an infinitely strong one: a constant
    assert fit.max_gap == pytest.approx(0.2, abs=1e-3)


def test_the_batch_refit_agrees_with_fitting_each_row() -> None:
    fit = fit_beta_prior([5, 10, 15], 20, [0.564, 0.700, 0.831])
    rows = np.array([0.564, 0.700, 0.831]) + np.random.default_rng(0).normal(0, 0.004, (20, 3))
    single = [fit_beta_prior([5, 10, 15], 20, row).max_gap for row in rows]
    assert refit_max_gaps(fit, rows) == pytest.approx(single, abs=1e-6)


def test_validation() -> None:
    with pytest.raises(InputError, match="`predictions`: needs one prediction per multiset"):
        fit_beta_prior([5, 10], 20, [0.5])
    with pytest.raises(InputError, match=r"`predictions`: must be probabilities in \[0, 1\]"):
        fit_beta_prior([5], 20, [1.5])
    with pytest.raises(InputError, match=r"`ones`: each count of ones must lie in 0\.\.length"):
        fit_beta_prior([25], 20, [0.5])
    with pytest.raises(InputError, match="`weights`: must be one non-negative weight"):
        fit_beta_prior([5, 10], 20, [0.4, 0.5], weights=[0.0, 0.0])
    fit = fit_beta_prior([5, 10], 20, [0.4, 0.5])
    with pytest.raises(InputError, match="`predictions`: needs 2 predictions per row"):
        refit_max_gaps(fit, np.zeros((3, 3)))
