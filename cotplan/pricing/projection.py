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
3. Periods. Month rows are calendar months from `Workload.start`; a price change dated inside
   a month applies from its day on (the month's queries are split by days, each part drawn at
   its price), so a scheduled change lands where it belongs. Day rows are each month's average
   day (the month's spend over its days). Year rows sum twelve months; the total row sums the
   horizon; fiscal quarters and fiscal years (`rollups`) sum their months, each month's draw
   counted once. P10/P50/P90 are percentiles over the draws (a P10 of a sum is not the sum of
   P10s; means add up). The chance of going over a budget is the share of draws over it.

Not modelled: fast/priority tiers, regional surcharges and taxes. Negotiated terms
(`cotplan.pricing.terms`) apply to each month's draws when given: the periods are then what is
paid.

This module holds the entry point `project_costs` and its result (`Projection`, with CSV and
XLSX export); several projections side by side (`compare_scenarios`, `project_growth`) live in
`cotplan.pricing.comparison`, the inputs in `cotplan.pricing.workload`, the CoT policies in
`cotplan.pricing.policies` (both re-exported here) and the Monte Carlo in
`cotplan.pricing.simulation`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.periods import Budget, BudgetCheck, check_fiscal_year_start
from cotplan.pricing.policies import CotPolicy, FixedCap, PlannerCap, Uncapped, cap_policy
from cotplan.pricing.simulation import simulate
from cotplan.pricing.table import PriceRow, PriceTable, price_table
from cotplan.pricing.terms import Terms
from cotplan.pricing.workload import (
    EmpiricalTokens,
    FloatArray,
    ParametricTokens,
    TokenDistribution,
    Workload,
    fraction,
    positive_int,
)
from cotplan.validation import require_int

__all__ = [
    "MAX_DRAWS",
    "Comparison",
    "CotPolicy",
    "EmpiricalTokens",
    "FixedCap",
    "ParametricTokens",
    "PlannerCap",
    "Projection",
    "TokenDistribution",
    "Uncapped",
    "Workload",
    "check_draws",
    "project_costs",
]


# ---------------------------------------------------------------------------------------------
# Public results


def check_common(
    permutations: Any, cache_hit_rate: Any, cache_write_rate: Any, batch_share: Any
) -> tuple[int, float, float, float]:
    hit = fraction(cache_hit_rate, "cache_hit_rate")
    write = fraction(cache_write_rate, "cache_write_rate")
    if hit + write > 1.0:
        raise InputError(
            f"plus `cache_hit_rate` ({hit!r}) must be at most 1 (both are shares of the prompt), "
            f"got {write!r}",
            field="cache_write_rate",
        )
    return (
        positive_int(permutations, "permutations"),
        hit,
        write,
        fraction(batch_share, "batch_share"),
    )


def check_provider(provider: Any) -> str | None:
    if provider is None:
        return None
    if not isinstance(provider, str) or not provider.strip():
        raise InputError(f"must be a provider name or None, got {provider!r}", field="provider")
    return provider.strip()


#: More draws than this would take minutes and gigabytes for no visible gain in the percentiles.
MAX_DRAWS = 10_000_000


def check_draws(draws: Any, seed: Any) -> tuple[int, int]:
    """`draws` (100 to `MAX_DRAWS`) and `seed` (a whole number >= 0), checked."""
    n = positive_int(draws, "draws")
    if n < 100:
        raise InputError(f"must be at least 100 for stable percentiles, got {n}", field="draws")
    if n > MAX_DRAWS:
        raise InputError(f"must be at most {MAX_DRAWS:,}, got {n:,}", field="draws")
    seed = require_int(seed, "seed", low=0)
    return n, seed


def check_tokens(tokens: Any) -> TokenDistribution:
    if not isinstance(tokens, TokenDistribution):
        raise InputError("must be EmpiricalTokens(...) or ParametricTokens(...)", field="tokens")
    return tokens


def _prices_frame(rows: Sequence[PriceRow]) -> pd.DataFrame:
    return pd.DataFrame([r.to_dict() for r in rows])


@dataclass(frozen=True)
class Projection:
    """Projected spend for one model and policy.

    `frame` has one row per period: ``day`` (each month's average day), ``month``, ``year``
    (every complete twelve months) and ``total``, with expected queries and mean, P10, P50 and
    P90 spend in USD (float64), the expected USD per 1,000 queries of the period, the price
    that held (``price_from``: the date it took effect; ``price_change``: a change inside the
    month; ``price_source``) and, with a budget, the chance of going over it
    (``p_over_budget``). `rollups` has the fiscal quarters and fiscal years (fiscal years
    start in month `fiscal_year_start`; partial ones at the ends of the horizon are marked).
    `budget` is the `BudgetCheck` (None without a budget). `assumptions` holds every input
    needed to rerun it, `inputs` every input as entered beside what the simulation drew,
    `prices` the price rows used and `price_changes` the scheduled changes inside the horizon.
    With negotiated terms the spend is what is paid (`usd_per_1k_queries` and `per_query_usd`
    stay at list price) and `terms_notes` says what applied.
    """

    frame: pd.DataFrame
    model: str
    policy: str
    per_query_usd: float
    assumptions: dict[str, Any]
    prices: pd.DataFrame
    totals: FloatArray = field(repr=False, compare=False)
    rollups: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)
    budget: BudgetCheck | None = None
    inputs: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)
    price_changes: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)
    fiscal_year_start: int = 1
    terms_notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The period table (a copy)."""
        return self.frame.copy()

    def monthly(self) -> pd.DataFrame:
        """The month rows alone (a copy): their spend sums to the horizon's."""
        return self.frame[self.frame["period"] == "month"].reset_index(drop=True)

    def assumptions_frame(self) -> pd.DataFrame:
        """The inputs as a two-column table (values keep their types), for a spreadsheet."""
        return pd.DataFrame(
            {"assumption": list(self.assumptions), "value": list(self.assumptions.values())}
        )

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the period table as CSV, readable by the owner's group (0640)."""
        from cotplan.pricing.excel import write_shared_csv

        write_shared_csv(self.frame, path)

    def to_csvs(self, folder: str | os.PathLike[str], stem: str = "projection") -> list[Path]:
        """Write one CSV per period kind into `folder`: ``<stem>_months.csv``, ``_days.csv``
        (each month's average day), ``_years.csv`` (twelve-month years), ``_quarters.csv``,
        ``_fiscal_years.csv`` and ``_total.csv``, so summing any one file's column never counts
        a dollar twice (the one-file `to_csv` mixes the kinds: its sum is about three times the
        year). Kinds with no rows are not written; returns the paths written, 0640."""
        from cotplan.pricing.excel import write_shared_csv

        target = Path(folder)
        parts = {
            "months": self.frame[self.frame["period"] == "month"],
            "days": self.frame[self.frame["period"] == "day"],
            "years": self.frame[self.frame["period"] == "year"],
            "quarters": self.rollups[self.rollups["period"] == "quarter"],
            "fiscal_years": self.rollups[self.rollups["period"] == "fiscal_year"],
            "total": self.frame[self.frame["period"] == "total"],
        }
        written = []
        for kind, part in parts.items():
            if len(part):
                path = target / f"{stem}_{kind}.csv"
                write_shared_csv(part.reset_index(drop=True), path)
                written.append(path)
        return written

    def to_excel(self, path: str | os.PathLike[str]) -> None:
        """Write an XLSX workbook an analyst can sum (`cotplan.pricing.excel`): a summary
        sheet first (the totals, the budget, price changes in the horizon, the inputs as
        entered and the price sources), then months, quarters and fiscal years on sheets of
        their own, so a SUM over any one of them equals the horizon's total; 0640."""
        from cotplan.pricing.excel import projection_workbook

        projection_workbook(self, path)


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
        """Write the comparison table as CSV, readable by the owner's group (0640)."""
        from cotplan.pricing.excel import write_shared_csv

        write_shared_csv(self.frame, path)

    def monthly_means(self) -> pd.DataFrame:
        """Mean spend per month, one column per scenario (``<scenario> mean_usd``): each
        column sums to that scenario's total, where the long `monthly` table would add up
        every scenario together."""
        wide = self.monthly.pivot(index=["label", "start"], columns="scenario", values="mean_usd")
        wide = wide[list(self.projections)]
        wide.columns = [f"{name} mean_usd" for name in wide.columns]
        return wide.reset_index()

    def to_excel(self, path: str | os.PathLike[str]) -> None:
        """Write an XLSX workbook, mode 0640: summary, comparison, monthly (mean spend per
        month, a column per scenario, each summing to its total), monthly_detail (the long
        table with P10..P90 and prices), assumptions and prices sheets; shares as fractions
        with a percent format."""
        assumptions = pd.concat(
            [p.assumptions_frame().assign(scenario=name) for name, p in self.projections.items()]
        )[["scenario", "assumption", "value"]]
        prices = pd.concat([p.prices for p in self.projections.values()]).drop_duplicates(
            subset=["provider", "model", "effective_from"]
        )
        from cotplan.pricing.excel import price_sources, write_workbook

        columns = [
            "scenario",
            "model",
            "policy",
            "usd_per_query",
            "total_mean_usd",
            "total_p10_usd",
            "total_p50_usd",
            "total_p90_usd",
            "savings_mean_usd",
            "savings_pct",
            "savings_p10_usd",
            "savings_p90_usd",
        ]
        write_workbook(
            path,
            None,
            self.frame[columns],
            {
                "comparison": self.frame,
                "monthly": self.monthly_means(),
                "monthly_detail": self.monthly,
                "assumptions": assumptions,
                "prices": prices,
            },
            title=f"Scenarios compared, USD over {self.frame.attrs.get('horizon', 'the horizon')}"
            f" (baseline: {self.baseline}); savings P10..P90 are of the paired difference",
            beside={"Assumptions": assumptions, "Price sources": price_sources(prices)},
        )


