"""`cotplan cost prices|call|project|reconcile|actuals`: the price table, one call's cost, spend
projections and the month-end checks. Each command parses its options, calls one function of
`cotplan.pricing` and hands the result to `cotplan.render.costs`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console

from cotplan.render.notes import note, warnings_as_notes

__all__ = ["app", "note", "warnings_as_notes"]

app = typer.Typer(help="API prices, call costs and spend projections.", no_args_is_help=True)
_console = Console()
T = TypeVar("T")
Opt = typer.Option


def _run(fn: Callable[[], T]) -> T:
    with warnings_as_notes():
        return fn()


Prices = Annotated[Path | None, Opt("--prices", help="A price file to override rows.")]
On = Annotated[
    str | None, Opt("--on", help="As if today were this date: calls after it are refused.")
]
Provider = Annotated[str | None, Opt("--provider", help="Show one provider only.")]


@app.command("prices")
def prices_(
    *,
    provider: Provider = None,
    model: Annotated[
        str | None, Opt("--model", help="Show models whose name contains this text.")
    ] = None,
    source: Annotated[
        str | None,
        Opt(
            "--source",
            help="cotplan, genai-prices or all (default: cotplan's rows unless "
            "--provider or --model is given).",
        ),
    ] = None,
    file: Annotated[
        Path | None, Opt("--prices", help="A price file (CSV/JSON/TOML) to override or add rows.")
    ] = None,
    csv: Annotated[
        Path | None,
        Opt("--csv", help="Write the merged table (every row matching the filters) to this CSV."),
    ] = None,
    on: Annotated[
        str | None,
        Opt("--on", help="As if today were this date: prices are judged stale against it."),
    ] = None,
) -> None:
    """The price table, USD per million tokens, with the source of every price."""
    from cotplan.pricing.price_lookups import list_prices
    from cotplan.render.costs import render_prices

    listing = list_prices(provider=provider, model=model, source=source, prices=file, csv=csv,
                          on=on)  # fmt: skip
    render_prices(listing, _console)


@app.command("call")
def call(
    *,
    model: Annotated[str, typer.Argument(help="Model name, e.g. gpt-6.2-sol.")],
    prompt_tokens: Annotated[str, Opt("--prompt-tokens", help="All prompt tokens.")],
    completion_tokens: Annotated[
        str,
        Opt(
            "--completion-tokens",
            help="Completion tokens as the provider reports them (OpenAI and Anthropic count "
            "reasoning inside them; xAI does not).",
        ),
    ],
    reasoning_tokens: Annotated[str, Opt("--reasoning-tokens", help="Reasoning tokens.")] = "0",
    cached_tokens: Annotated[
        str, Opt("--cached-tokens", help="Prompt tokens read from the cache.")
    ] = "0",
    cache_write_tokens: Annotated[
        str, Opt("--cache-write-tokens", help="Prompt tokens written to the cache.")
    ] = "0",
    batch: Annotated[bool, Opt("--batch", help="Sent through the batch API.")] = False,
    on: Annotated[
        str | None,
        Opt("--on", help="As if today were this date (YYYY-MM-DD): the price in effect then."),
    ] = None,
    at: Annotated[
        str | None,
        Opt(
            "--at",
            help="The call's time of day, HH:MM UTC (or a full ISO time), for prices that "
            "change with the hour (DeepSeek's peak hours).",
        ),
    ] = None,
    provider: Annotated[
        str | None, Opt("--provider", help="The seller, when several price the model.")
    ] = None,
    file: Prices = None,
    tier: Annotated[
        str | None, Opt("--tier", help="Service tier: flex or priority (its own rates).")
    ] = None,
) -> None:
    """The exact cost of one call, line by line, by the provider's own counting rule."""
    from cotplan.pricing.price_lookups import price_call
    from cotplan.render.costs import render_call

    counts: dict[str, str | int] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "reasoning_tokens": reasoning_tokens,
        "cached_tokens": cached_tokens,
        "cache_write_tokens": cache_write_tokens,
    }
    priced = _run(lambda: price_call(model, counts=counts, batch=batch, on=on, at=at,
                                     provider=provider, prices=file, tier=tier))  # fmt: skip
    render_call(priced, _console)


