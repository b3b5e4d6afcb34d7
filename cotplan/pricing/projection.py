"""Spend projections: a workload, its token distribution and a CoT policy, priced by Monte Carlo.

Money here is float64 (numpy), not Decimal: a projection is an estimate with a spread, and
vectorised arithmetic is what makes a million draws take well under a second. Exact per-call
arithmetic lives in `cotplan.pricing.cost`.

How one projection is drawn (every draw seeded from `seed`):

1. Per-call cost, by the same formula and rates as `call_cost` (`cost.price_parts`,
   `PriceRow.rates`). The token distribution gives prompt, visible-answer and reasoning tokens
   per call; the CoT policy clips reasoning tokens at its cap; the cache-hit rate moves that
   share of prompt tokens to the cached rate and the cache-write rate that share to the
   cache-write rate; the batch share of calls gets the batch discount; a prompt above the
   long-context threshold pays the long rates. For an `EmpiricalTokens` sample every distinct
   record is priced in exact decimals (so one repeated call costs exactly what `call_cost`
   says); a `ParametricTokens` distribution is sampled `draws` times and priced in float64.
   This gives the mean and standard deviation of the cost of one call (and of one query, which
   makes `permutations` calls).
2. Scenario draws (`draws` of them). Each draw has its own mean cost per call, off the
   estimate by the estimate's standard error (sample standard deviation over the square root
   of the sample size: from a 50-record sample the mean is uncertain, and P10/P90 show it), and
   its own volume multiplier (lognormal, mean 1, coefficient of variation `volume_cv`); both
   persist through the horizon. Within a month the spend of N calls is a sum of N per-call
   costs, drawn from the moment-matched gamma distribution (Wilson-Hilferty transform of one
   normal draw; exact gamma draws when the shape is below 1): right mean, right variance,
   never negative.
3. Periods. Month rows are calendar months from `Workload.start`; each month uses the price in
   effect on its first day, so a scheduled price change lands in the right month. Day rows are
   each month's average day (the month's spend over its days). Year rows sum twelve months;
   the total row sums the horizon. P10/P50/P90 are percentiles over the draws.

Not modelled: fast/priority tiers, regional surcharges, taxes and negotiated discounts.
"""

from __future__ import annotations

import calendar
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from numbers import Real
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from cotplan.backends.base import Completion
from cotplan.errors import InputError
from cotplan.io import write_csv
from cotplan.pricing.cost import batch_factor, price_parts
from cotplan.pricing.table import PriceRow, PriceTable, price_table

__all__ = [
    "MAX_DRAWS",
    "Comparison",
    "CotPolicy",
    "EmpiricalTokens",
    "FixedCap",
    "ParametricTokens",
    "PlannerCap",
    "Projection",
    "Scenario",
    "TokenDistribution",
    "Uncapped",
    "Workload",
    "check_draws",
    "compare_scenarios",
    "project_costs",
]

_QUANTILES = (10.0, 50.0, 90.0)
_FloatArray = np.ndarray[Any, np.dtype[np.float64]]


# ---------------------------------------------------------------------------------------------
# Validation helpers (one place per entry point; messages name the parameter)


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InputError(f"must be a number, got {value!r}", field=name)
    number = float(value)
    if not math.isfinite(number):
        raise InputError(f"must be a finite number, got {value!r}", field=name)
    return number


def _non_negative(value: Any, name: str) -> float:
    number = _real(value, name)
    if number < 0:
        raise InputError(f"must not be negative, got {value!r}", field=name)
    return number


def _fraction(value: Any, name: str) -> float:
    number = _real(value, name)
    if not 0.0 <= number <= 1.0:
        raise InputError(f"must be between 0 and 1, got {value!r}", field=name)
    return number


def _positive_int(value: Any, name: str) -> int:
    number = _real(value, name)
    if number != int(number):
        raise InputError(f"must be a whole number, got {value!r}", field=name)
    if number < 1:
        raise InputError(f"must be at least 1, got {value!r}", field=name)
    return int(number)


