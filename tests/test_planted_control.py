"""The planted √n positive control (issue 48): the k* pipeline recovers the law it was given.

Without it a "not reproduced" on the k* law could be the pipeline's own failure. The planted
family's exact reader needs about √n · log(1/ε) votes by construction; the linear variant needs
about n, and must read "not reproduced".
"""

from __future__ import annotations

import pytest

from cotplan.errors import InputError
from cotplan.research.lab.reasoning.planted import planted_calibration, planted_control


@pytest.mark.parametrize("eps", [0.1, 0.05])
def test_the_pipeline_recovers_a_planted_square_root_law(eps: float) -> None:
    control = planted_control(items=600, eps=eps, n_bootstrap=100, planner=False)
    assert control.exponent is not None
    assert 0.5 in control.exponent  # the planted exponent is inside the interval
    assert control.exponent.high < 1.0  # and linear growth is excluded
    assert control.verdict in ("reproduced", "not testable")  # never a refutation
    assert (control.premise["premise"] != "fails").all()  # the √n curve falls fastest first


def test_the_pipeline_refutes_a_planted_linear_law() -> None:
    control = planted_control(items=600, exponent=0.5, c=1.5, n_bootstrap=100, planner=False)
    assert control.exponent is not None
    assert control.exponent.low > 0.6
    assert control.verdict == "not reproduced"


def test_the_planted_error_is_a_function_of_written_votes_over_root_n() -> None:
    frame = planted_calibration((16, 64), items=400, seed=1)
    error = 1 - frame.groupby(["n", "k"])["correct"].mean()
    # 4 votes at n = 16 and 8 at n = 64 are the same j/√n: the same error, within noise.
    assert abs(error[(16, 12)] - error[(64, 24)]) < 0.06
    # Twice as many votes at n = 64 as at n = 16 read with the same error, not the same count.
    assert error[(64, 12)] > error[(16, 12)] + 0.03


def test_bad_sizes_name_the_field() -> None:
    with pytest.raises(InputError, match="sizes"):
        planted_calibration((0, 16))
