"""A portfolio of workloads (several features on several models, each growing at its own rate)
projected together, with one company-wide P10/P50/P90.

The percentiles of a sum are not the sum of percentiles: a company's P90 is lower than the sum
of its features' P90s when their surprises are independent, and close to it when one driver
moves them all. Here both happen. Each workload keeps its own uncertainty (token counts, the
estimate of their mean, its own `volume_cv`), drawn from its own random streams; and every
draw shares one growth shock: in draw j, each workload's monthly growth rate is its own rate
plus ``growth_beta * growth_sd * s_j``, the same standard normal ``s_j`` for every workload
(a common growth factor: the business grows faster or slower for all its features at once).
The draws of every workload are added draw by draw, month by month, so the combined
percentiles are those of the company's total.

A workload's month is drawn as a single projection draws it (the gamma sum of its calls at
the expected volume, `cotplan.pricing.gamma_sums`) and scaled by the draw's volume ratio.
Negotiated terms (`cotplan.pricing.terms`) apply to each provider's combined spend.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.io import read_document
from cotplan.pricing.call_vectors import call_stats
from cotplan.pricing.gamma_sums import draws_summary
from cotplan.pricing.simulation import price_months, sum_models
from cotplan.pricing.table import PriceTable, price_table
from cotplan.pricing.terms import Terms, TermsLedger
from cotplan.pricing.workload import (
    EmpiricalTokens,
    ParametricTokens,
    TokenDistribution,
    Workload,
)

__all__ = ["Portfolio", "PortfolioWorkload", "project_portfolio", "read_portfolio"]


@dataclass(frozen=True)
class PortfolioWorkload:
    """One workload of a portfolio: a `name`, the `model` it calls, its `Workload` (volume,
    own growth, horizon, start) and `tokens`, the levers a single projection takes, its
    exposure to the shared growth factor (`growth_beta`, 1 = fully exposed, 0 = none) and its
    `tags` (team, feature), carried into the results."""

    name: str
    model: str
    workload: Workload
    tokens: TokenDistribution
    policy: Any = None
    provider: str | None = None
    permutations: int = 1
    cache_hit_rate: float = 0.0
    cache_write_rate: float = 0.0
    batch_share: float = 0.0
    growth_beta: float = 1.0
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Portfolio:
    """A portfolio projection. `months`: per month the combined mean, P10, P50 and P90 (what is
    paid, after any terms) and each workload's mean (``<name> mean_usd``). `workloads`: per
    workload its model, provider, tags, the horizon's mean, P10, P50 and P90 at list price and
    its share of the mean. `total`: the combined horizon's mean, P10, P50, P90 and, beside
    them, the sum of the workloads' P10s and P90s (what adding percentiles would have said).
    `notes`: terms applied, credits past the horizon."""

    months: pd.DataFrame
    workloads: pd.DataFrame
    total: dict[str, float]
    notes: tuple[str, ...] = ()
    growth_sd: float = 0.0
    draws: int = 0
    seed: int = 0

    def to_frame(self) -> pd.DataFrame:
        """The month table (a copy)."""
        return self.months.copy()


@dataclass
class _Run:
    """One workload's pricing and draws, ready for the month loop."""

    item: PortfolioWorkload
    provider: str
    labels: list[str]
    volumes: list[float]
    priced: Any
    per_row: Any
    rng: np.random.Generator
    ratio: Any
    scale: Any
    total: Any
    month_means: dict[str, float] = field(default_factory=dict)


def _prepare(
    item: PortfolioWorkload,
    seeds: np.random.SeedSequence,
    shock: Any,
    growth_sd: float,
    *,
    draws: int,
    table: PriceTable,
    today: date,
) -> _Run:
    from cotplan.pricing.policies import cap_policy
    from cotplan.pricing.projection import check_common

    policy = cap_policy(item.policy)
    perms, cache, write, batch = check_common(
        item.permutations, item.cache_hit_rate, item.cache_write_rate, item.batch_share
    )
    rng_tokens, rng_mean, rng_volume, rng_months = (
        np.random.default_rng(s) for s in seeds.spawn(4)
    )
    sample = None
    if not isinstance(item.tokens, EmpiricalTokens):
        sample = item.tokens.sample(draws, rng_tokens)

    def stats(mix: Any) -> Any:
        return call_stats(
            mix, item.tokens, policy, cache_hit_rate=cache, cache_write_rate=write, sample=sample
        )

    wl = item.workload
    months = wl.months()
    priced = price_months(
        table,
        item.model,
        item.provider,
        months,
        hours=wl.hours,
        batch_share=batch,
        today=today,
        stats=stats,
    )
    per_row = sum_models(
        priced,
        permutations=perms,
        volume_cv=wl.volume_cv,
        draws=draws,
        rng_mean=rng_mean,
        rng_volume=rng_volume,
    )
    growth = wl.monthly_growth
    # The draw's monthly growth, relative to the workload's own: the shared shock moves it.
    ratio = np.maximum(1.0 + growth + item.growth_beta * growth_sd * shock, 0.0) / (1.0 + growth)
    return _Run(
        item=item,
        provider=priced.rows[0].provider,
        labels=[str(v) for v in months["label"]],
        volumes=[float(v) for v in months["queries"]],
        priced=priced,
        per_row=per_row,
        rng=rng_months,
        ratio=ratio,
        scale=np.ones(draws),
        total=np.zeros(draws),
    )


