"""Gamma sums of a month's queries and the summary of a million draws: the two numeric
kernels of `cotplan.pricing.simulation`, private to `cotplan.pricing`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cotplan.pricing.workload import FloatArray

__all__: list[str] = []

_QUANTILES = (10.0, 50.0, 90.0)
#: Below this many draws a percentile partitions them all (`np.percentile`).
_SELECT_MIN = 1 << 16
#: About this many draws (every n // _SAMPLE-th) place the windows of `_order_statistics`.
_SAMPLE = 1 << 15
#: Half a window's width, in standard deviations of a rank's position in the sample.
_SIGMAS = 6.0
#: Draws per block of a pass over a million (sized to stay in a core's cache).
_BLOCK = 1 << 15


@dataclass(frozen=True)
class SumModel:
    """Per draw: the spend of one query (mean `a`, variance `b`), set up for gamma sums.

    The spend of q queries has mean q*a and variance q*b, so a gamma with shape q*a^2/b. The
    Wilson-Hilferty transform draws it from one normal z:
    q*a*(1 - c1/q + z*c2/sqrt(q))^3 with c1 = 1/(9k) and c2 = 1/(3 sqrt k), k = a^2/b; the
    constants are computed once per draw and reused for every month.
    """

    a: FloatArray
    b: FloatArray
    k: FloatArray
    c1: FloatArray
    c2: FloatArray
    k_min: float

    @classmethod
    def build(cls, a: FloatArray, b: FloatArray) -> SumModel:
        live = a > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(b > 0, a * a / b, np.inf)
            c1 = np.where(live, 1.0 / (9.0 * k), 0.0)
            c2 = np.where(live, 1.0 / (3.0 * np.sqrt(k)), 0.0)
        k_min = float(k[live].min()) if live.any() else math.inf
        return cls(a, b, k, c1, c2, k_min)

    def draw(self, q: float, z: FloatArray, rng: np.random.Generator) -> FloatArray:
        """Spend of `q` queries per draw: moment-matched gamma, never negative."""
        if q <= 0:
            return np.zeros_like(self.a)
        root, inverse = 1.0 / math.sqrt(q), 1.0 / q
        spend = np.empty_like(self.a)
        # Block by block, so the intermediate arrays stay in the CPU's cache: the same
        # operations, in the same order, on every draw as on the whole arrays at once.
        size = min(_BLOCK, spend.size)
        out, shift = np.empty(size), np.empty(size)
        for first in range(0, spend.size, _BLOCK):
            block = slice(first, first + _BLOCK)
            s = spend[block]
            o, t = out[: s.size], shift[: s.size]
            np.multiply(self.c2[block], z[block], out=o)
            o *= root
            np.multiply(self.c1[block], inverse, out=t)
            o -= t
            o += 1.0
            np.maximum(o, 0.0, out=o)
            np.multiply(o, o, out=s)
            s *= o
            s *= self.a[block]
            s *= q
        if q * self.k_min < 1.0:
            # The transform is poor for very skewed sums (shape < 1): draw those exactly.
            small = (q * self.k < 1.0) & (self.a > 0)
            shape = q * self.k[small]
            spend[small] = rng.gamma(shape, self.b[small] / self.a[small])
        return spend


def draws_summary(
    values: FloatArray, *, in_place: bool = False
) -> tuple[float, float, float, float]:
    """Mean, P10, P50 and P90 (`draw_percentiles`). `in_place` lets a fallback full partition
    reorder `values` rather than copy them: for draws not needed after."""
    mean = float(values.mean())
    p10, p50, p90 = draw_percentiles(
        values, _QUANTILES, in_place=in_place, finite=math.isfinite(mean)
    )
    return mean, p10, p50, p90


def draw_percentiles(
    values: FloatArray,
    q: tuple[float, ...],
    *,
    in_place: bool = False,
    finite: bool | None = None,
) -> tuple[float, ...]:
    """`np.percentile(values, q)` (its default, linear method), bit for bit, for a 1-d float64
    array, without partitioning the whole of it.

    `np.percentile` partitions every draw around eight ranks (the two neighbours of each of
    three percentiles, the minimum and the maximum): nearly half of a projection's time.
    The same order statistics are found here among the few draws that can hold them
    (`_order_statistics`), then interpolated with `np.percentile`'s own arithmetic. Not
    finite (`finite` False, or found so here), not float64, or short: `np.percentile` itself
    (`in_place` lets it reorder `values`).
    """
    n = values.size
    if finite is None:
        finite = math.isfinite(float(values.sum())) if n else False
    if values.dtype != np.float64 or values.ndim != 1 or n < _SELECT_MIN or not finite:
        out = np.percentile(values, q, overwrite_input=in_place)
        return tuple(float(x) for x in out)
    # As `np.percentile` computes them: virtual index (n - 1) * q / 100, its floor and the
    # next rank, and the fractional part as the weight.
    virtual = (n - 1) * np.true_divide(np.asarray(q, dtype=np.float64), 100)
    below = np.floor(virtual)
    top = virtual >= n - 1
    lower = np.where(top, n - 1, below).astype(np.intp)
    upper = np.where(top, n - 1, below + 1).astype(np.intp)
    ranks = sorted({int(r) for r in (*lower, *upper)})
    found = _order_statistics(values, ranks)
    if found is None:
        out = np.percentile(values, q, overwrite_input=in_place)
        return tuple(float(x) for x in out)
    a = np.array([found[int(r)] for r in lower])
    b = np.array([found[int(r)] for r in upper])
    t = virtual - below
    # `np.percentile`'s interpolation (numpy's `_lerp`), step for step.
    diff = b - a
    result = np.add(a, diff * t)
    np.subtract(b, diff * (1 - t), out=result, where=t >= 0.5)
    return tuple(float(x) for x in result)


def _order_statistics(values: FloatArray, ranks: list[int]) -> dict[int, float] | None:
    """The values at sorted positions `ranks` (ascending), as a full partition would give them,
    or None when a window missed (then the caller partitions everything).

    A fixed, evenly strided sample of the draws (no random numbers used) is sorted; around
    where each rank falls in it, a window of values wide enough that the rank lies inside it
    but for a chance of about 1e-9 (six standard deviations of the sample's count, plus a
    margin for ties). The draws below each window are counted and those inside it gathered, in
    one pass over the draws block by block, and the gathered ones partitioned: a rank's value
    is at the rank less the count below its window. The check that each rank lies inside its
    window makes the result exact whatever the sample.
    """
    n = values.size
    sample = np.sort(values[:: max(1, n // _SAMPLE)])
    m = sample.size
    # Per window: first and last sample position, and the ranks it must hold.
    spans: list[tuple[int, int, list[int]]] = []
    for r in ranks:
        p = r / (n - 1)
        centre = p * (m - 1)
        margin = _SIGMAS * math.sqrt(m * p * (1.0 - p)) + 4.0
        first = max(0, math.floor(centre - margin))
        last = min(m - 1, math.ceil(centre + margin))
        if spans and first <= spans[-1][1]:
            spans[-1] = (spans[-1][0], last, [*spans[-1][2], r])
        else:
            spans.append((first, last, [r]))
    # No bound at an end of the sample: the window runs to that end of the draws.
    bounds = [
        (
            float(sample[first]) if first > 0 else -math.inf,
            float(sample[last]) if last < m - 1 else math.inf,
        )
        for first, last, _ in spans
    ]
    below = [0] * len(spans)
    pieces: list[list[FloatArray]] = [[] for _ in spans]
    size = min(_BLOCK, n)
    at_least, at_most = np.empty(size, dtype=bool), np.empty(size, dtype=bool)
    for first in range(0, n, _BLOCK):
        block = values[first : first + _BLOCK]
        ge, le = at_least[: block.size], at_most[: block.size]
        for w, (lo, hi) in enumerate(bounds):
            np.greater_equal(block, lo, out=ge)
            below[w] += block.size - int(np.count_nonzero(ge))
            ge &= np.less_equal(block, hi, out=le)
            pieces[w].append(block[ge])
    found: dict[int, float] = {}
    for (_, _, inside), count, parts in zip(spans, below, pieces, strict=True):
        picked = np.concatenate(parts)
        kth = [r - count for r in inside]
        if not all(0 <= k < picked.size for k in kth):
            return None
        picked.partition(kth)
        found.update((r, float(picked[k])) for r, k in zip(inside, kth, strict=True))
    return found
