"""Budgets with a guarantee: exact binomial bounds and fixed-sequence testing ("Learn then Test").

At one calibrated size, let b_1 < ... < b_m be the budgets (those up to the peak when longer
reasoning hurts). For a target ε, test H_j: "the error at b_j exceeds ε" from the largest budget
down; H_j is rejected when the one-sided Clopper-Pearson upper bound on the error at b_j, at
confidence 1 − δ, is at most ε. Stop at the first budget that is not rejected; the certified
budget is the last one rejected. Testing in a fixed order, each at level δ, controls the chance
of certifying any budget whose error exceeds ε at δ (the family-wise error of a fixed-sequence
procedure), whatever the shape of the curve and however the answers of one item at different
budgets are related. The guarantee is per size.

Several answers of one item at one budget (repeated samples) are not independent: each item
counts once, with its mean error, and the errors are rounded up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from cotplan.intervals import Interval
from cotplan.planner.data import Data
from cotplan.planner.records import CertifiedBudget

__all__ = [
    "Certification",
    "clopper_pearson_interval",
    "clopper_pearson_upper",
    "items_needed",
]


def clopper_pearson_upper(errors: ArrayLike, items: ArrayLike, delta: float) -> NDArray[np.float64]:
    """One-sided exact upper bound on an error rate, at confidence 1 − delta."""
    x = np.asarray(errors, dtype=float)
    m = np.asarray(items, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = stats.beta.ppf(1.0 - delta, x + 1.0, np.maximum(m - x, 1e-12))
    out: NDArray[np.float64] = np.where((x >= m) | (m <= 0), 1.0, upper).astype(float)
    return out


def clopper_pearson_interval(errors: int, items: int, confidence: float = 0.95) -> Interval:
    """Exact two-sided interval of an error rate (Clopper-Pearson), NaN ends without items.

    Exact rather than Wilson because held-out sets per size are small (8 items is common) and
    the certificate this is read against uses exact bounds too."""
    if items <= 0:
        return Interval(math.nan, math.nan, confidence)
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if errors <= 0 else float(stats.beta.ppf(tail, errors, items - errors + 1))
    high = 1.0 if errors >= items else float(stats.beta.ppf(1 - tail, errors + 1, items - errors))
    return Interval(low, high, confidence)


def items_needed(rate: float, eps: float, delta: float, limit: int = 1_000_000) -> int | None:
    """Items at one budget needed for its bound to reach `eps` if the error rate stays `rate`.

    None when `rate` ≥ `eps` (no number of items certifies an error above the target). With
    no error at all it is the smallest m with 1 − δ^(1/m) ≤ ε, i.e. ln δ / ln(1 − ε)."""
    if rate >= eps:
        return None

    def passes(m: int) -> bool:
        return bool(clopper_pearson_upper(math.ceil(rate * m - 1e-9), m, delta) <= eps)

    high = 1
    while not passes(high):
        high *= 2
        if high > limit:
            return None
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if passes(mid) else (mid, high)
    return high


def _cell_table(data: Data, peaks: Mapping[int, int]) -> pd.DataFrame:
    frame = pd.DataFrame({"n": data.n, "k": data.k, "item": data.item, "wrong": 1.0 - data.y})
    per_item = frame.groupby(["n", "k", "item"], sort=True)["wrong"].mean().reset_index()
    cells = (
        per_item.groupby(["n", "k"], sort=True)
        .agg(items=("item", "size"), error_sum=("wrong", "sum"))
        .reset_index()
    )
    cells["errors"] = np.ceil(cells["error_sum"] - 1e-9).astype(int)
    cells["n"] = cells["n"].astype(int)
    cells["k"] = cells["k"].astype(int)
    peak_of = cells["n"].map(lambda n: peaks.get(int(n), math.inf))
    return cells.loc[cells["k"] <= peak_of, ["n", "k", "items", "errors"]].reset_index(drop=True)


@dataclass(frozen=True)
class Certification:
    """The calibration's evidence per (n, k), independent of the target ε.

    `table` has one row per calibrated size and budget (at most the size's peak): items,
    errors, the observed error, `bound` (the 1 − delta upper bound on the error) and
    `certifies`, the smallest ε for which testing from the largest budget down reaches this
    budget (the running maximum of the bounds from the top). `at(n, eps)` reads a certified
    budget off it.
    """

    delta: float
    table: pd.DataFrame

    @classmethod
    def from_data(cls, data: Data, delta: float, peaks: Mapping[int, int]) -> Certification:
        table = _cell_table(data, peaks)
        table["error"] = table["errors"] / table["items"]
        table["bound"] = clopper_pearson_upper(table["errors"], table["items"], delta)
        table = table.sort_values(["n", "k"], ascending=[True, False])
        table["certifies"] = table.groupby("n")["bound"].cummax()
        return cls(delta, table.sort_values(["n", "k"]).reset_index(drop=True))

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.table["n"].unique())

    def at(self, n: int, eps: float) -> CertifiedBudget:
        """The certified budget at calibrated size `n` for target `eps`."""
        rows = self.table[self.table["n"] == n]
        if rows.empty:
            raise KeyError(n)
        passing = rows[rows["certifies"] <= eps]
        top = rows.iloc[-1]
        if len(passing):
            best = passing.iloc[0]
            tested = int((rows["k"] >= best["k"]).sum()) + int(len(passing) < len(rows))
            return CertifiedBudget(
                n=int(n),
                eps=eps,
                delta=self.delta,
                k=int(best["k"]),
                error_bound=float(best["bound"]),
                errors=int(best["errors"]),
                items=int(best["items"]),
                tested=tested,
            )
        rate = float(top["error"])
        needed = items_needed(rate, eps, self.delta)
        if needed is None:
            note = (
                f"not certified: the error at the largest budget tested (k = {int(top['k'])}) "
                f"is {rate:.3f} ≥ ε = {eps:g}; no number of items certifies ε there"
            )
        else:
            note = (
                f"not certified: {int(top['errors'])} errors in {int(top['items'])} items at "
                f"k = {int(top['k'])} bound the error only by {float(top['bound']):.3f} "
                f"({1 - self.delta:.0%}); about {needed} items a size would certify ε = "
                f"{eps:g} if the error stays {rate:.3f}"
            )
        return CertifiedBudget(
            n=int(n),
            eps=eps,
            delta=self.delta,
            k=None,
            error_bound=float(top["bound"]),
            errors=int(top["errors"]),
            items=int(top["items"]),
            tested=1,
            items_needed=needed,
            note=note,
        )

    def frame_at(self, eps: float) -> pd.DataFrame:
        """`at(n, eps)` for every calibrated size, one row each."""
        return pd.concat([self.at(n, eps).to_frame() for n in self.sizes], ignore_index=True)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()