def _token_array(values: Any, name: str) -> _FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("must be a sequence of token counts", field=name) from None
    if array.size == 0:
        raise InputError("must not be empty", field=name)
    bad = ~np.isfinite(array)
    if bad.any():
        raise InputError(
            f"must be finite; position {int(np.argmax(bad))} is {array[bad][0]}", field=name
        )
    if (array < 0).any():
        index = int(np.argmax(array < 0))
        raise InputError(f"must not be negative; position {index} is {array[index]:g}", field=name)
    return array


# ---------------------------------------------------------------------------------------------
# Workload


@dataclass(frozen=True)
class Workload:
    """How many queries, growing how fast, for how long.

    Give `queries_per_day` or `queries_per_month` (the first month's volume). `growth_rate`
    compounds per `growth_per` ("month" or "year"; a yearly rate is spread evenly over the
    months). `start` is the first day of the first month (default: the first day of next
    month). `volume_cv` is the coefficient of variation of the volume itself, for a forecast
    you are unsure of (0 = the volume is known).
    """

    queries_per_day: float | None = None
    queries_per_month: float | None = None
    growth_rate: float = 0.0
    growth_per: str = "month"
    horizon_months: int = 12
    start: date | None = None
    volume_cv: float = 0.0

    def __post_init__(self) -> None:
        if (self.queries_per_day is None) == (self.queries_per_month is None):
            raise InputError(
                "give exactly one of `queries_per_day` and `queries_per_month`",
                field="queries_per_day",
            )
        for name in ("queries_per_day", "queries_per_month"):
            value = getattr(self, name)
            if value is not None:
                _non_negative(value, name)
        growth = _real(self.growth_rate, "growth_rate")
        if growth <= -1.0:
            raise InputError(f"must be above -1 (-100%), got {growth!r}", field="growth_rate")
        if self.growth_per not in ("month", "year"):
            raise InputError(
                f"must be 'month' or 'year', got {self.growth_per!r}", field="growth_per"
            )
        _positive_int(self.horizon_months, "horizon_months")
        if self.horizon_months > 600:
            raise InputError(
                f"must be at most 600 months, got {self.horizon_months}", field="horizon_months"
            )
        if self.start is not None and not isinstance(self.start, date):
            raise InputError(f"must be a date, got {self.start!r}", field="start")
        _non_negative(self.volume_cv, "volume_cv")

    @property
    def monthly_growth(self) -> float:
        """The growth rate per month."""
        if self.growth_per == "year":
            return float((1.0 + self.growth_rate) ** (1.0 / 12.0) - 1.0)
        return float(self.growth_rate)

    @property
    def first_day(self) -> date:
        """The first day of the first month."""
        if self.start is not None:
            return self.start.replace(day=1)
        today = date.today()
        return date(today.year + today.month // 12, today.month % 12 + 1, 1)

    def months(self) -> pd.DataFrame:
        """One row per month: label, first day, days, expected queries."""
        first = self.first_day
        growth = self.monthly_growth
        rows = []
        for i in range(self.horizon_months):
            year, month = divmod(first.month - 1 + i, 12)
            start = date(first.year + year, month + 1, 1)
            days = calendar.monthrange(start.year, start.month)[1]
            factor = (1.0 + growth) ** i
            if self.queries_per_day is not None:
                queries = float(self.queries_per_day) * days * factor
            else:
                queries = float(self.queries_per_month or 0.0) * factor
            rows.append(
                {"label": start.strftime("%Y-%m"), "start": start, "days": days,
                 "queries": queries}
            )  # fmt: skip
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Token distributions


@runtime_checkable
class TokenDistribution(Protocol):
    """Tokens per call: prompt, visible answer, reasoning.

    `sample` returns the three arrays (float64, one entry per call) and `n_observed` is the
    number of real observations behind the distribution (None: treat its mean as known).
    """

    @property
    def n_observed(self) -> int | None: ...

    def sample(self, draws: int, rng: np.random.Generator) -> tuple[
        _FloatArray, _FloatArray, _FloatArray
    ]: ...  # fmt: skip


@dataclass(frozen=True, eq=False)
class EmpiricalTokens:
    """An observed sample of calls, such as calibration records.

    `completion_tokens` follows cotplan's `Usage` convention (reasoning inside completion); pass
    ``reasoning_in_completion=False`` when the counts come from a provider that reports them
    apart (Gemini). Every record is priced exactly; the sample size sets the uncertainty of the
    mean.
    """

    prompt_tokens: Any
    completion_tokens: Any
    reasoning_tokens: Any = None
    reasoning_in_completion: bool = True
    _arrays: tuple[_FloatArray, _FloatArray, _FloatArray] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        prompt = _token_array(self.prompt_tokens, "prompt_tokens")
        completion = _token_array(self.completion_tokens, "completion_tokens")
        if self.reasoning_tokens is None:
            reasoning = np.zeros_like(completion)
        else:
            reasoning = _token_array(self.reasoning_tokens, "reasoning_tokens")
        if not prompt.size == completion.size == reasoning.size:
            raise InputError(
                f"prompt ({prompt.size}), completion ({completion.size}) and reasoning "
                f"({reasoning.size}) token lists must have the same length",
                field="completion_tokens",
            )
        if prompt.size < 2:
            raise InputError("needs at least 2 records", field="prompt_tokens")
        if self.reasoning_in_completion:
            over = reasoning > completion
            if over.any():
                i = int(np.argmax(over))
                raise InputError(
                    f"record {i}: {reasoning[i]:g} reasoning tokens exceed its "
                    f"{completion[i]:g} completion tokens (reasoning is counted inside "
                    "completion; pass reasoning_in_completion=False if it is not)",
                    field="reasoning_tokens",
                )
            answer = completion - reasoning
        else:
            answer = completion
        object.__setattr__(self, "_arrays", (prompt, answer, reasoning))

    @property
    def n_observed(self) -> int:
        return int(self._arrays[0].size)

    def records(self) -> tuple[_FloatArray, _FloatArray, _FloatArray]:
        """Prompt, visible-answer and reasoning tokens of every record."""
        return self._arrays

    def sample(
        self, draws: int, rng: np.random.Generator
    ) -> tuple[_FloatArray, _FloatArray, _FloatArray]:
        index = rng.integers(0, self.n_observed, size=draws)
        prompt, answer, reasoning = self._arrays
        return prompt[index], answer[index], reasoning[index]

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        prompt: str = "prompt_tokens",
        completion: str = "completion_tokens",
        reasoning: str | None = "reasoning_tokens",
        reasoning_in_completion: bool = True,
    ) -> EmpiricalTokens:
        """From DataFrame columns (a missing reasoning column means no reasoning tokens)."""
        for column in (prompt, completion):
            if column not in frame.columns:
                raise InputError(
                    f"no column {column!r}; columns are {list(frame.columns)}", field=column
                )
        has_reasoning = reasoning is not None and reasoning in frame.columns
        return cls(
            frame[prompt].to_numpy(),
            frame[completion].to_numpy(),
            frame[reasoning].to_numpy() if has_reasoning and reasoning else None,
            reasoning_in_completion=reasoning_in_completion,
        )

    @classmethod
    def from_completions(cls, completions: Iterable[Completion]) -> EmpiricalTokens:
        """From completions already made (their `Usage`), e.g. a calibration run."""
        usages = [c.usage for c in completions]
        return cls(
            [u.prompt_tokens for u in usages],
            [u.completion_tokens for u in usages],
            [u.reasoning_tokens for u in usages],
        )


