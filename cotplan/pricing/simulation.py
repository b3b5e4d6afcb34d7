"""The vectorised Monte Carlo behind a spend projection.

Prices token vectors by `price_parts` (exact decimals for an empirical sample), then draws the
spend of every month for every scenario draw with moment-matched gamma sums; the method is
described in `cotplan.pricing.projection`'s docstring. Everything here is private to
`cotplan.pricing`: `_simulate` returns the frame and draws that `projection` wraps in results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from cotplan.pricing.cost import batch_factor, price_parts
from cotplan.pricing.policies import CotPolicy
from cotplan.pricing.table import PriceRow, PriceTable
from cotplan.pricing.workload import EmpiricalTokens, TokenDistribution, Workload, _FloatArray

__all__: list[str] = []

_QUANTILES = (10.0, 50.0, 90.0)


# ---------------------------------------------------------------------------------------------
# Pricing vectors of calls


#: Above this many distinct records an empirical sample is priced in float64, not decimals.
_EXACT_RECORDS = 20_000


def _call_costs(
    row: PriceRow,
    prompt: _FloatArray,
    answer: _FloatArray,
    reasoning: _FloatArray,
    *,
    cache_hit_rate: float,
    cache_write_rate: float,
    batch_share: float,
) -> _FloatArray:
    """USD per call (float64) for token vectors, by `price_parts` with `row`'s rates."""
    cached = prompt * cache_hit_rate
    written = prompt * cache_write_rate
    uncached = prompt - cached - written

    def total(rates: Any) -> _FloatArray:
        a, b, c, d, e, f = price_parts(rates, uncached, cached, written, answer, reasoning,
                                       as_float=True)  # fmt: skip
        out: _FloatArray = a + b + c + d + e + f
        return out

    cost = total(row.short_rates())
    long = row.is_long(prompt)
    if long.any():
        cost = np.where(long, total(row.long_rates()), cost)
    cost *= batch_factor(float(row.batch_discount), batch_share)
    return cost


def _exact_call_costs(
    row: PriceRow,
    records: tuple[_FloatArray, _FloatArray, _FloatArray],
    *,
    cache_hit_rate: float,
    cache_write_rate: float,
    batch_share: float,
) -> tuple[list[Decimal], _FloatArray]:
    """Exact Decimal USD per distinct record (as `call_cost` computes it) and each one's count.

    Rates given as floats (0.2) mean the decimal the user wrote: ``Decimal(repr(x))``.
    """
    stacked = np.column_stack(records)
    unique, counts = np.unique(stacked, axis=0, return_counts=True)
    hit, write = Decimal(repr(cache_hit_rate)), Decimal(repr(cache_write_rate))
    factor = batch_factor(row.batch_discount, Decimal(repr(batch_share)))
    costs = []
    for p, a, r in unique:
        prompt = Decimal(repr(float(p)))
        cached, written = prompt * hit, prompt * write
        parts = price_parts(
            row.rates(prompt), prompt - cached - written, cached, written,
            Decimal(repr(float(a))), Decimal(repr(float(r))),
        )  # fmt: skip
        costs.append(sum(parts, Decimal(0)) * factor)
    return costs, counts.astype(np.float64)


@dataclass(frozen=True)
class _CallStats:
    mean: float  # USD per call
    sd: float  # USD per call
    se: float  # standard error of `mean`
    mean_tokens: tuple[float, float, float]  # prompt, answer, reasoning (after the cap)


