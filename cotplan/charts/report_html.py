"""The pieces of report.html every section uses: an HTML table, a chart as inline SVG, and the
way a number is shown in a cell (`cotplan.charts.report_page` and its sections)."""

from __future__ import annotations

import html
import math
from typing import Any

__all__ = ["cell", "int_cell", "is_nan", "pct_cell", "svg", "table"]


def svg(chart: Any) -> str | None:
    """The chart as inline SVG (vl-convert, offline), None when it does not render."""
    try:
        import vl_convert

        svg = str(vl_convert.vegalite_to_svg(chart.to_json()))
    except Exception:  # a renderer's failure loses one chart, not the page
        return None
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else None


def table(head: list[str], rows: list[list[str]], text: set[int] | None = None) -> str:
    text = text or set()

    def cls(j: int) -> str:
        return ' class="text"' if j in text else ""

    lines = ["<table><thead><tr>"]
    lines += [f"<th{cls(j)}>{html.escape(h)}</th>" for j, h in enumerate(head)]
    lines.append("</tr></thead><tbody>")
    for row in rows:
        cells = "".join(f"<td{cls(j)}>{html.escape(str(v))}</td>" for j, v in enumerate(row))
        lines.append(f"<tr>{cells}</tr>")
    lines.append("</tbody></table>")
    return "".join(lines)


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def int_cell(value: Any) -> str:
    if value is None or is_nan(value):
        return "–"
    return f"{float(value):.0f}"


def pct_cell(value: Any) -> str:
    if value is None or is_nan(value):
        return "–"
    return f"{float(value):.0%}"


def cell(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.4g}"
    return str(value)
