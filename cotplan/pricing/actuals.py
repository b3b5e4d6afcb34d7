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

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.io import parse_json
from cotplan.pricing.table import PriceTable, price_table

__all__ = [
    "Actuals",
    "actuals_from_calls",
    "actuals_from_jsonl",
    "forecast_vs_actuals",
    "utc_time",
]

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


def utc_time(
    value: object, *, field: str, line: int | None = None, source: str | None = None
) -> datetime:
    """`value` (ISO 8601 text, naive meaning UTC, or a datetime) as an aware UTC datetime;
    an `InputError` naming `field` (and `line`, `source`) when it is none, or when it lies
    so near year 1 or 9999 that its UTC time has no date."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise InputError(
                f"{value!r} is not an ISO 8601 time", field=field, line=line, source=source
            ) from None
    try:
        return _utc(moment)
    except OverflowError:
        raise InputError(
            f"{value!s} falls outside the years 1 to 9999 in UTC",
            field=field,
            line=line,
            source=source,
        ) from None


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


def _reason(exc: InputError) -> str:
    """`exc`'s message without its field prefix, to be raised again with the file and line."""
    text = str(exc)
    prefix = f"`{exc.field}`: "
    return text[len(prefix) :] if exc.field and text.startswith(prefix) else text


def _priced_line(
    body: dict[str, Any], table: PriceTable, path: Path, line: int
) -> tuple[datetime, float]:
    """One response's time (its own ``time``, else the provider's timestamp) and cost."""
    from cotplan.pricing.usage import cost_of, read_usage

    try:
        stamp = body.get("time")
        at = read_usage(body).created if stamp is None else stamp
        if at is None:
            raise InputError(
                "no time: add `created` (Unix seconds) or `time` (ISO 8601)", field="time"
            )
        # Checked in UTC here, so pricing below never meets a time it cannot convert.
        moment = utc_time(at, field="time" if stamp is not None else "created")
        cost = cost_of(body, at=moment, table=table)
    except InputError as exc:
        raise InputError(_reason(exc), field=exc.field, line=line, source=str(path)) from exc
    return moment, float(cost.usd)


def actuals_from_jsonl(path: str | os.PathLike[str], *, table: PriceTable | None = None) -> Actuals:
    """Month totals of a JSONL file of provider responses, each priced by `cost_of` at the time
    it was made. Errors name the file, the line and the field; an unknown model is an error
    (a log's model names are the user's to fix, not to skip)."""
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
        # One reader for untrusted JSON: nesting, size and a key given twice, naming the line.
        body = parse_json(text, source=str(file), line=number)
        if not isinstance(body, dict):
            raise InputError(
                "must be a JSON object (one response a line)", line=number, source=str(file)
            )
        calls.append(_priced_line(body, chosen, file, number))
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
