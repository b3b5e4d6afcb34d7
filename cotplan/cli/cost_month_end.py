"""`cotplan cost reconcile` and `cotplan cost actuals`: the month-end commands.

`reconcile` reads the providers' usage and cost exports, prices the usage with cotplan's
table, puts cotplan's own log beside them and checks the invoices; `actuals` splits a log's
spend by its calls' tags (team, feature, project).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer
from rich import box
from rich.console import Console
from rich.table import Table

from cotplan.errors import InputError

__all__ = ["register"]

_console = Console()
Opt = typer.Option


def _money(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    number = Decimal(value)
    sign = "-" if number < 0 else ""
    return f"{sign}{abs(number):,.2f}"


def read_invoices(path: Path) -> list[Any]:
    """A CSV of ``provider,month,total_usd,tax_usd,credits_usd`` (the last two optional)."""
    from cotplan.pricing.reconcile import Invoice

    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None
    out = []
    for number, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        values: dict[str, Any] = {}
        for name in ("total_usd", "tax_usd", "credits_usd"):
            raw = (row.get(name) or "").strip()
            if not raw:
                continue
            try:
                values[name] = Decimal(raw.replace(",", "").lstrip("$"))
            except InvalidOperation:
                raise InputError(
                    f"must be an amount, got {raw!r}", field=name, line=number, source=str(path)
                ) from None
        provider, month = (row.get("provider") or "").strip().lower(), (row.get("month") or "")
        if not provider or len(month.strip()) != 7:
            raise InputError(
                "needs a provider and a month (YYYY-MM)", line=number, source=str(path)
            )
        out.append(Invoice(provider, month.strip(), **values))
    return out


def _exports(options: dict[str, list[Path] | None]) -> list[Any]:
    from cotplan.pricing.export_readers import read_export

    lines: list[Any] = []
    for kind, paths in options.items():
        for path in paths or []:
            chosen = kind
            if kind == "openai-costs" and path.suffix.lower() == ".csv":
                chosen = "openai-costs-csv"
            lines += read_export(chosen, path)
    if not lines:
        raise InputError(
            "give at least one export (--openai-usage, --anthropic-usage, --gcp-billing, ...)",
            field="openai_usage",
        )
    return lines


def _log_calls(path: Path, table: Any, today: date | None) -> list[Any]:
    from cotplan.pricing.attribution import calls_from_jsonl

    if path.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        return _sqlite_calls(path, table)
    return calls_from_jsonl(path, table=table, today=today)


def _sqlite_calls(path: Path, table: Any) -> list[Any]:
    """The production log's calls, with the tags each was made with (none in rows written
    before the log kept them: those count as untagged)."""
    from cotplan.pricing.actuals import utc_time
    from cotplan.pricing.reconcile import LoggedCall
    from cotplan.production.log import CallLog
    from cotplan.production.tags import decode_tags

    frame = CallLog(path).to_frame()
    out = []
    for number, rec in enumerate(frame.to_dict("records"), start=1):
        if pd.isna(rec["cost_usd"]):
            continue
        moment = utc_time(rec["time"], field=f"calls[{number}].time", source=str(path))
        provider = table.lookup(rec["model"], warn=False).provider
        usd = Decimal(str(rec["cost_usd"]))
        out.append(LoggedCall(moment.date(), provider, rec["model"], usd, decode_tags(rec["tags"])))
    return out


def reconcile_table(frame: pd.DataFrame) -> Table:
    """The reconciliation, one row per month, provider, model and project: narrow enough for
    80 columns (the reasons are listed under it, by row number)."""
    out = Table(title="Reconciliation, USD", box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("#", justify="right", no_wrap=True)
    out.add_column("month / model / project", overflow="fold", ratio=1)
    for column in ("stated", "priced", "log", "status"):
        out.add_column(column, justify="right" if column != "status" else "left", no_wrap=True)
    for number, rec in enumerate(frame.to_dict("records"), start=1):
        label = f"{rec['month']} {rec['provider']}/{rec['model'] or '(no model)'}"
        if rec["project"]:
            label += f" {rec['project']}"
        out.add_row(
            str(number),
            label,
            _money(rec["stated_usd"]),
            _money(rec["priced_usd"]),
            _money(rec["logged_usd"]),
            rec["status"],
        )
    return out


def invoice_table(frame: pd.DataFrame) -> Table:
    out = Table(title="Invoices, USD", box=box.SIMPLE_HEAD, pad_edge=False)
    out.add_column("month / provider", overflow="fold", ratio=1)
    for column in ("stated", "credits", "tax", "expected", "invoice", "status"):
        out.add_column(column, justify="right" if column != "status" else "left", no_wrap=True)
    for rec in frame.to_dict("records"):
        credits = rec["export_credits_usd"] - rec["credits_usd"]
        out.add_row(
            f"{rec['month']} {rec['provider']}",
            _money(rec["stated_usd"]),
            _money(credits),
            _money(rec["tax_usd"]),
            _money(rec["expected_usd"]),
            _money(rec["invoice_usd"]),
            rec["status"] or "-",
        )
    return out


def _print_reconciliation(result: Any, csv_out: Path | None) -> int:
    """Print the reconciliation and its invoice checks; the number of flagged rows."""
    frame = result.frame
    counts = frame["status"].value_counts()
    flagged = len(result.flagged)
    _console.print(
        f"{len(frame)} rows: {counts.get('matched', 0)} matched, "
        f"{counts.get('explained', 0)} explained, {flagged} flagged",
        highlight=False,
    )
    _console.print(reconcile_table(frame))
    for number, rec in enumerate(frame.to_dict("records"), start=1):
        if rec["why"]:
            _console.print(f"{number}. {rec['why']}", highlight=False, overflow="fold")
    _console.print(invoice_table(result.invoices))
    for rec in result.invoices.to_dict("records"):
        if rec["why"]:
            text = f"{rec['month']} {rec['provider']}: {rec['why']}"
            _console.print(text, highlight=False, overflow="fold")
    if csv_out is not None:
        from cotplan.io import write_csv

        write_csv(frame, csv_out, private=False)
        _console.print(f"wrote {csv_out}", highlight=False)
    return flagged


def register(
    app: typer.Typer, date_of: Callable[[str | None, str], Any], run: Callable[[Any], Any]
) -> None:
    """Add `reconcile` and `actuals` to the `cost` command group; `date_of` and `run` are the
    group's date-option parser and its warnings-as-notes runner (passed in: this module is
    imported by the group's own)."""

    @app.command("reconcile")
    def reconcile_(
        *,
        openai_usage: Annotated[
            list[Path] | None,
            Opt("--openai-usage", help="OpenAI Usage API pages (JSON), completions."),
        ] = None,
        openai_costs: Annotated[
            list[Path] | None,
            Opt("--openai-costs", help="OpenAI Costs API pages (JSON) or the cost CSV export."),
        ] = None,
        anthropic_usage: Annotated[
            list[Path] | None,
            Opt("--anthropic-usage", help="Anthropic Admin API messages usage report (JSON)."),
        ] = None,
        anthropic_costs: Annotated[
            list[Path] | None,
            Opt("--anthropic-costs", help="Anthropic Admin API cost report (JSON)."),
        ] = None,
        gcp_billing: Annotated[
            list[Path] | None,
            Opt("--gcp-billing", help="Google Cloud billing export (BigQuery table as CSV)."),
        ] = None,
        log: Annotated[
            Path | None,
            Opt("--log", help="cotplan's own log: JSONL of responses (with tags) or .sqlite."),
        ] = None,
        invoices: Annotated[
            Path | None,
            Opt("--invoices", help="CSV: provider,month,total_usd,tax_usd,credits_usd."),
        ] = None,
        terms: Annotated[
            Path | None,
            Opt("--terms", help="Negotiated terms (TOML/JSON): discounts explain lower bills."),
        ] = None,
        rates: Annotated[
            Path | None,
            Opt(
                "--rates",
                help="CSV date,currency,per_usd: converts costs stated in another "
                "currency at the rate dated on or before each line's day.",
            ),
        ] = None,
        by_model: Annotated[
            bool, Opt("--by-model", help="One row per model, not per model and project.")
        ] = False,
        file: Annotated[Path | None, Opt("--prices", help="A price file to override rows.")] = None,
        csv_out: Annotated[
            Path | None, Opt("--csv", help="Write the reconciliation table to this CSV.")
        ] = None,
        on: Annotated[
            str | None,
            Opt("--on", help="As if today were this date: log calls after it are refused."),
        ] = None,
    ) -> None:
        """Provider's stated cost, cotplan's price of its usage and cotplan's own log, per
        month, model and project; every difference explained or flagged."""
        from cotplan.pricing.reconcile import reconcile
        from cotplan.pricing.table import price_table

        today = date_of(on, "on")
        table = price_table(file)
        lines = run(
            lambda: _exports(
                {
                    "openai-usage": openai_usage,
                    "openai-costs": openai_costs,
                    "anthropic-usage": anthropic_usage,
                    "anthropic-costs": anthropic_costs,
                    "gcp-billing": gcp_billing,
                }
            )
        )
        calls = [] if log is None else run(lambda: _log_calls(log, table, today))
        bills = [] if invoices is None else read_invoices(invoices)
        agreed = None
        if terms is not None:
            from cotplan.pricing.terms import read_terms

            agreed = read_terms(terms)
        exchange = None
        if rates is not None:
            from cotplan.pricing.currency import read_rates

            exchange = read_rates(rates)
        result = run(
            lambda: reconcile(
                lines,
                log=calls,
                invoices=bills,
                table=table,
                discounts=None if agreed is None else agreed.discounts(),
                by_project=not by_model,
                rates=exchange,
                terms=agreed,
            )
        )
        if _print_reconciliation(result, csv_out):
            raise typer.Exit(1)

    @app.command("actuals")
    def actuals_(
        *,
        log: Annotated[Path, typer.Argument(help="JSONL of provider responses, with tags.")],
        by: Annotated[str, Opt("--by", help="Tags to split by, comma-separated.")] = "team",
        file: Annotated[Path | None, Opt("--prices", help="A price file to override rows.")] = None,
        csv_out: Annotated[Path | None, Opt("--csv", help="Write the table to this CSV.")] = None,
        on: Annotated[
            str | None,
            Opt("--on", help="As if today were this date: calls after it are refused."),
        ] = None,
    ) -> None:
        """Actual spend per month, split by the calls' tags (team, feature, project)."""
        from cotplan.pricing.attribution import spend_by
        from cotplan.pricing.table import price_table

        today = date_of(on, "on")
        names = [b.strip() for b in by.split(",")]
        table = price_table(file)
        calls = run(lambda: _log_calls(log, table, today))
        frame = spend_by(calls, names)
        out = Table(title=f"Spend by {', '.join(names)}, USD", box=box.SIMPLE_HEAD, pad_edge=False)
        out.add_column("month", no_wrap=True)
        for name in names:
            out.add_column(name, overflow="fold")
        for column in ("calls", "USD", "share"):
            out.add_column(column, justify="right", no_wrap=True)
        for rec in frame.to_dict("records"):
            out.add_row(
                rec["month"],
                *(str(rec[n]) for n in names),
                f"{rec['calls']:,}",
                _money(rec["usd"]),
                f"{rec['share']:.1%}",
            )
        _console.print(out)
        if csv_out is not None:
            from cotplan.io import write_csv

            write_csv(frame, csv_out, private=False)
            _console.print(f"wrote {csv_out}", highlight=False)
