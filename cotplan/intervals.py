"""The one interval type and the one percentile-interval helper every part of cotplan uses.

A planner constant, an experiment's bootstrap, a permutation-averaged probability and a lab
variance all report `Interval(low, high, level)`: two ends (NaN when they could not be
computed) and the confidence level they were computed at. `percentile_interval` is the
percentile bootstrap interval of a sample of draws. This module sits in the lowest layer,
beside the error tree, so that every layer above can use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Interval", "compact", "percentile_interval"]


def compact(value: float | None, digits: int = 3) -> str:
    """A compact number: 3 significant digits, no exponent for everyday magnitudes."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e5:
        return f"{value:.{digits}g}" if magnitude < 1 else f"{value:.{max(digits, 4)}g}"
    return f"{value:.{digits - 1}e}"


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval at `level` (percentile bootstrap unless the field that
    holds it says otherwise); NaN ends when it could not be computed."""

    low: float
    high: float
    level: float = 0.95

    @property
    def width(self) -> float:
        return self.high - self.low

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int | float) and self.low <= float(value) <= self.high

    def overlaps(self, low: float, high: float) -> bool:
        return self.low <= high and low <= self.high

    def __str__(self) -> str:
        return f"[{compact(self.low)}, {compact(self.high)}]"


def percentile_interval(
    samples: Any, level: float = 0.95, *, keep_infinite: bool = False
) -> Interval:
    """The central `level` share of `samples`.

    NaN draws are always left out. By default infinite draws are too, and the ends are
    interpolated (`numpy.percentile`). With `keep_infinite`, infinite draws stay (a budget
    that some resamples cannot reach has an infinite upper end) and each end is an order
    statistic rounded outward, since interpolating between a finite and an infinite draw
    means nothing. No draws left: both ends NaN.
    """
    values = np.asarray(samples, dtype=float)
    if keep_infinite:
        kept = np.sort(values[~np.isnan(values)])
        if kept.size == 0:
            return Interval(math.nan, math.nan, level)
        tail = (1.0 - level) / 2.0
        low = kept[math.floor(tail * (kept.size - 1))]
        high = kept[math.ceil((1.0 - tail) * (kept.size - 1))]
        return Interval(float(low), float(high), level)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return Interval(math.nan, math.nan, level)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return Interval(float(low), float(high), level)
