"""`cotplan cost prices|call|project|reconcile|actuals`: the price table, one call's cost, spend
projections and the month-end checks. Each command parses its options, calls one function of
`cotplan.pricing` and hands the result to `cotplan.render.costs`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console

from cotplan.cli.options import REQUIRED, arg, opt, takes
from cotplan.render.notes import note, warnings_as_notes

__all__ = ["app", "note", "warnings_as_notes"]

app = typer.Typer(help="API prices, call costs and spend projections.", no_args_is_help=True)
_console = Console()
T = TypeVar("T")
_F = float | None
_P = Path | None
_S = str | None
_Paths = list[Path] | None


def _run(fn: Callable[[], T]) -> T:
    with warnings_as_notes():
        return fn()


# Each table names an option as the library function it goes to takes it.
PRICES = opt(_P, None, "A price file to override rows.", "--prices")
# fmt: off
LIST_PRICES = {
    "provider": opt(_S, None, "Show one provider only.", "--provider"),
    "model": opt(_S, None, "Show models whose name contains this text.", "--model"),
    "source": opt(_S, None, "cotplan, genai-prices or all (default: cotplan's rows unless "
                  "--provider or --model is given).", "--source"),
    "prices": opt(_P, None, "A price file (CSV/JSON/TOML) to override or add rows.", "--prices"),
    "csv": opt(_P, None, "Write the merged table (every row matching the filters) to this CSV.",
               "--csv"),
    "on": opt(_S, None, "As if today were this date: prices are judged stale against it.",
              "--on"),
}
COUNTS = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens",
          "cache_write_tokens")
PRICE_CALL = {
    "model": arg(str, REQUIRED, "Model name, e.g. gpt-6.2-sol."),
    "prompt_tokens": opt(str, REQUIRED, "All prompt tokens.", "--prompt-tokens"),
    "completion_tokens": opt(str, REQUIRED, "Completion tokens as the provider reports them "
                             "(OpenAI and Anthropic count reasoning inside them; xAI does not).",
                             "--completion-tokens"),
    "reasoning_tokens": opt(str, "0", "Reasoning tokens.", "--reasoning-tokens"),
    "cached_tokens": opt(str, "0", "Prompt tokens read from the cache.", "--cached-tokens"),
    "cache_write_tokens": opt(str, "0", "Prompt tokens written to the cache.",
                              "--cache-write-tokens"),
    "batch": opt(bool, False, "Sent through the batch API.", "--batch"),
    "on": opt(_S, None, "As if today were this date (YYYY-MM-DD): the price in effect then.",
              "--on"),
    "at": opt(_S, None, "The call's time of day, HH:MM UTC (or a full ISO time), for prices "
              "that change with the hour (DeepSeek's peak hours).", "--at"),
    "provider": opt(_S, None, "The seller, when several price the model.", "--provider"),
    "prices": PRICES,
    "tier": opt(_S, None, "Service tier: flex or priority (its own rates).", "--tier"),
}
FORECAST_SPEND = {
    "model": arg(_S, None, "Model to project (the baseline); or --portfolio."),
    "portfolio": opt(_P, None, "A TOML/JSON file of workloads (each its model, volume, growth, "
                     "tokens): projected together, one P10/P50/P90 for all (instead of MODEL).",
                     "--portfolio"),
    "terms": opt(_P, None, "Negotiated terms (TOML/JSON) applied to what each provider is "
                 "paid.", "--terms"),
    "currency": opt(_S, None, "Show the amounts in this currency (with --rates).",
                    "--currency"),
    "rates": opt(_P, None, "CSV date,currency,per_usd: the latest rate on or before --on.",
                 "--rates"),
    "queries_per_day": opt(_F, None, "Queries a day.", "--queries-per-day"),
    "queries_per_month": opt(_F, None, "Or a month.", "--queries-per-month"),
    "growth": opt(float, 0.0, "Growth rate, e.g. 0.05 for 5%.", "--growth"),
    "growth_per": opt(str, "month", "'month' or 'year'.", "--growth-per"),
    "months": opt(int, 12, "Horizon in months.", "--months"),
    "start": opt(_S, None, "First month, YYYY-MM.", "--start"),
    "volume_cv": opt(float, 0.0, "Volume uncertainty (CV).", "--volume-cv"),
    "sample": opt(_P, None, "CSV of observed calls: prompt_tokens, completion_tokens, "
                  "reasoning_tokens (reasoning inside completion).", "--sample"),
    "prompt_mean": opt(_F, None, "Mean prompt tokens.", "--prompt-mean"),
    "prompt_sd": opt(float, 0.0, "Spread of prompt tokens.", "--prompt-sd"),
    "output_mean": opt(_F, None, "Mean visible answer tokens, reasoning NOT included (or give "
                       "--completion-mean).", "--output-mean"),
    "completion_mean": opt(_F, None, "Mean completion tokens counted as `cost call "
                           "--completion-tokens` counts them (reasoning included); the answer "
                           "is this minus --reasoning-mean.", "--completion-mean"),
    "output_sd": opt(float, 0.0, "Spread of answer tokens.", "--output-sd"),
    "reasoning_mean": opt(float, 0.0, "Mean reasoning.", "--reasoning-mean"),
    "reasoning_sd": opt(float, 0.0, "Spread of reasoning.", "--reasoning-sd"),
    "n_observed": opt(int | None, None, "Calls behind the means.", "--n-observed"),
    "cap": opt(int | None, None, "Cap reasoning tokens per call.", "--cap"),
    "permutations": opt(int, 1, "Calls per answer.", "--permutations"),
    "cache_hit_rate": opt(float, 0.0, "Share of prompt cached.", "--cache-hit-rate"),
    "cache_write_rate": opt(float, 0.0, "Share of prompt written to the cache.",
                            "--cache-write-rate"),
    "batch_share": opt(float, 0.0, "Share of calls in batch.", "--batch-share"),
    "compare_models": opt(list[str] | None, None, "Also project this model (repeatable).",
                          "--compare-model"),
    "compare_caps": opt(list[int] | None, None, "Also project this cap (repeatable).",
                        "--compare-cap"),
    "draws": opt(str, "100000", "Monte Carlo draws (100 to 10,000,000; 1e6 is fine).",
                 "--draws"),
    "seed": opt(int, 0, "Random seed.", "--seed"),
    "out": opt(_P, None, "Write CSV, XLSX and PNG files here.", "--out"),
    "provider": opt(_S, None, "The seller of MODEL, when several price it.", "--provider"),
    "on": opt(_S, None, "As if today were this date (YYYY-MM-DD), as in `cost call`: prices are "
              "judged stale against it and the horizon starts the month after (unless --start).",
              "--on"),
    "prices": PRICES,
    "budget": opt(_F, None, "A spending limit in USD (per --budget-per): the chance of going "
                  "over it is reported and drawn.", "--budget"),
    "budget_per": opt(str, "month", "'month' or 'year': what --budget is per.", "--budget-per"),
    "fiscal_year_start": opt(str, "1", "First month of the fiscal year: 1-12 or a name (apr); "
                             "quarters and fiscal years follow it.", "--fiscal-year-start"),
    "growth_low": opt(_F, None, "Low growth scenario (with --growth-high).", "--growth-low"),
    "growth_high": opt(_F, None, "High growth scenario (with --growth-low).", "--growth-high"),
    "hour_profile": opt(_S, None, "When calls are made (UTC), for time-of-day prices: "
                        "'uniform' (default), FIRST-END:SHARE (9-17:0.8) or a CSV of hour,share.",
                        "--hour-profile"),
    "actuals": opt(_P, None, "A log of real calls (JSONL of provider responses, or the "
                   "production log's .sqlite): actual spend per month beside the forecast.",
                   "--actuals"),
}
EXPORTS = {
    "openai-usage": opt(_Paths, None, "OpenAI Usage API pages (JSON), completions.",
                        "--openai-usage"),
    "openai-costs": opt(_Paths, None, "OpenAI Costs API pages (JSON) or the cost CSV export.",
                        "--openai-costs"),
    "anthropic-usage": opt(_Paths, None, "Anthropic Admin API messages usage report (JSON).",
                           "--anthropic-usage"),
    "anthropic-costs": opt(_Paths, None, "Anthropic Admin API cost report (JSON).",
                           "--anthropic-costs"),
    "gcp-billing": opt(_Paths, None, "Google Cloud billing export (BigQuery table as CSV).",
                       "--gcp-billing"),
}
RECONCILE_FILES = {
    **{name.replace("-", "_"): spec for name, spec in EXPORTS.items()},
    "log": opt(_P, None, "cotplan's own log: JSONL of responses (with tags) or .sqlite.",
               "--log"),
    "invoices": opt(_P, None, "CSV: provider,month,total_usd,tax_usd,credits_usd.",
                    "--invoices"),
    "terms": opt(_P, None, "Negotiated terms (TOML/JSON): discounts explain lower bills.",
                 "--terms"),
    "rates": opt(_P, None, "CSV date,currency,per_usd: converts costs stated in another currency "
                 "at the rate dated on or before each line's day.", "--rates"),
    "by_model": opt(bool, False, "One row per model, not per model and project.", "--by-model"),
    "prices": PRICES,
    "csv": opt(_P, None, "Write the reconciliation table to this CSV.", "--csv"),
    "on": opt(_S, None, "As if today were this date: log calls after it are refused.", "--on"),
}
TAGGED_SPEND = {
    "log": arg(Path, REQUIRED, "JSONL of provider responses, with tags."),
    "by": opt(str, "team", "Tags to split by, comma-separated.", "--by"),
    "prices": PRICES,
    "csv": opt(_P, None, "Write the table to this CSV.", "--csv"),
    "on": opt(_S, None, "As if today were this date: calls after it are refused.", "--on"),
}
# fmt: on


@app.command("prices")
@takes(LIST_PRICES)
def prices_(**options: Any) -> None:
    """The price table, USD per million tokens, with the source of every price."""
    from cotplan.pricing.price_lookups import list_prices
    from cotplan.render.costs import render_prices

    render_prices(list_prices(**options), _console)


@app.command("call")
@takes(PRICE_CALL)
def call(**options: Any) -> None:
    """The exact cost of one call, line by line, by the provider's own counting rule."""
    from cotplan.pricing.price_lookups import price_call
    from cotplan.render.costs import render_call

    counts = {name: options.pop(name) for name in COUNTS}
    render_call(_run(lambda: price_call(counts=counts, **options)), _console)


