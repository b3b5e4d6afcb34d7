"""Gamma sums of a month's queries and the summary of a million draws: the two numeric
kernels of `cotplan.pricing.simulation`, private to `cotplan.pricing`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cotplan.pricing.workload import _FloatArray

__all__: list[str] = []

_QUANTILES = (10.0, 50.0, 90.0)


@dataclass(frozen=True)
class _SumModel:
    """Per draw: the spend of one query (mean `a`, variance `b`), set up for gamma sums.

    The spend of q queries has mean q*a and variance q*b, so a gamma with shape q*a^2/b. The
    Wilson-Hilferty transform draws it from one normal z:
    q*a*(1 - c1/q + z*c2/sqrt(q))^3 with c1 = 1/(9k) and c2 = 1/(3 sqrt k), k = a^2/b; the
    constants are computed once per draw and reused for every month.
    """

    a: _FloatArray
    b: _FloatArray
    k: _FloatArray
    c1: _FloatArray
    c2: _FloatArray
    k_min: float

    @classmethod
    def build(cls, a: _FloatArray, b: _FloatArray) -> _SumModel:
        live = a > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(b > 0, a * a / b, np.inf)
            c1 = np.where(live, 1.0 / (9.0 * k), 0.0)
            c2 = np.where(live, 1.0 / (3.0 * np.sqrt(k)), 0.0)
        k_min = float(k[live].min()) if live.any() else math.inf
        return cls(a, b, k, c1, c2, k_min)

    def draw(self, q: float, z: _FloatArray, rng: np.random.Generator) -> _FloatArray:
        """Spend of `q` queries per draw: moment-matched gamma, never negative."""
        if q <= 0:
            return np.zeros_like(self.a)
        out = self.c2 * z
        out *= 1.0 / math.sqrt(q)
        out -= self.c1 * (1.0 / q)
        out += 1.0
        np.maximum(out, 0.0, out=out)
        spend = out * out
        spend *= out
        spend *= self.a
        spend *= q
        if q * self.k_min < 1.0:
            # The transform is poor for very skewed sums (shape < 1): draw those exactly.
            small = (q * self.k < 1.0) & (self.a > 0)
            shape = q * self.k[small]
            spend[small] = rng.gamma(shape, self.b[small] / self.a[small])
        return spend


def _summary(values: _FloatArray, *, in_place: bool = False) -> tuple[float, float, float, float]:
    """Mean, P10, P50 and P90. `in_place` lets the percentiles reorder `values` rather than
    copy them: for draws not needed after (a million-draw copy is a few milliseconds)."""
    mean = float(values.mean())
    p10, p50, p90 = np.percentile(values, _QUANTILES, overwrite_input=in_place)
    return mean, float(p10), float(p50), float(p90)
