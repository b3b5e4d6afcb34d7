"""Tables that fit the terminal: numbers never cut, wide grids split, money kept short.

Numeric columns do not wrap and text columns take what is left (`compact_table`); a grid wider
than the terminal is split into column groups (`print_grid`) rather than squeezed into
ellipses. Every renderer in `cotplan.render` builds its tables here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

__all__ = ["compact_table", "fmt", "money", "pct", "print_grid"]


def compact_table(columns: Sequence[tuple[str, str]], *, title: str | None = None) -> Table:
    """A table with one header rule and no side borders (fewer lines, more room); each column
    is (name, kind): "num" columns are right-aligned and never wrap (a number is never cut),
    "text" columns wrap into the width left."""
    table = Table(
        box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title=title, title_justify="left"
    )
    for name, kind in columns:
        if kind == "num":
            table.add_column(name, justify="right", no_wrap=True)
        else:
            table.add_column(name, justify="left", overflow="fold")
    return table


def print_grid(
    console: Console,
    corner: str,
    headers: Sequence[str],
    rows: Sequence[tuple[str, Sequence[str]]],
    *,
    title: str | None = None,
) -> None:
    """A grid of short cells (every column a number column), split into as many tables as
    it takes for each to fit the console's width instead of cutting cells to '…'."""
    width = console.width
    # Each column takes its widest cell, a space of padding each side and a divider.
    label = max([len(corner), *(len(r[0]) for r in rows)]) + 1
    groups: list[list[int]] = [[]]
    used = label
    for j, head in enumerate(headers):
        cell = max([len(head), *(len(r[1][j]) for r in rows)]) + 3
        if groups[-1] and used + cell > width:
            groups.append([])
            used = label
        groups[-1].append(j)
        used += cell
    if title:
        console.print(title)
    for group in groups:
        table = compact_table([(corner, "num"), *((headers[j], "num") for j in group)])
        for name, cells in rows:
            table.add_row(name, *(cells[j] for j in group))
        console.print(table)


def money(x: float) -> str:
    """USD short enough for a narrow column: cents below 1,000, whole dollars above."""
    if math.isnan(x):
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 0.01 or x == 0:
        return f"{x:,.2f}"
    return f"{x:.2g}"


def fmt(x: float, digits: int = 2) -> str:
    """A number to `digits` places; '–' for NaN and '∞' for infinity."""
    if isinstance(x, float) and math.isnan(x):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    return f"{x:.{digits}f}"


def pct(value: object) -> str:
    """A share as a whole percentage; '–' for NaN."""
    x = float(value)  # type: ignore[arg-type]
    return "–" if math.isnan(x) else f"{x:.0%}"
