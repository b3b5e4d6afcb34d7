"""Workbooks a finance analyst can open and read: formats, frozen headers, fitted widths.

Each sheet is a table with its header in row 1 (frozen), dollars in a currency format (two
decimals for totals, six for a single call or query), token counts and volumes with thousands
separators, rates per million tokens with their own decimals, shares as percentages and dates
as dates. Column widths fit their contents. A summary sheet comes first: the headline figures,
then the assumptions and the price sources beside them, so a printed page carries all three.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pandas as pd

__all__ = ["USD", "USD_FINE", "write_workbook"]

#: Excel number formats.
USD = '"$"#,##0.00'
USD_FINE = '"$"#,##0.000000'
_RATE = "#,##0.00####"
_COUNT = "#,##0"
_TOKENS = "#,##0.0"
_SHARE = "0.0%"
_PERCENT = '0.0"%"'
_DATE = "yyyy-mm-dd"
_FINE = ("usd_per_query", "usd_per_call", "per_query_usd")
_SHARES = ("cache_hit_rate", "cache_write_rate", "batch_share", "volume_cv", "batch_discount",
           "growth_rate")  # fmt: skip
#: Text longer than this overflows into the empty cells beside it instead of widening a column.
_LONG_TEXT = 40


def column_format(name: str) -> str | None:
    """The number format for a column, from its name (None: as it comes)."""
    if name in _FINE:
        return USD_FINE
    if name.endswith("_usd") or name == "usd":
        return USD
    if name.endswith("_per_mtok"):
        return _RATE
    if name in _SHARES:
        return _SHARE
    if name.endswith("_pct"):
        return _PERCENT
    if name in ("queries", "days", "draws", "long_context_threshold", "age_days", "tokens",
                "queries_per_day", "queries_per_month", "n_observed"):  # fmt: skip
        return _COUNT
    if name.startswith("mean_") and name.endswith("_tokens_per_call"):
        return _TOKENS
    return None


def _cell(value: Any) -> Any:
    """A value openpyxl writes natively (numbers, dates, text); NaN and None become blank."""
    if value is None:
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

    def write(self, values: Sequence[Any], formats: Sequence[str | None] = (),
              bold: bool = False) -> None:  # fmt: skip
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
        """A header and rows; in a label-value table ("assumption", "value") each value takes
        the format its label calls for."""
        columns = [str(c) for c in frame.columns]
        self.write(columns, bold=True)
        formats = [column_format(c) for c in columns]
        by_label = columns[-2:] == ["assumption", "value"]
        for record in frame.itertuples(index=False):
            values = list(record)
            if by_label:
                formats = [*formats[:-1], column_format(str(values[-2]))]
            self.write(values, formats)

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
) -> None:
    """Write an XLSX workbook: a "summary" sheet first, then each of `sheets`.

    The summary holds `title`, the `headline` table (its header frozen), the `summary` facts as
    label and value pairs, and each table of `beside` (the assumptions, the price sources) under
    its own bold heading.
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
        sheet.write([label, value], [None, column_format(label)])
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
    book.save(os.fspath(path))