# `cost project`'s options, declared once here so that its signature reads as a list.
_F = float | None
ModelArg = Annotated[
    str | None, typer.Argument(help="Model to project (the baseline); or --portfolio.")
]
Portfolio = Annotated[
    Path | None,
    Opt(
        "--portfolio",
        help="A TOML/JSON file of workloads (each its model, volume, growth, tokens): "
        "projected together, one P10/P50/P90 for all (instead of MODEL).",
    ),
]
Terms = Annotated[
    Path | None,
    Opt("--terms", help="Negotiated terms (TOML/JSON) applied to what each provider is paid."),
]
Currency = Annotated[
    str | None, Opt("--currency", help="Show the amounts in this currency (with --rates).")
]
Rates = Annotated[
    Path | None,
    Opt("--rates", help="CSV date,currency,per_usd: the latest rate on or before --on."),
]
PerDay = Annotated[_F, Opt("--queries-per-day", help="Queries a day.")]
PerMonth = Annotated[_F, Opt("--queries-per-month", help="Or a month.")]
Growth = Annotated[float, Opt("--growth", help="Growth rate, e.g. 0.05 for 5%.")]
GrowthPer = Annotated[str, Opt("--growth-per", help="'month' or 'year'.")]
Months = Annotated[int, Opt("--months", help="Horizon in months.")]
Start = Annotated[str | None, Opt("--start", help="First month, YYYY-MM.")]
VolumeCv = Annotated[float, Opt("--volume-cv", help="Volume uncertainty (CV).")]
Sample = Annotated[
    Path | None,
    Opt(
        "--sample",
        help="CSV of observed calls: prompt_tokens, completion_tokens, "
        "reasoning_tokens (reasoning inside completion).",
    ),
]
PromptMean = Annotated[_F, Opt("--prompt-mean", help="Mean prompt tokens.")]
PromptSd = Annotated[float, Opt("--prompt-sd", help="Spread of prompt tokens.")]
OutputMean = Annotated[
    _F,
    Opt(
        "--output-mean",
        help="Mean visible answer tokens, reasoning NOT included (or give --completion-mean).",
    ),
]
CompletionMean = Annotated[
    _F,
    Opt(
        "--completion-mean",
        help="Mean completion tokens counted as `cost call --completion-tokens` counts "
        "them (reasoning included); the answer is this minus --reasoning-mean.",
    ),
]
OutputSd = Annotated[float, Opt("--output-sd", help="Spread of answer tokens.")]
ReasoningMean = Annotated[float, Opt("--reasoning-mean", help="Mean reasoning.")]
ReasoningSd = Annotated[float, Opt("--reasoning-sd", help="Spread of reasoning.")]
NObserved = Annotated[int | None, Opt("--n-observed", help="Calls behind the means.")]
Cap = Annotated[int | None, Opt("--cap", help="Cap reasoning tokens per call.")]
Permutations = Annotated[int, Opt("--permutations", help="Calls per answer.")]
CacheHit = Annotated[float, Opt("--cache-hit-rate", help="Share of prompt cached.")]
CacheWrite = Annotated[
    float, Opt("--cache-write-rate", help="Share of prompt written to the cache.")
]
BatchShare = Annotated[float, Opt("--batch-share", help="Share of calls in batch.")]
CompareModel = Annotated[
    list[str] | None, Opt("--compare-model", help="Also project this model (repeatable).")
]
CompareCap = Annotated[
    list[int] | None, Opt("--compare-cap", help="Also project this cap (repeatable).")
]
Draws = Annotated[str, Opt("--draws", help="Monte Carlo draws (100 to 10,000,000; 1e6 is fine).")]
Seed = Annotated[int, Opt("--seed", help="Random seed.")]
Out = Annotated[Path | None, Opt("--out", help="Write CSV, XLSX and PNG files here.")]
Seller = Annotated[
    str | None, Opt("--provider", help="The seller of MODEL, when several price it.")
]
ProjectOn = Annotated[
    str | None,
    Opt(
        "--on",
        help="As if today were this date (YYYY-MM-DD), as in `cost call`: prices are "
        "judged stale against it and the horizon starts the month after (unless --start).",
    ),
]
Budget = Annotated[
    _F,
    Opt(
        "--budget",
        help="A spending limit in USD (per --budget-per): the chance of "
        "going over it is reported and drawn.",
    ),
]
BudgetPer = Annotated[str, Opt("--budget-per", help="'month' or 'year': what --budget is per.")]
FiscalStart = Annotated[
    str,
    Opt(
        "--fiscal-year-start",
        help="First month of the fiscal year: 1-12 or a name "
        "(apr); quarters and fiscal years follow it.",
    ),
]
GrowthLow = Annotated[_F, Opt("--growth-low", help="Low growth scenario (with --growth-high).")]
GrowthHigh = Annotated[_F, Opt("--growth-high", help="High growth scenario (with --growth-low).")]
HourProfile = Annotated[
    str | None,
    Opt(
        "--hour-profile",
        help="When calls are made (UTC), for time-of-day prices: 'uniform' (default), "
        "FIRST-END:SHARE (9-17:0.8) or a CSV of hour,share.",
    ),
]
ActualsLog = Annotated[
    Path | None,
    Opt(
        "--actuals",
        help="A log of real calls (JSONL of provider responses, or the production log's "
        ".sqlite): actual spend per month beside the forecast.",
    ),
]


