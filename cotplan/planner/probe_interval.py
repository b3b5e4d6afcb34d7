"""The probe interval of the certified early exit, chosen from what a calibration measured.

Probing every m thinking tokens costs two ways: an item whose answer settles after S tokens
thinks on to the next probe (about m / 2 tokens too many), and each probe before that pays its
answer (c tokens, about S / m of them). The expected total S + m / 2 + cS / m is least at
m = √(2cS), where probing costs about 1 + √(2c/S) times the stable oracle's S: the analysis
behind the benchmark's bound (benchmarks/early_exit.py). A rule that must see r probes agree
stops r − 1 probes after the settle point, which adds (r − 1)(m + c) and moves the optimum to
m = √(cS / (r − 1/2)).

`choose_interval` does that arithmetic exactly on a calibration's own items, not on a mean:
per item, the settle point is the smallest calibrated budget from which its forced answer no
longer changes up to the ceiling (its stability: correctness is not read), and where the
model ended its thinking on its own, that end; c is the mean tokens of a forced answer (with
its prompt where `bill_prompt`). Every interval m whose multiples below the ceiling are all
calibrated budgets (a probe needs its answer recorded) is costed as `apply_rule` charges it,
the thinking to the stop, the answers of the probes before it, the answer, and the cheapest
is kept; `analytic_interval` is the closed form beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from cotplan.errors import InputError
from cotplan.planner.exit_probes import check_frame, probe_prompt
from cotplan.validation import require_int

__all__ = ["ProbeInterval", "analytic_interval", "choose_interval", "settle_points"]


@dataclass(frozen=True)
class ProbeInterval:
    """The interval chosen (`every`; None: no interval is calibrated at every multiple, so the
    probes are every calibrated budget), the expected mean tokens an item at it and at each
    interval costed (`table`: every, tokens), the settle points and answer tokens it read, and
    `analytic` (the closed form at the mean settle point)."""

    every: int | None
    tokens: float
    answer_tokens: float
    confirm: int
    settle_mean: float
    analytic: float
    table: pd.DataFrame = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        return self.table.assign(chosen=[every == self.every for every in self.table["every"]])

    @property
    def note(self) -> str:
        if self.every is None:
            return "probes at every calibrated budget (no interval calibrated at every multiple)"
        return (
            f"probes every {self.every} tokens (chosen: least expected tokens, {self.tokens:.1f} "
            f"an item, for answers settling after {self.settle_mean:.0f} tokens on average and "
            f"{self.answer_tokens:.1f}-token probe answers; √(cS / (r − 1/2)) says "
            f"{self.analytic:.0f})"
        )


def analytic_interval(settle: float, answer_tokens: float, confirm: int = 0) -> float:
    """m = √(c·S / (r − 1/2)) with r = `confirm` + 1 probes to stop (module docstring)."""
    if not settle > 0 or not answer_tokens >= 0:
        raise InputError("must be positive", field="settle")
    confirm = require_int(confirm, "confirm", low=0)
    return math.sqrt(answer_tokens * settle / (confirm + 0.5))


def settle_points(frame: pd.DataFrame, ceilings: Mapping[int, int]) -> pd.DataFrame:
    """Per item at the sizes with a ceiling: `settle`, the smallest calibrated budget (> 0) from
    which its answer stays the same up to the ceiling (the ceiling where it never does), and
    `end`, the thinking where the model ended it on its own (inf where it did not)."""
    frame = check_frame(frame)
    frame = frame[frame["n"].isin(list(ceilings)) & (frame["k"] > 0)]
    frame = frame[frame["k"] <= frame["n"].map(dict(ceilings))]
    frame = frame.sort_values(["n", "item", "k"], kind="stable")
    if frame.empty:
        return pd.DataFrame(columns=["item", "n", "settle", "end"])
    # Whole columns to numpy once, then slices per item (the simulations that check the
    # guarantee choose an interval for thousands of calibrations).
    n_all = frame["n"].to_numpy(dtype=int)
    items = frame["item"].astype(str).to_numpy()
    ks = frame["k"].to_numpy(dtype=int)
    reasoning = frame["reasoning_tokens"].to_numpy(dtype=float)
    answers = [None if _blank(a) else str(a) for a in frame["extracted"]]
    starts = np.flatnonzero(np.r_[True, (items[1:] != items[:-1]) | (n_all[1:] != n_all[:-1])])
    rows = []
    for start, stop in zip(starts, np.r_[starts[1:], len(frame)], strict=True):
        ended = np.flatnonzero(reasoning[start:stop] < ks[start:stop])
        end = float(reasoning[start + ended[0]]) if len(ended) else math.inf
        last = answers[stop - 1]
        settle = int(ks[stop - 1])
        for j in range(stop - 1, start - 1, -1):
            if last is None or answers[j] != last:
                break
            settle = int(ks[j])
        rows.append({"item": items[start], "n": int(n_all[start]), "settle": settle, "end": end})
    return pd.DataFrame(rows, columns=["item", "n", "settle", "end"])


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _positions(every: int | None, budgets: NDArray[np.int_], ceiling: int) -> NDArray[np.int_]:
    below = budgets[(budgets > 0) & (budgets < ceiling)]
    if every is not None:
        below = np.arange(every, ceiling, every)
    return np.append(below, ceiling).astype(int)


def _cost(
    positions: NDArray[np.int_],
    settle: NDArray[np.float64],
    end: NDArray[np.float64],
    answer: float,
    confirm: int,
) -> NDArray[np.float64]:
    """Each item's tokens when it stops `confirm` probes after the first at or past its settle
    point, or where its thinking ended (charged as `apply_rule` charges)."""
    last = len(positions) - 1
    first = np.minimum(np.searchsorted(positions, settle, side="left"), last)
    stop = np.minimum(first + confirm, last)
    ended = np.minimum(np.searchsorted(positions, end, side="right"), last + 1)
    by_end = ended <= stop  # the first probe past its end comes first: it stopped there
    index = np.where(by_end, ended, stop)
    thinking = np.where(by_end, end, positions[np.minimum(index, last)])
    return np.asarray(thinking + answer * index + answer, dtype=float)


def choose_interval(
    frame: pd.DataFrame,
    ceilings: Mapping[int, int],
    *,
    confirm: int = 1,
    bill_prompt: bool = False,
) -> ProbeInterval:
    """The probe interval of least expected tokens on the calibration's items (module
    docstring), one for every size with a ceiling. `confirm`: probes a rule needs after the
    one at the settle point (an agreement of r probes: r − 1)."""
    frame = check_frame(frame)
    confirm = require_int(confirm, "confirm", low=0)
    points = settle_points(frame, ceilings)
    if points.empty:
        raise InputError("has no forced answers at the sizes with a ceiling", field="frame")
    forced = frame[(frame["k"] > 0) & (frame["reasoning_tokens"] >= frame["k"])]
    answer = float(forced["answer_tokens"].mean()) if len(forced) else 0.0
    if bill_prompt and len(forced):
        answer += float(probe_prompt(forced).mean())
    answer = 0.0 if math.isnan(answer) else answer
    sizes = sorted(set(points["n"]))
    shared: dict[int, NDArray[np.int_]] = {}
    for n in sizes:
        mine = frame[(frame["n"] == n) & (frame["k"] > 0)]
        counts = mine.groupby("k")["item"].nunique()
        every_item = counts[counts == mine["item"].nunique()].index
        shared[n] = np.array(sorted(int(k) for k in every_item), dtype=int)
    known = {n: set(shared[n].tolist()) for n in sizes}
    candidates: list[int | None] = [None]
    for m in sorted({int(k) for n in sizes for k in shared[n]}):
        if all(m < ceilings[n] and set(range(m, ceilings[n], m)) <= known[n] for n in sizes):
            candidates.append(m)
    by_size = {
        n: (mine["settle"].to_numpy(dtype=float), mine["end"].to_numpy(dtype=float))
        for n, mine in points.groupby("n")
    }
    costed: list[tuple[int | None, float]] = []
    for every in candidates:
        costs = [
            _cost(_positions(every, shared[n], int(ceilings[n])), *by_size[n], answer, confirm)
            for n in sizes
        ]
        costed.append((every, float(np.concatenate(costs).mean())))
    table = pd.DataFrame(costed, columns=["every", "tokens"])
    # The least expected tokens; among equals the longest interval (fewest requests), and
    # an interval before "every calibrated budget", which live probing cannot name.
    best_every, best_tokens = min(
        costed, key=lambda r: (round(r[1], 9), r[0] is None, -(r[0] or 0))
    )
    settle = points["settle"].to_numpy(dtype=float)
    settle = np.minimum(settle, points["end"].to_numpy(dtype=float))
    mean = float(settle.mean())
    return ProbeInterval(
        every=best_every,
        tokens=best_tokens,
        answer_tokens=answer,
        confirm=confirm,
        settle_mean=mean,
        analytic=analytic_interval(max(mean, 1e-9), answer, confirm),
        table=table,
    )
