"""`cotplan cost project --portfolio FILE`: several workloads projected together, the company's
P10/P50/P90 first, then the months and each workload's share."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from cotplan.cli.cost_tables import money
from cotplan.errors import InputError

__all__ = ["run_portfolio"]

_console = Console()


def _whole(value: float, scale: float = 1.0, symbol: str = "$") -> str:
    return money(value * scale, 0).replace("$", symbol, 1)


def run_portfolio(
    path: Path,
    *,
    draws: int,
    seed: int,
    table: Any,
    today: date | None,
    terms_path: Path | None,
    out: Path | None,
    run: Any,
    currency: str | None = None,
    rates_path: Path | None = None,
) -> None:
    """Read, project and print a portfolio; write its CSVs into `out` when given. With
    `currency` and `rates_path`, amounts are shown in that currency at the latest rate dated
    on or before `today` (the rate and its date are printed; the CSVs stay in USD)."""
    from cotplan.pricing.portfolio import project_portfolio, read_portfolio

    scale, symbol, rate_line = 1.0, "$", ""
    if currency is not None or rates_path is not None:
        if currency is None or rates_path is None:
            raise InputError("give --currency and --rates together", field="currency")
        from cotplan.pricing.currency import read_rates

        used = read_rates(rates_path).rate(currency, today or date.today())
        scale, symbol = float(used.per_usd), f"{used.currency} "
        rate_line = f"amounts in {used.currency} at {used.label} ({rates_path.name})"
    workloads, growth_sd = read_portfolio(path)
    terms = None
    if terms_path is not None:
        from cotplan.pricing.terms import read_terms

        terms = read_terms(terms_path)
    result = run(
        lambda: project_portfolio(
            workloads,
            growth_sd=growth_sd,
            draws=draws,
            seed=seed,
            table=table,
            today=today,
            terms=terms,
        )
    )
    months = result.months
    span = f"{months['label'].iloc[0]} to {months['label'].iloc[-1]}"
    t = result.total

    def cash(value: float) -> str:
        return _whole(value, scale, symbol)

    _console.print(
        f"Portfolio of {len(workloads)} workloads, {span}: P50 {cash(t['p50_usd'])} "
        f"(P10 {cash(t['p10_usd'])}, P90 {cash(t['p90_usd'])}; mean {cash(t['mean_usd'])})",
        highlight=False,
    )
    _console.print(
        f"adding each workload's P90 would say {cash(t['sum_of_p90_usd'])}: their surprises "
        f"are not all at once (shared growth shock: sd {growth_sd:g} a month)",
        highlight=False,
    )
    if rate_line:
        _console.print(rate_line, highlight=False)
    unit = symbol.strip() if symbol != "$" else "USD"
    per_month = Table(
        title=f"Portfolio spend per month, {unit}", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in ("month", "mean", "P10", "P50", "P90"):
        per_month.add_column(column, justify="left" if column == "month" else "right")
    for rec in months.to_dict("records"):
        per_month.add_row(
            rec["label"],
            *(cash(rec[k]) for k in ("mean_usd", "p10_usd", "p50_usd", "p90_usd")),
        )
    per_month.add_row("total", *(cash(t[k]) for k in ("mean_usd", "p10_usd", "p50_usd", "p90_usd")))
    _console.print(per_month)
    items = Table(
        title=f"Workloads over the horizon, {unit} (list price)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    items.add_column("workload / model", overflow="fold", ratio=1)
    for column in ("team", "P50", "P10..P90", "share"):
        items.add_column(column, justify="left" if column == "team" else "right", no_wrap=True)
    for rec in result.workloads.to_dict("records"):
        team = rec.get("team")
        items.add_row(
            f"{rec['workload']} ({rec['model']})",
            team if isinstance(team, str) else "",
            f"{rec['p50_usd'] * scale:,.0f}",
            f"{rec['p10_usd'] * scale:,.0f}..{rec['p90_usd'] * scale:,.0f}",
            f"{rec['share']:.1%}",
        )
    _console.print(items)
    _console.print(f"{result.draws:,} draws, seed {result.seed}", highlight=False)
    for note in result.notes:
        _console.print(f"note: {note}", highlight=False, overflow="fold")
    if out is not None:
        from cotplan.io import write_csv

        out.mkdir(parents=True, exist_ok=True)
        # One file per kind of row, so a SUM over a column counts nothing twice.
        write_csv(months, out / "portfolio_months.csv", private=False)
        write_csv(result.workloads, out / "portfolio_workloads.csv", private=False)
        _console.print(f"wrote {out / 'portfolio_months.csv'}, {out / 'portfolio_workloads.csv'}")