@app.command("project")
def project(
    *,
    model: ModelArg = None,
    portfolio: Portfolio = None,
    terms: Terms = None,
    currency: Currency = None,
    rates: Rates = None,
    queries_per_day: PerDay = None,
    queries_per_month: PerMonth = None,
    growth: Growth = 0.0,
    growth_per: GrowthPer = "month",
    months: Months = 12,
    start: Start = None,
    volume_cv: VolumeCv = 0.0,
    sample: Sample = None,
    prompt_mean: PromptMean = None,
    prompt_sd: PromptSd = 0.0,
    output_mean: OutputMean = None,
    completion_mean: CompletionMean = None,
    output_sd: OutputSd = 0.0,
    reasoning_mean: ReasoningMean = 0.0,
    reasoning_sd: ReasoningSd = 0.0,
    n_observed: NObserved = None,
    cap: Cap = None,
    permutations: Permutations = 1,
    cache_hit_rate: CacheHit = 0.0,
    cache_write_rate: CacheWrite = 0.0,
    batch_share: BatchShare = 0.0,
    compare_models: CompareModel = None,
    compare_caps: CompareCap = None,
    draws: Draws = "100000",
    seed: Seed = 0,
    out: Out = None,
    provider: Seller = None,
    on: ProjectOn = None,
    prices: Prices = None,
    budget: Budget = None,
    budget_per: BudgetPer = "month",
    fiscal_year_start: FiscalStart = "1",
    growth_low: GrowthLow = None,
    growth_high: GrowthHigh = None,
    hour_profile: HourProfile = None,
    actuals: ActualsLog = None,
) -> None:
    """Daily, monthly and annual spend with P10/P50/P90, and savings between scenarios."""
    options = dict(locals())  # every option, named as `forecast_spend` takes it
    from cotplan.pricing.forecast import PortfolioForecast, forecast_spend
    from cotplan.production.spend import read_actuals
    from cotplan.render.costs import render_forecast, render_portfolio

    result = _run(lambda: forecast_spend(**options, read_actuals=read_actuals))
    if isinstance(result, PortfolioForecast):
        render_portfolio(result, _console, out=out)
    else:
        render_forecast(result, _console, out=out)


