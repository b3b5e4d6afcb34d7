"""What was really spent, month by month, beside what a projection forecast.

Two kinds of log are read. Any JSONL file of provider responses (one per line, as an OpenAI,
Anthropic, Gemini, xAI or DeepSeek API returned them, or any dict `cost_of` reads), each priced
by `cost_of` at the time it was made: OpenAI's ``created``, else a top-level ``time`` (ISO
8601; naive means UTC). And the production log (`cotplan.production.log`, one SQLite row per
capped call with its ``time`` and ``cost_usd``), which the command line reads through that
module and hands here as times and amounts: pricing sits below production in the layers.

A call whose model has no price is counted apart (``unpriced_calls``), never as zero dollars.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.table import PriceTable, price_table

__all__ = ["Actuals", "actuals_from_calls", "actuals_from_jsonl", "forecast_vs_actuals"]

_COLUMNS = ["label", "calls", "usd", "unpriced_calls", "first", "last"]


@dataclass(frozen=True)
class Actuals:
    """Real spend per calendar month (UTC): `frame` has ``label`` (YYYY-MM), ``calls``,
    ``usd`` (priced calls only), ``unpriced_calls``, and the ``first`` and ``last`` call's
    time. `source` names the log it was read from."""

    frame: pd.DataFrame
    source: str

    def to_frame(self) -> pd.DataFrame:
        """The month table (a copy)."""
        return self.frame.copy()

    @property
    def usd(self) -> float:
        """Spend of every priced call."""
        return float(self.frame["usd"].sum())


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def actuals_from_calls(
    calls: Iterable[tuple[datetime, float | None]], *, source: str = "calls"
) -> Actuals:
    """Month totals of (time, USD) pairs; a None or NaN amount is a call without a price."""
    months: dict[str, dict[str, Any]] = {}
    for moment, usd in calls:
        when = _utc(moment)
        month = months.setdefault(
            f"{when:%Y-%m}",
            {"calls": 0, "usd": 0.0, "unpriced_calls": 0, "first": when, "last": when},
        )
        month["calls"] += 1
        if usd is None or (isinstance(usd, float) and math.isnan(usd)):
            month["unpriced_calls"] += 1
        else:
            month["usd"] += float(usd)
        month["first"] = min(month["first"], when)
        month["last"] = max(month["last"], when)
    rows = [{"label": label, **values} for label, values in sorted(months.items())]
    return Actuals(pd.DataFrame(rows, columns=_COLUMNS), source)


def _line_time(body: dict[str, Any], path: Path, line: int) -> datetime | None:
    """A line's own ``time`` (ISO 8601), or None to let `cost_of` read ``created``."""
    value = body.get("time")
    if value is None:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{value!r} is not an ISO 8601 time", field="time", line=line, source=str(path)
        ) from None


def actuals_from_jsonl(path: str | os.PathLike[str], *, table: PriceTable | None = None) -> Actuals:
    """Month totals of a JSONL file of provider responses, each priced by `cost_of` at the time
    it was made. Errors name the file, the line and the field; an unknown model is an error
    (a log's model names are the user's to fix, not to skip)."""
    from cotplan.pricing.usage import cost_of

    file = Path(path).expanduser()
    try:
        lines = file.read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the log: {exc}", field="actuals", source=str(file)) from exc
    chosen = table or price_table()
    calls: list[tuple[datetime, float | None]] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            body = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", line=number, source=str(file)) from None
        if not isinstance(body, dict):
            raise InputError(
                "must be a JSON object (one response a line)", line=number, source=str(file)
            )
        at = _line_time(body, file, number)
        try:
            cost = cost_of(body, at=at, table=chosen)
        except InputError as exc:
            raise InputError(str(exc), field=exc.field, line=number, source=str(file)) from exc
        if at is None:
            if body.get("created") is None:
                raise InputError(
                    "no time: add `created` (Unix seconds) or `time` (ISO 8601)",
                    field="time",
                    line=number,
                    source=str(file),
                )
            at = datetime.fromtimestamp(float(body["created"]), tz=UTC)
        calls.append((at, float(cost.usd)))
    if not calls:
        raise InputError("the log holds no calls", field="actuals", source=str(file))
    return actuals_from_calls(calls, source=str(file))


def forecast_vs_actuals(projection: Any, actuals: Actuals) -> pd.DataFrame:
    """The projection's months beside the real spend of the same months: one row per month
    either holds, with the forecast's mean, P10, P50 and P90, the actual USD and calls, and
    where the actual fell (``below P10``, ``P10..P90``, ``above P90``; blank without both)."""
    months = projection.monthly()[["label", "mean_usd", "p10_usd", "p50_usd", "p90_usd"]]
    real = actuals.frame.rename(columns={"usd": "actual_usd", "calls": "actual_calls"})
    merged = months.merge(
        real[["label", "actual_usd", "actual_calls", "unpriced_calls"]], on="label", how="outer"
    ).sort_values("label", ignore_index=True)

    def place(row: Any) -> str:
        if pd.isna(row["actual_usd"]) or pd.isna(row["p10_usd"]):
            return ""
        if row["actual_usd"] < row["p10_usd"]:
            return "below P10"
        return "above P90" if row["actual_usd"] > row["p90_usd"] else "P10..P90"

    merged["where"] = merged.apply(place, axis=1) if len(merged) else []
    out: pd.DataFrame = merged
    return out