def _call_stats(
    row: PriceRow,
    tokens: TokenDistribution,
    policy: CotPolicy,
    *,
    cache_hit_rate: float,
    cache_write_rate: float,
    batch_share: float,
    sample: tuple[_FloatArray, _FloatArray, _FloatArray] | None,
) -> _CallStats:
    if isinstance(tokens, EmpiricalTokens):
        prompt, answer, reasoning = tokens.records()
    else:
        assert sample is not None
        prompt, answer, reasoning = sample
    cap = policy.cap
    if cap is not None:
        reasoning = np.minimum(reasoning, cap)
    levers = {"cache_hit_rate": cache_hit_rate, "cache_write_rate": cache_write_rate,
              "batch_share": batch_share}  # fmt: skip
    exact = None
    if isinstance(tokens, EmpiricalTokens):
        distinct = len(np.unique(np.column_stack((prompt, answer, reasoning)), axis=0))
        if distinct <= _EXACT_RECORDS:
            exact = _exact_call_costs(row, (prompt, answer, reasoning), **levers)
    if exact is not None:
        values, counts = exact
        total = sum((v * Decimal(int(c)) for v, c in zip(values, counts, strict=True)),
                    Decimal(0))  # fmt: skip
        mean = float(total / Decimal(int(counts.sum())))
        floats = np.array([float(v) for v in values])
        n_all = float(counts.sum())
        mean_f = float((floats * counts).sum() / n_all)
        var = float((counts * (floats - mean_f) ** 2).sum() / (n_all - 1)) if n_all > 1 else 0.0
        sd = math.sqrt(max(var, 0.0))
    else:
        costs = _call_costs(row, prompt, answer, reasoning, **levers)
        mean = float(costs.mean())
        sd = float(costs.std(ddof=1)) if costs.size > 1 else 0.0
    n = tokens.n_observed
    se = sd / math.sqrt(n) if n else 0.0
    return _CallStats(
        mean, sd, se, (float(prompt.mean()), float(answer.mean()), float(reasoning.mean()))
    )


# ---------------------------------------------------------------------------------------------
# Monte Carlo


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


def _summary(values: _FloatArray) -> tuple[float, float, float, float]:
    p10, p50, p90 = np.percentile(values, _QUANTILES)
    return float(values.mean()), float(p10), float(p50), float(p90)


@dataclass
class _Simulation:
    """One Monte Carlo run of a projection: the monthly frame, draws of the total, prices used."""

    frame: pd.DataFrame
    totals: _FloatArray
    stats: dict[date, _CallStats]
    rows: list[PriceRow]
    per_query_usd: float


