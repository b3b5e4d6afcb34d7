"""Values as a user types them for the cost commands, read and checked: whole numbers typed as
1e5, dates (YYYY-MM-DD or YYYY-MM), times of day, a seller's name, files and folders to write.

Each reader raises `InputError` naming the field it read, so the command line and a notebook
get the same message; nothing here loads the price table unless it is handed one.
"""

from __future__ import annotations

import difflib
import os
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

from cotplan.errors import InputError

__all__ = [
    "check_out_dir",
    "check_out_file",
    "day_of",
    "moment_of",
    "month_after",
    "seller_of",
    "token_count",
    "whole",
]


def whole(text: str, name: str) -> int:
    """A whole number written as 100000, 100_000 or 1e5."""
    try:
        number = float(text.replace("_", ""))
    except ValueError:
        raise InputError(f"must be a whole number, got {text!r}", field=name) from None
    if not number.is_integer():
        raise InputError(f"must be a whole number, got {text!r}", field=name)
    return int(number)


def token_count(text: str, name: str) -> int:
    """A token count typed as 1000, 1_000 or 1e3: whole and not negative."""
    number = whole(text, name)
    if number < 0:
        raise InputError(f"must not be negative, got {text!r}", field=name)
    return number


def day_of(value: str | date | None, name: str) -> date | None:
    """A date typed as YYYY-MM-DD or YYYY-MM (its first day); a date or None stays as it is."""
    if value is None or isinstance(value, date):
        return value
    text = value.strip()
    try:
        return date.fromisoformat(text if len(text) > 7 else f"{text}-01")
    except ValueError:
        raise InputError(f"{value!r} is not a date (YYYY-MM-DD or YYYY-MM)", field=name) from None


def moment_of(text: str | None, day: date | None) -> datetime | None:
    """A time typed as HH:MM (UTC, on `day` or today) or as a full ISO 8601 time."""
    if text is None:
        return None
    value = text.strip()
    try:
        if len(value) <= 5 and ":" in value:
            clock = time.fromisoformat(value.zfill(5))
            return datetime.combine(day or date.today(), clock, tzinfo=UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{text!r} is not a time of day (HH:MM, UTC) or an ISO 8601 time", field="at"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def month_after(day: date | None) -> date | None:
    """The first day of the month after `day` (None: None, the workload's own default)."""
    if day is None:
        return None
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def seller_of(value: str | None, table: Any, name: str = "provider") -> str | None:
    """A provider the table prices, lower-cased; an unknown one is refused with the closest."""
    if value is None:
        return None
    wanted = value.strip().lower()
    known = table.providers()
    if wanted not in {p.lower() for p in known}:
        close = difflib.get_close_matches(wanted, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InputError(f"no prices for {value!r}{hint}; see `cotplan cost prices`", field=name)
    return wanted


def check_out_file(path: Path | None, name: str) -> None:
    """Refuse an output file that cannot be written, before any work is done."""
    if path is None:
        return
    if path.is_dir():
        raise InputError(f"{str(path)!r} is a folder; give a file name", field=name)
    if not path.parent.exists():
        raise InputError(f"folder {str(path.parent)!r} does not exist", field=name)


def check_out_dir(path: Path | None, name: str) -> None:
    """Refuse an output folder that is a file or cannot be created, before any work is done."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise InputError(f"{str(path)!r} is a file; give a folder", field=name)
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise InputError(f"cannot create a folder under {str(parent)!r}", field=name)
