"""`cotplan cost prices|call|project`: the price table, one call's cost, spend projections."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from cotplan.cli.cost_options import (
    answer_mean,
    count_option,
    growth_range,
    hour_used,
    moment_option,
    month_after,
    out_dir,
    out_file,
    tokens_from_options,
    whole,
    xai_raw_counts,
)
from cotplan.cli.cost_tables import growth_table, price_tables, rate
from cotplan.errors import InputError
from cotplan.io import write_csv

__all__ = ["app", "note", "warnings_as_notes"]

app = typer.Typer(help="API prices, call costs and spend projections.", no_args_is_help=True)
_console = Console()
_stderr = Console(stderr=True)

T = TypeVar("T")

#: `cotplan cost prices` without a filter lists cotplan's own rows; genai-prices adds ~2,000.
_SOURCES = ("cotplan", "genai-prices", "all")


def note(message: Any, category: type[Warning] | None = None) -> None:
    """Print a warning as one line on stderr: ``note: ...`` (no file name, no line number)."""
    text = " ".join(str(message).split())
    label = "note" if category is None or _ours(category) else f"note ({category.__name__})"
    _stderr.print(f"[bold yellow]{label}:[/] {text}", highlight=False, markup=True, soft_wrap=True)


def _ours(category: type[Warning]) -> bool:
    return category.__module__.split(".")[0] == "cotplan"


@contextmanager
def warnings_as_notes() -> Iterator[None]:
    """Show every warning raised inside the block as one ``note:`` line, each text once.

    The CLI's entry point wraps every command in this, so users never see Python's raw
    ``path:line: Category: text`` warning lines; warnings stay warnings (not errors).
    """
    seen: set[str] = set()

    def show(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
        text = str(message)
        if text not in seen:
            seen.add(text)
            note(text, category)

    with warnings.catch_warnings():
        # Warnings meant for users (stale prices, for one) show every time, as notes and never
        # as errors; developer warnings (deprecations) keep Python's default of silence.
        warnings.simplefilter("always", UserWarning)
        warnings.showwarning = show
        yield


def _run(fn: Callable[[], T]) -> T:
    with warnings_as_notes():
        return fn()


def _date(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    text = value.strip()
    try:
        return date.fromisoformat(text if len(text) > 7 else f"{text}-01")
    except ValueError:
        raise InputError(f"{value!r} is not a date (YYYY-MM-DD or YYYY-MM)", field=name) from None


def _exact(usd: Decimal) -> str:
    """Exact dollars, every digit and no trailing zeros beyond cents: 0.0424, 0.01, 0.00."""
    text = f"{usd.normalize():f}"
    units, _, cents = text.partition(".")
    return f"{units}.{cents.ljust(2, '0')}"


def _provider_option(value: str | None, table: Any, name: str = "provider") -> str | None:
    if value is None:
        return None
    wanted = value.strip().lower()
    known = table.providers()
    if wanted not in {p.lower() for p in known}:
        close = difflib.get_close_matches(wanted, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InputError(f"no prices for {value!r}{hint}; see `cotplan cost prices`", field=name)
    return wanted


Opt = typer.Option


@app.command("prices")
def prices_(
    *,
    provider: Annotated[str | None, Opt("--provider", help="Show one provider only.")] = None,
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
    from cotplan.pricing.table import price_table

    when = _date(on, "on") or date.today()
    if source is not None and source not in _SOURCES:
        raise InputError(f"must be one of {', '.join(_SOURCES)}, got {source!r}", field="source")
    if model is not None and not model.strip():
        raise InputError("must be some text of a model name", field="model")
    out_file(csv, "csv")
    table = price_table(file)
    wanted = _provider_option(provider, table)
    chosen = source or ("all" if provider or model else "cotplan")

    def keep(row: Any, which: str) -> bool:
        if wanted is not None and row.provider.lower() != wanted:
            return False
        if model is not None and model.strip().lower() not in row.model.lower():
            return False
        return which == "all" or (which == "genai-prices") == row.from_genai

    rows = [r for r in table.rows if keep(r, chosen)]
    if not rows:
        raise InputError(
            f"no price rows match (provider {provider!r}, model containing {model!r}, source "
            f"{chosen})",
            field="model" if model else "provider",
        )
    if csv:
        frame = table.to_frame(when)
        picked = [keep(r, source or "all") for r in table.rows]
        write_csv(frame[picked], csv, private=False)
    for item, style in price_tables(rows, table, when, chosen):
        _console.print(item, **style)
    if csv:
        _console.print(f"wrote {csv}", highlight=False)


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
    file: Annotated[Path | None, Opt("--prices", help="A price file to override rows.")] = None,
    tier: Annotated[
        str | None, Opt("--tier", help="Service tier: flex or priority (its own rates).")
    ] = None,
) -> None:
    """The exact cost of one call, line by line, by the provider's own counting rule."""
    from cotplan.pricing.cost import call_cost
    from cotplan.pricing.table import price_table

    when = _date(on, "on")
    counts = {
        name: count_option(value, name)
        for name, value in (
            ("prompt_tokens", prompt_tokens),
            ("completion_tokens", completion_tokens),
            ("reasoning_tokens", reasoning_tokens),
            ("cached_tokens", cached_tokens),
            ("cache_write_tokens", cache_write_tokens),
        )
    }
    moment = moment_option(at, when)
    table = price_table(file)
    seller = _provider_option(provider, table)
    raw = xai_raw_counts(table, model, when, seller, counts)
    cost = _run(
        lambda: call_cost(
            model,
            **counts,
            batch=batch,
            on=when,
            at=moment,
            table=table,
            provider=seller,
            tier=tier,
        )
    )
    shown = f", {cost.tier} tier" if cost.tier else ""
    out = Table(title=f"{cost.model} ({cost.provider}{shown}): one call")
    for column, justify in (
        ("item", "left"),
        ("tokens", "right"),
        ("USD per 1M", "right"),
        ("USD", "right"),
    ):
        out.add_column(column, justify=justify)  # type: ignore[arg-type]
    r = cost.rates
    items = (
        ("input", cost.input_tokens, r.input, cost.input_usd),
        ("cached input", cost.cached_tokens, r.cached_input, cost.cached_input_usd),
        ("cache write", cost.cache_write_tokens, r.cache_write, cost.cache_write_usd),
        ("output", cost.output_tokens, r.output, cost.output_usd),
        ("reasoning", cost.reasoning_tokens, r.reasoning_rate, cost.reasoning_usd),
    )
    for item, tokens, rate_, usd in items:
        out.add_row(item, f"{tokens:,}", rate(rate_), _exact(usd))
    if cost.request_usd:
        out.add_row("request fee", "", "", _exact(cost.request_usd))
    if cost.batch:
        out.add_row("batch discount", "", "", _exact(cost.batch_discount_usd))
    all_tokens = cost.prompt_tokens + cost.output_tokens + cost.reasoning_tokens
    out.add_row("[bold]total[/]", f"{all_tokens:,}", "", f"[bold]{_exact(cost.usd)}[/]")
    _console.print(out)
    notes = [f"price: {cost.source}"]
    shown_notes = ("no batch price", " has no ")
    notes += [n for n in cost.notes.split("; ") if any(k in n for k in shown_notes)]
    notes += [raw] if raw else []
    day_row = table.lookup(model, on=cost.as_of if when is None else when, provider=seller,
                           warn=False)  # fmt: skip
    if day_row.time_of_day:
        notes.append(hour_used(day_row, moment))
    # A flex or priority price carried onto cotplan's own row names where its rates came from.
    carried = f"{cost.tier} rates from " if cost.tier else None
    notes += [n for n in cost.notes.split("; ") if carried and n.startswith(carried)]
    if cost.long_context:
        notes.append("the prompt is above the long-context threshold: long rates apply")
    _console.print("; ".join(notes), highlight=False)


