"""`forecast_spend`: the whole of `cotplan cost project` as one call a notebook can make.

A model's workload (or a portfolio file of several) goes in as the command's options do; out
comes a `SpendForecast` (the baseline and every compared scenario, the low/base/high growth
scenarios, the forecast beside real spend) or a `PortfolioForecast`. Every option is checked
before the price table loads or a draw is made, in the order the command line has always
checked them. Rendering and files (charts sit above pricing) are `cotplan.render.costs`'.

    from cotplan.pricing.forecast import forecast_spend

    forecast = forecast_spend("gpt-6.2-sol", queries_per_day=2000, prompt_mean=900,
                              output_mean=300, reasoning_mean=1200, compare_caps=[512])
    forecast.to_frame()             # one row per scenario
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.inputs import check_out_dir, day_of, month_after, seller_of, whole

__all__ = [
    "ActualsReader",
    "PortfolioForecast",
    "SpendForecast",
    "budget_of",
    "forecast_spend",
    "growth_range",
    "scenarios_of",
    "tokens_of",
]

#: Reads a log of real calls with the price table and "today": `read_actuals` of
#: `cotplan.production.spend` reads the production log too (it sits above pricing).
ActualsReader = Callable[[Path, Any, date | None], Any]


@dataclass(frozen=True)
class SpendForecast:
    """A model's projected spend: `comparison` holds the baseline's and each compared
    scenario's `Projection`; `growth` the low/base/high scenarios (or None); `versus_actuals`
    the forecast's months beside real spend read from `actuals_source` (or None). With
    negotiated terms the spend is what is paid (each projection's `terms_notes` says what
    applied); the currency it is shown in is `scale` per USD, `symbol` and `rate_line` (which
    rate, of which date, from which file; empty in USD). The numbers stay in USD."""

    comparison: Any
    workload: Any
    growth: Any
    versus_actuals: pd.DataFrame | None
    actuals_source: str | None
    budget: Any
    draws: int
    seed: int
    fiscal_year_start: int
    scale: float = 1.0
    symbol: str = "$"
    rate_line: str = ""

    @property
    def baseline(self) -> Any:
        """The baseline scenario's `Projection`."""
        return self.comparison.projections[self.comparison.baseline]

    @property
    def compared(self) -> bool:
        """Whether scenarios beyond the baseline were projected."""
        return len(self.comparison.projections) > 1

    def to_frame(self) -> pd.DataFrame:
        """One row per scenario: spend over the horizon and against the baseline (a copy)."""
        return pd.DataFrame(self.comparison.frame).copy()


@dataclass(frozen=True)
class PortfolioForecast:
    """A portfolio's projection (`cotplan.pricing.portfolio.Portfolio`), its workload count,
    and the currency it is shown in: `scale` per USD, `symbol`, and `rate_line` saying which
    rate (empty in USD)."""

    portfolio: Any
    workloads: int
    growth_sd: float
    scale: float = 1.0
    symbol: str = "$"
    rate_line: str = ""

    def to_frame(self) -> pd.DataFrame:
        """The month table (a copy)."""
        return pd.DataFrame(self.portfolio.months).copy()

    def total_frame(self) -> pd.DataFrame:
        """The horizon in one row: the company's mean, P10, P50 and P90 (what is paid), the
        sums of the workloads' P10s and P90s beside them, what the run took, and the rate the
        command printed its amounts at (empty in USD: the files are in USD either way)."""
        result = self.portfolio
        months = result.months["label"]
        row = {"label": f"{months.iloc[0]} to {months.iloc[-1]}", **result.total,
               "workloads": self.workloads, "growth_sd": self.growth_sd,
               "draws": result.draws, "seed": result.seed,
               "notes": "; ".join(result.notes), "rate": self.rate_line}  # fmt: skip
        return pd.DataFrame([row])

    def to_csvs(self, out: Path) -> list[Path]:
        """The months, the workloads and the horizon as CSV in `out` (created), in USD: one
        file per kind of row, so a SUM over a column counts nothing twice."""
        from cotplan.io import write_csv

        out.mkdir(parents=True, exist_ok=True)
        written = [out / f"portfolio_{kind}.csv" for kind in ("months", "workloads", "total")]
        write_csv(self.portfolio.months, written[0], private=False)
        write_csv(self.portfolio.workloads, written[1], private=False)
        write_csv(self.total_frame(), written[2], private=False)
        return written