def _lognormal(rng: np.random.Generator, mean: float, sd: float, draws: int) -> _FloatArray:
    if mean == 0.0:
        return np.zeros(draws)
    if sd == 0.0:
        return np.full(draws, mean)
    sigma2 = math.log1p((sd / mean) ** 2)
    return rng.lognormal(math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2), size=draws)


@dataclass(frozen=True)
class ParametricTokens:
    """Tokens per call as mean and standard deviation (independent lognormals).

    `output_*` are visible answer tokens, `reasoning_*` hidden reasoning tokens on top of them.
    `n_observed` is how many calls the means were estimated from, if they were (None: the
    means are taken as known and add no uncertainty).
    """

    prompt_mean: float
    prompt_sd: float
    output_mean: float
    output_sd: float
    reasoning_mean: float = 0.0
    reasoning_sd: float = 0.0
    n_observed: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "prompt_mean", "prompt_sd", "output_mean", "output_sd", "reasoning_mean",
            "reasoning_sd",
        ):  # fmt: skip
            _non_negative(getattr(self, name), name)
        for part in ("prompt", "output", "reasoning"):
            if getattr(self, f"{part}_mean") == 0 and getattr(self, f"{part}_sd") > 0:
                raise InputError(
                    "a zero mean needs a zero spread (token counts are never negative)",
                    field=f"{part}_sd",
                )
        if self.n_observed is not None:
            _positive_int(self.n_observed, "n_observed")

    def sample(
        self, draws: int, rng: np.random.Generator
    ) -> tuple[_FloatArray, _FloatArray, _FloatArray]:
        return (
            _lognormal(rng, self.prompt_mean, self.prompt_sd, draws),
            _lognormal(rng, self.output_mean, self.output_sd, draws),
            _lognormal(rng, self.reasoning_mean, self.reasoning_sd, draws),
        )


