"""The vectorised Monte Carlo behind a spend projection.

Takes each call's cost from `cotplan.pricing.call_vectors`, then draws the spend of every month
for every scenario draw with moment-matched gamma sums; the method is described in
`cotplan.pricing.projection`'s docstring. Everything here is private to `cotplan.pricing`:
`simulate` returns the frame and draws that `projection` wraps in results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd

from cotplan.pricing.call_vectors import CallStats, call_stats, call_token_moments, token_mix
from cotplan.pricing.gamma_sums import SumModel, draws_summary
from cotplan.pricing.periods import (
    PERIOD_COLUMNS,
    Budget,
    BudgetCheck,
    Budgeting,
    fiscal_period,
)
from cotplan.pricing.policies import CotPolicy
from cotplan.pricing.table import PriceRow, PriceTable
from cotplan.pricing.terms import Terms, TermsLedger
from cotplan.pricing.workload import EmpiricalTokens, FloatArray, TokenDistribution, Workload

__all__: list[str] = []

# ---------------------------------------------------------------------------------------------
# Monte Carlo (the gamma sums and the summaries: `cotplan.pricing.gamma_sums`)


#: One month's prices: (row, first day it holds in the month, share of the month's days).
_Segment = tuple[PriceRow, date, float]


@dataclass
class _Simulation:
    """One Monte Carlo run of a projection: the period frames, draws of the total, prices used."""

    frame: pd.DataFrame
    totals: FloatArray
    stats: dict[date, CallStats]
    rows: list[PriceRow]
    per_query_usd: float
    rollups: pd.DataFrame
    budget: BudgetCheck | None
    segments: list[list[_Segment]]
    token_moments: dict[str, float]
    terms_notes: tuple[str, ...] = ()


def _month_segments(
    table: PriceTable,
    model: str,
    provider: str | None,
    start: date,
    days: int,
    *,
    tiers: bool = False,
) -> list[_Segment]:
    """The prices that hold in a month: a change dated inside it applies from its day on.
    With `tiers`, so does a change of a batch price alone (it starts or stops holding)."""
    end = start + timedelta(days=days - 1)
    moved = table.changes(model, start, end, provider=provider)
    found = {r.effective_from for r in moved if r.effective_from is not None}
    if tiers:
        held = [table.lookup(model, on=start, warn=False, provider=provider), *moved]
        # Only batch: a projection prices no flex or priority call, so their dates move nothing.
        found |= {d for r in held for d in r.tier_bounds(("batch",)) if start < d <= end}
    changes = sorted(found)
    bounds: list[date] = [start, *changes]
    out: list[_Segment] = []
    for i, first in enumerate(bounds):
        after = bounds[i + 1] if i + 1 < len(bounds) else end + timedelta(days=1)
        row = table.lookup(model, on=first, warn=False, provider=provider)
        out.append((row, first, (after - first).days / days))
    return out


@dataclass
class _Group:
    """A run of consecutive months that roll up into one quarter or fiscal year.

    Its spend per draw is the running total at its end minus `before`, the running total
    before its first month (None: it starts the horizon), rather than a sum of its own: one
    subtraction per group instead of an addition per month and group.
    """

    kind: str
    key: tuple[int, int]
    first: int
    before: FloatArray | None


_FRAME_COLUMNS = [
    "period",
    "index",
    *PERIOD_COLUMNS,
    "price_as_of",
    "usd_per_1k_queries",
    "price_from",
    "price_change",
    "price_source",
    "p_over_budget",
]
_ROLLUP_COLUMNS = [
    "period",
    "label",
    "fiscal_year",
    "quarter",
    "start",
    "months",
    "complete",
    "days",
    "queries",
    "mean_usd",
    "p10_usd",
    "p50_usd",
    "p90_usd",
    "usd_per_1k_queries",
    "p_over_budget",
]
#: Mean, P10, P50 and P90 of one period's draws.
_Summary = tuple[float, float, float, float]


@dataclass
class _Priced:
    """The prices of every month: its segments, the key of the blend each segment pays, the
    per-call cost statistics of each blend, and the rows used (each once, in order)."""

    segments: list[list[_Segment]]
    seg_keys: list[list[Any]]
    stats_by_row: dict[Any, CallStats]
    rows: list[PriceRow]
    first_of_row: dict[int, Any]


def price_months(
    table: PriceTable,
    model: str,
    provider: str | None,
    months: pd.DataFrame,
    *,
    hours: Any,
    batch_share: float,
    today: date,
    stats: Any,
) -> _Priced:
    """Each month's price segments, and the cost of a call in each blend they pay (`stats`
    prices a blend), computed once per distinct blend."""
    # Keyed by the blend a segment pays (its rows and weights): two months at one price share
    # one entry, and a batch price that starts inside a row's span makes a new one.
    priced = _Priced([], [], {}, [], {})
    for start, days in zip(months["start"], months["days"], strict=True):
        month = _month_segments(table, model, provider, start, int(days), tiers=batch_share > 0)
        priced.seg_keys.append([])
        for row, first, _ in month:
            mix = token_mix(row, first, hours, batch_share)
            # By value, not identity: a batch price made from a row's discount is a new object
            # each month, and keying it by id ran the million-draw pricing once per month.
            mix_key = tuple(mix)
            priced.seg_keys[-1].append(mix_key)
            if mix_key in priced.stats_by_row:
                continue
            if id(row) not in priced.first_of_row:
                # Prices are picked by day but judged stale by the day the projection is made:
                # a price read today is not stale for next year's months.
                row.warn_if_stale(today, stacklevel=5)
                priced.rows.append(row)
                priced.first_of_row[id(row)] = mix_key
            priced.stats_by_row[mix_key] = stats(mix)
        priced.segments.append(month)
    return priced


def sum_models(
    priced: _Priced,
    *,
    permutations: int,
    volume_cv: float,
    draws: int,
    rng_mean: np.random.Generator,
    rng_volume: np.random.Generator,
) -> dict[Any, SumModel]:
    """Per draw and blend: mean and variance of the spend of one query's worth of calls,
    scaled by the draw's volume; a month then multiplies both by its expected queries."""
    u = rng_mean.standard_normal(draws)
    if volume_cv > 0:
        s2 = math.log1p(volume_cv**2)
        volume = np.exp(rng_volume.standard_normal(draws) * math.sqrt(s2) - s2 / 2.0)
    else:
        volume = np.ones(draws)
    per_row: dict[Any, SumModel] = {}
    for mix_key, st in priced.stats_by_row.items():
        mean_call = np.maximum(st.mean + st.se * u, 0.0)
        per_row[mix_key] = SumModel.build(
            volume * (permutations * mean_call), volume * (permutations * st.sd * st.sd)
        )
    return per_row


