"""Several projections of one workload: scenarios compared, and low/base/high growth.

`compare_scenarios` projects the same workload under several scenarios (model, CoT policy,
levers) with the same seed, so their draws are paired and the savings' P10/P90 describe the
difference itself; `project_growth` does the same at three growth rates. Each projection is
`cotplan.pricing.projection`'s, where `Comparison` lives beside `Projection` (the chart table,
`cotplan.charts.CHARTS`, finds both there); `GrowthScenarios` exports CSV like them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.periods import Budget, check_fiscal_year_start
from cotplan.pricing.policies import cap_policy
from cotplan.pricing.projection import (
    Comparison,
    Projection,
    check_budget,
    check_common,
    check_draws,
    check_provider,
    check_tokens,
    project,
    project_costs,
)
from cotplan.pricing.table import PriceTable, price_table
from cotplan.pricing.terms import Terms
from cotplan.pricing.workload import TokenDistribution, Workload, real_number

__all__ = ["GrowthScenarios", "Scenario", "compare_scenarios", "project_growth"]


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


def _check_scenario(
    sc: Scenario, workload: Any, tokens: Any, table: PriceTable, where: str
) -> None:
    if not isinstance(workload, Workload):
        raise InputError("must be a Workload(...)", field="workload")
    check_tokens(sc.tokens if sc.tokens is not None else tokens)
    cap_policy(sc.policy)
    check_common(sc.permutations, sc.cache_hit_rate, sc.cache_write_rate, sc.batch_share)
    provider = check_provider(sc.provider)
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
    budget: Budget | None = None,
    fiscal_year_start: int | str = 1,
    terms: Terms | None = None,
) -> Comparison:
    """The same workload under several scenarios, with savings against `baseline`.

    `baseline` names a scenario (default: the first). All scenarios share `seed`, so their
    draws are paired and the P10/P90 of the savings describe the difference itself. `budget`
    and `fiscal_year_start` as in `project_costs`; with a budget the table has each
    scenario's chance of going over it (`p_over_budget`). `terms`: negotiated terms, each
    scenario paying its own provider's (`project_costs`).
    """
    n, s = check_draws(draws, seed)
    checked = check_budget(budget)
    fys = check_fiscal_year_start(fiscal_year_start)
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
        raise InputError(f"{base!r} is not a scenario name ({', '.join(names)})", field="baseline")
    chosen_table = table or price_table()
    # Every scenario is checked before any is projected: a typo in the last one costs nothing.
    for i, sc in enumerate(items):
        _check_scenario(sc, workload, tokens, chosen_table, f"scenarios[{i}]")
    # A loop, not a comprehension: a stale-price warning then points at the caller, as it does
    # from `project_costs` (a comprehension is one more frame).
    projections: dict[str, Projection] = {}
    for sc in items:
        projections[sc.name] = project(
            sc.model,
            workload,
            sc.tokens if sc.tokens is not None else tokens,
            policy=sc.policy,
            permutations=sc.permutations,
            cache_hit_rate=sc.cache_hit_rate,
            cache_write_rate=sc.cache_write_rate,
            batch_share=sc.batch_share,
            draws=n,
            seed=s,
            table=chosen_table,
            today=today or date.today(),
            provider=sc.provider,
            budget=checked,
            fiscal_year_start=fys,
            terms=terms,
        )
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
            {
                "scenario": sc.name,
                "model": proj.model,
                "policy": proj.policy,
                "permutations": proj.assumptions["permutations"],
                "cache_hit_rate": proj.assumptions["cache_hit_rate"],
                "batch_share": proj.assumptions["batch_share"],
                "usd_per_query": proj.per_query_usd,
                "monthly_mean_usd": float(months["mean_usd"].mean()),
                "total_mean_usd": float(total["mean_usd"]),
                "total_p10_usd": float(total["p10_usd"]),
                "total_p50_usd": float(total["p50_usd"]),
                "total_p90_usd": float(total["p90_usd"]),
                "savings_mean_usd": s_mean,
                "savings_pct": 100.0 * s_mean / base_mean if base_mean > 0 else float("nan"),
                # A dearer model than the baseline reads better as "22x the baseline" than as
                # a saving of -2,122.5%.
                "times_baseline": float(total["mean_usd"]) / base_mean
                if base_mean > 0
                else float("nan"),
                "savings_p10_usd": s10,
                "savings_p90_usd": s90,
                "provider": proj.assumptions["provider"],
                "cache_write_rate": proj.assumptions["cache_write_rate"],
                "price_source": proj.assumptions["price_source"],
                "p_over_budget": proj.budget.probability if proj.budget else float("nan"),
            }
        )
    frame = pd.DataFrame(rows)
    frame.attrs.update(baseline=base, horizon=str(total["label"]))
    monthly = pd.concat(
        [
            p.frame[p.frame["period"] == "month"].assign(scenario=name)
            for name, p in projections.items()
        ],
        ignore_index=True,
    )
    return Comparison(frame=frame, monthly=monthly, baseline=base, projections=projections)


@dataclass(frozen=True)
class GrowthScenarios:
    """One projection under low, base and high growth, with the same draws (same seed).

    `frame` has one row per scenario: its growth rate, the horizon's spend (mean, P10, P50,
    P90), the last month's mean spend and, with a budget, the chance of going over it.
    `projections` holds each scenario's `Projection` by name ("low", "base", "high").
    """

    frame: pd.DataFrame
    projections: dict[str, Projection]

    def to_frame(self) -> pd.DataFrame:
        """The scenario table (a copy)."""
        return self.frame.copy()

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the scenario table as CSV, readable by the owner's group (0640)."""
        from cotplan.pricing.excel import write_shared_csv

        write_shared_csv(self.frame, path)


