"""Workbooks a finance analyst can open, read and sum: formats, frozen headers, fitted widths.

Each sheet is a table with its header in row 1 (frozen), dollars in a currency format (two
decimals for totals, four for USD per 1,000 queries, six for a single call or query), token
counts and volumes with thousands separators, rates per million tokens with their own
decimals, dates as dates, and every share or percentage stored as a fraction (0.277) with a
percent format (27.7%), so arithmetic on it is right. Column widths fit their contents.

A projection's workbook (`projection_workbook`) puts each kind of period on a sheet of its own
(months, fiscal quarters, fiscal years), so a SUM over any one of them is the horizon's total
and nothing is counted twice; the summary sheet holds the totals, the budget, the price
changes inside the horizon, every input as entered beside what was simulated, and the price
sources. Files are written whole (a temporary file renamed) with mode 0640: readable by the
owner's group, so colleagues in a shared folder can open them. The prices in them are the
providers' published list prices, each with its public source; nothing in them is secret (no
prompts, responses or keys), unlike the call logs cotplan keeps private (0600).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from cotplan.pricing.periods import PERIOD_COLUMNS, BudgetCheck

__all__ = [
    "SHARED_MODE",
    "SHARED_NOTE",
    "USD",
    "USD_FINE",
    "price_sources",
    "projection_workbook",
    "write_shared_csv",
    "write_workbook",
]

#: Mode of every CSV and workbook a projection writes: the owner reads and writes, the group
#: reads (colleagues in a shared folder), others nothing.
SHARED_MODE = 0o640
SHARED_NOTE = (
    "This file is readable by its owner's group (mode 0640) so colleagues in a shared folder "
    "can open it. It holds published list prices, each with its public source, and the "
    "forecast's own inputs; no prompts, responses or API keys, which cotplan keeps private "
    "(0600)."
)

#: Excel number formats.
USD = '"$"#,##0.00'
USD_FINE = '"$"#,##0.000000'
USD_1K = '"$"#,##0.0000'
_RATE = "#,##0.00####"
_COUNT = "#,##0"
_TOKENS = "#,##0.0"
_SHARE = "0.0%"
_DATE = "yyyy-mm-dd"
_FINE = ("usd_per_query", "usd_per_call", "per_query_usd")
_SHARES = (
    "cache_hit_rate",
    "cache_write_rate",
    "batch_share",
    "volume_cv",
    "batch_discount",
    "growth_rate",
    "growth_low",
    "growth_high",
    "p_over_budget",
    "cost_change",
)
#: Text longer than this overflows into the empty cells beside it instead of widening a column.
_LONG_TEXT = 40


def column_format(name: str) -> str | None:
    """The number format for a column, from its name (None: as it comes)."""
    if name in _FINE:
        return USD_FINE
    if name.startswith("usd_per_1k_queries"):
        return USD_1K
    if name.endswith("_usd") or name == "usd":
        return USD
    if name.endswith("_per_mtok") or "_per_mtok_" in name:
        return _RATE
    if name in _SHARES or name.endswith("_pct"):
        # A "_pct" column holds percent points (27.7); it is written as a fraction (`_cell`).
        return _SHARE
    if name in (
        "queries",
        "days",
        "draws",
        "long_context_threshold",
        "age_days",
        "tokens",
        "queries_per_day",
        "queries_per_month",
        "n_observed",
        "months",
    ):
        return _COUNT
    if name.startswith("mean_") and name.endswith("_tokens_per_call"):
        return _TOKENS
    if name.endswith(("_tokens_mean", "_tokens_sd")):
        return _TOKENS
    return None


def _cell(value: Any) -> Any:
    """A value openpyxl writes natively (numbers, dates, text); NaN and None become blank."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bool | int | float | Decimal | str | datetime | date):
        return value
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if hasattr(value, "item"):  # numpy scalars
        return _cell(value.item())
    return str(value)


def _fraction_of(percent: Any) -> Any:
    """Percent points (27.7) as the fraction a percent format shows as 27.7%."""
    if isinstance(percent, bool) or not isinstance(percent, int | float):
        return percent
    return percent / 100.0