def budget_of(budget: float | None, budget_per: str) -> Any:
    """--budget and --budget-per checked: the `Budget`, or None without --budget."""
    from cotplan.pricing.periods import BUDGET_PERIODS, Budget

    if budget_per not in BUDGET_PERIODS:
        raise InputError(f"must be 'month' or 'year', got {budget_per!r}", field="budget_per")
    if budget is not None:
        return Budget(budget, budget_per)
    if budget_per != "month":
        raise InputError("needs --budget", field="budget_per")
    return None


def scenarios_of(
    table: Any,
    model: str,
    seller: str | None,
    *,
    cap: int | None,
    compare_models: Sequence[str],
    compare_caps: Sequence[int],
    levers: dict[str, Any],
) -> list[Any]:
    """The baseline, then each compared model and each compared cap, named by the table's
    own model names; two that would share a name are refused."""
    from cotplan.pricing.comparison import Scenario

    def scenario(name_model: str, k: int | None, sold_by: str | None) -> Scenario:
        label = table.resolve(name_model, provider=sold_by) + ("" if k is None else f", cap {k}")
        return Scenario(label, name_model, policy=k, provider=sold_by, **levers)

    out = [scenario(model, cap, seller)]
    out += [scenario(other, cap, None) for other in compare_models]
    out += [scenario(model, k, seller) for k in compare_caps]
    labels = [s.name for s in out]
    if len(set(labels)) < len(labels):
        raise InputError(
            f"the scenarios repeat one another: {', '.join(labels)}", field="compare_model"
        )
    return out


def tokens_of(
    sample: Path | None,
    *,
    prompt_mean: float | None,
    prompt_sd: float = 0.0,
    output_mean: float | None,
    output_sd: float = 0.0,
    reasoning_mean: float = 0.0,
    reasoning_sd: float = 0.0,
    n_observed: int | None = None,
    completion_mean: float | None = None,
) -> Any:
    """The token distribution: a CSV sample of observed calls, or means and spreads (the
    answer's mean as `output_mean`, or as `completion_mean` less the reasoning inside it)."""
    from cotplan.pricing.projection import EmpiricalTokens, ParametricTokens

    output_mean = _answer_mean(output_mean, completion_mean, reasoning_mean)
    if sample is not None:
        if prompt_mean is not None or output_mean is not None:
            raise InputError(
                "give --sample or --prompt-mean/--output-mean, not both", field="sample"
            )
        try:
            frame = pd.read_csv(sample)
        except FileNotFoundError:
            raise InputError("file not found", field="sample", source=str(sample)) from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise InputError(
                f"not a readable CSV: {exc}", field="sample", source=str(sample)
            ) from exc
        return EmpiricalTokens.from_frame(frame, source=str(sample))
    if prompt_mean is None or output_mean is None:
        raise InputError(
            "give a token sample (--sample FILE.csv) or --prompt-mean and --output-mean",
            field="sample",
        )
    return ParametricTokens(
        prompt_mean, prompt_sd, output_mean, output_sd, reasoning_mean, reasoning_sd, n_observed
    )


def _answer_mean(
    output_mean: float | None, completion_mean: float | None, reasoning_mean: float
) -> float | None:
    """--output-mean, or --completion-mean less the reasoning inside it."""
    if completion_mean is None:
        return output_mean
    if output_mean is not None:
        raise InputError(
            "give --output-mean (answer only) or --completion-mean (answer and reasoning), "
            "not both",
            field="completion_mean",
        )
    if not completion_mean >= reasoning_mean:
        raise InputError(
            f"{completion_mean!r} is less than --reasoning-mean ({reasoning_mean!r}), which it "
            "includes",
            field="completion_mean",
        )
    return completion_mean - reasoning_mean


def growth_range(
    workload: Any, low: float | None, high: float | None
) -> tuple[float, float] | None:
    """The low and high growth rates, both or neither, around the workload's own."""
    growth = workload.growth_rate
    if low is None and high is None:
        return None
    if low is None or high is None:
        missing = "growth_low" if low is None else "growth_high"
        raise InputError("give --growth-low and --growth-high together", field=missing)
    for name, value in (("growth_low", low), ("growth_high", high)):
        if not value > -1.0:
            raise InputError(f"must be above -1 (-100%), got {value!r}", field=name)
    if not low <= growth <= high:
        raise InputError(
            f"needs low <= --growth <= high, got {low!r}, {growth!r}, {high!r}",
            field="growth_low" if low > growth else "growth_high",
        )
    workload.check_growth(high, "growth_high")
    return low, high


