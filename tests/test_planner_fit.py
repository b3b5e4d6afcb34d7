"""BudgetPlanner: recovery of planted constants, the budget formula, tests, and validation.

Synthetic calibrations are drawn from the model itself, so the truth is known. Each check uses a
fixed seed, so it is deterministic; the tolerances were set from 200 replicate fits (sd of α̂
0.11, of ê0 0.012 at 60 items per size) and 40 bootstrap replicates (coverage 0.925-0.975 for
nominal 95%): see benchmarks/planner_recovery.py.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from cotplan.errors import InfeasibleTargetError, InputError, NotFittedError
from cotplan.planner import Budget, BudgetPlanner, OptimalBudget, PlanReport
from cotplan.planner import data as data_module
from cotplan.planner import evidence as evidence_module
from cotplan.planner import law_paper as paper_module

TRUTH = {"e0": 0.1, "e_base": 1.0, "k0": 5.0, "c": 2.0, "alpha": 0.5}


def synth(
    seed: int,
    *,
    e0: float = 0.1,
    e_base: float = 1.0,
    k0: float = 5.0,
    c: float = 2.0,
    alpha: float = 0.5,
    sizes: tuple[int, ...] = (4, 8, 16, 32),
    budgets: tuple[int, ...] = (0, 4, 8, 16, 32, 64, 128),
    items: int = 60,
) -> pd.DataFrame:
    """Every item answered once at every budget, wrong with probability e(k, n)."""
    rng = np.random.default_rng(seed)
    n = np.repeat(np.array(sizes), items * len(budgets))
    item = np.repeat(np.arange(len(sizes) * items), len(budgets))
    k = np.tile(np.array(budgets), len(sizes) * items)
    error = e0 + (e_base - e0) * np.exp(-np.maximum(k - k0, 0) / (c * n**alpha))
    return pd.DataFrame(
        {
            "item": [f"it{i}" for i in item],
            "n": n,
            "k": k,
            "correct": rng.random(len(k)) >= error,
            "reasoning_tokens": k // 2,  # extra columns are ignored
        }
    )


@pytest.fixture(scope="module")
def planted() -> BudgetPlanner:
    return BudgetPlanner().fit(synth(0))


def test_fit_returns_self_and_recovers_planted_constants(planted: BudgetPlanner) -> None:
    assert planted.status_ == "helps"
    assert planted.verdict_.startswith("reasoning helps")
    for name, value in TRUTH.items():
        interval = planted.intervals_[name]
        if name == "e_base":  # the truth sits on the boundary; the estimate hugs it
            assert interval.high > 0.999
            continue
        assert value in interval, (name, interval)
    assert abs(planted.alpha_ - 0.5) < 0.3
    assert abs(planted.e0_ - 0.1) < 0.04
    assert planted.lrt_ is not None
    assert planted.lrt_.p_value > 0.05
    assert planted.lrt_.verdict.startswith("consistent with the √n law")
    assert planted.trend_ is not None
    assert planted.trend_.p_value < 1e-10
    assert planted.sizes_ == (4, 8, 16, 32)
    assert planted.budgets_[-1] == 128
    assert planted.bootstrap_.shape == (200, 5)


def test_a_different_exponent_is_detected() -> None:
    frame = synth(8, alpha=1.0, c=1.0, sizes=(2, 8, 32, 64), budgets=(0, 8, 16, 32, 64, 128, 256))
    planner = BudgetPlanner(n_bootstrap=100).fit(frame)
    assert 1.0 in planner.intervals_["alpha"]
    assert planner.lrt_ is not None
    assert planner.lrt_.p_value < 1e-3
    assert planner.lrt_.p_value_bootstrap < 1e-3
    assert planner.lrt_.verdict.startswith("the √n law does not hold")


def test_budget_solves_the_model(planted: BudgetPlanner) -> None:
    budget = planted.budget(16, 0.2)
    assert isinstance(budget, Budget)
    assert budget.eps == 0.2
    assert budget.n == 16
    assert planted.predict_error(16, budget.k_star) == pytest.approx(0.2, abs=1e-9)
    # The cap is the certified budget: on this coarse grid (…, 32, 64, 128) the first budget
    # whose 95% bound is below 0.2, above the law's k*.
    assert budget.certified
    assert budget.tokens == 64
    assert budget.error_bound <= 0.2
    assert budget.law == "paper"
    assert float(budget) == budget.k_star
    assert budget.low <= budget.k_star <= budget.high
    assert budget.baselines.keys() == {"paper", "alpha_half", "least_squares"}
    assert not budget.extrapolated
    # An uncalibrated size scales the certified cap by the law: k*(24) / k*(16).
    between = planted.budget(24, 0.2)
    assert between.extrapolated
    assert not between.certified
    assert between.cap_low <= between.tokens <= between.cap_high + 1
    ratio = between.k_star / budget.k_star
    assert between.tokens == math.ceil(64 * ratio - 1e-9)
    assert planted.budget(16, eps=0.3).k_star < budget.k_star
    assert planted.budget(1000, 0.2).extrapolated
    frame = budget.to_frame()
    assert list(frame["k_star"]) == [budget.k_star]
    assert "k_star_alpha_half" in frame.columns


def test_log_base_changes_the_reported_c_not_the_budget() -> None:
    frame = synth(1)
    by_base = {
        base: BudgetPlanner(log_base=base, n_bootstrap=0).fit(frame).budget(8, 0.2)
        for base in ("e", "2", "10")
    }
    assert by_base["2"].k_star == pytest.approx(by_base["e"].k_star)
    assert by_base["2"].c_in_base == pytest.approx(by_base["e"].c_in_base * math.log(2))
    assert by_base["10"].c_in_base == pytest.approx(by_base["e"].c_in_base * math.log(10))
    assert "log2(" in by_base["2"].formula
    assert "ln(" in by_base["e"].formula


def test_paper_worked_example_in_both_log_bases() -> None:
    # Cor 4.6: c = sqrt(α / (H·ΔB)) = sqrt(5 / 18); n = 100, ε = 0.1 -> 17.5 (log2), 12.1 (ln).
    c = math.sqrt(5 / 18)
    log2 = BudgetPlanner.from_constants(c=c, log_base="2").budget(100, 0.1)
    ln = BudgetPlanner.from_constants(c=c, log_base="e").budget(100, 0.1)
    assert log2.k_star == pytest.approx(17.5, abs=0.05)
    assert ln.k_star == pytest.approx(12.1, abs=0.05)
    assert math.isnan(ln.low)
    assert not ln.extrapolated


def test_target_at_or_below_the_floor_is_infeasible(planted: BudgetPlanner) -> None:
    with pytest.raises(
        InfeasibleTargetError, match=r"`eps`: ε = 0.05 is unattainable: .*floor"
    ) as info:
        planted.budget(8, eps=0.05)
    assert info.value.attainable == pytest.approx(planted.e0_)
    with pytest.raises(InfeasibleTargetError):
        planted.budget(8, eps=planted.e0_)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"eps": 0.0}, r"`eps`: must be in \(0, 1\), got 0"),
        ({"eps": 1.0}, r"`eps`: must be in \(0, 1\), got 1"),
        ({"eps": "0.1"}, r"`eps`: must be a number between 0 and 1"),
        ({"n": 0}, r"`n`: must be a positive number, got 0"),
        ({"n": -4}, r"`n`: must be a positive number"),
    ],
)
def test_budget_validates_its_arguments(
    planted: BudgetPlanner, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"n": 8, "eps": 0.2, **kwargs}
    with pytest.raises(InputError, match=message):
        planted.budget(**args)  # type: ignore[arg-type]


def test_predict_error_scalars_arrays_and_bounds(planted: BudgetPlanner) -> None:
    assert isinstance(planted.predict_error(8, 0), float)
    assert planted.predict_error(8, 0) == pytest.approx(planted.e_base_)
    grid = planted.predict_error(np.array([[4], [32]]), np.arange(0, 400, 10))
    assert grid.shape == (2, 40)
    assert np.all(np.diff(grid, axis=1) <= 1e-15)
    assert np.all(grid >= planted.e0_ - 1e-12)
    assert np.all(grid <= planted.e_base_ + 1e-12)
    assert np.all(grid[1] >= grid[0] - 1e-12)  # larger n, slower decay
    with pytest.raises(InputError, match=r"`k`: must be non-negative"):
        planted.predict_error(8, -1)


def test_optimal_matches_a_brute_force_search(planted: BudgetPlanner) -> None:
    for value, price in [(1.0, 1e-3), (10.0, 1e-3), (1.0, 0.5), (0.01, 1e-3)]:
        best = planted.optimal(16, value_of_correct=value, price_per_token=price)
        assert isinstance(best, OptimalBudget)
        ks = np.arange(0, 2000)
        costs = value * planted.predict_error(16, ks) + price * ks
        assert best.k == int(ks[np.argmin(costs)])
        assert best.expected_cost == pytest.approx(costs.min())
        assert best.saving >= 0
    assert planted.optimal(16, 1.0, 0.5).k == 0  # tokens dearer than the whole gain
    with pytest.raises(InputError, match=r"`price_per_token`: must be a positive number"):
        planted.optimal(16, 1.0, 0)


def test_report_tabulates_fit_and_baselines(planted: BudgetPlanner) -> None:
    report = planted.report()
    assert isinstance(report, PlanReport)
    frame = report.to_frame()
    assert set(frame["model"]) == {"fit", "alpha=1/2", "least squares", "logistic", "step"}
    alpha_half = frame[(frame.model == "alpha=1/2") & (frame.parameter == "alpha")]
    assert float(alpha_half["estimate"].iloc[0]) == 0.5
    text = str(report)
    assert planted.verdict_ in text
    assert "√n law" in text
    assert "trend test" in text
    assert planted.c_least_squares_ > 0  # the through-origin baseline ignores e0 and k0
    assert planted.alpha_half_["alpha"] == 0.5


def test_report_in_log_base_2_adds_converted_c() -> None:
    planner = BudgetPlanner(log_base="2", n_bootstrap=0).fit(synth(2))
    frame = planner.report().to_frame()
    c2 = frame[(frame.model == "fit") & (frame.parameter == "c (log base 2)")]["estimate"]
    assert float(c2.iloc[0]) == pytest.approx(planner.c_ * math.log(2))


def test_bootstrap_is_seeded() -> None:
    frame = synth(3, items=20)
    a = BudgetPlanner(n_bootstrap=30, random_state=5).fit(frame)
    b = BudgetPlanner(n_bootstrap=30, random_state=5).fit(frame)
    c = BudgetPlanner(n_bootstrap=30, random_state=6).fit(frame)
    assert a.intervals_ == b.intervals_
    assert a.intervals_ != c.intervals_


def test_fixed_alpha_and_fixed_e_base() -> None:
    frame = synth(4)
    half = BudgetPlanner(alpha=0.5, n_bootstrap=0).fit(frame)
    assert half.alpha_ == 0.5
    assert "α fixed at 0.5" in half.verdict_
    fixed = BudgetPlanner(e_base=1.0, n_bootstrap=20).fit(frame)
    assert fixed.e_base_ == 1.0
    assert fixed.intervals_["e_base"].low == fixed.intervals_["e_base"].high


def test_chance_level_without_reasoning_is_fitted_not_forced_to_one() -> None:
    # A yes/no task: half right with no reasoning. Forcing e_base = 1 (issue 4's form) bends
    # the exponent; fitting e_base recovers the truth.
    frame = synth(6, e_base=0.5, e0=0.05, k0=0.0, c=3.0)
    fitted = BudgetPlanner(n_bootstrap=50).fit(frame)
    assert 0.5 in fitted.intervals_["e_base"]
    assert 0.5 in fitted.intervals_["alpha"]
    assert fitted.budget(8, eps=0.6).k_star == 0.0
    assert "met without reasoning" in fitted.budget(8, eps=0.6).note


def test_one_size_only_uses_alpha_half() -> None:
    planner = BudgetPlanner(n_bootstrap=20).fit(synth(5, sizes=(8,)))
    assert planner.alpha_ == 0.5
    assert planner.lrt_ is None
    assert "too few sizes to fit α; fixed α = 1/2 used" in planner.verdict_
    assert planner.budget(8, 0.1).k_star > 0


def test_no_benefit_is_reported_not_invented() -> None:
    frame = synth(7)
    frame["correct"] = np.random.default_rng(0).random(len(frame)) < 0.4
    planner = BudgetPlanner().fit(frame)
    assert planner.status_ == "no_benefit"
    assert planner.verdict_.startswith("no measurable benefit from reasoning: k* = 0")
    assert planner.budget(8, 0.7).k_star == 0.0
    assert planner.optimal(8, 100.0, 1e-6).k == 0
    assert planner.predict_error(8, 1000) == pytest.approx(1 - frame["correct"].mean())
    assert math.isnan(planner.c_)
    assert math.isnan(planner.alpha_)
    with pytest.raises(InfeasibleTargetError, match=r"no measurable benefit") as info:
        planner.budget(8, eps=0.3)
    assert info.value.attainable == pytest.approx(planner.e0_)


def test_reasoning_that_hurts_is_called_so() -> None:
    planner = BudgetPlanner().fit(synth(2, e_base=0.2, e0=0.8))
    assert planner.status_ == "hurts"
    assert planner.verdict_.startswith("reasoning hurts")
    assert planner.budget(8, eps=0.5).k_star == 0.0


@pytest.mark.parametrize(
    ("correct", "status", "verdict"),
    [
        (True, "all_correct", r"no measurable benefit from reasoning: k\* = 0 \(all 112"),
        (False, "all_wrong", r"the floor e0 = 1 makes every target ε < 1 unattainable"),
    ],
)
def test_all_right_or_all_wrong(correct: bool, status: str, verdict: str) -> None:
    frame = synth(3, items=4)
    frame["correct"] = correct
    planner = BudgetPlanner().fit(frame)
    assert planner.status_ == status
    assert pytest.approx(planner.e0_) == (0.0 if correct else 1.0)
    import re

    assert re.search(verdict, planner.verdict_)
    if correct:
        assert planner.budget(16, eps=0.01).k_star == 0.0
    else:
        with pytest.raises(InfeasibleTargetError, match=r"no answer was right"):
            planner.budget(16, eps=0.5)


@pytest.mark.parametrize(
    ("frame", "verdict"),
    [
        (synth(0, items=1), r"too few items to fit: 4 \(at least 8 needed"),
        (synth(0, budgets=(64,)), r"one budget only \(k = 64\)"),
    ],
)
def test_too_little_data_gives_a_verdict_then_refuses_to_plan(
    frame: pd.DataFrame, verdict: str
) -> None:
    planner = BudgetPlanner().fit(frame)
    assert planner.status_ == "too_few"
    assert isinstance(planner.verdict_, str)
    import re

    assert re.search(verdict, planner.verdict_)
    with pytest.raises(InputError, match=r"`calibration`: cannot plan from this calibration"):
        planner.budget(8, 0.1)
    assert planner.report().constants == {}


def test_not_fitted() -> None:
    planner = BudgetPlanner()
    calls = (lambda: planner.budget(8, 0.1), lambda: planner.predict_error(8, 8), planner.report)
    for call in calls:
        with pytest.raises(NotFittedError, match=r"not fitted yet: call `fit"):
            call()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: f.drop(columns=["k"]), r"`calibration`: missing column\(s\) k"),
        (lambda f: f.iloc[:0], r"`calibration`: has no rows"),
        (lambda f: f.assign(n=0), r"`n`: must hold positive integers; bad row\(s\) 0, 1, 2"),
        (lambda f: f.assign(k=f["k"] - 0.5), r"`k`: must hold non-negative integers"),
        (lambda f: f.assign(correct=2), r"`correct`: must hold True/False or 1/0"),
        (lambda f: f.assign(correct=np.nan), r"`correct`: must hold True/False or 1/0"),
        (lambda f: f.assign(item=None), r"`item`: missing in row\(s\) 0"),
        (lambda f: f.assign(n=True), r"`n`: must hold integers, not booleans"),
    ],
)
def test_bad_frames_name_the_column(mutate: object, message: str) -> None:
    frame = mutate(synth(0, items=2))  # type: ignore[operator]
    with pytest.raises(InputError, match=message):
        BudgetPlanner().fit(frame)


def test_records_are_accepted_too() -> None:
    records = synth(0, items=3).to_dict("records")
    assert BudgetPlanner(n_bootstrap=0).fit(records).n_rows_ == len(records)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"alpha": 3.0}, r"`alpha`: must be in \[0, 2\], got 3"),
        ({"alpha": "free"}, r"`alpha`: must be 'fit' or a number"),
        ({"log_base": "3"}, r"`log_base`: must be 'e', '2' or '10', got '3'"),
        ({"e_base": 0.0}, r"`e_base`: must be in \(0, 1\]"),
        ({"n_bootstrap": -1}, r"`n_bootstrap`: must be an integer >= 0"),
        ({"confidence": 95}, r"`confidence`: must be in \(0, 1\)"),
        ({"min_items": 1}, r"`min_items`: must be an integer >= 2"),
        ({"random_state": None}, r"`random_state`: must be an integer seed"),
        ({"law": "exponential"}, r"`law`: must be 'auto' or one of 'paper', 'paper-half'"),
        ({"delta": 0.0}, r"`delta`: must be in \(0, 1\)"),
        ({"folds": 1}, r"`folds`: must be an integer >= 2"),
    ],
)
def test_bad_parameters_are_caught_at_fit(params: dict[str, object], message: str) -> None:
    planner = BudgetPlanner(**params)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=message):
        planner.fit(synth(0, items=2))


def test_repr_shows_changed_parameters() -> None:
    assert repr(BudgetPlanner()) == "BudgetPlanner()"
    assert repr(BudgetPlanner("step", alpha=0.5)) == "BudgetPlanner(law='step', alpha=0.5)"


def test_analytic_gradient_matches_finite_differences() -> None:
    data = data_module.validate_frame(synth(0, items=10))
    cells = data_module.pooled_cells(data)
    k_scale = 128.0
    for params in ([0.1, 0.9, 3.0, 2.0, 0.5], [0.3, 0.6, 0.5, 5.0, 1.2], [0.05, 0.99, 12, 1, 0.1]):
        x = paper_module._to_x(np.array(params, dtype=float), k_scale)
        error = optimize.check_grad(
            lambda t: paper_module._negloglik_and_grad(t, cells, k_scale)[0],
            lambda t: paper_module._negloglik_and_grad(t, cells, k_scale)[1],
            x,
            epsilon=1e-7,
        )
        scale = np.linalg.norm(paper_module._negloglik_and_grad(x, cells, k_scale)[1])
        assert error < 1e-4 * max(float(scale), 1.0)


def test_items_seen_at_one_budget_each_are_tested_within_sizes() -> None:
    frame = synth(11, items=140)
    # Keep one budget per item: a between-items design.
    rng = np.random.default_rng(0)
    keep = frame.groupby("item", group_keys=False).apply(
        lambda g: g.iloc[[rng.integers(len(g))]], include_groups=False
    )
    one_each = frame.loc[keep.index]
    planner = BudgetPlanner(n_bootstrap=0).fit(one_each)
    assert planner.status_ == "helps"
    assert planner.trend_ is not None
    assert "within sizes" in planner.trend_.verdict


def test_trend_test_has_its_nominal_false_alarm_rate() -> None:
    # 400 calibrations where the budget does nothing: about 5% should reject at the 5% level.
    rng = np.random.default_rng(1)
    rejections = 0
    for _ in range(400):
        base = synth(0, items=10, sizes=(4, 8))
        easy = rng.random(base["item"].nunique()) < 0.5  # items differ, budgets do not
        item_index = base["item"].str[2:].astype(int).to_numpy()
        p = np.where(easy[item_index], 0.8, 0.3)
        base["correct"] = rng.random(len(base)) < p
        data = data_module.validate_frame(base)
        rejections += evidence_module.trend_test(data).p_value < 0.05
    # Binomial(400, 0.05): mean 20, sd 4.4; [8, 34] holds with probability > 0.99.
    assert 8 <= rejections <= 34


def test_coarse_budgets_leave_the_curve_unidentified_and_say_so() -> None:
    # The error reaches its floor long before the first positive budget (k = 64).
    frame = synth(12, c=0.5, k0=0.0, budgets=(0, 64, 128), items=20)
    planner = BudgetPlanner(n_bootstrap=50).fit(frame)
    assert planner.status_ == "helps"
    assert "too coarse to resolve the curve" in planner.verdict_
    for name in ("k0", "c", "alpha"):
        assert math.isnan(planner.intervals_[name].low)
    assert planner.lrt_ is None
    budget = planner.budget(8, 0.3)
    assert budget.k_star == 64.0
    assert budget.low == 0.0
    assert budget.note.startswith("k* ≤ 64")


def test_alpha_at_the_edge_of_its_range_is_flagged() -> None:
    # Reasoning helps at n = 2 but not yet at n = 32 within 128 tokens: α is pushed to 2.
    frame = pd.concat(
        [
            synth(13, sizes=(2,), c=4.0, alpha=0.5, k0=0.0, budgets=(0, 32, 64, 128), items=30),
            synth(
                14, sizes=(32,), c=4.0, alpha=2.0, k0=0.0, budgets=(0, 32, 64, 128), items=30
            ).assign(item=lambda f: "b" + f["item"]),
        ]
    )
    planner = BudgetPlanner(n_bootstrap=50).fit(frame)
    assert planner.alpha_ > 1.9
    assert "α is at the top of its range" in planner.verdict_
    assert planner.lrt_ is not None
    assert planner.lrt_.p_value_bootstrap < 0.05


def test_a_floor_at_zero_gets_an_exact_upper_bound_not_a_zero_width_interval() -> None:
    # No wrong answer at the largest budget: every resample puts e0 at 0. The interval must
    # still admit the error that 20 items cannot rule out (Clopper-Pearson: 1 - 0.025^(1/20)).
    frame = synth(15, e0=0.0, c=1.0, k0=0.0, sizes=(4, 8), budgets=(0, 8, 16, 64, 256), items=20)
    planner = BudgetPlanner(n_bootstrap=50).fit(frame)
    interval = planner.intervals_["e0"]
    assert interval.low == 0.0
    assert interval.high == pytest.approx(1 - 0.025 ** (1 / 20))


def _rise_then_fall(seed: int, accuracy: dict[int, float], items: int = 60) -> pd.DataFrame:
    """One size; item i answered at every budget, right with the given probability per budget."""
    rng = np.random.default_rng(seed)
    rows = [
        {"item": f"it{i}", "n": 10, "k": k, "correct": bool(rng.random() < p)}
        for i in range(items)
        for k, p in accuracy.items()
    ]
    return pd.DataFrame(rows)


def test_a_rise_then_fall_is_fitted_up_to_the_peak() -> None:
    # Accuracy 0.1 without reasoning, 0.6 at k = 32, back to 0.1 at k = 256: the budgets
    # balance around the middle, so one trend test over all of them sees no rise at all.
    accuracy = {0: 0.1, 8: 0.3, 32: 0.6, 64: 0.45, 128: 0.2, 256: 0.1}
    frame = _rise_then_fall(3, accuracy)
    planner = BudgetPlanner().fit(frame)
    assert evidence_module.trend_test(data_module.validate_frame(frame)).p_value > 0.05
    assert planner.status_ == "helps"
    assert planner.peak_budget_ == 32
    assert "peaks at k = 32" in planner.verdict_
    assert planner.trend_ is not None
    assert planner.trend_.p_value < 0.05
    assert "beyond the peak accuracy falls" in planner.trend_.verdict
    budget = planner.budget(10, eps=0.5)
    assert 0 < budget.k_star <= 32
    # The floor is the error at the peak, not the lower error a monotone fit would invent.
    assert 0.3 < planner.e0_ < 0.55
    with pytest.raises(InfeasibleTargetError):
        planner.budget(10, eps=0.2)


def test_a_monotone_rise_has_no_peak(planted: BudgetPlanner) -> None:
    assert planted.peak_budget_ is None
    assert "peaks" not in planted.verdict_


def test_noise_after_a_plateau_is_not_called_a_fall() -> None:
    accuracy = {0: 0.1, 16: 0.7, 64: 0.7, 256: 0.7}
    planner = BudgetPlanner().fit(_rise_then_fall(4, accuracy))
    assert planner.status_ == "helps"
    assert planner.peak_budget_ is None


def test_alpha_on_its_bound_blames_budgets_only_where_the_floor_was_not_reached() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from cotplan.planner.evidence import alpha_at_top

    fit = cast(Any, SimpleNamespace(e0=0.0, sizes=[4, 16], budgets=[0, 40, 80]))
    reached = alpha_at_top(fit, (16.0, 80.0, 0.01))
    assert "already reached its floor by k = 80" in reached
    assert "calibrate more sizes" in reached
    assert "larger budgets" not in reached
    short = alpha_at_top(fit, (16.0, 80.0, 0.4))
    assert "fell too little by k = 80" in short
    assert "calibrate larger budgets there" in short