def _shown(value: Any, fmt: str | None) -> str:
    """Roughly the text Excel shows, to size the column."""
    if value is None:
        return ""
    if isinstance(value, date):
        return "2026-12-31"
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        number = float(value)
        if fmt == USD:
            return f"${number:,.2f}"
        if fmt == USD_FINE:
            return f"${number:,.6f}"
        if fmt == USD_1K:
            return f"${number:,.4f}"
        if fmt in (_COUNT,):
            return f"{number:,.0f}"
        if fmt == _SHARE:
            return f"{100 * number:.1f}%"
        return f"{number:,.6g}"
    return str(value)


class _Sheet:
    """Rows written one by one, with formats per cell and widths tracked per column."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.row = 1
        self.widths: dict[int, int] = {}

    def write(
        self, values: Sequence[Any], formats: Sequence[str | None] = (), bold: bool = False
    ) -> None:
        from openpyxl.styles import Font

        for j, value in enumerate(values, start=1):
            fmt = formats[j - 1] if j - 1 < len(formats) else None
            cell = self.ws.cell(row=self.row, column=j, value=_cell(value))
            if fmt is not None and cell.value is not None and not isinstance(cell.value, str):
                cell.number_format = fmt
            elif isinstance(cell.value, date):
                cell.number_format = _DATE
            if bold:
                cell.font = Font(bold=True)
            shown = len(_shown(cell.value, fmt))
            if isinstance(cell.value, str) and shown > _LONG_TEXT:
                continue
            self.widths[j] = max(self.widths.get(j, 0), shown)
        self.row += 1

    def table(self, frame: pd.DataFrame) -> None:
        """A header and rows. In a label-value table ("assumption", "value"; or "input",
        "as_entered", "simulated") each value takes the format its label calls for."""
        columns = [str(c) for c in frame.columns]
        self.write(columns, bold=True)
        formats = [column_format(c) for c in columns]
        label_at: int | None = None
        valued: list[int] = []
        if columns[-2:] == ["assumption", "value"]:
            label_at, valued = len(columns) - 2, [len(columns) - 1]
        elif columns[:3] == ["input", "as_entered", "simulated"]:
            label_at, valued = 0, [1, 2]
        percent = [c.endswith("_pct") for c in columns]
        for record in frame.itertuples(index=False):
            values = list(record)
            row_formats = list(formats)
            scale = list(percent)
            if label_at is not None:
                label = str(values[label_at])
                for j in valued:
                    row_formats[j] = column_format(label)
                    scale[j] = label.endswith("_pct")
            values = [_fraction_of(v) if s else v for v, s in zip(values, scale, strict=True)]
            self.write(values, row_formats)

    def fit(self) -> None:
        from openpyxl.utils import get_column_letter

        for j, width in self.widths.items():
            self.ws.column_dimensions[get_column_letter(j)].width = min(max(width + 2, 8), 80)


def write_workbook(
    path: str | os.PathLike[str],
    summary: Iterable[tuple[str, Any]] | None,
    headline: pd.DataFrame | None,
    sheets: Mapping[str, pd.DataFrame],
    *,
    title: str = "",
    beside: Mapping[str, pd.DataFrame] | None = None,
    notes: Sequence[str] = (SHARED_NOTE,),
) -> None:
    """Write an XLSX workbook: a "summary" sheet first, then each of `sheets`; mode 0640.

    The summary holds `title`, the `headline` table (its header frozen), the `summary` facts as
    label and value pairs, and each table of `beside` (the assumptions, the price sources) under
    its own bold heading, then `notes` under "Notes".
    """
    from openpyxl import Workbook

    book = Workbook()
    first = book.active
    first.title = "summary"
    sheet = _Sheet(first)
    if title:
        sheet.write([title], bold=True)
        sheet.widths.clear()  # a title may overhang; it does not set the column width
        sheet.row += 1
    if headline is not None:
        first.freeze_panes = first.cell(row=sheet.row + 1, column=1)
        sheet.table(headline)
        sheet.row += 1
    for label, value in summary or ():
        shown = _fraction_of(value) if label.endswith("_pct") else value
        sheet.write([label, shown], [None, column_format(label)])
    for heading, frame in (beside or {}).items():
        sheet.row += 1
        sheet.write([heading], bold=True)
        sheet.table(frame)
    sheet.fit()
    for name, frame in sheets.items():
        ws = book.create_sheet(name[:31])
        page = _Sheet(ws)
        page.table(frame)
        ws.freeze_panes = "A2"
        page.fit()
    if notes:
        sheet = _Sheet(first)
        sheet.row = first.max_row + 2
        sheet.write(["Notes"], bold=True)
        for line in notes:
            sheet.write([line])
    _save(book, path)


def _atomic(path: str | os.PathLike[str], write: Callable[[str], None]) -> Path:
    """Write through `write(temporary name)` and rename into place, with mode `SHARED_MODE`:
    a reader never sees half a file, and the mode does not depend on the umask."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, SHARED_MODE)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _save(book: Any, path: str | os.PathLike[str]) -> Path:
    return _atomic(path, book.save)


