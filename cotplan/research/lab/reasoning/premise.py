"""The theorem's premise on the shape of B(k), tested on a measured curve.

**What the theorem assumes.** Theorem 4.5 (v1 §4; ../shared/paper-notes.md §5) derives
k* = Θ(√n · log(1/ε)) from the cost F(k) = k·H_CoT + B(0) − α·log2(1 + k/k0) + β·k·log2(n+k)/(n+k),
whose information term is the model B(k) = B(0) − α·log2(1 + k/k0) with α, k0 > 0; Algorithm 1
fits exactly that form to the measured B(k). That B is decreasing and convex: its drop per
token, α / ((k0 + k)·ln 2), is largest at k = 0 and shrinks with every token. **It falls
fastest first.** A curve that falls slowest first and steepest last (the log-loss of a model
that stays unsure until most of its trace is written) is not of that form for any α, k0 > 0,
and the theorem says nothing about it.

**The test.** Split [0, K] (K the largest measured budget, where B_opt is read) into
`SEGMENTS` equal parts and read each item's curve at their ends (linear interpolation between
measured budgets). A convex decreasing B has drops d_1 ≥ d_2 ≥ … ≥ d_S over them, so every
contrast c_ij = d_i − d_j of an earlier segment i with a later one j (nats) is ≥ 0, exactly 0
where B is a straight line (the log form's limit k0 → ∞). Over thirds: c12, c23 (neighbours:
an S-shape, flat-steep-flat, fails one of them) and c13 (first against last: what a curve
that falls slowest first and steepest last fails most clearly). Each c_ij is a mean over
items of that item's own contrast, so it gets a Student-t interval over the items
(df = items − 1) with α/m in each tail (m = S(S − 1)/2 contrasts, α = `PREMISE_LEVEL`):

- **fails** when some contrast's interval lies wholly below 0 (that later part of the curve
  falls measurably faster than the earlier one);
- **holds** when every contrast's interval lies wholly above 0 and so does the whole drop's,
  D = B(0) − B(K);
- **not testable** otherwise (an interval holds 0, the trace buys no measurable drop, too few
  items or budgets).

The shares d_j / D are printed beside it (they sum to 1; the premise makes them decrease).
Its false-failure rate: on a curve that meets the premise each contrast's true value is ≥ 0,
so each reads "below 0" with probability at most α/m (one tail), and some contrast does with
probability at most α (Bonferroni): at most 5% with the defaults, worst on a straight line.
`tests/test_kstar_robust.py` checks it on seeded simulated items. A t interval, not the item
bootstrap's percentiles: the contrast is a plain mean over items, and a first version that
took percentile intervals of the shares' contrasts left about 4% in a 2.5% tail at 40 items
in that simulation. Thirds, not halves: a curve that is flat, steep, flat (an S-shape) has
equal halves but fails over thirds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from cotplan.intervals import Interval
from cotplan.research.experiments.verdicts import OUTSIDE_PREMISE as OUTSIDE_PREMISE_VERDICT
from cotplan.research.lab.reasoning.exponent import exponent_verdict

__all__ = [
    "OUTSIDE_PREMISE",
    "PREMISE_LEVEL",
    "PREMISE_TEXT",
    "SEGMENTS",
    "PremiseResult",
    "law_verdict",
    "premise_summary",
    "premise_test",
]

#: The chance that a curve meeting the premise is read as failing it (Bonferroni over the
#: contrasts; one tail each).
PREMISE_LEVEL = 0.05
#: Equal parts of [0, K] whose drops are compared.
SEGMENTS = 3
#: The premise in words, as reports print it.
PREMISE_TEXT = (
    "B(k) = B(0) − α·log2(1 + k/k0) (Theorem 4.5, Algorithm 1): B falls fastest first, "
    "its drop over each third of [0, full trace] no larger than over the third before"
)
_MIN_ITEMS = 5


@dataclass(frozen=True)
class PremiseResult:
    """The premise test on one curve: `verdict` is "holds", "fails" or "not testable"."""

    verdict: str
    reason: str
    items: int
    #: Share of the whole drop D = B(0) − B(K) in each segment (sums to 1).
    shares: tuple[float, ...]
    #: The pairs (i, j), earlier segment first, in the order of `contrasts`.
    pairs: tuple[tuple[int, int], ...]
    #: c_ij = d_i − d_j (the curve's units) with its t interval (α/m per tail).
    contrasts: tuple[float, ...]
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    drop: float
    drop_low: float
    drop_high: float

    def as_row(self) -> dict[str, object]:
        """One flat row: verdict, items, shares, contrasts with intervals, the drop."""
        row: dict[str, object] = {"premise": self.verdict, "items": self.items}
        for j in range(SEGMENTS):
            row[f"share_{j + 1}"] = self.shares[j] if j < len(self.shares) else math.nan
        for (i, j), c, low, high in zip(
            self.pairs, self.contrasts, self.lows, self.highs, strict=True
        ):
            row.update({f"c{i}{j}": c, f"c{i}{j}_low": low, f"c{i}{j}_high": high})
        row.update(drop=self.drop, drop_low=self.drop_low, drop_high=self.drop_high)
        row["reason"] = self.reason
        return row

    def text(self) -> str:
        """E.g. ``fails (shares of the drop by segment 0.15, 0.25, 0.60; c12 = −0.07 [−0.16,
        0.02]; c23 = −0.24 [−0.35, −0.13]; c13 = −0.31 […]; 120 items)``."""
        parts = []
        if self.shares:
            parts.append(
                "shares of the drop by segment " + ", ".join(f"{s:.2f}" for s in self.shares)
            )
        parts += [
            f"c{i}{j} = {c:.2f} [{low:.2f}, {high:.2f}]"
            for (i, j), c, low, high in zip(
                self.pairs, self.contrasts, self.lows, self.highs, strict=True
            )
            if math.isfinite(c)
        ]
        parts.append(f"{self.items} items")
        return f"{self.verdict} ({'; '.join(parts)})"


def _segment_values(ks: np.ndarray, curves: np.ndarray, segments: int) -> np.ndarray:
    """Each row of `curves` read at the segment ends 0, K/S, …, K (linear interpolation
    between measured budgets): rows × (S + 1)."""
    ends = np.linspace(ks[0], ks[-1], segments + 1)
    right = np.clip(np.searchsorted(ks, ends, side="right"), 1, len(ks) - 1)
    left = right - 1
    width = ks[right] - ks[left]
    weight = np.clip((ends - ks[left]) / np.where(width > 0, width, 1.0), 0.0, 1.0)
    values: np.ndarray = (1 - weight) * curves[:, left] + weight * curves[:, right]
    return values


def _t_interval(values: np.ndarray, tail: float) -> tuple[float, float]:
    """Mean ± t(1 − tail, df = n − 1) · sd / √n."""
    count = len(values)
    half = stats.t.ppf(1 - tail, count - 1) * values.std(ddof=1) / math.sqrt(count)
    mean = float(values.mean())
    return mean - float(half), mean + float(half)


def premise_test(
    ks: Sequence[float] | np.ndarray,
    losses: np.ndarray,
    *,
    segments: int = SEGMENTS,
    level: float = PREMISE_LEVEL,
) -> PremiseResult:
    """Test "B falls fastest first" on the per-item values `losses` (items × budgets, the
    budgets `ks` increasing from 0; items with a missing value are left out); see the module
    docstring."""
    budgets = np.asarray(ks, dtype=float)
    matrix = np.asarray(losses, dtype=float).reshape(-1, len(budgets))
    matrix = matrix[np.isfinite(matrix).all(axis=1)]
    items = len(matrix)
    pairs = tuple(
        sorted(
            ((i, j) for i in range(1, segments + 1) for j in range(i + 1, segments + 1)),
            key=lambda p: (p[1] - p[0], p[0]),
        )
    )
    m = max(len(pairs), 1)
    empty = (math.nan,) * len(pairs)
    untested = PremiseResult(
        "not testable", "", items, (), pairs, empty, empty, empty, math.nan, math.nan, math.nan
    )
    if segments < 2 or len(budgets) < 3 or not budgets[-1] > budgets[0]:
        return replace(untested, reason="too few budgets to compare parts of the curve")
    if items < _MIN_ITEMS:
        return replace(untested, reason=f"fewer than {_MIN_ITEMS} items")
    values = _segment_values(budgets, matrix, segments)  # items × (S + 1)
    drops = values[:, :-1] - values[:, 1:]  # items × S
    contrasts = np.stack([drops[:, i - 1] - drops[:, j - 1] for i, j in pairs], axis=1)
    total = values[:, 0] - values[:, -1]
    drop = float(total.mean())
    if not drop > 0:
        return replace(untested, reason="the trace buys no drop: B(0) ≤ B(full trace)")
    tail = level / m
    bounds = [_t_interval(contrasts[:, j], tail) for j in range(m)]
    drop_low, drop_high = _t_interval(total, tail)
    measured = replace(
        untested,
        shares=tuple(float(d) / drop for d in drops.mean(axis=0)),
        contrasts=tuple(float(c) for c in contrasts.mean(axis=0)),
        lows=tuple(low for low, _ in bounds),
        highs=tuple(high for _, high in bounds),
        drop=drop,
        drop_low=drop_low,
        drop_high=drop_high,
    )
    failing = [pair for pair, high in zip(pairs, measured.highs, strict=True) if high < 0]
    if failing:
        reason = "falls measurably faster over a later part than an earlier one: " + ", ".join(
            f"segment {j} than {i}" for i, j in failing
        )
        reason += f" (of {segments})"
        return replace(measured, verdict="fails", reason=reason)
    if not drop_low > 0:
        return replace(measured, reason="the drop B(0) − B(full trace) is not clear of 0")
    if any(not low > 0 for low in measured.lows):
        return replace(measured, reason="an interval holds 0: cannot tell the order of the drops")
    reason = "each segment's drop is measurably smaller than the one before"
    return replace(measured, verdict="holds", reason=reason)


#: The law's verdict where the premise on B(k) fails at a size it is read over.
OUTSIDE_PREMISE: str = OUTSIDE_PREMISE_VERDICT


def law_verdict(low: float, high: float, premises: Sequence[str], *, estimate: float = 0.0) -> str:
    """The verdict on "the n-exponent of k* is 1/2" from its interval and the premise test's
    verdicts at the sizes it was read over: `OUTSIDE_PREMISE` where the premise fails at any
    of them, else `exponent_verdict`'s two-sided rule (reproduced / not reproduced / not
    testable), noting sizes where the premise could not be tested. A NaN `estimate` (the point
    exponent: k* not reached at two sizes) reads "not testable" whatever the interval, which
    then comes from the few resamples that reached k* and speaks for none of the data."""
    if "fails" in premises:
        return OUTSIDE_PREMISE
    finite = math.isfinite(low) and math.isfinite(high) and math.isfinite(estimate)
    verdict, _ = exponent_verdict(Interval(low, high) if finite else None)
    untested = sum(p != "holds" for p in premises)
    if verdict != "not testable" and untested:
        return f"{verdict}; premise not testable at {untested} of {len(premises)} sizes"
    return str(verdict)


def premise_summary(premise: pd.DataFrame) -> str:
    """The premise test's verdicts in words, per measure, sizes grouped by verdict: "the
    theorem's premise (…): on B: fails at n = 16, 24; holds at n = 64; on the 0/1 error …"."""
    if premise.empty:
        return "the theorem's premise on B(k): not tested"
    parts = []
    for measure in ("B", "error"):
        mine = premise[premise["measure"] == measure]
        groups = []
        for word in ("fails", "holds", "not testable"):
            sizes = [str(int(n)) for n in mine[mine["premise"] == word]["n"]]
            if sizes:
                groups.append(f"{word} at n = {', '.join(sizes)}")
        name = "B" if measure == "B" else "the 0/1 error (the same shape test)"
        parts.append(f"on {name}: {'; '.join(groups)}")
    return f"the theorem's premise ({PREMISE_TEXT}): " + "; ".join(parts)
