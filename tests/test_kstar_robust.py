"""k* read so that one budget's spike cannot set it, and the theorem's premise on B(k).

No torch: the readings and the premise test work on arrays (`kstar_reading`, `premise`), and
the law's tables are built from synthetic per-item losses (`logloss.logloss_curve_rows`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from cotplan.research.lab.reasoning.kstar_reading import (
    first_index,
    raw_first_budget,
    robust_first_budget,
    smoothed_gap,
)
from cotplan.research.lab.reasoning.premise import PREMISE_LEVEL, premise_test

# A monotone (non-increasing) gap curve on an evenly spaced grid of budgets.
monotone_gaps = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=3, max_size=40).map(
    lambda values: np.sort(np.array(values))[::-1]
)
targets = st.floats(0.01, 0.99, allow_nan=False)


def _index(ks: np.ndarray, k: float) -> int:
    """A budget's grid index (len(ks) for "never")."""
    return len(ks) if math.isinf(k) else int(np.flatnonzero(ks == k)[0])


@given(monotone_gaps, targets)
def test_on_a_curve_that_never_rises_both_readings_agree(gap: np.ndarray, eps: float) -> None:
    ks = np.arange(len(gap), dtype=float) * 4
    assert np.array_equal(smoothed_gap(gap), gap)
    assert robust_first_budget(ks, gap, eps) == raw_first_budget(ks, gap, eps)


@given(monotone_gaps, targets, st.data(), st.floats(0.0, 50.0, allow_nan=False))
def test_one_budgets_spike_moves_the_robust_k_star_by_one_step_at_most(
    gap: np.ndarray, eps: float, data: st.DataObject, value: float
) -> None:
    ks = np.arange(len(gap), dtype=float) * 4
    at = data.draw(st.integers(0, len(gap) - 1))
    spiked = gap.copy()
    spiked[at] = value  # any height, up or down, at any one budget
    before = _index(ks, robust_first_budget(ks, gap, eps))
    after = _index(ks, robust_first_budget(ks, spiked, eps))
    assert abs(after - before) <= 1
    # The raw reading jumps to just past a spike above ε, wherever it sits.
    if value > eps:
        assert _index(ks, raw_first_budget(ks, spiked, eps)) == max(
            at + 1, _index(ks, raw_first_budget(ks, gap, eps))
        )


def test_the_spike_at_n_64_moves_the_raw_k_star_not_the_robust_one() -> None:
    # The shape the long lamp showed: the gap crosses 0.5 at k = 144, one budget (k = 176)
    # jumps to 0.86, then the trace completes.
    ks = np.array([0, 120, 144, 168, 172, 176, 180, 184, 188, 194], dtype=float)
    gap = np.array([1.0, 0.59, 0.46, 0.40, 0.38, 0.86, 0.36, 0.30, 0.20, 0.0])
    assert raw_first_budget(ks, gap, 0.5) == 180
    assert robust_first_budget(ks, gap, 0.5) == 144
    # Two budgets in a row above ε are a rise, not a spike: the robust reading sees it.
    risen = gap.copy()
    risen[5:7] = 0.8
    assert robust_first_budget(ks, risen, 0.5) == 184
    assert first_index([0.9, 0.4, 0.3], 0.5) == 1
    assert first_index([0.9, 0.4, 0.6], 0.5) == 3  # never: the last value is above
    assert math.isinf(raw_first_budget(ks, np.full(len(ks), 0.9), 0.5))