def _simulate(
    *,
    model: str,
    workload: Workload,
    tokens: TokenDistribution,
    policy: CotPolicy,
    permutations: int,
    cache_hit_rate: float,
    cache_write_rate: float,
    batch_share: float,
    draws: int,
    seed: int,
    table: PriceTable,
    today: date,
    provider: str | None,
) -> _Simulation:
    months = workload.months()
    # Independent streams per purpose, so scenarios compared with one seed share their draws
    # (common random numbers) whatever their token distributions consume.
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]
    rng_tokens, rng_mean, rng_volume, rng_months = streams

    sample = None
    if not isinstance(tokens, EmpiricalTokens):
        sample = tokens.sample(draws, rng_tokens)

    rows: list[PriceRow] = []
    stats_by_row: dict[int, _CallStats] = {}
    month_rows: list[PriceRow] = []
    for start in months["start"]:
        # Prices are picked by month but judged stale by the day the projection is made: a
        # price read today is not stale for next year's months.
        row = table.lookup(model, on=start, warn=False, provider=provider)
        if id(row) not in stats_by_row:
            row.warn_if_stale(today, stacklevel=4)
            rows.append(row)
            stats_by_row[id(row)] = _call_stats(
                row, tokens, policy, cache_hit_rate=cache_hit_rate,
                cache_write_rate=cache_write_rate, batch_share=batch_share, sample=sample,
            )  # fmt: skip
        month_rows.append(row)

    u = rng_mean.standard_normal(draws)
    if workload.volume_cv > 0:
        s2 = math.log1p(workload.volume_cv**2)
        volume = np.exp(rng_volume.standard_normal(draws) * math.sqrt(s2) - s2 / 2.0)
    else:
        volume = np.ones(draws)

    # Per draw and price row: mean and variance of the spend of one query's worth of calls,
    # scaled by the draw's volume; a month then multiplies both by its expected queries.
    per_row: dict[int, _SumModel] = {}
    for row in rows:
        st = stats_by_row[id(row)]
        mean_call = np.maximum(st.mean + st.se * u, 0.0)
        per_row[id(row)] = _SumModel.build(
            volume * (permutations * mean_call), volume * (permutations * st.sd * st.sd)
        )

    records: list[dict[str, Any]] = []
    day_records: list[dict[str, Any]] = []
    total = np.zeros(draws)
    # With a one-year horizon the year is the total: skip a second accumulation and percentile.
    one_year = len(months) == 12
    year = np.zeros(0 if one_year else draws)
    year_records: list[dict[str, Any]] = []
    year_start = 0
    labels: list[str] = [str(v) for v in months["label"]]
    starts: list[date] = list(months["start"])
    days_in: list[int] = [int(v) for v in months["days"]]
    volumes: list[float] = [float(v) for v in months["queries"]]
    for i, (label, start, days, queries) in enumerate(
        zip(labels, starts, days_in, volumes, strict=True)
    ):
        row = month_rows[i]
        spend = per_row[id(row)].draw(queries, rng_months.standard_normal(draws), rng_months)
        total += spend
        if not one_year:
            year += spend
        mean, p10, p50, p90 = _summary(spend)
        common = {"index": i + 1, "start": start, "days": days, "price_as_of": row.as_of}
        records.append(
            {"period": "month", "label": label, "queries": queries, **common,
             "mean_usd": mean, "p10_usd": p10, "p50_usd": p50, "p90_usd": p90}
        )  # fmt: skip
        d = float(days)
        day_records.append(
            {"period": "day", "label": f"{label} average day", "queries": queries / d,
             **common, "days": 1, "mean_usd": mean / d, "p10_usd": p10 / d, "p50_usd": p50 / d,
             "p90_usd": p90 / d}
        )  # fmt: skip
        if (i + 1) % 12 == 0:
            mean, p10, p50, p90 = _summary(total) if one_year else _summary(year)
            year_records.append(
                {"period": "year", "index": (i + 1) // 12,
                 "label": f"year {(i + 1) // 12} ({labels[year_start]} to {label})",
                 "start": starts[year_start], "days": sum(days_in[year_start : i + 1]),
                 "queries": sum(volumes[year_start : i + 1]),
                 "price_as_of": row.as_of, "mean_usd": mean, "p10_usd": p10, "p50_usd": p50,
                 "p90_usd": p90}
            )  # fmt: skip
            year = np.zeros(0 if one_year else draws)
            year_start = i + 1
    if one_year:
        year_row = year_records[0]
        mean, p10, p50, p90 = (year_row[k] for k in ("mean_usd", "p10_usd", "p50_usd", "p90_usd"))
    else:
        mean, p10, p50, p90 = _summary(total)
    total_record = {
        "period": "total", "index": 1, "label": f"total ({labels[0]} to {labels[-1]})",
        "start": starts[0], "days": sum(days_in), "queries": sum(volumes),
        "price_as_of": month_rows[-1].as_of,
        "mean_usd": mean, "p10_usd": p10, "p50_usd": p50, "p90_usd": p90,
    }  # fmt: skip
    columns = ["period", "index", "label", "start", "days", "queries", "mean_usd", "p10_usd",
               "p50_usd", "p90_usd", "price_as_of"]  # fmt: skip
    frame = pd.DataFrame([*day_records, *records, *year_records, total_record], columns=columns)
    first_stats = stats_by_row[id(month_rows[0])]
    return _Simulation(
        frame=frame,
        totals=total,
        stats={r.effective_from or date.min: stats_by_row[id(r)] for r in rows},
        rows=rows,
        per_query_usd=permutations * first_stats.mean,
    )