def _source_of(month: list[_Segment]) -> str:
    parts = [month[0][0].source]
    parts += [f"from {first}: {row.source}" for row, first, _ in month[1:]]
    return "; ".join(parts)


class _MonthLoop:
    """The month loop: each month's spend drawn per draw and added to the running total, the
    twelve-month years and the open fiscal quarter and year, with a record for each period as
    it closes. Draws come from `rng` in month order, so a run is reproducible from its seed."""

    def __init__(
        self,
        months: pd.DataFrame,
        priced: _Priced,
        per_row: dict[Any, SumModel],
        *,
        permutations: int,
        draws: int,
        budget: Budget | None,
        fiscal_year_start: int,
        rng: np.random.Generator,
        ledger: TermsLedger | None = None,
    ) -> None:
        self.ledger = ledger
        self.labels: list[str] = [str(v) for v in months["label"]]
        self.starts: list[date] = list(months["start"])
        self.days_in: list[int] = [int(v) for v in months["days"]]
        self.volumes: list[float] = [float(v) for v in months["queries"]]
        self.priced, self.per_row, self.rng = priced, per_row, rng
        self.draws, self.budget, self.fiscal_year_start = draws, budget, fiscal_year_start
        # Expected USD per query in each month: its prices weighted by the days each holds.
        self.per_query = [
            permutations
            * sum(seg[2] * priced.stats_by_row[k].mean for seg, k in zip(month, keys, strict=True))
            for month, keys in zip(priced.segments, priced.seg_keys, strict=True)
        ]
        self.checks = Budgeting(budget, draws)
        self.records: list[dict[str, Any]] = []
        self.day_records: list[dict[str, Any]] = []
        self.total = np.zeros(draws)
        # With a one-year horizon the year is the total: skip a second accumulation and
        # percentile.
        self.one_year = len(self.labels) == 12
        self.year = np.zeros(0 if self.one_year else draws)
        self.year_records: list[dict[str, Any]] = []
        self.year_start = 0
        self.year_summaries: dict[tuple[int, int], tuple[_Summary, float]] = {}
        self.groups: dict[str, _Group | None] = {"quarter": None, "fiscal_year": None}
        self.rollups: list[dict[str, Any]] = []
        self.month_summaries: list[_Summary] = []
        self.spans: dict[tuple[int, int], tuple[_Summary, float]] = {}

    def per_1k(self, first: int, last: int) -> float:
        """Expected USD per 1,000 queries over months first..last (volume-weighted)."""
        volumes = self.volumes[first : last + 1]
        q = sum(volumes)
        if q <= 0:
            return 1000.0 * self.per_query[first]
        spend = sum(v * c for v, c in zip(volumes, self.per_query[first : last + 1], strict=True))
        return 1000.0 * spend / q

    def run(self) -> None:
        pending: list[tuple[_Group, int]] = []
        for i in range(len(self.labels)):
            keys = self._open_groups(i)
            spend = self._draw(i)
            if self.ledger is not None:
                # What is paid, not the list price: every period, budget and saving below
                # is then the negotiated spend, month by month as the invoice runs.
                spend = self.ledger.pay(self.labels[i], spend)
            self.total += spend
            if not self.one_year:
                self.year += spend
            self._month_records(i, spend)
            if (i + 1) % 12 == 0:
                self._close_year(i)
            for kind, key, next_key in keys:
                group = self.groups[kind]
                assert group is not None
                if next_key != key:
                    pending.append((group, i))
                    self.groups[kind] = None
            # Years are summarised above before a fiscal year that equals one reuses them.
            for group, last in pending:
                self._close(group, last)
            pending.clear()

    def _open_groups(self, i: int) -> tuple[tuple[str, Any, Any], ...]:
        """Roll-ups: a quarter or fiscal year starts at month `i` if none is open; it closes
        when the next month belongs to another. Returns each kind's key and next key."""
        fy, quarter = fiscal_period(self.starts[i], self.fiscal_year_start)
        following = (
            fiscal_period(self.starts[i + 1], self.fiscal_year_start)
            if i + 1 < len(self.starts)
            else None
        )
        keys = (
            ("quarter", (fy, quarter), following),
            ("fiscal_year", (fy, 0), None if following is None else (following[0], 0)),
        )
        snapshot: FloatArray | None = None
        for kind, key, next_key in keys:
            if self.groups[kind] is None:
                if i > 0 and next_key == key and snapshot is None:
                    snapshot = self.total.copy()  # shared by a quarter and year starting together
                self.groups[kind] = _Group(kind, key, i, snapshot if i > 0 else None)
        return keys

    def _draw(self, i: int) -> FloatArray:
        """Month `i`'s spend per draw."""
        month, seg_keys, queries = self.priced.segments[i], self.priced.seg_keys[i], self.volumes[i]
        z = self.rng.standard_normal(self.draws)
        spend = self.per_row[seg_keys[0]].draw(queries * month[0][2], z, self.rng)
        for (_, _, share), seg_key in zip(month[1:], seg_keys[1:], strict=True):
            # A price change inside the month: the days after it are drawn at the new price.
            spend += self.per_row[seg_key].draw(
                queries * share, self.rng.standard_normal(self.draws), self.rng
            )
        return spend

    def _month_records(self, i: int, spend: FloatArray) -> None:
        """Month `i`'s record and its average day's."""
        label, month, queries = self.labels[i], self.priced.segments[i], self.volumes[i]
        per_month = self.budget is not None and self.budget.per == "month"
        p_month = self.checks.check("month", label, spend) if per_month else math.nan
        # Last use of this month's draws: the percentiles may reorder them.
        summary = draws_summary(spend, in_place=True)
        self.month_summaries.append(summary)
        mean, p10, p50, p90 = summary
        first_row = month[0][0]
        common = {
            "index": i + 1,
            "start": self.starts[i],
            "days": self.days_in[i],
            "price_as_of": first_row.as_of,
            "usd_per_1k_queries": 1000.0 * self.per_query[i],
            "price_from": first_row.effective_from,
            "price_change": month[1][1] if len(month) > 1 else None,
            "price_source": _source_of(month),
            "p_over_budget": p_month,
        }
        self.records.append(
            {
                "period": "month",
                "label": label,
                "queries": queries,
                **common,
                "mean_usd": mean,
                "p10_usd": p10,
                "p50_usd": p50,
                "p90_usd": p90,
            }
        )
        d = float(self.days_in[i])
        self.day_records.append(
            {
                "period": "day",
                "label": f"{label} average day",
                "queries": queries / d,
                **common,
                "days": 1,
                "mean_usd": mean / d,
                "p10_usd": p10 / d,
                "p50_usd": p50 / d,
                "p90_usd": p90 / d,
                "p_over_budget": math.nan,
            }
        )

    def _close_year(self, i: int) -> None:
        """The twelve months ending with month `i`: their record, and a fresh year."""
        first = self.year_start
        values = self.total if self.one_year else self.year
        year_label = f"year {(i + 1) // 12} ({self.labels[first]} to {self.labels[i]})"
        p_year = math.nan
        if self.budget is not None and self.budget.per == "year":
            p_year = self.checks.check("year", year_label, values)
        # The running total is kept whole (comparisons pair its draws); a year's own sum is
        # replaced just below.
        summary = draws_summary(values, in_place=not self.one_year)
        self.year_summaries[(first, i)] = (summary, p_year)
        mean, p10, p50, p90 = summary
        self.year_records.append(
            {
                "period": "year",
                "index": (i + 1) // 12,
                "label": year_label,
                "start": self.starts[first],
                "days": sum(self.days_in[first : i + 1]),
                "queries": sum(self.volumes[first : i + 1]),
                "price_as_of": self.priced.segments[i][-1][0].as_of,
                "mean_usd": mean,
                "p10_usd": p10,
                "p50_usd": p50,
                "p90_usd": p90,
                "usd_per_1k_queries": self.per_1k(first, i),
                "p_over_budget": p_year,
            }
        )
        self.year = np.zeros(0 if self.one_year else self.draws)
        self.year_start = i + 1

    def _close(self, group: _Group, last: int) -> None:
        """The record of a quarter or fiscal year that ends with month `last`."""
        n = last - group.first + 1
        fy, quarter = group.key
        labels = self.labels
        span = labels[group.first] if n == 1 else f"{labels[group.first]} to {labels[last]}"
        complete = n == (3 if group.kind == "quarter" else 12)
        name = f"FY{fy}" + (f" Q{quarter}" if group.kind == "quarter" else "")
        label = f"{name} ({span}{'' if complete else ', partial'})"
        reuse = self.year_summaries.get((group.first, last)) or self.spans.get((group.first, last))
        yearly = self.budget is not None and self.budget.per == "year"
        # A budget per year is compared with complete fiscal years; one that is also one of the
        # twelve-month years was compared there and is listed once in the budget table.
        p_over = math.nan
        if n == 1:
            # One month: its figures are the month's own (no second percentile pass).
            summary = self.month_summaries[group.first]
        elif reuse is not None:
            # The same months as a year or a quarter already summarised (a partial fiscal
            # year of three months is its quarter).
            summary, p_over = reuse
        else:
            total = self.total
            spend = total - group.before if group.before is not None else total.copy()
            if group.kind == "fiscal_year" and complete and yearly:
                p_over = self.checks.check("fiscal_year", label, spend)
            summary = draws_summary(spend, in_place=True)
        if group.kind == "quarter" or not (complete and yearly):
            p_over = math.nan
        self.spans[(group.first, last)] = (summary, p_over)
        mean, p10, p50, p90 = summary
        self.rollups.append(
            {
                "period": group.kind,
                "label": label,
                "fiscal_year": fy,
                "quarter": quarter if group.kind == "quarter" else None,
                "start": self.starts[group.first],
                "months": n,
                "complete": complete,
                "days": sum(self.days_in[group.first : last + 1]),
                "queries": sum(self.volumes[group.first : last + 1]),
                "mean_usd": mean,
                "p10_usd": p10,
                "p50_usd": p50,
                "p90_usd": p90,
                "usd_per_1k_queries": self.per_1k(group.first, last),
                "p_over_budget": p_over,
            }
        )

    def frame(self) -> pd.DataFrame:
        """Average days, months, years and the horizon's total, in that order."""
        if self.one_year:
            year_row = self.year_records[0]
            summary = tuple(year_row[k] for k in ("mean_usd", "p10_usd", "p50_usd", "p90_usd"))
        else:
            summary = draws_summary(self.total)
        mean, p10, p50, p90 = summary
        labels = self.labels
        total_record = {
            "period": "total",
            "index": 1,
            "label": f"total ({labels[0]} to {labels[-1]})",
            "start": self.starts[0],
            "days": sum(self.days_in),
            "queries": sum(self.volumes),
            "price_as_of": self.priced.segments[-1][-1][0].as_of,
            "mean_usd": mean,
            "p10_usd": p10,
            "p50_usd": p50,
            "p90_usd": p90,
            "usd_per_1k_queries": self.per_1k(0, len(labels) - 1),
            "p_over_budget": math.nan,
        }
        records = [*self.day_records, *self.records, *self.year_records, total_record]
        return pd.DataFrame(records, columns=_FRAME_COLUMNS)

    def rollup_frame(self) -> pd.DataFrame:
        """Quarters first, then fiscal years, each in calendar order."""
        rollups = pd.DataFrame(self.rollups, columns=_ROLLUP_COLUMNS)
        rollups["quarter"] = rollups["quarter"].astype("Int64")
        return pd.concat(
            [rollups[rollups["period"] == "quarter"], rollups[rollups["period"] == "fiscal_year"]],
            ignore_index=True,
        )


