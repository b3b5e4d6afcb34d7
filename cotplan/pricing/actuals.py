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
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.io import parse_json
from cotplan.pricing.table import PriceTable, StalePriceWarning, price_table

__all__ = [
    "Actuals",
    "actuals_from_calls",
    "actuals_from_jsonl",
    "forecast_vs_actuals",
    "not_future",
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


def reason(exc: InputError) -> str:
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
        raise InputError(reason(exc), field=exc.field, line=line, source=str(path)) from exc
    return moment, float(cost.usd)


#: How far past today a call may be dated: a day, for the time zones a log's clock may keep.
_FUTURE_SLACK = timedelta(days=1)


def not_future(moment: datetime, today: date, *, field: str, line: int | None, source: str) -> None:
    """Refuse a call dated after `today` (a day's slack): a log cannot hold spend to come, and
    a clock set to 2050 would otherwise open a month row of its own."""
    if moment.date() > today + _FUTURE_SLACK:
        raise InputError(
            f"{moment.isoformat()} is after today ({today}): a log holds calls already made; "
            "check the clock that wrote it",
            field=field,
            line=line,
            source=source,
        )


def actual_lines(file: Path) -> list[tuple[int, str]]:
    """The file's non-blank lines with their numbers; a line that is not UTF-8 is an error
    naming the file and the line."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(
            f"cannot read the log: {exc.strerror or exc}", field="actuals", source=str(file)
        ) from exc
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    out: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (byte {exc.start + 1} of the line); save the log as UTF-8",
                line=number,
                source=str(file),
            ) from None
        if text.strip():
            out.append((number, text))
    return out


def actuals_from_jsonl(
    path: str | os.PathLike[str],
    *,
    table: PriceTable | None = None,
    today: date | None = None,
) -> Actuals:
    """Month totals of a JSONL file of provider responses, each priced by `cost_of` at the time
    it was made. Errors name the file, the line and the field; an unknown model is an error
    (a log's model names are the user's to fix, not to skip), and so is a call dated after
    `today` (default: the system's date) by more than a day. A stale price is said once per
    price, for the latest call that paid it, not once per day of the log."""
    file = Path(path).expanduser()
    chosen = table or price_table()
    limit = today or date.today()
    calls: list[tuple[datetime, float | None]] = []
    stale: dict[str, tuple[datetime, Warning]] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number, text in actual_lines(file):
            body = line_json(text, file, number)
            moment, usd = _priced_line(body, chosen, file, number)
            not_future(moment, limit, field="time", line=number, source=str(file))
            calls.append((moment, usd))
            for item in caught:
                if issubclass(item.category, StalePriceWarning):
                    # The same price, judged on each call's day: one note, the latest day's.
                    key = str(item.message).split(" was read on ")[0]
                    if key not in stale or stale[key][0] <= moment:
                        stale[key] = (moment, item.message)  # type: ignore[assignment]
                else:
                    stale.setdefault(f"other: {item.message}", (moment, item.message))  # type: ignore[arg-type]
            caught.clear()
    for _, message in stale.values():
        warnings.warn(message, stacklevel=2)
    if not calls:
        raise InputError("the log holds no calls", field="actuals", source=str(file))
    return actuals_from_calls(calls, source=str(file))


def line_json(text: str, file: Path, number: int) -> dict[str, Any]:
    """One line's JSON object, read with the depth and repeated-key limits of `parse_json`."""
    try:
        body = parse_json(text, source=str(file))
    except InputError as exc:
        raise InputError(_reason_of(exc, str(file)), line=number, source=str(file)) from None
    if not isinstance(body, dict):
        raise InputError(
            "must be a JSON object (one response a line)", line=number, source=str(file)
        )
    return body


def _reason_of(exc: InputError, source: str) -> str:
    """`exc`'s message without the source and line `parse_json` put before it."""
    text = str(exc)
    head = f"{source}, line {exc.line}: " if exc.line is not None else f"{source}: "
    return text[len(head) :] if text.startswith(head) else text


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