# ---------------------------------------------------------------------------------------------
# CoT policies


@dataclass(frozen=True)
class Uncapped:
    """Reasoning runs as long as the model wants."""

    @property
    def cap(self) -> float | None:
        return None

    @property
    def label(self) -> str:
        return "uncapped"


@dataclass(frozen=True)
class FixedCap:
    """Reasoning tokens are clipped at `k` per call (the visible answer is unchanged)."""

    k: int

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, Real) or self.k != int(self.k):
            raise InputError(f"must be a whole number of tokens, got {self.k!r}", field="k")
        if self.k < 0:
            raise InputError(f"must not be negative, got {self.k!r}", field="k")

    @property
    def cap(self) -> float | None:
        return float(self.k)

    @property
    def label(self) -> str:
        return f"cap {int(self.k)}"


@dataclass(frozen=True)
class PlannerCap:
    """Reasoning clipped at a planner's k*: a number, or any object with `budget(n, eps)`."""

    planner: Any
    n: int | None = None
    eps: float | None = None
    k: float = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.planner, Real) and not isinstance(self.planner, bool):
            k = _non_negative(self.planner, "planner")
        elif callable(getattr(self.planner, "budget", None)):
            if self.n is None or self.eps is None:
                raise InputError("a planner needs `n` and `eps` to compute its budget", field="n")
            # BudgetPlanner.budget returns a `Budget` record; float() gives its k*.
            k = _non_negative(
                float(self.planner.budget(self.n, self.eps)), "planner.budget(n, eps)"
            )
        else:
            raise InputError(
                "must be a number or an object with a budget(n, eps) method", field="planner"
            )
        object.__setattr__(self, "k", float(math.ceil(k)))

    @property
    def cap(self) -> float | None:
        return self.k

    @property
    def label(self) -> str:
        return f"planner k*={int(self.k)}"


CotPolicy = Uncapped | FixedCap | PlannerCap


def _policy(value: Any) -> CotPolicy:
    if value is None or value == "uncapped":
        return Uncapped()
    if isinstance(value, Uncapped | FixedCap | PlannerCap):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        number = float(value)
        return FixedCap(int(number)) if number == int(number) else PlannerCap(number)
    raise InputError(
        "must be None, an int cap, Uncapped(), FixedCap(k) or PlannerCap(...)", field="policy"
    )


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


# ---------------------------------------------------------------------------------------------
# Public results


