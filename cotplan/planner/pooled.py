"""One cap for every size: the certificate on the calibration's items pooled over its sizes.

Production traffic rarely says how large each item is. A plan then needs one cap that holds
over the mix of sizes the calibration drew: pool every calibrated size's items, and certify a
budget on the pool exactly as `cotplan.planner.certify` certifies one size (the one-sided
Clopper-Pearson bound at confidence 1 − δ, budgets tested from the largest down, stopping at
the first that fails: fixed-sequence testing). The guarantee is for an item drawn from that
mix; an item of a known size keeps its own size's cap.

Only budgets every size was run at are tested (a size's auto grid may differ from another's);
none in common, or nothing certified, and the plan holds no pooled cap (a call without a size
then gets the largest certified cap, `cotplan.production.calls.largest_cap`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cotplan.planner.certify import Certification, clopper_pearson_upper
from cotplan.planner.records import CertifiedBudget

__all__ = ["POOLED_N", "pooled_certificate", "pooled_record"]

#: The `n` of the pooled certificate: no size, all of them.
POOLED_N = 0


def pooled_certificate(certification: Certification, eps: float) -> CertifiedBudget | None:
    """The budget certified for `eps` on the items of every calibrated size pooled (see the
    module); None when the sizes share no budget or the pool certifies none."""
    table = certification.table
    sizes = sorted(int(n) for n in table["n"].unique())
    if len(sizes) < 2:
        return None  # one size: its own certificate is the pooled one
    shared = set.intersection(*(set(table.loc[table["n"] == n, "k"].astype(int)) for n in sizes))
    if not shared:
        return None
    rows = table[table["k"].isin(shared)]
    pool = rows.groupby("k", sort=True).agg(items=("items", "sum"), errors=("errors", "sum"))
    pool = pool.sort_index(ascending=False)
    bounds = clopper_pearson_upper(pool["errors"], pool["items"], certification.delta)
    pool["bound"] = bounds
    pool["certifies"] = np.maximum.accumulate(bounds)
    passing = pool[pool["certifies"] <= eps]
    if passing.empty:
        return None
    best_k = int(passing.index.min())
    row: dict[Any, Any] = pool.loc[best_k].to_dict()
    listed = ", ".join(str(n) for n in sizes)
    return CertifiedBudget(
        n=POOLED_N,
        eps=eps,
        delta=certification.delta,
        k=best_k,
        error_bound=float(row["bound"]),
        errors=int(row["errors"]),
        items=int(row["items"]),
        tested=len(passing) + int(len(passing) < len(pool)),
        note=f"pooled over n = {listed}: holds for items drawn as the calibration drew them",
    )


def pooled_record(record: object) -> CertifiedBudget | None:
    """A pooled certificate read back from a plan.json record (None: the plan has none)."""
    if record is None:
        return None
    assert isinstance(record, dict)  # checked by the plan file's checks
    values = {k: record[k] for k in CertifiedBudget.__dataclass_fields__ if k in record}
    bound = values.get("error_bound")
    values["error_bound"] = math.nan if bound is None else float(bound)
    return CertifiedBudget(**values)
