"""`cotplan cost project --actuals LOG`: real spend per month beside the forecast.

The production log is read here, through `cotplan.production.log`, because pricing sits below
production in the layers; a JSONL log of provider responses is read by `cotplan.pricing`.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
from rich import box
from rich.table import Table

from cotplan.cli.cost_tables import money
from cotplan.errors import CotplanError, InputError
from cotplan.pricing.actuals import (
    Actuals,
    actuals_from_calls,
    actuals_from_jsonl,
    not_future,
    utc_time,
)

__all__ = ["actuals_table", "read_actuals"]

_SQLITE = (".sqlite", ".sqlite3", ".db")


def read_actuals(path: Path, table: Any, today: date | None = None) -> Actuals:
    """A log of real calls: the production log (SQLite) or a JSONL file of responses; a call
    dated after `today` (default: the system's date) by more than a day is refused."""
    if path.suffix.lower() not in _SQLITE:
        return actuals_from_jsonl(path, table=table, today=today)
    from cotplan.production.log import CallLog

    try:
        frame = CallLog(path).to_frame()
    except (CotplanError, sqlite3.Error) as exc:
        raise InputError(
            f"not a cotplan production log: {exc}", field="actuals", source=str(path)
        ) from exc
    if frame.empty:
        raise InputError("the log holds no calls", field="actuals", source=str(path))
    calls = [
        (
            utc_time(time, field=f"calls[{number}].time", source=str(path)),
            None if pd.isna(usd) else float(usd),
        )
        for number, (time, usd) in enumerate(zip(frame["time"], frame["cost_usd"], strict=True), 1)
    ]
    limit = today or date.today()
    for number, (moment, _) in enumerate(calls, 1):
        not_future(moment, limit, field=f"calls[{number}].time", line=None, source=str(path))
    return actuals_from_calls(calls, source=str(path))


def actuals_table(frame: pd.DataFrame, source: str) -> Table:
    """The forecast's months beside the actual spend (`forecast_vs_actuals`)."""
    out = Table(
        title=f"Forecast against actuals ({source}), USD", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for column in ("month", "actual", "calls", "mean", "P10", "P50", "P90", "where"):
        out.add_column(column, justify="left" if column in ("month", "where") else "right")
    for rec in frame.to_dict("records"):
        calls = "" if pd.isna(rec["actual_calls"]) else f"{int(rec['actual_calls']):,}"
        unpriced = rec.get("unpriced_calls")
        if not pd.isna(unpriced) and unpriced:
            calls += f" ({int(unpriced)} unpriced)"
        where = rec["where"] or ("no forecast" if pd.isna(rec["mean_usd"]) else "no calls logged")
        out.add_row(
            str(rec["label"]),
            money(rec["actual_usd"]),
            calls,
            money(rec["mean_usd"]),
            money(rec["p10_usd"]),
            money(rec["p50_usd"]),
            money(rec["p90_usd"]),
            where,
        )
    return out
