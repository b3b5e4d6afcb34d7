"""Entropy efficiency: the exact limits (Laplace is Bayes under a uniform prior, excess ~ 1/(2n))
and what they say about the paper's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from cotplan.errors import InputError
from cotplan.research.experiments.entropy import (
    ENTROPY_QUICK,
    bayes_limit,
    binary_entropy,
    entropy_efficiency,
    expected_curve,
    first_reaching,
    laplace_threshold_table,
    limit_flags,
)
from cotplan.research.experiments.entropy import (
    expected_prior_entropy as _expected_prior_entropy,
)
from cotplan.research.experiments.predictors import BetaBernoulli, ClippedMLE, Oracle, kt, laplace


def test_binary_entropy_and_prior_mean() -> None:
    assert binary_entropy(0.5) == pytest.approx(np.log(2))
    assert binary_entropy(0.0) == 0.0
    assert _expected_prior_entropy(1.0, 1.0) == pytest.approx(0.5)
    draws = np.random.default_rng(0).beta(2, 3, 200_000)
    assert _expected_prior_entropy(2.0, 3.0) == pytest.approx(
        binary_entropy(draws).mean(), abs=2e-3
    )


@pytest.mark.parametrize("p", [0.2, 0.5, None])
def test_laplace_excess_per_step_is_about_one_over_2n(p: float | None) -> None:
    ce, h = expected_curve(laplace(), 400, p=p)
    n = np.arange(1, 401)
    scaled = (ce - h) * n
    assert scaled[199:].mean() == pytest.approx(0.5, abs=0.03)


def test_laplace_is_bayes_optimal_under_the_uniform_prior() -> None:
    lap, _ = expected_curve(laplace(), 150, p=None)
    for other in (kt(), ClippedMLE(), BetaBernoulli(2, 2), BetaBernoulli(0.8, 1.2), Oracle(0.5)):
        ce, _ = expected_curve(other, 150, p=None)
        assert np.all(ce >= lap - 1e-12)


def test_the_papers_claim_cannot_hold_under_a_uniform_prior() -> None:
    limit = bayes_limit(20)
    assert limit["efficiency_at_n"] == pytest.approx(0.9567, abs=1e-3)
    assert limit["efficiency_at_n"] < 0.99
    assert limit["first_n"] == 97
    table = laplace_threshold_table((0.1, 0.3, 0.5)).set_index("p")
    assert table.loc[0.5, "Laplace_first_n"] == 70
    assert table.loc[0.1, "Laplace_first_n"] > 100


def test_first_reaching_means_staying_above() -> None:
    assert first_reaching(np.array([0.5, 0.995, 0.98, 0.991, 0.999]), 0.99) == 4
    assert first_reaching(np.array([0.995, 0.999]), 0.99) == 1
    assert first_reaching(np.array([0.995, 0.98]), 0.99) is None


def test_experiment_matches_the_exact_curves_for_laplace() -> None:
    r = entropy_efficiency(laplace(), **ENTROPY_QUICK)
    assert r.first_n["Laplace (exact)"] is None  # 80 at p = 0.3, beyond n_max = 40
    assert r.laplace_first_n == 80
    own = r.curves[r.curves["predictor"] == "Laplace"]["cross_entropy"].to_numpy()
    exact = r.curves[r.curves["predictor"] == "Laplace (exact)"]["cross_entropy"].to_numpy()
    assert np.allclose(own, exact)  # Laplace as its own control variate: no noise left
    assert r.excess_exponent == pytest.approx(-1.0, abs=0.2)
    assert r.mle_variance_ratio_ci.low > 1
    rows = r.versus_paper().set_index("claim")
    # p = 0.3 is fixed: beating Laplace there is possible, so nothing breaks the Bayes limit.
    assert not rows["breaks_limit"].any()
    # The row says which p it was read at, and that the answer depends on p (issue 48).
    laplace_row = rows.loc["Laplace smoothing needs > 100 examples for 99% (read at p = 0.3)"]
    assert (laplace_row["verdict"], laplace_row["holds"]) == ("not a model claim", "no")
    assert "needs > 100 at p = 0.05, 0.1, 0.15" in laplace_row["why"]


def test_oracle_reaches_full_efficiency_at_once_for_its_p() -> None:
    r = entropy_efficiency(Oracle(0.3), p=0.3, n_max=30, n_sequences=10, n_boot=100)
    assert r.first_n["oracle p=0.3"] == 1
    assert r.flags == ()


def test_flags_a_predictor_that_beats_the_bayes_mixture() -> None:
    rng = np.random.default_rng(0)
    bayes = rng.normal(0.6, 0.05, (50, 20))
    flags = limit_flags({"Laplace": bayes, "cheat": bayes - 0.05}, "Laplace", None)
    assert len(flags) == 1
    assert "cheat beats the Bayes mixture" in flags[0]
    assert limit_flags({"Laplace": bayes, "cheat": bayes - 0.05}, "Laplace", 0.3) == ()


def test_validation() -> None:
    with pytest.raises(InputError, match="`p`: must lie in"):
        entropy_efficiency(laplace(), p=1.0)
    with pytest.raises(InputError, match="`n_max`: must be >= 5"):
        entropy_efficiency(laplace(), n_max=3)