def _check_common(
    permutations: Any, cache_hit_rate: Any, cache_write_rate: Any, batch_share: Any
) -> tuple[int, float, float, float]:
    hit = _fraction(cache_hit_rate, "cache_hit_rate")
    write = _fraction(cache_write_rate, "cache_write_rate")
    if hit + write > 1.0:
        raise InputError(
            f"plus `cache_hit_rate` ({hit!r}) must be at most 1 (both are shares of the prompt), "
            f"got {write!r}",
            field="cache_write_rate",
        )
    return (
        _positive_int(permutations, "permutations"),
        hit,
        write,
        _fraction(batch_share, "batch_share"),
    )


def _check_provider(provider: Any) -> str | None:
    if provider is None:
        return None
    if not isinstance(provider, str) or not provider.strip():
        raise InputError(f"must be a provider name or None, got {provider!r}", field="provider")
    return provider.strip()


#: More draws than this would take minutes and gigabytes for no visible gain in the percentiles.
MAX_DRAWS = 10_000_000


def check_draws(draws: Any, seed: Any) -> tuple[int, int]:
    """`draws` (100 to `MAX_DRAWS`) and `seed` (a whole number >= 0), checked."""
    n = _positive_int(draws, "draws")
    if n < 100:
        raise InputError(f"must be at least 100 for stable percentiles, got {n}", field="draws")
    if n > MAX_DRAWS:
        raise InputError(f"must be at most {MAX_DRAWS:,}, got {n:,}", field="draws")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"must be a non-negative whole number, got {seed!r}", field="seed")
    return n, seed


def _check_tokens(tokens: Any) -> TokenDistribution:
    if not isinstance(tokens, TokenDistribution):
        raise InputError("must be EmpiricalTokens(...) or ParametricTokens(...)", field="tokens")
    return tokens


def _prices_frame(rows: Sequence[PriceRow]) -> pd.DataFrame:
    return pd.DataFrame([r.to_dict() for r in rows])


_SOURCE_COLUMNS = (
    "provider", "model", "effective_from", "effective_to", "input_per_mtok",
    "cached_input_per_mtok", "cache_write_per_mtok", "output_per_mtok", "batch_discount",
    "long_context_threshold", "as_of", "source",
)  # fmt: skip
_HEADLINE = ("label", "queries", "mean_usd", "p10_usd", "p50_usd", "p90_usd")


def _sources(prices: pd.DataFrame) -> pd.DataFrame:
    return prices[[c for c in _SOURCE_COLUMNS if c in prices.columns]]


