"""Order variance: zero for exchangeable predictors, the CLT slope for order-dependent ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cotplan.errors import InputError
from cotplan.research.experiments.order import ORDER_FULL, ORDER_QUICK, order_variance
from cotplan.research.experiments.predictors import ClippedMLE, Recency, kt, laplace


@pytest.mark.parametrize("predictor", [laplace(), kt(), ClippedMLE(), Recency(1.0)])
def test_exchangeable_predictors_have_exactly_zero_order_variance(predictor) -> None:  # type: ignore[no-untyped-def]
    r = order_variance(predictor, **ORDER_QUICK)
    assert r.exchangeable
    assert r.sigma == 0.0
    assert np.all(r.sd == 0.0)
    assert math.isnan(r.slope)
    row = r.versus_paper().iloc[0]
    assert (row["verdict"], row["holds"]) == ("follows from averaging", "")  # no spread at all


def test_order_dependent_predictor_follows_the_clt_slope() -> None:
    r = order_variance(Recency(0.9), **ORDER_FULL)
    assert not r.exchangeable
    assert r.sigma > 0.01
    assert r.slope_ci.low < -0.5 < r.slope_ci.high
    assert r.sd_reduction_20 == pytest.approx(math.sqrt(20), rel=0.1)
    assert r.measured_at_20
    # Averaging cannot remove the bias against Bayes: the RMSE saturates above |bias|.
    assert r.rmse[-1] >= r.bias * 0.99
    rows = r.versus_paper().set_index("claim")
    # The CLT rows hold for any order-dependent predictor: they cannot tell models apart.
    averaging = rows.iloc[:4]
    assert (averaging["verdict"] == "follows from averaging").all()
    assert list(averaging["holds"]) == ["yes", "yes", "yes", "no"]  # variance falls 95%, not 70-80%


def test_validation() -> None:
    with pytest.raises(InputError, match=r"`ones`: each must lie in 0\.\.10"):
        order_variance(laplace(), n=10, ones=[11])
    with pytest.raises(InputError, match="`ks`: need k = 1"):
        order_variance(laplace(), n=10, n_orderings=12, ks=(2, 4))
    with pytest.raises(InputError, match="`n_orderings`: must be >= 6"):
        order_variance(laplace(), n=10, n_orderings=3)
