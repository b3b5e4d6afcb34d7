"""Known error curves, for testing a planner where the truth is known.

Each `Shape` gives the true error e(k, n), the exact k*(n, ε) (the smallest budget whose true
error is at most ε, found by bisection on a fine grid), and simulated calibrations. A simulated
item has one latent difficulty u ~ U(0, 1) and is wrong at budget k exactly when u < e(k, n):
each budget's error rate is exact, and one item's answers at different budgets are as alike as
they can be (an easy item is right at every budget), which is what real calibrations look like.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["SHAPES", "Shape", "grid_0_to_5n"]

ErrorFn = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


def grid_0_to_5n(n: int, points: int = 41) -> list[int]:
    """Integer budgets from 0 to 5n, `points` of them at most (fewer where n is small)."""
    return sorted({round(float(v)) for v in np.linspace(0.0, 5.0 * n, points)})


@dataclass(frozen=True)
class Shape:
    """A true error curve e(k, n) with its exact budgets and simulated calibrations."""

    name: str
    description: str
    error_fn: ErrorFn

    def error(
        self, n: float, k: float | Sequence[float] | NDArray[np.float64]
    ) -> NDArray[np.float64]:
        k_arr = np.asarray(k, dtype=float)
        return self.error_fn(np.full_like(k_arr, float(n)), k_arr)

    def k_star(self, n: float, eps: float, k_max: float | None = None) -> float:
        """The smallest real k ≥ 0 with e(k, n) ≤ ε (inf when no k up to `k_max` reaches it)."""
        top = 20.0 * n if k_max is None else k_max
        ks = np.linspace(0.0, top, 200_001)
        meets = np.flatnonzero(self.error(n, ks) <= eps)
        if not len(meets):
            return math.inf
        j = int(meets[0])
        if j == 0:
            return 0.0
        lo, hi = float(ks[j - 1]), float(ks[j])
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if float(self.error(n, [mid])[0]) <= eps else (mid, hi)
        return hi

    def calibration(
        self,
        sizes: Sequence[int],
        items: int,
        seed: int,
        grid: Callable[[int], Sequence[int]] = grid_0_to_5n,
    ) -> pd.DataFrame:
        """`items` items a size, each answered at every budget of `grid(n)`."""
        rng = np.random.default_rng(seed)
        frames = []
        for n in sizes:
            ks = np.asarray(grid(n), dtype=float)
            u = rng.random(items)
            wrong = u[:, None] < self.error(n, ks)[None, :]
            frames.append(
                pd.DataFrame(
                    {
                        "item": np.repeat([f"n{n}-{i}" for i in range(items)], len(ks)),
                        "n": n,
                        "k": np.tile(ks.astype(int), items),
                        "correct": ~wrong.ravel(),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)


def _paper(e0: float, eb: float, c: float, alpha: float) -> ErrorFn:
    def error(n: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = e0 + (eb - e0) * np.exp(-k / (c * n**alpha))
        return out

    return error


def _step(error: NDArray[np.float64] | None = None) -> ErrorFn:
    def fn(n: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = np.where(k >= 3.0 * n, 0.02, 0.85)
        return out

    return fn


def _logistic(n: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
    width = 1.0 * np.sqrt(n)
    out: NDArray[np.float64] = 0.01 + 0.84 / (1.0 + np.exp((k - 2.0 * n) / width))
    return out


def _peaked(n: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
    fall = _paper(0.0, 0.9, 2.5, 0.5)(n, k)
    out: NDArray[np.float64] = fall + 0.5 * np.clip((k - 4.0 * n) / n, 0.0, 1.0)
    return out


def _flat(n: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.full(np.broadcast(n, k).shape, 0.04)


#: The benchmark's curves (ε = 0.1 in mind): each has its k* well inside a 0..5n grid.
SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape("paper α=1/2", "0.9 · exp(−k / (2.5 √n))", _paper(0.0, 0.9, 2.5, 0.5)),
        Shape("paper α=1", "0.9 · exp(−k / (0.5 n))", _paper(0.0, 0.9, 0.5, 1.0)),
        Shape("step at 3n", "0.85 below k = 3n, 0.02 from there", _step()),
        Shape(
            "logistic 2n",
            "0.01 + 0.84 / (1 + exp((k − 2n) / √n)): around 2n, width √n",
            _logistic,
        ),
        Shape(
            "peaked",
            "0.9 · exp(−k / (2.5 √n)) + 0.5 · clip((k − 4n) / n, 0, 1): hurts past 4n",
            _peaked,
        ),
        Shape("flat", "0.04 at every budget: reasoning buys nothing", _flat),
    )
}