@dataclass(frozen=True)
class Projection:
    """Projected spend for one model and policy.

    `frame` has one row per period: ``day`` (each month's average day), ``month``, ``year``
    (every complete twelve months) and ``total``, with expected queries and mean, P10, P50 and
    P90 spend in USD (float64). `assumptions` holds every input needed to rerun it and
    `prices` the price rows used.
    """

    frame: pd.DataFrame
    model: str
    policy: str
    per_query_usd: float
    assumptions: dict[str, Any]
    prices: pd.DataFrame
    totals: _FloatArray = field(repr=False, compare=False)

    def to_frame(self) -> pd.DataFrame:
        """The period table (a copy)."""
        return self.frame.copy()

    def assumptions_frame(self) -> pd.DataFrame:
        """The inputs as a two-column table (values keep their types), for a spreadsheet."""
        return pd.DataFrame(
            {"assumption": list(self.assumptions), "value": list(self.assumptions.values())}
        )

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the period table as CSV."""
        write_csv(self.frame, path)

    def to_excel(self, path: str | os.PathLike[str]) -> None:
        """Write an XLSX workbook for an analyst: a summary sheet first (the year and total
        with P10/P50/P90, cost per query, the assumptions and the price sources beside them),
        then the projection, assumptions and prices sheets; currency formats, frozen headers,
        fitted columns."""
        from cotplan.pricing.excel import write_workbook

        frame = self.frame
        first_day = frame[frame["period"] == "day"].head(1)
        first_month = frame[frame["period"] == "month"].head(1)
        totals = frame[frame["period"].isin(("year", "total"))]
        headline = pd.concat([first_day, first_month, totals])[list(_HEADLINE)]
        if len(frame[frame["period"] == "year"]) == 1 and frame["period"].eq("month").sum() == 12:
            headline = headline[headline["label"].map(lambda s: not str(s).startswith("total"))]
        a = self.assumptions
        write_workbook(
            path,
            [("usd_per_query", self.per_query_usd), ("usd_per_call", a["usd_per_call"]),
             ("price_source", a["price_source"])],
            headline,
            {"projection": frame, "assumptions": self.assumptions_frame(),
             "prices": self.prices},
            title=f"Projected spend, USD: {self.model} ({a['provider']}), {self.policy}, "
            f"{a['draws']:,} draws, seed {a['seed']}",
            beside={"Assumptions": self.assumptions_frame(), "Price sources":
                    _sources(self.prices)},
        )  # fmt: skip


@dataclass(frozen=True)
class Scenario:
    """One way to run the workload: a model, a CoT policy and the cost levers."""

    name: str
    model: str
    policy: Any = None
    permutations: int = 1
    cache_hit_rate: float = 0.0
    batch_share: float = 0.0
    tokens: TokenDistribution | None = None
    cache_write_rate: float = 0.0
    provider: str | None = None


@dataclass(frozen=True)
class Comparison:
    """Several scenarios of one workload, side by side, with savings against a baseline.

    `frame` has one row per scenario: horizon spend (mean, P10, P50, P90), average monthly
    spend, cost per query and savings against `baseline` (mean, percent, and P10/P90 of the
    paired difference: every scenario sees the same random draws), then the provider, the
    cache-write rate and where the price came from (`price_source`). `monthly` is the long
    table of month rows of every scenario.
    """

    frame: pd.DataFrame
    monthly: pd.DataFrame
    baseline: str
    projections: dict[str, Projection]

    def to_frame(self) -> pd.DataFrame:
        """The comparison table (a copy)."""
        return self.frame.copy()

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the comparison table as CSV."""
        write_csv(self.frame, path)

    def to_excel(self, path: str | os.PathLike[str]) -> None:
        """Write an XLSX workbook: comparison, monthly, assumptions and prices sheets."""
        assumptions = pd.concat(
            [p.assumptions_frame().assign(scenario=name) for name, p in self.projections.items()]
        )[["scenario", "assumption", "value"]]
        prices = pd.concat([p.prices for p in self.projections.values()]).drop_duplicates(
            subset=["provider", "model", "effective_from"]
        )
        from cotplan.pricing.excel import write_workbook

        columns = ["scenario", "model", "policy", "usd_per_query", "total_mean_usd",
                   "total_p10_usd", "total_p50_usd", "total_p90_usd", "savings_mean_usd",
                   "savings_pct", "savings_p10_usd", "savings_p90_usd"]  # fmt: skip
        write_workbook(
            path,
            None,
            self.frame[columns],
            {"comparison": self.frame, "monthly": self.monthly, "assumptions": assumptions,
             "prices": prices},
            title=f"Scenarios compared, USD over {self.frame.attrs.get('horizon', 'the horizon')}"
            f" (baseline: {self.baseline}); savings P10..P90 are of the paired difference",
            beside={"Assumptions": assumptions, "Price sources": _sources(prices)},
        )  # fmt: skip


