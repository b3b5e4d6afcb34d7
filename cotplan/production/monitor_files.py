"""A monitor report as files: the lines by size (monitor.csv), the calls day by day
(monitor_days.csv) and the totals (monitor_summary.json), for `cotplan monitor --out` and the
report page that `cotplan report DIR` rebuilds from them.

The days are what a chart of the cap over time needs: per day, size and cap, the calls, the
share whose thinking the cap cut (bit) and whose answer was forced, the mean reasoning tokens
of the calls that ran to the end, and the spend.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from cotplan.io import write_text
from cotplan.production.log import CallLog, LogRecord
from cotplan.production.monitor import MonitorReport

__all__ = ["MONITOR_FILES", "monitor_days", "write_monitor_files"]

#: The files `write_monitor_files` writes.
MONITOR_FILES = ("monitor.csv", "monitor_days.csv", "monitor_summary.json")


def monitor_days(records: list[LogRecord]) -> pd.DataFrame:
    """One row per UTC day, size and cap (see the module doc); empty without records."""
    columns = ["day", "size", "cap", "calls", "cap_bitten", "answer_forced",
               "reasoning_tokens", "cost_usd"]  # fmt: skip
    if not records:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(
        [{"day": r.time[:10], "size": r.size, "cap": r.cap, "complete": r.outcome == "complete",
          "cap_bitten": r.cap_bitten, "answer_forced": r.answer_forced,
          "reasoning_tokens": r.reasoning_tokens, "cost_usd": r.cost_usd} for r in records]
    )  # fmt: skip
    rows = []
    for (day, size, cap), group in frame.groupby(["day", "size", "cap"], sort=True):
        # Rates over the calls that ran to the end, as `monitor` counts them.
        ended = group[group["complete"]] if group["complete"].any() else group
        rows.append(
            {"day": day, "size": size, "cap": cap, "calls": len(group),
             "cap_bitten": float(ended["cap_bitten"].mean()),
             "answer_forced": float(ended["answer_forced"].mean()),
             # Unknown counts (NULL in the log) are left out of the mean, never read as 0.
             "reasoning_tokens": float(pd.to_numeric(ended["reasoning_tokens"]).mean()),
             "cost_usd": float(group["cost_usd"].sum())}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def write_monitor_files(report: MonitorReport, folder: Path, *, model: str | None) -> list[Path]:
    """Write `MONITOR_FILES` into `folder` (a report folder's staging path); the calls of
    `model` only when one is given (the plan's), as `monitor` read them."""
    records = CallLog(report.log).records() if Path(report.log).is_file() else []
    if model:
        records = [r for r in records if r.model == model]
    written = [folder / name for name in MONITOR_FILES]
    report.to_frame().to_csv(written[0], index=False)
    monitor_days(records).to_csv(written[1], index=False)

    def number(value: float) -> float | None:
        return None if math.isnan(value) else value

    summary = {
        "log": report.log,
        "calls": report.calls,
        "other_models": report.other_models,
        "spend_usd": number(report.spend_usd),
        "projected_usd": number(report.projected_usd),
        "reasoning_tokens": report.reasoning_tokens,
        "projected_reasoning_tokens": number(report.projected_reasoning_tokens),
        "verdict": None if report.test is None else report.test.verdict,
        "alarm": report.alarm,
        "notes": list(report.notes),
    }
    write_text(written[2], json.dumps(summary, indent=2) + "\n")
    return written