def write_shared_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """A DataFrame as CSV (no index), written whole with mode 0640 (see `SHARED_NOTE`)."""
    return _atomic(path, lambda name: frame.to_csv(name, index=False))


_SOURCE_COLUMNS = (
    "provider",
    "model",
    "effective_from",
    "effective_to",
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "batch_discount",
    "long_context_threshold",
    "as_of",
    "source",
)


def price_sources(prices: pd.DataFrame) -> pd.DataFrame:
    """The columns of a price table that say what a price was and where it came from."""
    return prices[[c for c in _SOURCE_COLUMNS if c in prices.columns]]


_MONTH_COLUMNS = (
    *PERIOD_COLUMNS,
    "mean_usd_per_day",
    "usd_per_1k_queries",
    "price_from",
    "price_change",
    "price_source",
    "price_as_of",
)
_TOTAL_COLUMNS = (
    "label",
    "queries",
    "mean_usd",
    "p10_usd",
    "p50_usd",
    "p90_usd",
    "usd_per_1k_queries",
)
_ROLLUP_COLUMNS = (
    "label",
    "fiscal_year",
    "quarter",
    "start",
    "months",
    "complete",
    "queries",
    "mean_usd",
    "p10_usd",
    "p50_usd",
    "p90_usd",
    "usd_per_1k_queries",
)


def _with_budget(columns: Sequence[str], budgeted: bool) -> list[str]:
    return [*columns, "p_over_budget"] if budgeted else list(columns)


class ProjectionLike(Protocol):
    """What a workbook reads of a `cotplan.pricing.Projection`. Written out here so that this
    module, which the projection calls to export itself, imports nothing from it."""

    @property
    def frame(self) -> pd.DataFrame: ...
    @property
    def model(self) -> str: ...
    @property
    def policy(self) -> str: ...
    @property
    def per_query_usd(self) -> float: ...
    @property
    def assumptions(self) -> dict[str, Any]: ...
    @property
    def prices(self) -> pd.DataFrame: ...
    @property
    def rollups(self) -> pd.DataFrame: ...
    @property
    def budget(self) -> BudgetCheck | None: ...
    @property
    def inputs(self) -> pd.DataFrame: ...
    @property
    def price_changes(self) -> pd.DataFrame: ...
    @property
    def fiscal_year_start(self) -> int: ...
    def assumptions_frame(self) -> pd.DataFrame: ...


def projection_workbook(projection: ProjectionLike, path: str | os.PathLike[str]) -> Path:
    """Write `projection` as an XLSX workbook that sums (see the module docstring).

    Sheets: "summary"; "monthly" (one row per month: spend, the average day, USD per 1,000
    queries and the price that held, with its source); "quarters" and "fiscal_years" (fiscal
    roll-ups, partial ones marked); "years" (only when the horizon holds more than one);
    "assumptions" (every argument, to rerun it); "prices" (the rows used).
    """
    from openpyxl import Workbook

    book = Workbook()
    ws = book.active
    ws.title = "summary"
    _summary_sheet(_Sheet(ws), projection)
    for name, table in _pages(projection).items():
        page_ws = book.create_sheet(name)
        page = _Sheet(page_ws)
        page.table(table)
        page_ws.freeze_panes = "A2"
        page.fit()
    return _save(book, path)


def _facts(projection: ProjectionLike) -> list[tuple[str, Any]]:
    """The summary's single figures: costs per query and call, the price, the budget check."""
    frame = projection.frame
    total = frame[frame["period"] == "total"]
    a = projection.assumptions
    facts: list[tuple[str, Any]] = [
        ("usd_per_query", projection.per_query_usd),
        ("usd_per_call", a["usd_per_call"]),
        ("usd_per_1k_queries", float(total["usd_per_1k_queries"].iloc[0])),
        ("price_source", a["price_source"]),
        ("fiscal_year_start", f"{projection.fiscal_year_start} (month)"),
    ]
    if projection.budget is not None:
        check = projection.budget
        what = "any month" if check.budget.per == "month" else "any complete year"
        facts += [
            ("budget_usd", check.budget.usd),
            ("budget_per", check.budget.per),
            (f"p_over_budget ({what})", check.probability),
        ]
    return facts