def check_budget(budget: Any) -> Budget | None:
    if budget is None or isinstance(budget, Budget):
        return budget
    raise InputError(
        f"must be Budget(usd, per='month' or 'year') or None, got {budget!r}", field="budget"
    )


def _inputs_frame(
    workload: Workload,
    tokens: TokenDistribution,
    drawn: dict[str, float],
    levers: dict[str, Any],
) -> pd.DataFrame:
    """Every input as entered beside what the simulation drew from it.

    The token rows compare the means and spreads entered (or observed in the sample) with
    those of the tokens actually priced; the reasoning row is after the cap, so a cap shows as
    a lower simulated mean. Inputs applied exactly (rates, shares, volumes) have no second
    value.
    """
    rows: list[dict[str, Any]] = []
    entered: dict[str, tuple[float | None, float | None]]

    def add(name: str, value: Any, simulated: Any = None, note: str = "") -> None:
        rows.append({"input": name, "as_entered": value, "simulated": simulated, "note": note})

    if isinstance(tokens, ParametricTokens):
        kind = "lognormal, mean and spread as entered"
        entered = {
            "prompt": (tokens.prompt_mean, tokens.prompt_sd),
            "answer": (tokens.output_mean, tokens.output_sd),
            "reasoning": (tokens.reasoning_mean, tokens.reasoning_sd),
        }
    elif isinstance(tokens, EmpiricalTokens):
        kind = f"an observed sample of {tokens.n_observed} calls, priced record by record"
        if tokens.skipped:
            kind += f" ({tokens.skipped} left out: their usage could not be trusted)"
        prompt, answer, reasoning = tokens.records()
        entered = {
            name: (float(v.mean()), float(v.std(ddof=1)))
            for name, v in (("prompt", prompt), ("answer", answer), ("reasoning", reasoning))
        }
    else:
        # A distribution of the caller's own: only what it drew is known.
        kind = "a token distribution of the caller's own"
        entered = {part: (None, None) for part in ("prompt", "answer", "reasoning")}
    add("tokens", type(tokens).__name__, None, kind)
    add("n_observed", tokens.n_observed, None, "calls behind the means (sets their uncertainty)")
    for part in ("prompt", "answer", "reasoning"):
        mean, sd = entered[part]
        after_cap = (
            " (after the cap)" if part == "reasoning" and levers["policy"] != "uncapped" else ""
        )
        add(f"{part}_tokens_mean", mean, drawn[f"{part}_mean"], f"per call{after_cap}")
        add(f"{part}_tokens_sd", sd, drawn[f"{part}_sd"], f"per call{after_cap}")
    for name in (
        "queries_per_day",
        "queries_per_month",
        "growth_rate",
        "growth_per",
        "horizon_months",
        "volume_cv",
    ):
        add(name, getattr(workload, name))
    add("start", workload.start, workload.first_day, "the first month (default: next month)")
    for name, value in levers.items():
        add(name, value)
    return pd.DataFrame(rows, columns=["input", "as_entered", "simulated", "note"])