def project_growth(
    model: str,
    workload: Workload,
    tokens: TokenDistribution,
    *,
    low: float,
    high: float,
    draws: int = 100_000,
    seed: int = 0,
    table: PriceTable | None = None,
    today: date | None = None,
    budget: Budget | None = None,
    fiscal_year_start: int | str = 1,
    **levers: Any,
) -> GrowthScenarios:
    """`project_costs` at growth rates `low`, the workload's own (base) and `high`.

    The rates are per `workload.growth_per`, like the base's; `low <= base <= high`. Every
    scenario uses `seed`, so they differ by growth alone, not by their random draws. `levers`
    are `project_costs`' other keyword arguments (policy, permutations, cache_hit_rate, ...).
    """
    if not isinstance(workload, Workload):
        raise InputError("must be a Workload(...)", field="workload")
    rates = {"low": low, "base": workload.growth_rate, "high": high}
    for name in ("low", "high"):
        rate = real_number(rates[name], f"growth_{name}")
        if rate <= -1.0:
            raise InputError(f"must be above -1 (-100%), got {rate!r}", field=f"growth_{name}")
        rates[name] = rate
    n, s = check_draws(draws, seed)
    checked = check_budget(budget)
    fys = check_fiscal_year_start(fiscal_year_start)
    workloads = {name: replace(workload, growth_rate=rate) for name, rate in rates.items()}
    if not rates["low"] <= rates["base"] <= rates["high"]:
        raise InputError(
            f"needs low <= base <= high, got {rates['low']!r}, {rates['base']!r}, "
            f"{rates['high']!r}",
            field="growth_low" if rates["low"] > rates["base"] else "growth_high",
        )
    chosen = table or price_table()
    projections: dict[str, Projection] = {}
    rows = []
    for name, scenario in workloads.items():
        proj = project_costs(
            model,
            scenario,
            tokens,
            draws=n,
            seed=s,
            table=chosen,
            today=today,
            budget=checked,
            fiscal_year_start=fys,
            **levers,
        )
        projections[name] = proj
        total = proj.frame[proj.frame["period"] == "total"].iloc[0]
        last = proj.frame[proj.frame["period"] == "month"].iloc[-1]
        rows.append(
            {
                "scenario": name,
                "growth_rate": scenario.growth_rate,
                "growth_per": scenario.growth_per,
                "total_mean_usd": float(total["mean_usd"]),
                "total_p10_usd": float(total["p10_usd"]),
                "total_p50_usd": float(total["p50_usd"]),
                "total_p90_usd": float(total["p90_usd"]),
                "last_month_mean_usd": float(last["mean_usd"]),
                "p_over_budget": proj.budget.probability if proj.budget else float("nan"),
            }
        )
    return GrowthScenarios(frame=pd.DataFrame(rows), projections=projections)
