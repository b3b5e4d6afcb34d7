"""A budget grid sized from the model's own thinking (`budgets="auto"`).

A fixed grid (0, 8, ..., 128) fits a model that thinks about a hundred tokens; R1 distills,
Qwen3 and gpt-oss think thousands on a hard item, and a grid that stops short of that cuts
every answer before it can be right. The auto grid measures first: each item's uncapped
thinking (for visible thinking, the calibration's own first request per item, which then
serves every budget; for hidden thinking, a small pilot), then, per size, a geometric grid
from 0 up to about the 95th percentile of that thinking.

`auto_budgets(lengths)` is the grid for one size's measured lengths; `ThinkingProfile` what
was measured at one size and the grid it gave; `short_grid_note` the warning a user's grid gets
when its top cuts much of the model's thinking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.validation import require_int

__all__ = [
    "AUTO_POINTS",
    "AUTO_QUANTILE",
    "AUTO_SPAN",
    "UNCAPPED_TOKENS",
    "GridShortWarning",
    "ThinkingProfile",
    "auto_budgets",
    "short_grid_note",
    "thinking_profile",
]

#: The quantile of uncapped thinking the grid's top sits at: higher and a few long-winded items
#: set the grid (every other item's run ends far below it, so answers there repeat the uncapped
#: one); lower and the items that need long thinking are never given it.
AUTO_QUANTILE = 0.95
#: Positive budgets of the grid, geometrically spaced.
AUTO_POINTS = 12
#: The grid spans top / AUTO_SPAN .. top: a cap that saves more than 98% of the thinking is
#: below anything a reasoning model answers well with, and 0 is always in the grid.
AUTO_SPAN = 64
#: The cap of an "uncapped" run: longer than reasoning models think on nearly any item, and the
#: context of many served models; `uncapped_tokens` changes it.
UNCAPPED_TOKENS = 16_384


class GridShortWarning(UserWarning):
    """A given budget grid stops short of the model's uncapped thinking."""


@dataclass(frozen=True)
class ThinkingProfile:
    """The uncapped thinking measured at one size and the grid built from it.

    `lengths` are the thinking tokens of each measured item; `top` the grid's largest budget
    (about the `AUTO_QUANTILE` of `lengths`); `cut` how many measured runs reached the uncapped
    cap itself (their thinking is longer than measured); `source` ``runs`` (the calibration's
    own first request per item) or ``pilot`` (hidden thinking: separate requests)."""

    n: int
    lengths: tuple[int, ...]
    budgets: tuple[int, ...]
    uncapped_tokens: int
    cut: int = 0
    source: str = "runs"

    @property
    def top(self) -> int:
        return max(self.budgets)

    def quantile(self, q: float) -> float:
        return float(np.quantile(self.lengths, q)) if self.lengths else math.nan

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "n": self.n,
                    "items": len(self.lengths),
                    "median": self.quantile(0.5),
                    "p90": self.quantile(0.9),
                    "p95": self.quantile(0.95),
                    "max": max(self.lengths, default=0),
                    "top": self.top,
                    "budgets": ",".join(map(str, self.budgets)),
                    "cut": self.cut,
                    "source": self.source,
                }
            ]
        )

    def describe(self) -> str:
        """One line for a report."""
        return (
            f"auto grid at n = {self.n}: uncapped thinking over {len(self.lengths)} items "
            f"median {self.quantile(0.5):.0f}, p90 {self.quantile(0.9):.0f}, p95 "
            f"{self.quantile(0.95):.0f} tokens ({self.source}); budgets "
            f"{', '.join(map(str, self.budgets))}"
            + (
                f"; {self.cut} run(s) reached the {self.uncapped_tokens}-token cap"
                if self.cut
                else ""
            )
        )


def auto_budgets(
    lengths: Sequence[int],
    *,
    points: int = AUTO_POINTS,
    quantile: float = AUTO_QUANTILE,
    span: float = AUTO_SPAN,
) -> list[int]:
    """0, then `points` geometrically spaced budgets from top / `span` up to top, the
    `quantile` of `lengths` rounded up (rounding merges the smallest, so fewer may come back).
    A model that did not think at all gets [0]."""
    values = [require_int(v, "lengths", low=0) for v in lengths]
    if not values:
        raise InputError("needs at least one measured length", field="lengths")
    points = require_int(points, "points", low=1)
    if not 0 < quantile <= 1:
        raise InputError(f"must be in (0, 1], got {quantile!r}", field="quantile")
    if span < 1:
        raise InputError(f"must be at least 1, got {span!r}", field="span")
    top = math.ceil(float(np.quantile(values, quantile)) - 1e-9)
    if top <= 0:
        return [0]
    low = max(1.0, top / span)
    grid = np.unique(np.round(np.geomspace(low, top, points)).astype(int))
    return [0, *(int(k) for k in grid if k > 0)]


def thinking_profile(
    n: int,
    lengths: Sequence[int],
    *,
    uncapped_tokens: int,
    cut: int = 0,
    source: str = "runs",
    points: int = AUTO_POINTS,
) -> ThinkingProfile:
    """The profile of one size: its measured lengths and the auto grid they give."""
    return ThinkingProfile(
        n=int(n),
        lengths=tuple(int(v) for v in lengths),
        budgets=tuple(auto_budgets(lengths, points=points)),
        uncapped_tokens=uncapped_tokens,
        cut=cut,
        source=source,
    )


def short_grid_note(top: int, items: int, cut: int) -> str:
    """The warning for a given grid whose top cut the thinking of more than 5% of the items
    (so the uncapped thinking's 95th percentile lies above it), or "" when it did not."""
    if items == 0 or cut <= 0.05 * items:
        return ""
    return (
        f"the grid's top k = {top} cut the thinking of {cut} of {items} items "
        f"({cut / items:.0%}): this model thinks longer than the grid (more than {top} "
        "tokens in those), so its error at the largest budgets says little about what more "
        "thinking gives; --budgets auto sizes the grid from the model's uncapped thinking"
    )