def _prices_of(row: PriceRow) -> tuple[Any, ...]:
    """What a call pays under `row`: its rates, tiers and hours, not its dates or source."""
    return (
        row.short_rates(),
        row.long_rates(),
        row.long_context_threshold,
        row.batch_discount,
        tuple((t.tier, _prices_of(t.row)) for t in row.tiers),
        tuple((w.start, w.end, _prices_of(w.row)) for w in row.time_of_day),
    )


def _price_changes(run: Any, permutations: int) -> pd.DataFrame:
    """Every change of price inside the horizon: when, from what to what, and its source."""
    rows: list[dict[str, Any]] = []
    before: PriceRow | None = None
    for month in run.segments:
        for row, first, _ in month:
            # A row looked up again each month is a new object with the same prices, and a
            # price re-dated without changing is no change: only a different price is listed.
            if before is not None and _prices_of(row) != _prices_of(before):
                old = run.stats[before.effective_from or date.min].mean
                new = run.stats[row.effective_from or date.min].mean
                rows.append(
                    {
                        "date": first,
                        "provider": row.provider,
                        "model": row.model,
                        "input_per_mtok_before": before.input_per_mtok,
                        "input_per_mtok": row.input_per_mtok,
                        "output_per_mtok_before": before.output_per_mtok,
                        "output_per_mtok": row.output_per_mtok,
                        "usd_per_1k_queries_before": 1000.0 * permutations * old,
                        "usd_per_1k_queries": 1000.0 * permutations * new,
                        "cost_change": new / old - 1.0 if old > 0 else float("nan"),
                        "source": row.source,
                    }
                )
            before = row
    columns = [
        "date",
        "provider",
        "model",
        "input_per_mtok_before",
        "input_per_mtok",
        "output_per_mtok_before",
        "output_per_mtok",
        "usd_per_1k_queries_before",
        "usd_per_1k_queries",
        "cost_change",
        "source",
    ]
    return pd.DataFrame(rows, columns=columns)


