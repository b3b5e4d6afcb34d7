"""Measuring what permutation averaging buys: spread versus m by schedule, and answer quality.

The expensive part is scoring; everything else is arithmetic on a pool. `score_every_ordering`
scores one question under all n! orderings of its examples (the same scoring code
`permutation_average` uses). Every schedule's orderings are then looked up in that pool, so the
spread of the m-ordering average over many seeds (`schedule_spread`) costs no further calls
and is exact for that question, up to Monte Carlo error over the seeds.

What to expect: random orderings are independent draws, so the standard deviation of their
average is σ/√m for any model (slope -1/2 on log-log axes; the variance has slope -1), where σ
is the standard deviation over orderings. Balanced (Latin-square) cycles remove the part of σ
that comes from additive position effects, so at whole cycles they fall below that line by as
much as position effects dominate the model's order sensitivity.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cotplan.backends.base import Backend
from cotplan.errors import CapabilityError, InputError
from cotplan.permutation.fewshot import DEFAULT_TEMPLATE, Example, FewShotTemplate, check_choices
from cotplan.permutation.schedules import IntArray, Schedule, make_orderings
from cotplan.permutation.scoring import FloatArray, plan_candidates, score_prompt

__all__ = [
    "MAX_POOL_EXAMPLES",
    "OrderingPool",
    "SlopeFit",
    "brier_score",
    "expected_calibration_error",
    "loglog_slope",
    "matching_m",
    "schedule_spread",
    "score_every_ordering",
]

#: Most examples `score_every_ordering` accepts (7! = 5040 orderings).
MAX_POOL_EXAMPLES = 7


@dataclass(frozen=True)
class OrderingPool:
    """Candidate probabilities under every ordering: `probs[i]` belongs to `orderings[i]`."""

    orderings: IntArray
    probs: FloatArray
    choices: tuple[str, ...]
    calls: int

    def lookup(self, orderings: IntArray) -> FloatArray:
        """The pool's rows for the given orderings (each must be a permutation of 0..n-1)."""
        n = self.orderings.shape[1]
        # Mixed-radix code of a permutation row: unique, and cheap to compute for all rows.
        weights = n ** np.arange(n - 1, -1, -1)
        index = {int(code): i for i, code in enumerate(self.orderings @ weights)}
        rows = [index[int(code)] for code in np.asarray(orderings) @ weights]
        return self.probs[rows]


def score_every_ordering(
    backend: Backend,
    examples: Sequence[Example],
    query: str,
    choices: Sequence[str],
    *,
    template: FewShotTemplate | None = None,
    concurrency: int | None = None,
) -> OrderingPool:
    """Score `choices` under all n! orderings of `examples` (logprob methods only)."""
    n = len(examples)
    if not 2 <= n <= MAX_POOL_EXAMPLES:
        raise InputError(
            f"need 2..{MAX_POOL_EXAMPLES} examples to score every ordering, got {n}",
            field="examples",
        )
    choices_ = check_choices(choices)
    template = template or DEFAULT_TEMPLATE
    orderings = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    prompts = [template.prompt([examples[i] for i in row], query) for row in orderings]
    text_mode = backend.text_completions
    if not backend.supports_logprobs:
        raise CapabilityError(f"{backend.model} returns no logprobs")
    plan = plan_candidates(
        backend,
        prompts[0],
        choices_,
        answer_prefix=template.answer_prefix if text_mode else "",
        terminator=template.terminator,
    )
    if plan.method == "continuation" and not text_mode:
        raise CapabilityError(
            f"{backend.model}: a chat endpoint cannot score multi-token choices by continuation"
        )
    scores = backend.map(lambda p: score_prompt(backend, p, plan), prompts, concurrency=concurrency)
    return OrderingPool(
        orderings,
        np.array([s.probs for s in scores]),
        choices_,
        sum(len(s.completions) for s in scores),
    )


def schedule_spread(
    pool: OrderingPool,
    schedule: Schedule,
    m_values: Sequence[int],
    *,
    column: int = 0,
    replicates: int = 1000,
    seed: int = 0,
) -> FloatArray:
    """Standard deviation over `replicates` seeds of the m-ordering average, for each m.

    The average is of candidate `column`'s probability; replicate r uses seed `seed + r`, so
    each replicate is what `permutation_average(..., schedule, seed=seed + r)` would average.
    """
    if replicates < 2:
        raise InputError(f"must be at least 2, got {replicates!r}", field="replicates")
    m_values = [int(m) for m in m_values]
    if not m_values or min(m_values) < 1:
        raise InputError("must be positive orderings counts", field="m_values")
    n = pool.orderings.shape[1]
    top = max(m_values)
    averages = np.empty((replicates, len(m_values)))
    for r in range(replicates):
        rows = make_orderings(n, top, schedule, seed=seed + r)
        running = np.cumsum(pool.lookup(rows)[:, column]) / np.arange(1, top + 1)
        averages[r] = running[np.array(m_values) - 1]
    spread: FloatArray = averages.std(axis=0, ddof=1)
    return spread


@dataclass(frozen=True)
class SlopeFit:
    """log(y) = intercept + slope·log(m), by least squares, with a t interval on the slope."""

    slope: float
    low: float
    high: float
    intercept: float
    points: int


def loglog_slope(
    m_values: npt.ArrayLike, values: npt.ArrayLike, confidence: float = 0.95
) -> SlopeFit:
    """Fit a power law y ∝ m^slope on log-log axes (points with y <= 0 are left out)."""
    from scipy import stats

    x = np.log(np.asarray(m_values, dtype=float))
    y_raw = np.asarray(values, dtype=float)
    keep = np.isfinite(y_raw) & (y_raw > 0)
    x, y = x[keep], np.log(y_raw[keep])
    if len(x) < 3:
        raise InputError(f"need at least 3 positive points, got {len(x)}", field="values")
    fit = stats.linregress(x, y)
    half = float(stats.t.ppf(0.5 + confidence / 2, len(x) - 2)) * float(fit.stderr)
    return SlopeFit(
        float(fit.slope),
        float(fit.slope) - half,
        float(fit.slope) + half,
        float(fit.intercept),
        len(x),
    )


def brier_score(probs: FloatArray, truth: npt.ArrayLike) -> float:
    """Multi-class Brier score: mean over items of Σ_c (p_c - 1[c = truth])² (0 best, 2 worst)."""
    p = np.asarray(probs, dtype=float)
    onehot = np.zeros_like(p)
    onehot[np.arange(len(p)), np.asarray(truth)] = 1.0
    return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))


def expected_calibration_error(probs: FloatArray, truth: npt.ArrayLike, bins: int = 10) -> float:
    """Top-label ECE: Σ_b (n_b/N)·|accuracy_b - confidence_b| over equal-width confidence bins."""
    p = np.asarray(probs, dtype=float)
    confidence = p.max(axis=1)
    correct = (p.argmax(axis=1) == np.asarray(truth)).astype(float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, bins - 1)
    total = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            total += inside.mean() * abs(correct[inside].mean() - confidence[inside].mean())
    return float(total)


def matching_m(target: float, m_values: npt.ArrayLike, spread: npt.ArrayLike) -> int | None:
    """The smallest m whose spread is at or below `target` (None when none is)."""
    for m, value in zip(np.asarray(m_values), np.asarray(spread, dtype=float), strict=True):
        if math.isfinite(value) and value <= target:
            return int(m)
    return None
