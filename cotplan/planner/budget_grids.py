"""The budget grids a calibration answers at: the default, Algorithm 1's, a list or a function
of the size n, checked against the one budget ceiling (`cotplan.validation.MAX_BUDGET`). The
auto grid, sized from the model's own thinking, is `cotplan.planner.auto_grid`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

from cotplan.errors import InputError
from cotplan.validation import require_budget, require_int

__all__ = ["Budgets", "check_grid", "default_budgets", "grid_for", "paper_budgets"]

#: What `calibrate` takes as its budgets: a list, a function of n, "paper" (Algorithm 1's grid
#: per size), "auto" (the model's own thinking sizes it) or None (read as "auto").
Budgets = Sequence[int] | Callable[[int], Sequence[int]] | Literal["paper", "auto"] | None


def default_budgets(max_budget: int = 128) -> list[int]:
    """0, then powers of two from 8 up to `max_budget` (which is included)."""
    max_budget = require_int(max_budget, "max_budget", low=1)
    grid = [0]
    k = 8
    while k < max_budget:
        grid.append(k)
        k *= 2
    grid.append(max_budget)
    return sorted(set(grid))


def paper_budgets(n: int, *, count: int | None = None, scale: float = 10.0) -> list[int]:
    """Algorithm 1's grid: 0 plus about `count` (default ceil(20 · ln n)) log-spaced integer
    budgets in [1, scale · √n]; rounding merges duplicates, so fewer may come back."""
    n = require_int(n, "n", low=1)
    top = max(1, math.ceil(scale * math.sqrt(n)))
    default = max(2, math.ceil(20 * math.log(max(n, 2))))
    wanted = default if count is None else require_int(count, "count", low=1)
    grid = np.unique(np.round(np.geomspace(1, top, wanted)).astype(int))
    return [0, *(int(k) for k in grid)]


def grid_for(budgets: Budgets) -> Callable[[int], list[int]]:
    """The grid for each size n that a fixed `budgets` gives (None: the default grid)."""
    if budgets is None:  # callers read None as "auto" before they get here
        fixed = default_budgets()
        return lambda n: fixed
    if isinstance(budgets, str):
        if budgets != "paper":
            raise InputError(
                f"must be a list of budgets, 'auto', 'paper' or a function of n, got {budgets!r}",
                field="budgets",
            )
        return paper_budgets
    if callable(budgets):
        chosen = budgets
        return lambda n: check_grid(chosen(n))
    grid = check_grid(budgets)
    return lambda n: grid


def check_grid(budgets: Iterable[Any]) -> list[int]:
    """`budgets` as a sorted list of distinct budgets, each within the ceiling."""
    values = list(budgets)
    if not values:
        raise InputError("must hold at least one budget", field="budgets")
    return sorted({require_budget(k, "budgets") for k in values})