def _currency(
    currency: str | None, rates: Path | None, today: date | None
) -> tuple[float, str, str]:
    """(units per USD, symbol, the line naming the rate and its date) for --currency and
    --rates: the latest rate dated on or before `today` (USD: 1, "$", "")."""
    if currency is None and rates is None:
        return 1.0, "$", ""
    if currency is None or rates is None:
        raise InputError("give --currency and --rates together", field="currency")
    from cotplan.pricing.currency import read_rates

    used = read_rates(rates).rate(currency, today or date.today())
    if used.currency == "USD":
        return 1.0, "$", ""
    line = f"amounts in {used.currency} at {used.label} ({rates.name}); files stay in USD"
    return float(used.per_usd), f"{used.currency} ", line


def _terms(path: Path | None) -> Any:
    if path is None:
        return None
    from cotplan.pricing.terms import read_terms

    return read_terms(path)


def _portfolio(
    path: Path,
    *,
    draws: int,
    seed: int,
    table: Any,
    today: date | None,
    terms: Any,
    shown: tuple[float, str, str],
) -> PortfolioForecast:
    """Read and project a portfolio, shown in the currency `shown` gives (`_currency`)."""
    from cotplan.pricing.portfolio import project_portfolio, read_portfolio

    workloads, growth_sd = read_portfolio(path)
    result = project_portfolio(workloads, growth_sd=growth_sd, draws=draws, seed=seed,
                               table=table, today=today, terms=terms)  # fmt: skip
    return PortfolioForecast(result, len(workloads), growth_sd, *shown)


def _is_portfolio(model: str | None, portfolio: Path | None) -> bool:
    """Whether a portfolio is projected (a MODEL or a --portfolio, one of them)."""
    if (model is None) == (portfolio is None):
        raise InputError("give a MODEL or --portfolio FILE, not both", field="portfolio")
    return portfolio is not None


