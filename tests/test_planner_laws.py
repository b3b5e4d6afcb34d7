"""The error laws, their comparison on held-out items, and the certified budgets.

Calibrations are simulated from known curves with fixed seeds, so every check is
deterministic; tolerances are stated where they come from a simulation.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotplan.errors import InfeasibleTargetError, InputError
from cotplan.planner import BudgetPlanner
from cotplan.planner.adaptive import adaptive_certify
from cotplan.planner.certify import Certification, clopper_pearson_upper, items_needed
from cotplan.planner.data import Cells, validate_frame
from cotplan.planner.law_location import (
    fit_logistic,
    fit_step,
    logistic_error,
    logistic_k_star,
    logistic_starts,
)
from cotplan.planner.law_monotone import fit_monotone, pava_decreasing
from cotplan.planner.run import SavedPlan, relative_target
from cotplan.planner.shapes import SHAPES, grid_0_to_5n


def _cells(error: np.ndarray, n: np.ndarray, k: np.ndarray, trials: int, seed: int) -> Cells:
    """Binomial counts per (n, k) cell drawn from the given true error."""
    rng = np.random.default_rng(seed)
    wrong = rng.binomial(trials, error)
    return Cells(
        n=n.astype(float),
        k=k.astype(float),
        logn=np.log(n.astype(float)),
        successes=(trials - wrong).astype(float),
        trials=np.full(len(n), float(trials)),
    )


def _grid(sizes: tuple[int, ...] = (4, 8, 16, 32)) -> tuple[np.ndarray, np.ndarray]:
    n = np.concatenate([np.full(len(grid_0_to_5n(s)), s) for s in sizes])
    k = np.concatenate([grid_0_to_5n(s) for s in sizes])
    return n, k


def test_the_logistic_law_recovers_planted_parameters() -> None:
    planted = np.array([0.05, 0.9, 2.0, 1.0, 1.0, 0.5])  # around 2n, width √n
    n, k = _grid()
    cells = _cells(logistic_error(planted, n, k), n, k, trials=400, seed=1)
    params, _ = fit_logistic(cells, logistic_starts(cells))
    e0, eb, a, beta, s, gamma = params
    # Tolerances: about 4 sd of 50 refits on fresh draws of this design.
    assert e0 == pytest.approx(0.05, abs=0.015)
    assert eb == pytest.approx(0.9, abs=0.03)
    assert beta == pytest.approx(1.0, abs=0.05)
    assert a * 32**beta == pytest.approx(64.0, rel=0.05)  # the location at n = 32
    assert gamma == pytest.approx(0.5, abs=0.25)
    assert s * 32**gamma == pytest.approx(32**0.5, rel=0.3)  # the width at n = 32
    for size in (4, 32):
        truth = logistic_k_star(planted, size, 0.1)
        assert logistic_k_star(params, size, 0.1) == pytest.approx(truth, rel=0.06)


def test_the_step_law_recovers_a_step_at_3n() -> None:
    n, k = _grid()
    error = np.where(k >= 3 * n, 0.03, 0.8)
    params, _ = fit_step(_cells(error, n, k, trials=80, seed=2))
    e0, eb, a, beta = params
    assert beta == pytest.approx(1.0, abs=0.03)
    assert a * 16**beta == pytest.approx(48.0, rel=0.03)
    assert e0 == pytest.approx(0.03, abs=0.02)
    assert eb == pytest.approx(0.8, abs=0.03)


def test_the_monotone_law_is_a_non_increasing_binomial_fit() -> None:
    assert pava_decreasing(np.array([0.9, 0.5, 0.6, 0.2]), np.ones(4)).tolist() == pytest.approx(
        [0.9, 0.55, 0.55, 0.2]
    )
    n, k = _grid((8,))
    error = 0.8 * np.exp(-k / 6.0)
    cells = _cells(error, n, k, trials=200, seed=3)
    params, _ = fit_monotone(cells)
    fitted = params[:, 2]
    assert np.all(np.diff(fitted) <= 1e-12)
    assert np.max(np.abs(fitted - error)) < 0.1


@pytest.mark.parametrize(
    ("shape", "laws"),
    [("step at 3n", {"step", "logistic"}), ("logistic 2n", {"logistic"})],
)
def test_held_out_likelihood_picks_a_location_law_on_a_location_curve(
    shape: str, laws: set[str]
) -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(SHAPES[shape].calibration((4, 8, 16), 80, 0))
    assert planner.law_ in laws
    assert planner.laws_ is not None
    table = planner.laws_.to_frame()
    assert set(table["law"]) == {"paper", "paper-half", "logistic", "step", "monotone"}
    assert table.loc[table["selected"], "law"].item() == planner.law_
    chosen = planner.laws_[planner.law_]
    assert chosen.difference > chosen.difference_se > 0
    assert "beats the paper's law" in planner.verdict_


def test_the_paper_law_is_kept_when_the_data_cannot_tell() -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(SHAPES["paper α=1/2"].calibration((4, 8, 16), 80, 0))
    assert planner.law_ == "paper"
    assert planner.laws_ is not None
    text = str(planner.laws_)
    assert "paper-half" in text
    assert "chosen: paper" in text
    # The verdict on the √n law is the paper-half line's note.
    assert planner.laws_["paper-half"].note.startswith(("consistent with the √n law", "the √n"))


def test_the_planned_budget_follows_the_chosen_law_on_a_step() -> None:
    shape = SHAPES["step at 3n"]
    planner = BudgetPlanner(n_bootstrap=20).fit(shape.calibration((4, 8, 16), 80, 0))
    at_16 = planner.budget(16, 0.1)
    assert at_16.law == planner.law_
    assert at_16.certified
    assert at_16.tokens == 48  # the true k* is exactly 3n
    assert at_16.k_star == pytest.approx(48, rel=0.15)
    beyond = planner.budget(24, 0.1)
    assert beyond.extrapolated
    assert not beyond.certified
    assert beyond.reach == pytest.approx(1.5)
    assert "1.5× the largest calibrated size 16" in beyond.basis
    assert beyond.tokens == pytest.approx(72, rel=0.1)
    # The exponential alone would have planned about twice the true budget.
    assert planner.budget(16, 0.1).baselines["paper"] > 1.5 * 48


def test_clopper_pearson_and_the_items_a_certificate_needs() -> None:
    # No error in m items bounds the error by 1 − δ^(1/m): 29 items are the fewest for 0.1.
    assert float(clopper_pearson_upper(0, 29, 0.05)) == pytest.approx(1 - 0.05 ** (1 / 29))
    assert items_needed(0.0, 0.1, 0.05) == 29
    # 2 errors in 40 items cannot show an error below 0.1 (the example).
    assert float(clopper_pearson_upper(2, 40, 0.05)) > 0.1
    needed = items_needed(2 / 40, 0.1, 0.05)
    assert needed is not None
    assert float(clopper_pearson_upper(math.ceil(needed * 0.05), needed, 0.05)) <= 0.1
    assert items_needed(0.12, 0.1, 0.05) is None


def test_a_calibration_too_small_to_certify_says_how_many_items_would() -> None:
    frame = pd.DataFrame(
        [
            {"item": f"i{i}", "n": 8, "k": k, "correct": not (k == 64 and i < 2) and k > 0}
            for i in range(40)
            for k in (0, 16, 64)
        ]
    )
    cert = Certification.from_data(validate_frame(frame), 0.05, {}).at(8, 0.1)
    assert not cert.certified
    assert cert.items_needed is not None
    assert cert.items_needed > 40
    assert f"about {cert.items_needed} items a size would certify" in cert.note


def _worst_case_frame(seed: int, items: int = 80) -> pd.DataFrame:
    """A curve that sits just above ε at three budgets under one that clearly meets it."""
    errors = {0: 0.6, 8: 0.3, 16: 0.11, 24: 0.11, 32: 0.11, 40: 0.01}
    rng = np.random.default_rng(seed)
    u = rng.random(items)
    return pd.DataFrame(
        [
            {"item": f"i{i}", "n": 8, "k": k, "correct": bool(u[i] >= e)}
            for i in range(items)
            for k, e in errors.items()
        ]
    )


@pytest.mark.slow
def test_the_certified_budget_meets_eps_with_the_stated_confidence() -> None:
    # 400 calibrations of the worst case: certifying k ≤ 32 (true error 0.11 > 0.1) is a miss.
    misses = certified = 0
    for seed in range(400):
        cert = Certification.from_data(validate_frame(_worst_case_frame(seed)), 0.05, {})
        k = cert.at(8, 0.1).k
        certified += k is not None
        misses += k is not None and k < 40
    # The guarantee: P(miss) ≤ 0.05. Binomial(400, 0.05) exceeds 34 with probability < 0.002.
    assert misses <= 34
    assert certified >= 380  # and it is not vacuous: k = 40 is certified nearly always


def test_a_peaked_curve_is_never_capped_above_its_peak() -> None:
    shape = SHAPES["peaked"]
    planner = BudgetPlanner(n_bootstrap=0).fit(shape.calibration((4, 8, 16), 80, 1))
    assert planner.peak_budgets_
    for n, peak in planner.peak_budgets_.items():
        assert planner.budget(n, 0.1).tokens <= peak
        assert (planner.certified_.table.query("n == @n")["k"] <= peak).all()


def test_no_benefit_plans_zero_and_other_laws_degrade_to_a_verdict() -> None:
    flat = SHAPES["flat"].calibration((4, 8), 40, 0)
    for law in ("auto", "logistic", "step", "monotone", "paper-half"):
        planner = BudgetPlanner(law, n_bootstrap=0).fit(flat)
        assert planner.status_ == "no_benefit"
        assert planner.budget(8, 0.1).tokens == 0
        with pytest.raises(InfeasibleTargetError):
            planner.budget(8, 0.01)
    one_size = SHAPES["logistic 2n"].calibration((8,), 40, 0)
    true_k = SHAPES["logistic 2n"].k_star(8, 0.2)
    for law in ("logistic", "step", "monotone"):
        planner = BudgetPlanner(law, n_bootstrap=5).fit(one_size)
        assert planner.law_ == law
        # One size of 40 items still places the cap near the truth, inside the calibrated grid.
        assert 0.5 * true_k <= planner.budget(8, 0.2).tokens <= one_size["k"].max()
        assert planner.budget(12, 0.2).extrapolated
        str(planner.report())


def test_certify_tabulates_every_calibrated_size() -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(SHAPES["step at 3n"].calibration((4, 8), 160, 2))
    table = planner.certify(0.1)
    assert table["n"].tolist() == [4, 8]
    assert table["k"].tolist() == [12, 24]
    assert (table["error_bound"] <= 0.1).all()
    with pytest.raises(InputError, match="`eps`"):
        planner.certify(1.5)


def test_the_adaptive_grid_certifies_a_step_for_a_fraction_of_the_requests() -> None:
    shape = SHAPES["step at 3n"]
    grid = grid_0_to_5n(16)
    u = np.random.default_rng(0).random(100)

    def answer(k: int, which: range) -> np.ndarray:
        return u[which.start : which.stop] < float(shape.error(16, [k])[0])

    result = adaptive_certify(answer, grid, 0.1, items=80)
    assert result.k == 48
    assert result.requests < 80 * len(grid) / 3
    assert set(result.to_frame()["stage"]) == {"locate", "confirm"}
    with pytest.raises(InputError, match="`eps`"):
        adaptive_certify(answer, grid, 1.0)


def test_a_saved_plan_gives_back_the_budgets_it_was_made_with(tmp_path: Path) -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(SHAPES["step at 3n"].calibration((4, 8), 80, 3))
    budgets = [planner.budget(n, 0.1) for n in (4, 8, 12)]
    saved = SavedPlan.from_planner(planner, budgets, 0.1, "calibration.csv")
    loaded = SavedPlan.load(saved.save(tmp_path / "plan.json"))
    # NaN ends of intervals compare unequal: compare the tables.
    pd.testing.assert_frame_equal(
        pd.concat([b.to_frame() for b in loaded.budgets]),
        pd.concat([b.to_frame() for b in budgets]),
    )
    assert loaded.budget(12, 0.1).tokens == budgets[2].tokens
    assert (loaded.eps, loaded.status_, loaded.verdict_) == (0.1, "helps", planner.verdict_)
    assert loaded.law == planner.law_
    with pytest.raises(InputError, match=r"`eps`: the plan was made for ε = 0\.1"):
        loaded.budget(8, 0.2)
    with pytest.raises(InputError, match="`n`: the plan has no budget for n = 16"):
        loaded.budget(16, 0.1)
    (tmp_path / "bad.json").write_text('{"eps": 0.1}')
    with pytest.raises(InputError, match="`plan`: not a plan"):
        SavedPlan.load(tmp_path / "bad.json")


def test_the_relative_target_reads_the_planning_laws_levels() -> None:
    planner = BudgetPlanner(n_bootstrap=0).fit(SHAPES["step at 3n"].calibration((4, 8), 80, 3))
    assert planner.law_ in {"step", "logistic"}
    e0, e_base = planner.state_.law.params[:2]
    assert relative_target(planner, 0.25) == pytest.approx(
        math.ceil((e0 + 0.25 * (e_base - e0)) * 100 - 1e-9) / 100
    )