OpenaiUsage = Annotated[
    list[Path] | None, Opt("--openai-usage", help="OpenAI Usage API pages (JSON), completions.")
]
OpenaiCosts = Annotated[
    list[Path] | None,
    Opt("--openai-costs", help="OpenAI Costs API pages (JSON) or the cost CSV export."),
]
AnthropicUsage = Annotated[
    list[Path] | None,
    Opt("--anthropic-usage", help="Anthropic Admin API messages usage report (JSON)."),
]
AnthropicCosts = Annotated[
    list[Path] | None, Opt("--anthropic-costs", help="Anthropic Admin API cost report (JSON).")
]
GcpBilling = Annotated[
    list[Path] | None,
    Opt("--gcp-billing", help="Google Cloud billing export (BigQuery table as CSV)."),
]
OwnLog = Annotated[
    Path | None, Opt("--log", help="cotplan's own log: JSONL of responses (with tags) or .sqlite.")
]
Invoices = Annotated[
    Path | None, Opt("--invoices", help="CSV: provider,month,total_usd,tax_usd,credits_usd.")
]
Discounts = Annotated[
    Path | None,
    Opt("--terms", help="Negotiated terms (TOML/JSON): discounts explain lower bills."),
]
Exchange = Annotated[
    Path | None,
    Opt(
        "--rates",
        help="CSV date,currency,per_usd: converts costs stated in another "
        "currency at the rate dated on or before each line's day.",
    ),
]
ByModel = Annotated[bool, Opt("--by-model", help="One row per model, not per model and project.")]
ReconcileCsv = Annotated[
    Path | None, Opt("--csv", help="Write the reconciliation table to this CSV.")
]
LogOn = Annotated[
    str | None, Opt("--on", help="As if today were this date: log calls after it are refused.")
]


@app.command("reconcile")
def reconcile_(
    *,
    openai_usage: OpenaiUsage = None,
    openai_costs: OpenaiCosts = None,
    anthropic_usage: AnthropicUsage = None,
    anthropic_costs: AnthropicCosts = None,
    gcp_billing: GcpBilling = None,
    log: OwnLog = None,
    invoices: Invoices = None,
    terms: Discounts = None,
    rates: Exchange = None,
    by_model: ByModel = False,
    file: Prices = None,
    csv_out: ReconcileCsv = None,
    on: LogOn = None,
) -> None:
    """Provider's stated cost, cotplan's price of its usage and cotplan's own log, per
    month, model and project; every difference explained or flagged."""
    from cotplan.pricing.month_end import reconcile_files
    from cotplan.production.spend import logged_calls
    from cotplan.render.costs import render_reconciliation

    exports = {"openai-usage": openai_usage, "openai-costs": openai_costs,
               "anthropic-usage": anthropic_usage, "anthropic-costs": anthropic_costs,
               "gcp-billing": gcp_billing}  # fmt: skip
    result = _run(lambda: reconcile_files(exports, log=log, invoices=invoices, terms=terms,
                                          rates=rates, by_model=by_model, prices=file, on=on,
                                          read_log=logged_calls))  # fmt: skip
    render_reconciliation(result, _console, csv=csv_out)
    if len(result.flagged):
        raise typer.Exit(1)


@app.command("actuals")
def actuals_(
    *,
    log: Annotated[Path, typer.Argument(help="JSONL of provider responses, with tags.")],
    by: Annotated[str, Opt("--by", help="Tags to split by, comma-separated.")] = "team",
    file: Prices = None,
    csv_out: Annotated[Path | None, Opt("--csv", help="Write the table to this CSV.")] = None,
    on: On = None,
) -> None:
    """Actual spend per month, split by the calls' tags (team, feature, project)."""
    from cotplan.pricing.month_end import tagged_spend
    from cotplan.production.spend import logged_calls
    from cotplan.render.costs import render_tagged_spend

    spend = _run(lambda: tagged_spend(log, by=by, prices=file, on=on, read_log=logged_calls))
    render_tagged_spend(spend, _console, csv=csv_out)