def _month(run: _Run, i: int, draws: int) -> Any:
    """Workload `run`'s spend in its month `i`, per draw, at list price."""
    segments, keys = run.priced.segments[i], run.priced.seg_keys[i]
    queries = run.volumes[i]
    spend = run.per_row[keys[0]].draw(
        queries * segments[0][2], run.rng.standard_normal(draws), run.rng
    )
    for (_, _, share), key in zip(segments[1:], keys[1:], strict=True):
        # A price change inside the month: the days after it are drawn at the new price.
        spend += run.per_row[key].draw(queries * share, run.rng.standard_normal(draws), run.rng)
    if i > 0:
        run.scale *= run.ratio
    spend *= run.scale
    return spend


def project_portfolio(
    workloads: list[PortfolioWorkload],
    *,
    growth_sd: float = 0.0,
    draws: int = 100_000,
    seed: int = 0,
    table: PriceTable | None = None,
    today: date | None = None,
    terms: Terms | None = None,
) -> Portfolio:
    """Project every workload of a portfolio with one shared growth shock (`growth_sd`: the
    standard deviation of the monthly growth rate common to all, 0.02 for two points) and
    combine them draw by draw: the company's P10/P50/P90 per month and over the horizon.
    `terms` (negotiated discounts, tiers, commitments, credits) apply per provider."""
    from cotplan.pricing.projection import check_draws

    n, seed = check_draws(draws, seed)
    if not workloads:
        raise InputError("needs at least one workload", field="workloads")
    names = [w.name for w in workloads]
    if len(set(names)) < len(names):
        raise InputError(f"workload names repeat: {', '.join(names)}", field="workloads")
    if not (math.isfinite(growth_sd) and 0.0 <= growth_sd <= 1.0):
        raise InputError(f"must be between 0 and 1, got {growth_sd!r}", field="growth_sd")
    chosen = table or price_table()
    day = today or date.today()
    streams = np.random.SeedSequence(seed).spawn(len(workloads) + 1)
    shock = np.random.default_rng(streams[0]).standard_normal(n)
    runs = [
        _prepare(w, s, shock, growth_sd, draws=n, table=chosen, today=day)
        for w, s in zip(workloads, streams[1:], strict=True)
    ]
    labels = sorted({label for run in runs for label in run.labels})
    ledgers = {p: TermsLedger(terms, p) for p in {r.provider for r in runs}} if terms else {}
    total = np.zeros(n)
    rows = []
    for label in labels:
        by_provider: dict[str, Any] = defaultdict(lambda: np.zeros(n))
        for run in runs:
            if label not in run.labels:
                continue
            spend = _month(run, run.labels.index(label), n)
            run.total += spend
            run.month_means[label] = float(spend.mean())
            by_provider[run.provider] += spend
        combined = np.zeros(n)
        for provider, spend in by_provider.items():
            ledger = ledgers.get(provider)
            combined += ledger.pay(label, spend) if ledger is not None else spend
        total += combined
        mean, p10, p50, p90 = draws_summary(combined, in_place=True)
        row = {"label": label, "mean_usd": mean, "p10_usd": p10, "p50_usd": p50, "p90_usd": p90}
        row |= {f"{r.item.name} mean_usd": r.month_means.get(label, 0.0) for r in runs}
        rows.append(row)
    per_workload = []
    for run in runs:
        mean, p10, p50, p90 = draws_summary(run.total, in_place=True)
        per_workload.append({
            "workload": run.item.name, "model": run.priced.rows[0].model,
            "provider": run.provider, **run.item.tags, "mean_usd": mean, "p10_usd": p10,
            "p50_usd": p50, "p90_usd": p90,
        })  # fmt: skip
    frame = pd.DataFrame(per_workload)
    frame["share"] = frame["mean_usd"] / frame["mean_usd"].sum()
    mean, p10, p50, p90 = draws_summary(total, in_place=True)
    summary = {
        "mean_usd": mean,
        "p10_usd": p10,
        "p50_usd": p50,
        "p90_usd": p90,
        "sum_of_p10_usd": float(frame["p10_usd"].sum()),
        "sum_of_p90_usd": float(frame["p90_usd"].sum()),
    }
    notes = tuple(note for ledger in ledgers.values() for note in ledger.finish())
    return Portfolio(pd.DataFrame(rows), frame, summary, notes, growth_sd, n, seed)


# ---------------------------------------------------------------------------------------------
# The portfolio file