@app.command("project")
@takes(FORECAST_SPEND)
def project(**options: Any) -> None:
    """Daily, monthly and annual spend with P10/P50/P90, and savings between scenarios."""
    from cotplan.pricing.forecast import PortfolioForecast, forecast_spend
    from cotplan.production.spend import read_actuals
    from cotplan.render.costs import render_forecast, render_portfolio

    result = _run(lambda: forecast_spend(**options, read_actuals=read_actuals))
    render = render_portfolio if isinstance(result, PortfolioForecast) else render_forecast
    render(result, _console, out=options["out"])


@app.command("reconcile")
@takes(RECONCILE_FILES)
def reconcile_(**options: Any) -> None:
    """Provider's stated cost, cotplan's price of its usage and cotplan's own log, per
    month, model and project; every difference explained or flagged."""
    from cotplan.pricing.month_end import reconcile_files
    from cotplan.production.spend import logged_calls
    from cotplan.render.costs import render_reconciliation

    exports = {name: options.pop(name.replace("-", "_")) for name in EXPORTS}
    csv = options.pop("csv")
    result = _run(lambda: reconcile_files(exports, **options, read_log=logged_calls))
    render_reconciliation(result, _console, csv=csv)
    if len(result.flagged):
        raise typer.Exit(1)


@app.command("actuals")
@takes(TAGGED_SPEND)
def actuals_(**options: Any) -> None:
    """Actual spend per month, split by the calls' tags (team, feature, project)."""
    from cotplan.pricing.month_end import tagged_spend
    from cotplan.production.spend import logged_calls
    from cotplan.render.costs import render_tagged_spend

    csv = options.pop("csv")
    spend = _run(lambda: tagged_spend(**options, read_log=logged_calls))
    render_tagged_spend(spend, _console, csv=csv)