def forecast_spend(
    model: str | None = None,
    *,
    portfolio: Path | None = None,
    terms: Path | None = None,
    currency: str | None = None,
    rates: Path | None = None,
    queries_per_day: float | None = None,
    queries_per_month: float | None = None,
    growth: float = 0.0,
    growth_per: str = "month",
    months: int = 12,
    start: date | str | None = None,
    volume_cv: float = 0.0,
    hour_profile: str | None = None,
    sample: Path | None = None,
    prompt_mean: float | None = None,
    prompt_sd: float = 0.0,
    output_mean: float | None = None,
    completion_mean: float | None = None,
    output_sd: float = 0.0,
    reasoning_mean: float = 0.0,
    reasoning_sd: float = 0.0,
    n_observed: int | None = None,
    cap: int | None = None,
    permutations: int = 1,
    cache_hit_rate: float = 0.0,
    cache_write_rate: float = 0.0,
    batch_share: float = 0.0,
    compare_models: Sequence[str] | None = None,
    compare_caps: Sequence[int] | None = None,
    growth_low: float | None = None,
    growth_high: float | None = None,
    draws: int | str = 100_000,
    seed: int = 0,
    out: Path | None = None,
    provider: str | None = None,
    on: date | str | None = None,
    prices: str | os.PathLike[str] | None = None,
    budget: float | None = None,
    budget_per: str = "month",
    fiscal_year_start: int | str = 1,
    actuals: Path | None = None,
    read_actuals: ActualsReader | None = None,
) -> SpendForecast | PortfolioForecast:
    """Project a model's spend (or a `portfolio` file's) with P10/P50/P90: the keywords are
    `cotplan cost project`'s options (`cotplan cost project --help` says each).

    The workload is `Workload`'s (`start` a date or YYYY-MM); the tokens are a `sample` CSV of
    observed calls or means and spreads (`tokens_of`); `cap`, `permutations` and the cache and
    batch shares make the baseline `Scenario`, compared with each of `compare_models` and
    `compare_caps`. `terms` (a terms file) applies negotiated discounts, tiers, commitments
    and credits to what each scenario's provider is paid; `currency` with `rates` (a CSV of
    dated rates) shows the amounts in that currency at the latest rate on or before `on`
    (the rate and its date in `rate_line`). `out` is only checked here (a folder that can be
    written): the files are `cotplan.render.costs.write_forecast`'s. `actuals` is a log of
    real calls, read by `read_actuals` (default: a JSONL file of provider responses)."""
    from cotplan.pricing.periods import check_fiscal_year_start
    from cotplan.pricing.projection import check_draws
    from cotplan.pricing.table import price_table

    today = day_of(on, "on")
    n_draws, _ = check_draws(whole(draws, "draws") if isinstance(draws, str) else draws, seed)
    check_out_dir(out, "out")
    # Terms and rates files are read before anything is drawn: a typo in one costs nothing.
    portfolio_run = _is_portfolio(model, portfolio)
    shown = _currency(currency, rates, today)
    negotiated = _terms(terms)
    if portfolio_run:
        assert portfolio is not None
        return _portfolio(portfolio, draws=n_draws, seed=seed, table=price_table(prices),
                          today=today, terms=negotiated, shown=shown)  # fmt: skip
    assert model is not None
    limit = budget_of(budget, budget_per)
    fys = check_fiscal_year_start(fiscal_year_start)
    if actuals is not None and not actuals.is_file():
        raise InputError(f"{str(actuals)!r} is not a file", field="actuals")
    planned = _workload(queries_per_day=queries_per_day, queries_per_month=queries_per_month,
                        growth_rate=growth, growth_per=growth_per, horizon_months=months,
                        start=day_of(start, "start") or month_after(today), volume_cv=volume_cv,
                        hour_profile=hour_profile)  # fmt: skip
    spread = growth_range(planned, growth_low, growth_high)
    distribution = tokens_of(sample, prompt_mean=prompt_mean, prompt_sd=prompt_sd,
                             output_mean=output_mean, output_sd=output_sd,
                             reasoning_mean=reasoning_mean, reasoning_sd=reasoning_sd,
                             n_observed=n_observed, completion_mean=completion_mean)  # fmt: skip
    table = price_table(prices)
    seller = seller_of(provider, table)
    # Read before the projection runs: a bad log is refused before anything is drawn.
    spent = None if actuals is None else _read_actuals(actuals, table, today, read_actuals)
    levers = {"permutations": permutations, "cache_hit_rate": cache_hit_rate,
              "cache_write_rate": cache_write_rate, "batch_share": batch_share}  # fmt: skip
    chosen = scenarios_of(table, model, seller, cap=cap, compare_models=compare_models or (),
                          compare_caps=compare_caps or (), levers=levers)  # fmt: skip
    run: dict[str, Any] = {"draws": n_draws, "seed": seed, "table": table, "today": today,
                           "budget": limit, "fiscal_year_start": fys,
                           "terms": negotiated}  # fmt: skip
    forecast = _project(model, planned, distribution, chosen, run, spread=spread, spent=spent,
                        seller=seller, cap=cap, levers=levers)  # fmt: skip
    return replace(forecast, scale=shown[0], symbol=shown[1], rate_line=shown[2])


def _workload(*, hour_profile: str | None, **fields: Any) -> Any:
    from cotplan.pricing.hours import hour_profile as profile_of
    from cotplan.pricing.projection import Workload

    return Workload(**fields, hour_profile=profile_of(hour_profile))


def _read_actuals(path: Path, table: Any, today: date | None, reader: Any) -> Any:
    from cotplan.pricing.actuals import actuals_from_jsonl

    if reader is None:
        return actuals_from_jsonl(path, table=table, today=today)
    return reader(path, table, today)


def _project(
    model: str,
    workload: Any,
    tokens: Any,
    chosen: list[Any],
    run: dict[str, Any],
    *,
    spread: tuple[float, float] | None,
    spent: Any,
    seller: str | None,
    cap: int | None,
    levers: dict[str, Any],
) -> SpendForecast:
    from cotplan.pricing.actuals import forecast_vs_actuals
    from cotplan.pricing.comparison import compare_scenarios, project_growth

    comparison = compare_scenarios(workload, tokens, chosen, **run)
    growth = None
    if spread is not None:
        low, high = spread
        growth = project_growth(model, workload, tokens, low=low, high=high, policy=cap,
                                provider=seller, **levers, **run)  # fmt: skip
    versus = None
    if spent is not None:
        versus = forecast_vs_actuals(comparison.projections[comparison.baseline], spent)
    return SpendForecast(comparison, workload, growth, versus,
                         None if spent is None else spent.source, run["budget"], run["draws"],
                         run["seed"], run["fiscal_year_start"])  # fmt: skip
