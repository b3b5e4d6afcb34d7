"""Calibration at a glance: the accuracy by budget and size, what it cost, where batches stand.

`cotplan calibrate` and `cotplan demo` print a calibration with `print_calibration` (one row per
budget, one column per size: a grid of budgets would be wider than a terminal), its spend with
`print_spend`, and `calibrate --status` a batch folder with `print_batch_status`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from cotplan.render.tables import print_grid

if TYPE_CHECKING:
    from pathlib import Path

    from cotplan.planner.batch_state import BatchStatus
    from cotplan.planner.calibrate import Calibration

__all__ = ["grid_words", "print_batch_status", "print_calibration", "print_spend"]


def print_calibration(
    console: Console,
    calibration: Calibration,
    *,
    title: str = "Calibration: accuracy (mean reasoning tokens) by budget k and size n",
) -> None:
    """Accuracy per (n, k) with the mean reasoning tokens spent at each budget, the requests,
    the notes and the spend."""
    summary = calibration.summary()
    budgets = sorted(int(k) for k in summary["k"].unique())
    sizes = sorted(int(n) for n in summary["n"].unique())
    # One row per budget, one column per size: a grid of budgets would be wider than a
    # terminal (every cell cut to '…'); the sizes are few. Too many sizes split the grid.
    cells = {(int(r["n"]), int(r["k"])): r for r in summary.to_dict("records")}
    rows = []
    for k in budgets:
        row = []
        for n in sizes:
            r = cells.get((n, k))
            row.append("" if r is None else f"{r['accuracy']:.2f} ({r['reasoning_tokens']:.0f})")
        rows.append((str(k), row))
    print_grid(console, "k", [f"n={n}" for n in sizes], rows, title=title)
    answers = len(calibration.frame)
    items = calibration.frame["item"].nunique()
    console.print(
        f"{items} items x {len(budgets)} budgets = {answers} answers; "
        f"{calibration.requests} requests, {calibration.cache_hits} answered by the call cache"
        + (f", {calibration.retries} retried after failures" if calibration.retries else "")
    )
    for note in calibration.notes:
        console.print(f"[yellow]note:[/] {note}")
    print_spend(console, calibration.frame)


def print_spend(console: Console, frame: Any) -> None:
    """One line: what the calibration itself cost (answers, tokens, USD)."""
    from cotplan.planner.calibrate import calibration_spend
    from cotplan.planner.calibration_file import usage_note

    spend = calibration_spend(frame)
    tokens = [
        f"{spend[kind]:,.0f} {kind.removesuffix('_tokens')}"
        for kind in ("prompt_tokens", "reasoning_tokens", "answer_tokens")
        if not math.isnan(spend[kind])
    ]
    usd = "price unknown" if math.isnan(spend["cost_usd"]) else f"USD {spend['cost_usd']:.4f}"
    console.print(
        f"calibration spend: {spend['answers']:.0f} answers of {spend['items']:.0f} items"
        + (f"; tokens {', '.join(tokens)}" if tokens else "")
        + f"; {usd}"
    )
    if note := usage_note(frame):
        console.print(f"[yellow]note:[/] {note}")


def print_batch_status(console: Console, status: BatchStatus, folder: Path) -> None:
    """Where a report folder's batches stand, as last seen."""
    table = Table(title=f"Batches of {status.model} in {folder}")
    frame = status.to_frame()
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*(str(value) for value in row))
    console.print(table)
    console.print(
        f"{status.answered} answers received; {status.failed} failed request(s) waiting to be "
        f"asked again; {status.in_flight} request(s) in batches not yet read back; last seen "
        f"{status.updated or 'never'} (rerun the calibrate command to poll and resume)"
    )


def grid_words(grid: list[int], n: int) -> str:
    """A budget grid in a few words: listed when short, its range and size when long."""
    if len(grid) <= 6:
        return f"k = {', '.join(map(str, grid))} (n = {n})"
    return f"{len(grid)} from k = {grid[0]} to {grid[-1]} (n = {n})"