def simulate(
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
    budget: Budget | None = None,
    fiscal_year_start: int = 1,
    terms: Terms | None = None,
) -> _Simulation:
    """The phases of a run: price every month, draw the per-query models, run the month loop,
    then build the frames."""
    months = workload.months()
    # Independent streams per purpose, so scenarios compared with one seed share their draws
    # (common random numbers) whatever their token distributions consume.
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]
    rng_tokens, rng_mean, rng_volume, rng_months = streams
    sample = None
    if not isinstance(tokens, EmpiricalTokens):
        sample = tokens.sample(draws, rng_tokens)
    table.check_date(today, stacklevel=4)

    def stats(mix: Any) -> CallStats:
        return call_stats(
            mix,
            tokens,
            policy,
            cache_hit_rate=cache_hit_rate,
            cache_write_rate=cache_write_rate,
            sample=sample,
        )

    priced = price_months(
        table,
        model,
        provider,
        months,
        hours=workload.hours,
        batch_share=batch_share,
        today=today,
        stats=stats,
    )
    per_row = sum_models(
        priced,
        permutations=permutations,
        volume_cv=workload.volume_cv,
        draws=draws,
        rng_mean=rng_mean,
        rng_volume=rng_volume,
    )
    ledger = None if terms is None else TermsLedger(terms, priced.rows[0].provider)
    loop = _MonthLoop(
        months,
        priced,
        per_row,
        permutations=permutations,
        draws=draws,
        budget=budget,
        fiscal_year_start=fiscal_year_start,
        rng=rng_months,
        ledger=ledger if ledger is not None and ledger.active else None,
    )
    loop.run()
    stats_by_row = priced.stats_by_row
    first_stats = stats_by_row[priced.seg_keys[0][0]]
    return _Simulation(
        frame=loop.frame(),
        totals=loop.total,
        stats={
            r.effective_from or date.min: stats_by_row[priced.first_of_row[id(r)]]
            for r in priced.rows
        },
        rows=priced.rows,
        per_query_usd=permutations * first_stats.mean,
        rollups=loop.rollup_frame(),
        budget=loop.checks.result(),
        segments=priced.segments,
        token_moments=call_token_moments(tokens, sample, policy.cap),
        terms_notes=_terms_notes(ledger, terms),
    )


def _terms_notes(ledger: TermsLedger | None, terms: Terms | None) -> tuple[str, ...]:
    """What the terms did: the ledger's notes, or that the file has none for this provider
    (a terms file for another provider must not pass for a discount silently applied)."""
    if ledger is None or terms is None:
        return ()
    if not ledger.active:
        return (f"{ledger.provider}: no negotiated terms in {terms.source or 'the file'}; "
                "list prices",)  # fmt: skip
    return tuple(ledger.finish())