def project(
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
    budget: Budget | None = None,
    fiscal_year_start: int = 1,
    terms: Terms | None = None,
) -> Projection:
    if not isinstance(workload, Workload):
        raise InputError("must be a Workload(...)", field="workload")
    tokens = check_tokens(tokens)
    chosen = cap_policy(policy)
    perms, cache, write, batch = check_common(
        permutations, cache_hit_rate, cache_write_rate, batch_share
    )
    seller = check_provider(provider)
    run = simulate(
        model=model,
        workload=workload,
        tokens=tokens,
        policy=chosen,
        permutations=perms,
        cache_hit_rate=cache,
        cache_write_rate=write,
        batch_share=batch,
        draws=draws,
        seed=seed,
        table=table,
        today=today,
        provider=seller,
        budget=budget,
        fiscal_year_start=fiscal_year_start,
        terms=terms,
    )
    first_stats = next(iter(run.stats.values()))
    prompt, answer, reasoning = first_stats.mean_tokens
    name = run.rows[0].model
    assumptions: dict[str, Any] = {
        "model": name,
        "provider": run.rows[0].provider,
        "price_source": run.rows[0].source,
        "policy": chosen.label,
        "permutations": perms,
        "cache_hit_rate": cache,
        "cache_write_rate": write,
        "batch_share": batch,
        "queries_per_day": workload.queries_per_day,
        "queries_per_month": workload.queries_per_month,
        "growth_rate": workload.growth_rate,
        "growth_per": workload.growth_per,
        "horizon_months": workload.horizon_months,
        "start": workload.first_day.isoformat(),
        "volume_cv": workload.volume_cv,
        "tokens": type(tokens).__name__,
        "n_observed": tokens.n_observed,
        "mean_prompt_tokens_per_call": round(prompt, 3),
        "mean_answer_tokens_per_call": round(answer, 3),
        "mean_reasoning_tokens_per_call": round(reasoning, 3),
        "usd_per_call": first_stats.mean,
        "usd_per_query": run.per_query_usd,
        "draws": draws,
        "seed": seed,
        "money": "float64 Monte Carlo (exact Decimal arithmetic is in call_cost)",
    }
    if budget is not None:
        assumptions.update(budget_usd=budget.usd, budget_per=budget.per)
    assumptions["fiscal_year_start"] = fiscal_year_start
    if terms is not None:
        assumptions["terms"] = terms.source or "negotiated terms"
    levers = {
        "policy": chosen.label,
        "permutations": perms,
        "cache_hit_rate": cache,
        "cache_write_rate": write,
        "batch_share": batch,
        "budget_usd": None if budget is None else budget.usd,
        "budget_per": None if budget is None else budget.per,
        "fiscal_year_start": fiscal_year_start,
        "draws": draws,
        "seed": seed,
    }
    frame = run.frame
    frame.attrs.update(model=name, policy=chosen.label)
    return Projection(
        frame=frame,
        model=name,
        policy=chosen.label,
        per_query_usd=run.per_query_usd,
        assumptions=assumptions,
        prices=_prices_frame(run.rows),
        totals=run.totals,
        rollups=run.rollups,
        budget=run.budget,
        inputs=_inputs_frame(workload, tokens, run.token_moments, levers),
        price_changes=_price_changes(run, perms),
        fiscal_year_start=fiscal_year_start,
        terms_notes=run.terms_notes,
    )


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
    budget: Budget | None = None,
    fiscal_year_start: int | str = 1,
    terms: Terms | None = None,
) -> Projection:
    """Project daily, monthly and annual spend with P10/P50/P90 (see the module docstring).

    `policy`: None (uncapped), an int cap, `Uncapped()`, `FixedCap(k)` or `PlannerCap(k*)`.
    `permutations` calls are made per query (permutation-averaged answers).
    `cache_hit_rate` is the share of prompt tokens read from the cache, `cache_write_rate` the
    share written to it; `batch_share` the share of calls sent through the batch API.
    `provider` names the seller when several price the model. `draws` Monte Carlo draws,
    seeded by `seed`; money is float64 here. A price change dated inside a month applies from
    its day on; a price read more than 180 days before `today` (default: the real today) warns
    (`StalePriceWarning`). `budget` (`Budget(usd, per="month" or "year")`) adds the chance of
    going over it; `fiscal_year_start` (1-12 or a month name) sets the fiscal quarters and
    years of `Projection.rollups`. `terms` (`cotplan.pricing.terms.read_terms`) applies the
    model's provider's negotiated discounts, tiers, commitments and credits month by month.
    """
    n, s = check_draws(draws, seed)
    checked = check_budget(budget)
    fys = check_fiscal_year_start(fiscal_year_start)
    return project(
        model,
        workload,
        tokens,
        policy=policy,
        permutations=permutations,
        cache_hit_rate=cache_hit_rate,
        cache_write_rate=cache_write_rate,
        batch_share=batch_share,
        draws=n,
        seed=s,
        table=table or price_table(),
        today=today or date.today(),
        provider=provider,
        budget=checked,
        fiscal_year_start=fys,
        terms=terms,
    )