@app.command("project")
def project(
    *,
    model: Annotated[
        str | None, typer.Argument(help="Model to project (the baseline); or --portfolio.")
    ] = None,
    portfolio: Annotated[
        Path | None,
        Opt(
            "--portfolio",
            help="A TOML/JSON file of workloads (each its model, volume, growth, tokens): "
            "projected together, one P10/P50/P90 for all (instead of MODEL).",
        ),
    ] = None,
    terms: Annotated[
        Path | None,
        Opt("--terms", help="Negotiated terms (TOML/JSON) applied to a --portfolio's spend."),
    ] = None,
    currency: Annotated[
        str | None, Opt("--currency", help="Show a --portfolio in this currency (with --rates).")
    ] = None,
    rates: Annotated[
        Path | None,
        Opt("--rates", help="CSV date,currency,per_usd: the latest rate on or before --on."),
    ] = None,
    queries_per_day: Annotated[
        float | None, Opt("--queries-per-day", help="Queries a day.")
    ] = None,
    queries_per_month: Annotated[
        float | None, Opt("--queries-per-month", help="Or a month.")
    ] = None,
    growth: Annotated[float, Opt("--growth", help="Growth rate, e.g. 0.05 for 5%.")] = 0.0,
    growth_per: Annotated[str, Opt("--growth-per", help="'month' or 'year'.")] = "month",
    months: Annotated[int, Opt("--months", help="Horizon in months.")] = 12,
    start: Annotated[str | None, Opt("--start", help="First month, YYYY-MM.")] = None,
    volume_cv: Annotated[float, Opt("--volume-cv", help="Volume uncertainty (CV).")] = 0.0,
    sample: Annotated[
        Path | None,
        Opt(
            "--sample",
            help="CSV of observed calls: prompt_tokens, completion_tokens, "
            "reasoning_tokens (reasoning inside completion).",
        ),
    ] = None,
    prompt_mean: Annotated[float | None, Opt("--prompt-mean", help="Mean prompt tokens.")] = None,
    prompt_sd: Annotated[float, Opt("--prompt-sd", help="Spread of prompt tokens.")] = 0.0,
    output_mean: Annotated[
        float | None,
        Opt(
            "--output-mean",
            help="Mean visible answer tokens, reasoning NOT included (or give --completion-mean).",
        ),
    ] = None,
    completion_mean: Annotated[
        float | None,
        Opt(
            "--completion-mean",
            help="Mean completion tokens counted as `cost call --completion-tokens` counts "
            "them (reasoning included); the answer is this minus --reasoning-mean.",
        ),
    ] = None,
    output_sd: Annotated[float, Opt("--output-sd", help="Spread of answer tokens.")] = 0.0,
    reasoning_mean: Annotated[float, Opt("--reasoning-mean", help="Mean reasoning.")] = 0.0,
    reasoning_sd: Annotated[float, Opt("--reasoning-sd", help="Spread of reasoning.")] = 0.0,
    n_observed: Annotated[int | None, Opt("--n-observed", help="Calls behind the means.")] = None,
    cap: Annotated[int | None, Opt("--cap", help="Cap reasoning tokens per call.")] = None,
    permutations: Annotated[int, Opt("--permutations", help="Calls per answer.")] = 1,
    cache_hit_rate: Annotated[float, Opt("--cache-hit-rate", help="Share of prompt cached.")] = 0.0,
    cache_write_rate: Annotated[
        float, Opt("--cache-write-rate", help="Share of prompt written to the cache.")
    ] = 0.0,
    batch_share: Annotated[float, Opt("--batch-share", help="Share of calls in batch.")] = 0.0,
    compare_model: Annotated[
        list[str] | None, Opt("--compare-model", help="Also project this model (repeatable).")
    ] = None,
    compare_cap: Annotated[
        list[int] | None, Opt("--compare-cap", help="Also project this cap (repeatable).")
    ] = None,
    draws: Annotated[
        str, Opt("--draws", help="Monte Carlo draws (100 to 10,000,000; 1e6 is fine).")
    ] = "100000",
    seed: Annotated[int, Opt("--seed", help="Random seed.")] = 0,
    out: Annotated[Path | None, Opt("--out", help="Write CSV, XLSX and PNG files here.")] = None,
    provider: Annotated[
        str | None, Opt("--provider", help="The seller of MODEL, when several price it.")
    ] = None,
    on: Annotated[
        str | None,
        Opt(
            "--on",
            help="As if today were this date (YYYY-MM-DD), as in `cost call`: prices are "
            "judged stale against it and the horizon starts the month after (unless --start).",
        ),
    ] = None,
    file: Annotated[Path | None, Opt("--prices", help="A price file to override rows.")] = None,
    budget: Annotated[
        float | None,
        Opt(
            "--budget",
            help="A spending limit in USD (per --budget-per): the chance of "
            "going over it is reported and drawn.",
        ),
    ] = None,
    budget_per: Annotated[
        str, Opt("--budget-per", help="'month' or 'year': what --budget is per.")
    ] = "month",
    fiscal_year_start: Annotated[
        str,
        Opt(
            "--fiscal-year-start",
            help="First month of the fiscal year: 1-12 or a name "
            "(apr); quarters and fiscal years follow it.",
        ),
    ] = "1",
    growth_low: Annotated[
        float | None, Opt("--growth-low", help="Low growth scenario (with --growth-high).")
    ] = None,
    growth_high: Annotated[
        float | None, Opt("--growth-high", help="High growth scenario (with --growth-low).")
    ] = None,
    hour_profile: Annotated[
        str | None,
        Opt(
            "--hour-profile",
            help="When calls are made (UTC), for time-of-day prices: 'uniform' (default), "
            "FIRST-END:SHARE (9-17:0.8) or a CSV of hour,share.",
        ),
    ] = None,
    actuals: Annotated[
        Path | None,
        Opt(
            "--actuals",
            help="A log of real calls (JSONL of provider responses, or the production log's "
            ".sqlite): actual spend per month beside the forecast.",
        ),
    ] = None,
) -> None:
    """Daily, monthly and annual spend with P10/P50/P90, and savings between scenarios."""
    from cotplan.cli.cost_actuals import actuals_table, read_actuals
    from cotplan.cli.cost_project import (
        budget_option,
        projection_summary,
        scenario_table,
        scenarios,
        write_outputs,
    )
    from cotplan.pricing.actuals import forecast_vs_actuals
    from cotplan.pricing.comparison import compare_scenarios, project_growth
    from cotplan.pricing.hours import hour_profile as hour_profile_of
    from cotplan.pricing.periods import check_fiscal_year_start
    from cotplan.pricing.projection import Workload, check_draws
    from cotplan.pricing.table import price_table

    # Every option is checked here, before the price table loads or a draw is made.
    today = _date(on, "on")
    n_draws, _ = check_draws(whole(draws, "draws"), seed)
    out_dir(out, "out")
    if portfolio is None:
        for name, given in (("terms", terms), ("currency", currency), ("rates", rates)):
            if given is not None:
                raise InputError("applies to a --portfolio only", field=name)
    if portfolio is not None or model is None:
        if model is not None or portfolio is None:
            raise InputError("give a MODEL or --portfolio FILE, not both", field="portfolio")
        from cotplan.cli.cost_portfolio import run_portfolio

        run_portfolio(portfolio, draws=n_draws, seed=seed, table=price_table(file), today=today,
                      terms_path=terms, out=out, run=_run, currency=currency,
                      rates_path=rates)  # fmt: skip
        return
    limit = budget_option(budget, budget_per)
    fys = check_fiscal_year_start(fiscal_year_start)
    if actuals is not None and not actuals.is_file():
        raise InputError(f"{str(actuals)!r} is not a file", field="actuals")
    workload = Workload(
        queries_per_day=queries_per_day,
        queries_per_month=queries_per_month,
        growth_rate=growth,
        growth_per=growth_per,
        horizon_months=months,
        start=_date(start, "start") or month_after(today),
        volume_cv=volume_cv,
        hour_profile=hour_profile_of(hour_profile),
    )
    spread = growth_range(workload, growth_low, growth_high)
    output_mean = answer_mean(output_mean, completion_mean, reasoning_mean)
    tokens = tokens_from_options(
        sample,
        prompt_mean=prompt_mean,
        prompt_sd=prompt_sd,
        output_mean=output_mean,
        output_sd=output_sd,
        reasoning_mean=reasoning_mean,
        reasoning_sd=reasoning_sd,
        n_observed=n_observed,
    )
    table = price_table(file)
    seller = _provider_option(provider, table)
    # Read before the projection runs: a bad log is refused before anything is printed.
    spent = None if actuals is None else _run(lambda: read_actuals(actuals, table, today))
    levers: dict[str, Any] = {
        "permutations": permutations,
        "cache_hit_rate": cache_hit_rate,
        "cache_write_rate": cache_write_rate,
        "batch_share": batch_share,
    }
    compared = scenarios(
        table,
        model,
        seller,
        cap=cap,
        compare_models=compare_model or [],
        compare_caps=compare_cap or [],
        levers=levers,
    )
    run: dict[str, Any] = {
        "draws": n_draws,
        "seed": seed,
        "table": table,
        "today": today,
        "budget": limit,
        "fiscal_year_start": fys,
    }
    comparison = _run(lambda: compare_scenarios(workload, tokens, compared, **run))
    summary = projection_summary(
        comparison, workload, draws=n_draws, seed=seed, fiscal_year_start=fys
    )
    for item, style in summary:
        _console.print(item, **style)
    growth_result = None
    if spread is not None:
        low, high = spread
        growth_result = _run(
            lambda: project_growth(
                model,
                workload,
                tokens,
                low=low,
                high=high,
                policy=cap,
                provider=seller,
                **levers,
                **run,
            )
        )
        _console.print(growth_table(growth_result.frame, comparison.baseline, limit))
    if spent is not None:
        base = comparison.projections[comparison.baseline]
        _console.print(actuals_table(forecast_vs_actuals(base, spent), spent.source))
    if len(compared) > 1:
        _console.print(scenario_table(comparison))
    if out is not None:
        written = write_outputs(out, comparison, growth_result, compared=len(compared) > 1)
        _console.print("wrote " + ", ".join(str(p) for p in written), highlight=False)


def _register_month_end() -> None:
    # The month-end commands live in their own module; registered here, once the app exists.
    from cotplan.cli.cost_month_end import register

    register(app, _date, _run)


_register_month_end()
