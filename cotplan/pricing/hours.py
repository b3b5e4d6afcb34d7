"""When in the day a workload's calls are made, for prices that change with the hour.

DeepSeek, for one, bills more in its peak hours (00:30-16:30 UTC) than outside them (genai-prices
lists both). A projection prices a month's calls as a blend of the prices of each hour, weighted
by the share of calls made in that hour: `HourProfile`. The default is uniform over the 24 hours
of the day (UTC). Hours are split into half hours, each taking half its hour's share, so a
window that starts or ends on the half hour is weighted exactly.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

from cotplan.errors import InputError
from cotplan.pricing.rows import PriceRow

__all__ = ["HourProfile", "blend_hours", "hour_profile"]

_HOURS = 24
_WINDOW = re.compile(r"^\s*(\d{1,2})\s*-\s*(\d{1,2})\s*:\s*([0-9.]+)\s*$")


@dataclass(frozen=True)
class HourProfile:
    """The share of a day's calls made in each hour, 00 to 23 UTC (`shares` sums to 1).

    `label` says in words what was entered ("uniform over 24 hours UTC", a file, a window).
    """

    shares: tuple[float, ...]
    label: str

    def __post_init__(self) -> None:
        if len(self.shares) != _HOURS:
            raise InputError(
                f"needs 24 hourly shares (00 to 23 UTC), got {len(self.shares)}",
                field="hour_profile",
            )
        for hour, share in enumerate(self.shares):
            if not (math.isfinite(share) and share >= 0):
                raise InputError(
                    f"hour {hour:02d}: a share must be a number >= 0, got {share!r}",
                    field="hour_profile",
                )
        if not math.isclose(sum(self.shares), 1.0, rel_tol=0, abs_tol=1e-9):
            raise InputError(
                f"the shares must sum to 1, got {sum(self.shares):.6g}", field="hour_profile"
            )

    @classmethod
    def uniform(cls) -> HourProfile:
        """Every hour the same share: the default."""
        return cls((1.0 / _HOURS,) * _HOURS, "uniform over 24 hours UTC")

    @classmethod
    def window(cls, first: int, end: int, share: float) -> HourProfile:
        """`share` of the calls between `first`:00 and `end`:00 UTC (an `end` at or before
        `first` runs past midnight), the rest spread evenly over the other hours."""
        for name, hour in (("first", first), ("end", end)):
            if not 0 <= hour <= _HOURS:
                raise InputError(f"hour {name} must be 0 to 24, got {hour}", field="hour_profile")
        if not 0.0 <= share <= 1.0:
            raise InputError(
                f"the share must be between 0 and 1, got {share}", field="hour_profile"
            )
        inside = [(first + i) % _HOURS for i in range((end - first) % _HOURS or _HOURS)]
        if len(inside) == _HOURS and share != 1.0:
            raise InputError(
                "the window covers the whole day; its share must be 1", field="hour_profile"
            )
        rest = _HOURS - len(inside)
        shares = [
            share / len(inside) if h in inside else (1.0 - share) / rest for h in range(_HOURS)
        ]
        label = f"{share:.0%} of calls {first:02d}:00-{end % _HOURS:02d}:00 UTC, the rest evenly"
        return cls(tuple(shares), label)

    @classmethod
    def from_file(cls, path: str | Path) -> HourProfile:
        """A CSV of ``hour,share`` rows (hours 0-23 UTC; shares any non-negative weights,
        scaled to sum to 1; an hour not listed has none). Errors name the file and line."""
        file = Path(path).expanduser()
        try:
            text = file.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise InputError(
                f"cannot read the hour profile: {exc}", field="hour_profile", source=str(file)
            ) from exc
        weights = [0.0] * _HOURS
        seen: dict[int, int] = {}
        for line_no, record in enumerate(csv.reader(text.splitlines()), start=1):
            if not record or not "".join(record).strip():
                continue
            if line_no == 1 and record[0].strip().lower() == "hour":
                continue  # a header
            hour, share = _hour_row(record, file, line_no)
            if hour in seen:
                raise InputError(
                    f"hour {hour} again (first on line {seen[hour]})",
                    field="hour",
                    line=line_no,
                    source=str(file),
                )
            seen[hour] = line_no
            weights[hour] = share
        total = sum(weights)
        if total <= 0:
            raise InputError("no hour has a share above 0", field="share", source=str(file))
        return cls(tuple(w / total for w in weights), f"hours from {file.name}")


def _hour_row(record: list[str], file: Path, line_no: int) -> tuple[int, float]:
    if len(record) != 2:
        raise InputError(
            f"expected `hour,share`, got {len(record)} fields", line=line_no, source=str(file)
        )
    text, weight = (v.strip() for v in record)
    if not text.isdigit() or not 0 <= int(text) < _HOURS:
        raise InputError(
            f"must be a whole hour 0 to 23 (UTC), got {text!r}",
            field="hour",
            line=line_no,
            source=str(file),
        )
    try:
        share = float(weight)
    except ValueError:
        share = math.nan
    if not (math.isfinite(share) and share >= 0):
        raise InputError(
            f"must be a number >= 0, got {weight!r}", field="share", line=line_no, source=str(file)
        )
    return int(text), share


def hour_profile(value: Any) -> HourProfile:
    """An `HourProfile` from what a user typed: None or "uniform", ``FIRST-END:SHARE`` (say
    ``9-17:0.8``: 80% of calls from 09:00 to 17:00 UTC) or a CSV file of ``hour,share``."""
    if value is None:
        return HourProfile.uniform()
    if isinstance(value, HourProfile):
        return value
    text = str(value).strip()
    if text.lower() == "uniform":
        return HourProfile.uniform()
    match = _WINDOW.match(text)
    if match:
        return HourProfile.window(int(match[1]), int(match[2]), float(match[3]))
    if Path(text).expanduser().is_file():
        return HourProfile.from_file(text)
    raise InputError(
        f"{text!r} is not 'uniform', FIRST-END:SHARE (e.g. 9-17:0.8) or an hour,share CSV file",
        field="hour_profile",
    )


def blend_hours(row: PriceRow, day: date, profile: HourProfile) -> list[tuple[Decimal, PriceRow]]:
    """The prices a call on `day` pays by the hour of `profile`: (weight, row) pairs, one per
    distinct price, weights summing to 1. A row without time-of-day prices is itself."""
    if not row.time_of_day:
        return [(Decimal(1), row)]
    weights: dict[int, tuple[Decimal, PriceRow]] = {}
    for hour, share in enumerate(profile.shares):
        half = Decimal(repr(share)) / 2
        for minute in (0, 30):
            moment = datetime.combine(day, time(hour, minute), tzinfo=UTC)
            priced = row.at(moment)
            weight, _ = weights.get(id(priced), (Decimal(0), priced))
            weights[id(priced)] = (weight + half, priced)
    return [pair for pair in weights.values() if pair[0] > 0]