def _decreasing_fit(values: np.ndarray) -> np.ndarray:
    """The least-squares non-increasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    return np.concatenate([np.full(int(c), t / c) for t, c in blocks])


def test_an_isotonic_fit_would_let_one_spike_move_k_star_far() -> None:
    # Why not isotonic regression (the module docstring): it pools a tall spike with the
    # budgets after it.
    ks = np.arange(12, dtype=float)
    gap = np.array([1.0, 0.8, 0.6, 0.45, 0.4, 0.35, 3.0, 0.3, 0.25, 0.2, 0.1, 0.0])
    fit = _decreasing_fit(gap)
    assert np.all(np.diff(fit) <= 1e-12)
    unspiked = np.delete(gap, 6)
    assert raw_first_budget(ks[:-1], _decreasing_fit(unspiked), 0.5) == 3
    # The spike, pooled with the five budgets before it, holds the fit at 0.93 to k = 6.
    assert raw_first_budget(ks, fit, 0.5) == 7
    assert robust_first_budget(ks, gap, 0.5) == 3


# ---------------------------------------------------------------- the premise on B(k)


def _items(
    curve: np.ndarray,
    count: int,
    rng: np.random.Generator,
    noise: float = 0.3,
    spikes: float = 0.0,
) -> np.ndarray:
    """Per-item losses whose mean curve is `curve` (up to a constant): a skewed item scale,
    cell noise, and with probability `spikes` per item one budget where it turns confidently
    wrong (+ Exponential(3) nats at a budget drawn uniformly: no shape in the mean)."""
    scale = rng.gamma(2.0, 0.5, size=(count, 1))
    out = curve[None, :] * scale + rng.normal(0.0, noise, size=(count, len(curve)))
    hit = np.flatnonzero(rng.random(count) < spikes)
    out[hit, rng.integers(0, len(curve), size=len(hit))] += rng.exponential(3.0, size=len(hit))
    return out


def _log_form(ks: np.ndarray, k0: float, alpha: float = 0.5) -> np.ndarray:
    """The theorem's B(k) = B(0) − α·log2(1 + k/k0), scaled to fall by α over `ks`."""
    curve: np.ndarray = 0.7 - alpha * np.log2(1 + ks / k0) / np.log2(1 + ks[-1] / k0)
    return curve


def test_the_log_form_holds_and_a_curve_that_falls_steepest_last_fails() -> None:
    ks = np.arange(0, 195, 4, dtype=float)
    rng = np.random.default_rng(1)
    # "holds" asks for every drop to be measurably smaller than the one before: a clearly
    # convex curve measured precisely.
    convex = premise_test(ks, _items(_log_form(ks, 20.0), 120, rng, noise=0.05))
    assert convex.verdict == "holds", convex
    assert convex.shares[0] > convex.shares[1] > convex.shares[2]
    assert sum(convex.shares) == pytest.approx(1.0)
    late = 0.7 - 0.6 * (ks / ks[-1]) ** 3  # slowest first, steepest last
    concave = premise_test(ks, _items(late, 120, rng))
    assert concave.verdict == "fails", concave
    assert concave.highs[-1] < 0
    assert "fails (shares of the drop by segment" in concave.text()
    assert "120 items" in concave.text()
    # An S-shape (flat, steep, flat) has equal halves; over thirds it fails.
    s_shape = 0.7 - 0.6 / (1 + np.exp(-(ks - 97) / 10))
    assert premise_test(ks, _items(s_shape, 120, rng)).verdict == "fails"


def test_no_drop_or_too_little_to_resample_is_not_testable() -> None:
    ks = np.arange(0, 40, 2, dtype=float)
    rng = np.random.default_rng(2)
    flat = premise_test(ks, _items(np.full(len(ks), 0.5), 60, rng))
    assert flat.verdict in {"not testable"}
    rising = premise_test(ks, np.tile(np.linspace(0.2, 0.6, len(ks)), (60, 1)))
    assert (rising.verdict, rising.reason) == (
        "not testable",
        "the trace buys no drop: B(0) ≤ B(full trace)",
    )
    few = premise_test(ks, _items(np.linspace(0.6, 0.2, len(ks)), 3, rng))
    assert (few.verdict, few.items) == ("not testable", 3)
    assert premise_test([0, 1], np.ones((50, 2))).verdict == "not testable"
    missing = _items(_log_form(ks, 10.0), 60, rng)
    missing[0, 3] = np.nan  # an item with a missing budget is left out
    assert premise_test(ks, missing).items == 59
    # A straight line is the premise's edge (k0 → ∞): not "holds", rarely "fails".
    line = premise_test(ks, _items(np.linspace(0.7, 0.1, len(ks)), 120, rng))
    assert line.verdict != "holds"
    row = line.as_row()
    assert {"premise", "items", "share_1", "c12", "c23_low", "drop_high"} <= set(row)