def _project(
    model: str,
    workload: Workload,
    tokens: TokenDistribution,
    *,
    policy: Any,
    permutations: Any,
    cache_hit_rate: Any,
    cache_write_rate: Any,
    batch_share: Any,
    draws: int,
    seed: int,
    table: PriceTable,
    today: date,
    provider: Any,
) -> Projection:
    if not isinstance(workload, Workload):
        raise InputError("must be a Workload(...)", field="workload")
    tokens = _check_tokens(tokens)
    chosen = _policy(policy)
    perms, cache, write, batch = _check_common(
        permutations, cache_hit_rate, cache_write_rate, batch_share
    )
    seller = _check_provider(provider)
    run = _simulate(
        model=model, workload=workload, tokens=tokens, policy=chosen, permutations=perms,
        cache_hit_rate=cache, cache_write_rate=write, batch_share=batch, draws=draws, seed=seed,
        table=table, today=today, provider=seller,
    )  # fmt: skip
    first_stats = next(iter(run.stats.values()))
    prompt, answer, reasoning = first_stats.mean_tokens
    name = run.rows[0].model
    assumptions: dict[str, Any] = {
        "model": name, "provider": run.rows[0].provider, "price_source": run.rows[0].source,
        "policy": chosen.label,
        "permutations": perms, "cache_hit_rate": cache, "cache_write_rate": write,
        "batch_share": batch,
        "queries_per_day": workload.queries_per_day,
        "queries_per_month": workload.queries_per_month,
        "growth_rate": workload.growth_rate, "growth_per": workload.growth_per,
        "horizon_months": workload.horizon_months, "start": workload.first_day.isoformat(),
        "volume_cv": workload.volume_cv, "tokens": type(tokens).__name__,
        "n_observed": tokens.n_observed, "mean_prompt_tokens_per_call": round(prompt, 3),
        "mean_answer_tokens_per_call": round(answer, 3),
        "mean_reasoning_tokens_per_call": round(reasoning, 3),
        "usd_per_call": first_stats.mean, "usd_per_query": run.per_query_usd,
        "draws": draws, "seed": seed,
        "money": "float64 Monte Carlo (exact Decimal arithmetic is in call_cost)",
    }  # fmt: skip
    frame = run.frame
    frame.attrs.update(model=name, policy=chosen.label)
    return Projection(
        frame=frame, model=name, policy=chosen.label, per_query_usd=run.per_query_usd,
        assumptions=assumptions, prices=_prices_frame(run.rows), totals=run.totals,
    )  # fmt: skip


def project_costs(
    model: str,
    workload: Workload,
    tokens: TokenDistribution,
    *,
    policy: Any = None,
    permutations: int = 1,
    cache_hit_rate: float = 0.0,
    batch_share: float = 0.0,
    draws: int = 100_000,
    seed: int = 0,
    table: PriceTable | None = None,
    today: date | None = None,
    cache_write_rate: float = 0.0,
    provider: str | None = None,
) -> Projection:
    """Project daily, monthly and annual spend with P10/P50/P90 (see the module docstring).

    `policy`: None (uncapped), an int cap, `Uncapped()`, `FixedCap(k)` or `PlannerCap(k*)`.
    `permutations` calls are made per query (permutation-averaged answers).
    `cache_hit_rate` is the share of prompt tokens read from the cache, `cache_write_rate` the
    share written to it; `batch_share` the share of calls sent through the batch API.
    `provider` names the seller when several price the model. `draws` Monte Carlo draws,
    seeded by `seed`; money is float64 here. Each month uses the price in effect on its first
    day; a price read more than 180 days before `today` (default: the real today) warns
    (`StalePriceWarning`).
    """
    n, s = check_draws(draws, seed)
    return _project(
        model, workload, tokens, policy=policy, permutations=permutations,
        cache_hit_rate=cache_hit_rate, cache_write_rate=cache_write_rate,
        batch_share=batch_share, draws=n, seed=s, table=table or price_table(),
        today=today or date.today(), provider=provider,
    )  # fmt: skip


def _check_scenario(
    sc: Scenario, workload: Any, tokens: Any, table: PriceTable, where: str
) -> None:
    if not isinstance(workload, Workload):
        raise InputError("must be a Workload(...)", field="workload")
    _check_tokens(sc.tokens if sc.tokens is not None else tokens)
    _policy(sc.policy)
    _check_common(sc.permutations, sc.cache_hit_rate, sc.cache_write_rate, sc.batch_share)
    provider = _check_provider(sc.provider)
    if not isinstance(sc.model, str):
        raise InputError(f"must be a model name, got {sc.model!r}", field=f"{where}.model")
    table.lookup(sc.model, on=workload.first_day, warn=False, provider=provider)