_WORKLOAD_KEYS = {
    "name", "model", "provider", "queries_per_day", "queries_per_month", "growth", "growth_per",
    "volume_cv", "prompt_mean", "prompt_sd", "output_mean", "output_sd", "reasoning_mean",
    "reasoning_sd", "n_observed", "cap", "permutations", "cache_hit_rate", "cache_write_rate",
    "batch_share", "growth_beta", "tags", "start", "months",
}  # fmt: skip
_TOP_KEYS = {"start", "months", "growth_sd", "workloads"}


def _number(entry: dict[str, Any], key: str, where: str, source: str, default: Any) -> Any:
    value = entry.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"must be a number, got {value!r}", field=f"{where}.{key}", source=source)
    return value


def _month_start(value: Any, where: str, source: str) -> date | None:
    if value is None:
        return None
    text = str(value).strip()
    try:
        return date.fromisoformat(text if len(text) > 7 else f"{text}-01")
    except ValueError:
        raise InputError(f"must be YYYY-MM, got {value!r}", field=where, source=source) from None


def read_portfolio(path: str | os.PathLike[str]) -> tuple[list[PortfolioWorkload], float]:
    """A portfolio file (TOML or JSON): top-level ``start`` (YYYY-MM), ``months`` and
    ``growth_sd``, then one ``[[workloads]]`` table each with ``name``, ``model``, a volume
    (``queries_per_day`` or ``queries_per_month``), ``growth`` (``growth_per`` month or year),
    the token means and spreads as `cost project` takes them (``prompt_mean``, ``output_mean``,
    ...), and optionally ``cap``, ``batch_share``, ``cache_hit_rate``, ``growth_beta``,
    ``provider`` and ``tags`` (a table: team, feature). Returns the workloads and growth_sd.
    Errors name the file and the workload's field."""
    source = str(Path(path).expanduser())
    data = read_document(path)
    if not isinstance(data, dict) or not isinstance(data.get("workloads"), list):
        raise InputError("needs a list of [[workloads]]", field="workloads", source=source)
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}", source=source)
    start = _month_start(data.get("start"), "start", source)
    months = _number(data, "months", "portfolio", source, 12)
    growth_sd = float(_number(data, "growth_sd", "portfolio", source, 0.0))
    out = []
    for i, entry in enumerate(data["workloads"]):
        where = f"workloads[{i}]"
        if not isinstance(entry, dict):
            raise InputError("must be a table", field=where, source=source)
        try:
            out.append(_workload(entry, where, source, start, months))
        except InputError as exc:
            if exc.source is not None:
                raise
            field_name = f"{where}.{exc.field}" if exc.field else where
            message = str(exc).split(": ", 1)[-1] if exc.field else str(exc)
            raise InputError(message, field=field_name, source=source) from None
    return out, growth_sd


def _workload(
    entry: dict[str, Any], where: str, source: str, start: date | None, months: Any
) -> PortfolioWorkload:
    unknown = set(entry) - _WORKLOAD_KEYS
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(sorted(unknown))}", field=where, source=source)
    name, model = entry.get("name"), entry.get("model")
    if not isinstance(name, str) or not name.strip():
        raise InputError("must be a name", field=f"{where}.name", source=source)
    if not isinstance(model, str) or not model.strip():
        raise InputError("must be a model name", field=f"{where}.model", source=source)
    num = {k: _number(entry, k, where, source, None) for k in _WORKLOAD_KEYS - {
        "name", "model", "provider", "growth_per", "tags", "start"}}  # fmt: skip
    own_start = _month_start(entry.get("start"), f"{where}.start", source) or start
    workload = Workload(
        queries_per_day=num["queries_per_day"],
        queries_per_month=num["queries_per_month"],
        growth_rate=num["growth"] or 0.0,
        growth_per=str(entry.get("growth_per", "month")),
        horizon_months=int(num["months"] or months),
        start=own_start,
        volume_cv=num["volume_cv"] or 0.0,
    )
    if num["prompt_mean"] is None or num["output_mean"] is None:
        raise InputError("needs prompt_mean and output_mean", field=where, source=source)
    tokens = ParametricTokens(
        num["prompt_mean"], num["prompt_sd"] or 0.0, num["output_mean"], num["output_sd"] or 0.0,
        num["reasoning_mean"] or 0.0, num["reasoning_sd"] or 0.0,
        None if num["n_observed"] is None else int(num["n_observed"]),
    )  # fmt: skip
    tags = entry.get("tags", {})
    if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
        raise InputError("must be a table of text values", field=f"{where}.tags", source=source)
    provider = entry.get("provider")
    return PortfolioWorkload(
        name=name.strip(),
        model=model.strip(),
        workload=workload,
        tokens=tokens,
        policy=None if num["cap"] is None else int(num["cap"]),
        provider=provider if isinstance(provider, str) else None,
        permutations=int(num["permutations"] or 1),
        cache_hit_rate=num["cache_hit_rate"] or 0.0,
        cache_write_rate=num["cache_write_rate"] or 0.0,
        batch_share=num["batch_share"] or 0.0,
        growth_beta=1.0 if num["growth_beta"] is None else float(num["growth_beta"]),
        tags=dict(tags),
    )
