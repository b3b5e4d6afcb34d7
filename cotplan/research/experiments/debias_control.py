"""The debiasing estimator's own control: exact Bayes has no positional bias, so its position R²
must be about 0, in the nested design and in the independent one, seed after seed.

`debias_control` scores exact Laplace's gaps (no model is run) through `positional_debias` for
several seeds and both designs. The estimator passes when the position R² before debiasing
exceeds `THRESHOLD` on at most `ALLOWED_SHARE` of the runs in every design. Before the R² was
read in units of the gaps' noise, it failed here: 0.483 at seed 0 of the nested design, and
over 0.1 on 17% (nested) and 8% (independent) of 12 seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.research.experiments.debias import positional_debias
from cotplan.research.experiments.martingale import martingale_gap, paper_grid
from cotplan.research.experiments.predictors import laplace

__all__ = ["ALLOWED_SHARE", "DESIGNS", "THRESHOLD", "DebiasControl", "debias_control"]

#: A position R² above this on exact Bayes is structure the estimator made up.
THRESHOLD = 0.1
#: The share of seeds allowed above `THRESHOLD` (a 5% false-alarm rate).
ALLOWED_SHARE = 0.05
DESIGNS = ("nested", "independent")


@dataclass(frozen=True)
class DebiasControl:
    """Position R² of exact Laplace's gaps per design and seed (`to_frame()`), and the verdict."""

    ns: tuple[int, ...]
    n_sequences: int
    seeds: tuple[int, ...]
    designs: tuple[str, ...]
    r2_before: tuple[tuple[float, ...], ...]
    r2_after: tuple[tuple[float, ...], ...]

    def share_above(self, design: str) -> float:
        """The share of seeds whose R² before debiasing exceeds `THRESHOLD` in `design`."""
        values = np.asarray(self.r2_before[self.designs.index(design)])
        return float(np.mean(values > THRESHOLD))

    def largest(self, design: str) -> float:
        return float(max(self.r2_before[self.designs.index(design)]))

    @property
    def passed(self) -> bool:
        """About 0 in every design: above `THRESHOLD` on at most `ALLOWED_SHARE` of seeds."""
        return all(self.share_above(d) <= ALLOWED_SHARE for d in self.designs)

    def to_frame(self) -> pd.DataFrame:
        rows = [
            {"design": design, "seed": seed, "r2_before": before, "r2_after": after}
            for design, befores, afters in zip(
                self.designs, self.r2_before, self.r2_after, strict=True
            )
            for seed, before, after in zip(self.seeds, befores, afters, strict=True)
        ]
        return pd.DataFrame(rows)

    def summary(self) -> str:
        parts = [
            f"{d} {self.share_above(d):.0%} above {THRESHOLD:g} (max {self.largest(d):.3f})"
            for d in self.designs
        ]
        word = "passes" if self.passed else "fails"
        return (
            f"exact Bayes position R² over {len(self.seeds)} seeds: {'; '.join(parts)}: the "
            f"estimator {word} its control"
        )


def debias_control(
    seeds: Sequence[int] = tuple(range(12)),
    *,
    ns: Sequence[int] | None = None,
    n_sequences: int = 100,
    designs: Sequence[str] = DESIGNS,
) -> DebiasControl:
    """Exact Laplace's position R² before and after debiasing, per design and seed."""
    if not seeds:
        raise InputError("needs at least one seed", field="seeds")
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown or not designs:
        raise InputError(f"must be among {list(DESIGNS)}, got {list(designs)}", field="designs")
    grid = tuple(int(n) for n in (paper_grid() if ns is None else ns))
    before: list[tuple[float, ...]] = []
    after: list[tuple[float, ...]] = []
    for design in designs:
        b, a = [], []
        for seed in seeds:
            gaps = martingale_gap(
                laplace(), grid, n_sequences=n_sequences, seed=int(seed), design=design, n_boot=100
            )
            result = positional_debias(gaps, n_permutations=0, n_boot=0)
            b.append(result.r2_before)
            a.append(result.r2_after)
        before.append(tuple(b))
        after.append(tuple(a))
    return DebiasControl(
        ns=grid,
        n_sequences=n_sequences,
        seeds=tuple(int(s) for s in seeds),
        designs=tuple(designs),
        r2_before=tuple(before),
        r2_after=tuple(after),
    )
