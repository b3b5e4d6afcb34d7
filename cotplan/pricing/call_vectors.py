"""Token vectors priced: what each simulated call of a projection costs, and its moments.

`price_parts` on float arrays for drawn tokens, or on exact decimals for the distinct calls of
an empirical sample (as `call_cost` prices them); the mix of rows a call pays (the hours of the
day and the batch share); the mean and spread of the tokens priced. Private to
`cotplan.pricing`: `cotplan.pricing.simulation` draws months of spend from these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import numpy as np

from cotplan.pricing.cost import price_parts
from cotplan.pricing.hours import HourProfile, blend_hours
from cotplan.pricing.policies import CotPolicy
from cotplan.pricing.table import PriceRow
from cotplan.pricing.workload import EmpiricalTokens, FloatArray, TokenDistribution

__all__: list[str] = []

# ---------------------------------------------------------------------------------------------
# Pricing vectors of calls


#: Above this many distinct records an empirical sample is priced in float64, not decimals.
_EXACT_RECORDS = 20_000

#: How one call is priced: (weight, row) pairs whose weights sum to 1. The hours of the day
#: (time-of-day prices) and the batch share each split a call between rows.
_Mix = tuple[tuple[Decimal, PriceRow], ...]


def token_mix(row: PriceRow, day: date, hours: HourProfile, batch_share: float) -> _Mix:
    """The prices a call on `day` pays: blended by the hour profile, then the batch share at
    the batch price that holds that day (per token type; none: the list price)."""
    share = Decimal(repr(batch_share))
    out: list[tuple[Decimal, PriceRow]] = []
    for weight, priced in blend_hours(row, day, hours):
        batched = priced.for_tier("batch", day) if share else None
        if batched is None or share == 1:
            out.append((weight, batched or priced))
            continue
        out += [(weight * (1 - share), priced), (weight * share, batched)]
    return tuple((w, r) for w, r in out if w > 0)


def _call_costs(
    mix: _Mix,
    prompt: FloatArray,
    answer: FloatArray,
    reasoning: FloatArray,
    *,
    cache_hit_rate: float,
    cache_write_rate: float,
) -> FloatArray:
    """USD per call (float64) for token vectors, by `price_parts` with each row's rates."""
    cached = prompt * cache_hit_rate
    written = prompt * cache_write_rate
    uncached = prompt - cached - written

    def total(rates: Any, *counts: FloatArray) -> FloatArray:
        a, b, c, d, e, f = price_parts(rates, counts, as_float=True)
        out: FloatArray = a + b + c + d + e + f
        return out

    counts = (uncached, cached, written, answer, reasoning)
    cost: FloatArray | None = None
    for weight, row in mix:
        part = total(row.short_rates(), *counts)
        long = row.is_long(prompt)
        if long.any():
            # Long prompts are few: price just those again, at the long rates.
            picked = np.flatnonzero(long)
            part[picked] = total(row.long_rates(), *(x[picked] for x in counts))
        if weight != 1:
            part *= float(weight)
        if cost is None:
            cost = part
        else:
            cost += part
    assert cost is not None  # a mix always holds a row
    return cost


def _exact_call_costs(
    mix: _Mix,
    records: tuple[FloatArray, FloatArray, FloatArray],
    *,
    cache_hit_rate: float,
    cache_write_rate: float,
) -> tuple[list[Decimal], FloatArray]:
    """Exact Decimal USD per distinct record (as `call_cost` computes it) and each one's count.

    Rates given as floats (0.2) mean the decimal the user wrote: ``Decimal(repr(x))``.
    """
    stacked = np.column_stack(records)
    unique, counts = np.unique(stacked, axis=0, return_counts=True)
    hit, write = Decimal(repr(cache_hit_rate)), Decimal(repr(cache_write_rate))
    costs = []
    for p, a, r in unique:
        prompt = Decimal(repr(float(p)))
        cached, written = prompt * hit, prompt * write
        tokens = (
            prompt - cached - written,
            cached,
            written,
            Decimal(repr(float(a))),
            Decimal(repr(float(r))),
        )
        cost = Decimal(0)
        for weight, row in mix:
            cost += weight * sum(price_parts(row.rates(prompt), tokens), Decimal(0))
        costs.append(cost)
    return costs, counts.astype(np.float64)


@dataclass(frozen=True)
class CallStats:
    mean: float  # USD per call
    sd: float  # USD per call
    se: float  # standard error of `mean`
    mean_tokens: tuple[float, float, float]  # prompt, answer, reasoning (after the cap)


def call_stats(
    mix: _Mix,
    tokens: TokenDistribution,
    policy: CotPolicy,
    *,
    cache_hit_rate: float,
    cache_write_rate: float,
    sample: tuple[FloatArray, FloatArray, FloatArray] | None,
) -> CallStats:
    if isinstance(tokens, EmpiricalTokens):
        prompt, answer, reasoning = tokens.records()
    else:
        assert sample is not None
        prompt, answer, reasoning = sample
    cap = policy.cap
    if cap is not None:
        reasoning = np.minimum(reasoning, cap)
    levers = {"cache_hit_rate": cache_hit_rate, "cache_write_rate": cache_write_rate}
    exact = None
    if isinstance(tokens, EmpiricalTokens):
        distinct = len(np.unique(np.column_stack((prompt, answer, reasoning)), axis=0))
        if distinct <= _EXACT_RECORDS:
            exact = _exact_call_costs(mix, (prompt, answer, reasoning), **levers)
    if exact is not None:
        values, counts = exact
        total = sum((v * Decimal(int(c)) for v, c in zip(values, counts, strict=True)), Decimal(0))
        mean = float(total / Decimal(int(counts.sum())))
        floats = np.array([float(v) for v in values])
        n_all = float(counts.sum())
        mean_f = float((floats * counts).sum() / n_all)
        var = float((counts * (floats - mean_f) ** 2).sum() / (n_all - 1)) if n_all > 1 else 0.0
        sd = math.sqrt(max(var, 0.0))
    else:
        costs = _call_costs(mix, prompt, answer, reasoning, **levers)
        mean = float(costs.mean())
        sd = float(costs.std(ddof=1)) if costs.size > 1 else 0.0
    n = tokens.n_observed
    se = sd / math.sqrt(n) if n else 0.0
    return CallStats(
        mean, sd, se, (float(prompt.mean()), float(answer.mean()), float(reasoning.mean()))
    )


def call_token_moments(
    tokens: TokenDistribution,
    sample: tuple[FloatArray, FloatArray, FloatArray] | None,
    cap: float | None,
) -> dict[str, float]:
    """Mean and spread of the tokens the simulation priced (reasoning after the cap)."""
    if isinstance(tokens, EmpiricalTokens):
        prompt, answer, reasoning = tokens.records()
    else:
        assert sample is not None
        prompt, answer, reasoning = sample
    kept = reasoning if cap is None else np.minimum(reasoning, cap)
    out: dict[str, float] = {}
    for name, values in (("prompt", prompt), ("answer", answer), ("reasoning", kept)):
        n = values.size
        mean = float(values.mean())
        # The spread from the sum of squares (one BLAS dot, no temporary arrays): token counts
        # are far from cancelling, and the figure is reported, not computed with.
        squares = float(np.dot(values, values))
        var = (squares - n * mean * mean) / (n - 1) if n > 1 else 0.0
        out[f"{name}_mean"] = mean
        out[f"{name}_sd"] = math.sqrt(max(var, 0.0))
    return out
