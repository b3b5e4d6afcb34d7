"""The finer grid (issue 29): refine the budgets where the error crosses ε, certify again.

The simulation draws items whose answer turns right at a random budget (the true error curve
is known exactly), certifies on a coarse grid, refines, and checks over seeded calibrations
that the refined cap's true error exceeds ε in at most a δ share (plus three binomial
standard errors of Monte Carlo slack), that it is never above the coarse cap, and that it
tightens the cap on average.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cotplan.errors import InputError
from cotplan.planner.early_exit import fixed_caps
from cotplan.planner.refine import refine_caps, refinement_budgets

COARSE = [0, 12, 24, 36, 48, 60, 72, 96]
SCALE, FLOOR = 14.0, 0.85  # error(k) = FLOOR · exp(−k / SCALE): k* at ε = 0.1 is 30.0


def true_error(k: int) -> float:
    # An item is right from budget ceil(settle) on, settle ~ Exponential(SCALE) for the FLOOR
    # share that needs thinking at all: P(wrong at k) = FLOOR · P(settle > k).
    return FLOOR * math.exp(-k / SCALE)


def _settles(items: int, rng: np.random.Generator) -> np.ndarray:
    needs = rng.random(items) < FLOOR
    return np.where(needs, rng.exponential(SCALE, items), -1.0)


def _rows(settle: np.ndarray, budgets: list[int], prefix: str) -> pd.DataFrame:
    k = np.asarray(budgets)
    correct = k[None, :] > settle[:, None]
    return pd.DataFrame(
        {
            "item": np.repeat([f"{prefix}{i}" for i in range(len(settle))], len(k)),
            "n": 16,
            "k": np.tile(k, len(settle)),
            "correct": correct.ravel(),
            "extracted": np.where(correct.ravel(), "a", "b"),
            "reasoning_tokens": np.tile(k, len(settle)),
            "answer_tokens": 2,
            "prompt_tokens": 20 + np.tile(k, len(settle)),
            "question_tokens": 20,
        }
    )


def test_budgets_go_between_the_last_failure_and_the_cap() -> None:
    settle = _settles(120, np.random.default_rng(0))
    frame = _rows(settle, COARSE, "i")
    (cap,) = fixed_caps(frame, 0.1, 0.1).values()
    wanted = refinement_budgets(frame, 0.1, delta=0.1, points=3)
    below = max(k for k in COARSE if k < cap)
    assert wanted == {16: [below + 3, below + 6, below + 9]}


def test_refined_cap_reports_what_it_cost() -> None:
    settle = _settles(120, np.random.default_rng(0))
    frame = _rows(settle, COARSE, "i")
    added = refinement_budgets(frame, 0.1, delta=0.1)[16]
    result = refine_caps(frame, _rows(settle, added, "i"), 0.1, delta=0.1)
    (size,) = result.sizes
    assert (size.coarse_cap, size.below) == (36, 24)
    assert size.cap is not None
    assert size.cap <= 36
    assert size.added == tuple(added)
    assert size.requests == 120 * len(added)
    assert size.answer_tokens == 2 * size.requests
    assert size.prompt_tokens == 120 * sum(added)  # the thinking sent back, not the question
    assert result.caps == {16: size.cap}
    assert list(result.to_frame()["cap"]) == [size.cap]


def test_errors_name_the_field() -> None:
    frame = _rows(_settles(10, np.random.default_rng(1)), COARSE, "i")
    with pytest.raises(InputError, match="`points`"):
        refinement_budgets(frame, 0.1, points=0)
    with pytest.raises(InputError, match="`eps`"):
        refine_caps(frame, frame.iloc[:0], 1.5)
    with pytest.raises(InputError, match=r"`extra`.*same items"):
        refine_caps(frame, _rows(np.array([1.0]), [30], "other"), 0.1)


@pytest.mark.slow
def test_the_refined_cap_keeps_the_guarantee_by_simulation() -> None:
    eps, delta, runs, items = 0.1, 0.1, 300, 80
    rng = np.random.default_rng(2029)
    violations, tighter, ratios = 0, 0, []
    for _ in range(runs):
        settle = _settles(items, rng)
        frame = _rows(settle, COARSE, "i")
        added = refinement_budgets(frame, eps, delta=delta).get(16, [])
        result = refine_caps(frame, _rows(settle, added, "i"), eps, delta=delta)
        (size,) = result.sizes
        if size.cap is None:
            continue
        assert size.coarse_cap is not None
        assert size.cap <= size.coarse_cap
        violations += true_error(size.cap) > eps
        tighter += size.cap < size.coarse_cap
        ratios.append(size.cap / size.coarse_cap)
    limit = delta + 3 * math.sqrt(delta * (1 - delta) / runs)
    assert violations / runs <= limit, (violations, runs)
    # The refinement has to do something: most calibrations get a tighter cap.
    assert tighter / runs > 0.5
    assert float(np.mean(ratios)) < 0.95
