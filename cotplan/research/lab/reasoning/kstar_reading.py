"""Two readings of k*(ε) off a measured gap curve: the raw one and one a single budget cannot set.

Both read a gap g(k) measured at increasing budgets k_0 < k_1 < … < k_L (for the law on the
paper's terms, the relative gap ε(k) = (B(k) − B_opt) / (B(0) − B_opt)) and return the
smallest budget from which the reading stays ≤ ε at every larger measured budget (inf when it
never does):

- `raw_first_budget` reads g itself: one budget whose gap jumps above ε (a few items turning
  confidently wrong for one step) pushes k* past it, however low the gap is on both sides;
- `robust_first_budget` reads `smoothed_gap`, a running median of three consecutive budgets,
  so it takes two adjacent budgets above ε to hold k* back.

Why a running median of three, and not an isotonic fit or a wider quantile:

- it discards exactly one value per window: a spike at one budget, of any height, never sets
  the reading, while a rise that lasts two measured budgets or more does (a late rise that
  is real is still seen). On a curve that falls monotonically, changing the gap at any single
  budget moves the robust k* by at most one grid step, in either direction (the spike moves
  the smoothed curve by one index at two budgets, and nowhere else), while the raw k* jumps
  to just past a spike above ε wherever it sits (`tests/test_kstar_robust.py` checks both
  with hypothesis);
- on a curve that never rises (non-increasing) the smoothed curve is the curve itself, so
  both readings agree exactly where there is nothing to smooth;
- an isotonic (monotone non-increasing) fit pools a spike with the budgets before it: a
  high enough spike lifts the pooled level above ε over all of them, so one budget still
  moves k* to just past itself, as on the raw gap;
- a wider window (an upper quantile of five budgets, say) would also ignore two-budget
  rises, which at small n, where the grid has a budget per token, are two tokens of a
  trace the model really did write.

The ends: before the first budget the window is padded with +inf (the first budget's reading
is the larger of its own gap and the next one's; the first budget is k = 0, where the relative
gap is 1 by definition), after the last with −inf (the last reading is the smaller of the last
two gaps: past the full trace the relative gap is 0 by definition, and one high last value is a
spike like any other).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["first_index", "raw_first_budget", "robust_first_budget", "smoothed_gap"]

_TOL = 1e-12


def smoothed_gap(gap: Sequence[float] | np.ndarray) -> np.ndarray:
    """The running median of three consecutive budgets (ends padded with +inf before the first
    and −inf after the last; see the module docstring). NaN gaps stay NaN."""
    values = np.asarray(gap, dtype=float)
    if values.size < 2:
        return values.copy()
    padded = np.concatenate([[math.inf], values, [-math.inf]])
    windows = np.stack([padded[:-2], padded[1:-1], padded[2:]])
    with np.errstate(invalid="ignore"):
        out: np.ndarray = np.median(windows, axis=0)
    out[np.isnan(values)] = math.nan
    return out


def first_index(reading: Sequence[float] | np.ndarray, eps: float) -> int:
    """The smallest index from which `reading` stays ≤ ε to the end (len(reading) when the
    last value is above ε; NaN counts as above)."""
    values = np.asarray(reading, dtype=float)
    above = ~(values <= eps + _TOL)
    bad = np.flatnonzero(above)
    return int(bad[-1]) + 1 if len(bad) else 0


def _budget(ks: Sequence[float] | np.ndarray, index: int) -> float:
    budgets = np.asarray(ks, dtype=float)
    return float(budgets[index]) if index < len(budgets) else math.inf


def raw_first_budget(ks: Sequence[float] | np.ndarray, gap: np.ndarray, eps: float) -> float:
    """k* on the raw gap: the smallest budget from which the measured gap stays ≤ ε."""
    return _budget(ks, first_index(gap, eps))


def robust_first_budget(ks: Sequence[float] | np.ndarray, gap: np.ndarray, eps: float) -> float:
    """k* on the smoothed gap (`smoothed_gap`): the smallest budget from which the running
    median of three stays ≤ ε; a spike at one budget cannot set it."""
    return _budget(ks, first_index(smoothed_gap(gap), eps))
