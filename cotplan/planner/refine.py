"""A tighter certified cap: refine the budget grid where the error crosses ε, then certify.

A certified fixed cap can only be a calibrated budget, so it is as coarse as the grid: where
the budget below the cap failed its test and the cap passed, the true k* lies somewhere between
them, and the cap may sit far above it. For visible thinking one long greedy run already holds
every shorter budget (`budgeted_answers` cuts it), so answering a few budgets between the two
costs only the answer requests: the question and the thinking so far as prompt (cached on
llama.cpp and vLLM), and a few answer tokens.

`refinement_budgets(frame, eps)` says which budgets to add at each size (`points` evenly
between the last budget that failed and the cap); `refine_caps(frame, extra, eps)` certifies
again on the calibrated and the added budgets together and reports, per size, the coarse cap,
the refined one, how much it tightened, and what the added answers cost;
`answer_refinement(backend, items, frame, eps)` does both with the model in between.

**The guarantee.** The refined cap is fixed-sequence testing on the union of the budgets, from
the largest down, at the same δ. Where the added budgets go depends on the same items, so the
order of the union is not fixed before the data: tests/test_planner_refine.py checks by a
seeded simulation that the refined cap's true error exceeds ε in at most a δ share of
calibrations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.budgeted import budgeted_answers
from cotplan.planner.early_exit import fixed_caps
from cotplan.tasks.item import TaskItem
from cotplan.validation import COUNT, SHARE, validate_params

__all__ = [
    "RefinedCap",
    "Refinement",
    "answer_refinement",
    "refine_caps",
    "refinement_budgets",
]


@dataclass(frozen=True)
class RefinedCap:
    """The cap at one size before and after refining (None: not certified). `below` is the
    calibrated budget under the coarse cap whose test failed (the refinement lies between);
    `added` the budgets answered; `requests`, `answer_tokens` and `prompt_tokens` what the
    added answers cost (the thinking itself was already paid by the long run)."""

    n: int
    coarse_cap: int | None
    cap: int | None
    below: int | None
    added: tuple[int, ...]
    requests: int
    answer_tokens: int
    prompt_tokens: int

    @property
    def ratio(self) -> float:
        """The refined cap over the coarse one (1.0: no tighter; NaN: nothing certified)."""
        if self.cap is None or not self.coarse_cap:
            return math.nan
        return self.cap / self.coarse_cap


@dataclass(frozen=True)
class Refinement:
    """The refined caps at every size the frame calibrates; `to_frame()` one row per size."""

    eps: float
    delta: float
    points: int
    sizes: tuple[RefinedCap, ...]

    @property
    def caps(self) -> dict[int, int]:
        """The refined certified cap per size (sizes without one are left out)."""
        return {c.n: c.cap for c in self.sizes if c.cap is not None}

    def to_frame(self) -> pd.DataFrame:
        rows: list[dict[str, Any]] = [
            {
                "n": c.n,
                "coarse_cap": c.coarse_cap,
                "cap": c.cap,
                "ratio": c.ratio,
                "below": c.below,
                "added": ",".join(map(str, c.added)),
                "requests": c.requests,
                "answer_tokens": c.answer_tokens,
                "prompt_tokens": c.prompt_tokens,
            }
            for c in self.sizes
        ]
        return pd.DataFrame(rows)


@validate_params(eps=SHARE, delta=SHARE, points=COUNT)
def refinement_budgets(
    frame: pd.DataFrame, eps: float, *, delta: float = 0.05, points: int = 3
) -> dict[int, list[int]]:
    """Per size with a certified cap c, `points` budgets evenly between the calibrated budget
    below c (whose test failed, or 0) and c, leaving out those already calibrated."""
    caps = fixed_caps(frame, eps, delta)
    out: dict[int, list[int]] = {}
    for n, cap in sorted(caps.items()):
        budgets = sorted(set(frame.loc[frame["n"] == n, "k"].astype(int)))
        below = max((k for k in budgets if k < cap), default=0)
        step = (cap - below) / (points + 1)
        wanted = {round(below + step * (i + 1)) for i in range(points)}
        out[n] = sorted(k for k in wanted if below < k < cap and k not in budgets)
    return out


@validate_params(eps=SHARE, delta=SHARE, points=COUNT)
def refine_caps(
    frame: pd.DataFrame,
    extra: pd.DataFrame,
    eps: float,
    *,
    delta: float = 0.05,
    points: int = 3,
) -> Refinement:
    """Certify again on `frame` and the `extra` answers together (see the module docstring).

    Both are calibration frames (`item, n, k, correct`, and `answer_tokens`, `prompt_tokens`
    and `question_tokens` for the cost); `extra` should hold the budgets `refinement_budgets`
    gave, for the same items."""
    coarse = fixed_caps(frame, eps, delta)
    if len(extra):
        unknown = set(extra["item"].astype(str)) - set(frame["item"].astype(str))
        if unknown:
            raise InputError(
                f"holds items the calibration does not ({sorted(unknown)[:3]}): refine the "
                "same items",
                field="extra",
            )
    merged = pd.concat([frame, extra], ignore_index=True) if len(extra) else frame
    merged = merged.drop_duplicates(["item", "k"], keep="first")
    fine = fixed_caps(merged, eps, delta)
    sizes = []
    for n in sorted(set(frame["n"].astype(int))):
        cap = coarse.get(n)
        budgets = sorted(set(frame.loc[frame["n"] == n, "k"].astype(int)))
        below = max((k for k in budgets if cap is not None and k < cap), default=None)
        mine = extra[extra["n"] == n] if len(extra) else extra
        sizes.append(
            RefinedCap(
                n=n,
                coarse_cap=cap,
                cap=fine.get(n),
                below=below if cap is not None else None,
                added=tuple(sorted(set(mine["k"].astype(int)))) if len(mine) else (),
                requests=len(mine),
                answer_tokens=_total(mine, "answer_tokens"),
                prompt_tokens=_answer_prompts(mine),
            )
        )
    return Refinement(eps=eps, delta=delta, points=points, sizes=tuple(sizes))


def _total(rows: pd.DataFrame, column: str) -> int:
    if not len(rows) or column not in rows.columns:
        return 0
    return int(pd.to_numeric(rows[column], errors="coerce").fillna(0).sum())


def _answer_prompts(rows: pd.DataFrame) -> int:
    """The prompts of the added answer requests: a row's prompt tokens less its question,
    which the shared long run already sent once."""
    if not len(rows) or "prompt_tokens" not in rows.columns:
        return 0
    prompt = pd.to_numeric(rows["prompt_tokens"], errors="coerce").fillna(0)
    if "question_tokens" in rows.columns:
        prompt = prompt - pd.to_numeric(rows["question_tokens"], errors="coerce").fillna(0)
    return int(prompt.clip(lower=0).sum())


def answer_refinement(
    backend: Backend,
    items: Sequence[TaskItem],
    frame: pd.DataFrame,
    eps: float,
    *,
    delta: float = 0.05,
    points: int = 3,
    longest: Mapping[str, int] | None = None,
    **answer_options: Any,
) -> tuple[Refinement, pd.DataFrame]:
    """Answer the budgets `refinement_budgets` names for `items` (the calibration's) and
    certify again: the refinement and the added rows.

    Each item's budgets are answered with its longest calibrated budget (`longest`, default:
    the frame's largest per item), so a call cache replays the long run and only the answer
    requests are new; `answer_options` go to `budgeted_answers`."""
    wanted = refinement_budgets(frame, eps, delta=delta, points=points)
    by_id = {it.id: it for it in items}
    top = frame.groupby("item")["k"].max().astype(int).to_dict()
    top.update(longest or {})
    work = []
    for item_id, n in frame.groupby("item")["n"].first().items():
        budgets = wanted.get(int(n), [])
        if budgets:
            if item_id not in by_id:
                raise InputError(f"has no item {item_id!r} of the calibration", field="items")
            work.append((by_id[str(item_id)], budgets))

    def one(job: tuple[TaskItem, list[int]]) -> list[dict[str, Any]]:
        item, budgets = job
        # The one run at the longest calibrated budget serves the added ones: replayed by a
        # call cache, or (none) made again; only the answers are new either way.
        answers = budgeted_answers(
            backend, item, budgets, run_tokens=top[item.id], **answer_options
        )
        return [a.to_row() for a in answers]

    rows = [row for result in backend.map(one, work) for row in result]
    extra = pd.DataFrame(rows, columns=list(frame.columns) if not rows else None)
    if len(extra):
        # Sizes as the calibration recorded them (a benchmark may pool several sizes as one).
        extra["n"] = extra["item"].map(frame.groupby("item")["n"].first())
    return refine_caps(frame, extra, eps, delta=delta, points=points), extra