def _summary_sheet(sheet: _Sheet, projection: ProjectionLike) -> None:
    """The summary: headline totals with their header frozen, the single figures, price
    changes, the budget, the inputs as entered, the price sources and the notes."""
    frame = projection.frame
    budgeted = projection.budget is not None
    months = frame[frame["period"] == "month"]
    years = frame[frame["period"] == "year"]
    total = frame[frame["period"] == "total"]
    # Totals on the summary, each a separate figure; the total row only when it is not the
    # one year again.
    headline = pd.concat([years, total] if len(years) != 1 or len(months) != 12 else [years])
    a = projection.assumptions
    sheet.write(
        [
            f"Projected spend, USD: {projection.model} ({a['provider']}), {projection.policy}, "
            f"{a['draws']:,} draws, seed {a['seed']}"
        ],
        bold=True,
    )
    sheet.widths.clear()  # a title may overhang; it does not set the column width
    sheet.row += 1
    sheet.ws.freeze_panes = sheet.ws.cell(row=sheet.row + 1, column=1)
    sheet.table(headline[_with_budget(_TOTAL_COLUMNS, budgeted)])
    sheet.write(
        [
            "Each row above is a total of its own: do not add them up. The monthly, quarters "
            "and fiscal_years sheets each add up to the total."
        ]
    )
    sheet.row += 1
    for label, value in _facts(projection):
        fmt = _SHARE if label.startswith("p_over_budget") else column_format(label)
        sheet.write([label, value], [None, fmt])
    sheet.row += 1
    changes = projection.price_changes
    sheet.write(["Price changes in the horizon"], bold=True)
    if len(changes):
        sheet.table(changes)
    else:
        sheet.write(["none: one price holds for the whole horizon"])
    if projection.budget is not None:
        sheet.row += 1
        sheet.write([f"Budget: {projection.budget.budget.label}"], bold=True)
        sheet.table(projection.budget.periods)
    for heading, table in (
        ("Inputs as entered, and as simulated", projection.inputs),
        ("Price sources", price_sources(projection.prices)),
    ):
        sheet.row += 1
        sheet.write([heading], bold=True)
        sheet.table(table)
    sheet.row += 1
    sheet.write(["Notes"], bold=True)
    for line in (
        "Means add up across periods; percentiles do not (the P10 of a year is not the sum "
        "of its months' P10s): each period's P10, P50 and P90 come from the draws of that "
        "period's own spend.",
        "A price change dated inside a month applies from its day on; price_change on the "
        "monthly sheet gives the day and price_source both prices.",
        f"Fiscal years start in month {projection.fiscal_year_start} and are named by the "
        "calendar year they end in; partial ones at the ends of the horizon are marked.",
        SHARED_NOTE,
    ):
        sheet.write([line])
    sheet.fit()


def _pages(projection: ProjectionLike) -> dict[str, pd.DataFrame]:
    """The sheets after the summary, by name, in order."""
    frame = projection.frame
    budgeted = projection.budget is not None
    months = frame[frame["period"] == "month"].copy()
    months["mean_usd_per_day"] = months["mean_usd"] / months["days"]
    years = frame[frame["period"] == "year"]
    rollups = projection.rollups
    quarters = rollups[rollups["period"] == "quarter"] if len(rollups) else rollups
    fiscal = rollups[rollups["period"] == "fiscal_year"] if len(rollups) else rollups
    pages: dict[str, pd.DataFrame] = {
        "monthly": months[_with_budget(_MONTH_COLUMNS, budgeted)],
        "quarters": quarters[list(_ROLLUP_COLUMNS)] if len(quarters) else quarters,
        "fiscal_years": fiscal[_with_budget(_ROLLUP_COLUMNS, budgeted)] if len(fiscal) else fiscal,
    }
    if len(years) > 1:
        pages["years"] = years[_with_budget(_TOTAL_COLUMNS, budgeted)]
    pages["assumptions"] = projection.assumptions_frame()
    pages["prices"] = projection.prices
    return pages
