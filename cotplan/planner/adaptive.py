"""An adaptive calibration grid for backends whose reasoning is hidden.

When the reasoning is hidden (a provider's thinking budget), nothing can be cut from one long
run: every budget of every item is its own request, and a full grid of 41 budgets costs 41
requests an item. Only the budgets near where the error crosses ε matter for the certified
cap. `adaptive_certify` spends requests there, in two stages that keep the guarantee exact:

1. **locate** (pilot items): bisect the grid for the first budget whose pilot error is at
   most ε (the pilot answers of one item are kept across budgets, so its error can only be
   bisected where the curve falls);
2. **confirm** (fresh items): test, from the largest down, grid budgets from `reach` times
   the located one down to the budget below it, about 10% apart (a certificate needs an error
   well under ε, which lies above the crossing: 1.3 to 1.6 times it on smooth curves at 80
   items), with the same fixed-sequence exact binomial tests as `Certification`. The order
   was fixed by the pilot, which the confirmation items never saw, so the chance of
   certifying a budget whose error exceeds ε stays at most δ.

`answer(k, items)` answers the given item indices at budget k and returns one bool per item
(True: wrong). Pilot items are indices 0..pilot-1, confirmation items pilot..pilot+items-1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from cotplan.errors import InputError
from cotplan.planner.certify import clopper_pearson_upper
from cotplan.validation import COUNT, REACH, SHARE, validate_params

__all__ = ["AdaptiveCertificate", "adaptive_certify"]

Answer = Callable[[int, range], NDArray[np.bool_]]


@dataclass(frozen=True)
class AdaptiveCertificate:
    """What the adaptive grid certified and what it cost.

    `k` is the certified budget (None when the first confirmation test failed); `requests` the
    answers it took (pilot and confirmation); `tested` one row per budget answered: stage,
    k, items, errors, bound (confirmation only)."""

    k: int | None
    eps: float
    delta: float
    requests: int
    tested: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        return self.tested.copy()


@validate_params(eps=SHARE, delta=SHARE, items=COUNT, pilot=COUNT, reach=REACH)
def adaptive_certify(
    answer: Answer,
    grid: Sequence[int],
    eps: float,
    *,
    delta: float = 0.05,
    items: int = 80,
    pilot: int = 20,
    reach: float = 2.0,
) -> AdaptiveCertificate:
    """Certify a cap at one size by bisection on `pilot` items, then fixed-sequence tests on
    `items` fresh items from `reach` × the located budget down."""
    budgets = sorted({int(k) for k in grid})
    if len(budgets) < 2:
        raise InputError("needs at least two budgets", field="grid")
    rows: list[dict[str, object]] = []
    requests = 0
    pilot_items = range(pilot)

    def pilot_ok(i: int) -> bool:
        nonlocal requests
        wrong = np.asarray(answer(budgets[i], pilot_items), dtype=bool)
        requests += len(wrong)
        rows.append(
            {"stage": "locate", "k": budgets[i], "items": len(wrong), "errors": int(wrong.sum())}
        )
        return float(wrong.mean()) <= eps

    lo, hi = 0, len(budgets) - 1
    if pilot_ok(hi):
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if pilot_ok(mid) else (mid, hi)
    located = hi
    # Budgets about 10% apart from reach × the located one down (each grid budget at most once).
    wanted = budgets[located] * reach / 1.1 ** np.arange(0, math.log(reach) / math.log(1.1) + 1)
    chosen = {located, max(0, located - 1)}
    for k in wanted:
        above = [i for i, b in enumerate(budgets) if b >= k]
        chosen.add(above[0] if above else len(budgets) - 1)
    fresh = range(pilot, pilot + items)
    certified: int | None = None
    for i in sorted(chosen, reverse=True):
        wrong = np.asarray(answer(budgets[i], fresh), dtype=bool)
        requests += len(wrong)
        bound = float(clopper_pearson_upper(int(wrong.sum()), len(wrong), delta))
        rows.append(
            {
                "stage": "confirm",
                "k": budgets[i],
                "items": len(wrong),
                "errors": int(wrong.sum()),
                "bound": bound,
            }
        )
        if bound > eps:
            break
        certified = budgets[i]
    tested = pd.DataFrame(rows, columns=["stage", "k", "items", "errors", "bound"])
    tested["bound"] = tested["bound"].astype(float).fillna(math.nan)
    return AdaptiveCertificate(certified, eps, delta, requests, tested)