def compare_scenarios(
    workload: Workload,
    tokens: TokenDistribution,
    scenarios: Sequence[Scenario],
    *,
    baseline: str | None = None,
    draws: int = 100_000,
    seed: int = 0,
    table: PriceTable | None = None,
    today: date | None = None,
) -> Comparison:
    """The same workload under several scenarios, with savings against `baseline`.

    `baseline` names a scenario (default: the first). All scenarios share `seed`, so their
    draws are paired and the P10/P90 of the savings describe the difference itself.
    """
    n, s = check_draws(draws, seed)
    items = list(scenarios)
    if not items:
        raise InputError("needs at least one scenario", field="scenarios")
    names: list[str] = []
    for i, sc in enumerate(items):
        if not isinstance(sc, Scenario):
            raise InputError("must be a Scenario(...)", field=f"scenarios[{i}]")
        if not sc.name or sc.name in names:
            raise InputError(
                f"scenario names must be unique and non-empty, got {sc.name!r}",
                field=f"scenarios[{i}].name",
            )
        names.append(sc.name)
    base = baseline if baseline is not None else names[0]
    if base not in names:
        raise InputError(f"{base!r} is not a scenario name ({', '.join(names)})",
                         field="baseline")  # fmt: skip
    chosen_table = table or price_table()
    # Every scenario is checked before any is projected: a typo in the last one costs nothing.
    for i, sc in enumerate(items):
        _check_scenario(sc, workload, tokens, chosen_table, f"scenarios[{i}]")
    # A loop, not a comprehension: a stale-price warning then points at the caller, as it does
    # from `project_costs` (a comprehension is one more frame).
    projections: dict[str, Projection] = {}
    for sc in items:
        projections[sc.name] = _project(
            sc.model, workload, sc.tokens if sc.tokens is not None else tokens,
            policy=sc.policy, permutations=sc.permutations, cache_hit_rate=sc.cache_hit_rate,
            cache_write_rate=sc.cache_write_rate, batch_share=sc.batch_share, draws=n, seed=s,
            table=chosen_table, today=today or date.today(), provider=sc.provider,
        )  # fmt: skip
    base_totals = projections[base].totals
    base_mean = float(base_totals.mean())
    rows = []
    for sc in items:
        proj = projections[sc.name]
        total = proj.frame[proj.frame["period"] == "total"].iloc[0]
        months = proj.frame[proj.frame["period"] == "month"]
        saving = base_totals - proj.totals
        s_mean = float(saving.mean())
        s10, s90 = (float(x) for x in np.percentile(saving, [10.0, 90.0]))
        rows.append(
            {"scenario": sc.name, "model": proj.model, "policy": proj.policy,
             "permutations": proj.assumptions["permutations"],
             "cache_hit_rate": proj.assumptions["cache_hit_rate"],
             "batch_share": proj.assumptions["batch_share"],
             "usd_per_query": proj.per_query_usd,
             "monthly_mean_usd": float(months["mean_usd"].mean()),
             "total_mean_usd": float(total["mean_usd"]), "total_p10_usd": float(total["p10_usd"]),
             "total_p50_usd": float(total["p50_usd"]), "total_p90_usd": float(total["p90_usd"]),
             "savings_mean_usd": s_mean,
             "savings_pct": 100.0 * s_mean / base_mean if base_mean > 0 else float("nan"),
             "savings_p10_usd": s10, "savings_p90_usd": s90,
             "provider": proj.assumptions["provider"],
             "cache_write_rate": proj.assumptions["cache_write_rate"],
             "price_source": proj.assumptions["price_source"]}
        )  # fmt: skip
    frame = pd.DataFrame(rows)
    frame.attrs.update(baseline=base, horizon=str(total["label"]))
    monthly = pd.concat(
        [p.frame[p.frame["period"] == "month"].assign(scenario=name)
         for name, p in projections.items()],
        ignore_index=True,
    )  # fmt: skip
    return Comparison(frame=frame, monthly=monthly, baseline=base, projections=projections)