@pytest.mark.parametrize("k0", [5.0, 50.0, 1e6])  # clearly convex, mildly, a straight line
@pytest.mark.parametrize("count", [40, 120])
@pytest.mark.parametrize("spikes", [0.0, 0.3])
def test_the_premise_tests_false_failure_rate_is_at_most_its_level(
    k0: float, count: int, spikes: float
) -> None:
    # Curves that meet the premise (the theorem's own log form; k0 = 1e6 is a straight line,
    # the worst case), seeded items: the share read as "fails" must not exceed the level
    # beyond what chance allows (the 99th percentile of Binomial(runs, level)). Heavy-tailed
    # items too: a few items confidently wrong is what the lamp's log-loss looks like.
    ks = np.concatenate([np.arange(0, 97, 3), [97, 98]]).astype(float)
    truth = _log_form(ks, k0)
    rng = np.random.default_rng(int(k0) % 1000 + count + int(10 * spikes))
    runs = 400
    failures = sum(
        premise_test(ks, _items(truth, count, rng, spikes=spikes)).verdict == "fails"
        for _ in range(runs)
    )
    allowed = stats.binom.ppf(0.99, runs, PREMISE_LEVEL)
    assert failures <= allowed, (failures, runs, allowed)


# ---------------------------------------------------------------- the law's tables


def _law_frame(shape: str) -> pd.DataFrame:
    """Per-item losses at n = 16 and 64 whose mean B falls as `shape` over [0, 3n + 2]."""
    rng = np.random.default_rng(5)
    rows = []
    for n in (16, 64):
        ks = np.arange(0, 3 * n + 3, 2, dtype=float)
        x = ks / ks[-1]
        curve = 0.7 - 0.65 * (np.log1p(20 * x) / np.log1p(20) if shape == "convex" else x**3)
        losses = np.clip(_items(curve, 60, rng, noise=0.1), 0.001, None)
        for item, per_k in enumerate(losses):
            for k, loss in zip(ks, per_k, strict=True):
                rows.append({"family": "lab-lamp", "item": f"{n}-{item}", "n": n,
                             "k": int(k), "p_correct": math.exp(-loss), "loss": loss,
                             "wrong": float(loss > 0.69)})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_law_reads_both_k_stars_and_words_a_failed_premise() -> None:
    from cotplan.research.lab.reasoning.logloss import law_verdict, logloss_curve_rows

    vocab = 402
    tables = logloss_curve_rows(_law_frame("concave"), (0.5, 0.4, 0.1), 60, 0, vocab)
    budgets, exponents, premise = tables.budgets, tables.exponents, tables.premise
    assert {"k", "low", "high", "k_robust", "robust_low", "robust_high"} <= set(budgets)
    assert set(exponents["reading"]) == {"raw", "robust"}
    b = premise[premise["measure"] == "B"]
    assert list(b["n"]) == [16, 64]
    assert (b["premise"] == "fails").all()
    assert (b["items"] == 60).all()
    rows = exponents[exponents["measure"] == "B"]
    assert (rows["law"] == "outside the theorem's premise").all()
    words = law_verdict(0.4, 0.6, ["fails"])
    assert words == "outside the theorem's premise"
    # Where the premise holds, the words are the law's own, two-sided.
    assert law_verdict(0.4, 0.6, ["holds", "holds"]) == "reproduced"
    assert law_verdict(0.9, 1.1, ["holds"]) == "not reproduced"
    assert law_verdict(0.3, 1.2, ["holds"]) == "not testable"
    assert (
        law_verdict(0.4, 0.6, ["not testable"])
        == "reproduced; premise not testable at 1 of 1 sizes"
    )
    assert law_verdict(math.nan, math.nan, ["holds"]) == "not testable"
    # An interval without a point estimate (k* reached at fewer than two sizes, the interval
    # from the few resamples that reached it) decides nothing, however far from 1/2 it lies.
    assert law_verdict(0.0, 0.0, ["holds"]) == "not reproduced"
    assert law_verdict(0.0, 0.0, ["holds"], estimate=math.nan) == "not testable"
    assert law_verdict(0.0, 0.0, ["fails"], estimate=math.nan) == "outside the theorem's premise"
    convex = logloss_curve_rows(_law_frame("convex"), (0.5, 0.4, 0.1), 60, 0, vocab)
    assert (convex.premise[convex.premise["measure"] == "B"]["premise"] == "holds").all()
    assert "outside the theorem's premise" not in set(convex.exponents["law"])
