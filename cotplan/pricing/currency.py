"""Currency conversion at dated rates from a file the user keeps (never fetched).

A rates file is a CSV of ``date,currency,per_usd``: on `date`, one US dollar bought `per_usd`
units of `currency` (ISO 4217: EUR, GBP, JPY). An amount on a day converts at the latest rate
dated on or before that day, and every conversion says which rate and which date it used.
Rates are read as exact Decimals.
"""

from __future__ import annotations

import bisect
import csv
import io
import os
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path

from cotplan.errors import InputError

__all__ = ["ExchangeRates", "Rate", "read_rates"]


@dataclass(frozen=True)
class Rate:
    """One dated rate: `per_usd` units of `currency` per US dollar, from `day`."""

    currency: str
    day: date
    per_usd: Decimal

    @property
    def label(self) -> str:
        return f"{self.per_usd} {self.currency} per USD, rate of {self.day}"


@dataclass(frozen=True)
class ExchangeRates:
    """Dated rates per currency (each list sorted by day); `source` names the file."""

    rates: dict[str, list[Rate]] = field(default_factory=dict)
    source: str = ""

    def rate(self, currency: str, on: date) -> Rate:
        """The latest rate of `currency` dated on or before `on`."""
        code = currency.strip().upper()
        if code == "USD":
            return Rate("USD", on, Decimal(1))
        listed = self.rates.get(code)
        if not listed:
            known = ", ".join(sorted(self.rates)) or "none"
            raise InputError(
                f"no {code} rate in the rates file (it has {known})",
                field="currency",
                source=self.source or None,
            )
        days = [r.day for r in listed]
        i = bisect.bisect_right(days, on)
        if i == 0:
            raise InputError(
                f"no {code} rate on or before {on}; the first is dated {days[0]}",
                field="currency",
                source=self.source or None,
            )
        return listed[i - 1]

    def to_usd(self, amount: Decimal, currency: str, on: date) -> tuple[Decimal, Rate]:
        """`amount` of `currency` on `on` in US dollars, and the rate used."""
        used = self.rate(currency, on)
        return amount / used.per_usd, used

    def from_usd(self, usd: Decimal, currency: str, on: date) -> tuple[Decimal, Rate]:
        """`usd` US dollars on `on` in `currency`, and the rate used."""
        used = self.rate(currency, on)
        return usd * used.per_usd, used


def read_rates(path: str | os.PathLike[str]) -> ExchangeRates:
    """A rates CSV (``date,currency,per_usd``); errors name the file, line and column. One
    currency may not have two rates on one day."""
    file = Path(path).expanduser()
    source = str(file)
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    reader = csv.DictReader(io.StringIO(text))
    missing = {"date", "currency", "per_usd"} - set(reader.fieldnames or [])
    if missing:
        raise InputError(
            f"needs the columns date, currency, per_usd (missing {', '.join(sorted(missing))})",
            line=1,
            source=source,
        )
    found: dict[str, dict[date, Rate]] = {}
    for number, row in enumerate(reader, start=2):
        try:
            day = date.fromisoformat((row["date"] or "").strip())
        except ValueError:
            raise InputError(
                f"must be YYYY-MM-DD, got {row['date']!r}", field="date", line=number,
                source=source,
            ) from None  # fmt: skip
        code = (row["currency"] or "").strip().upper()
        if len(code) != 3 or not code.isalpha():
            raise InputError(f"must be a 3-letter code, got {row['currency']!r}",
                             field="currency", line=number, source=source)  # fmt: skip
        try:
            value = Decimal((row["per_usd"] or "").strip())
        except InvalidOperation:
            value = Decimal("NaN")
        if not value.is_finite() or value <= 0:
            raise InputError(f"must be a number above 0, got {row['per_usd']!r}",
                             field="per_usd", line=number, source=source)  # fmt: skip
        if day in found.setdefault(code, {}):
            raise InputError(f"a second {code} rate for {day}", field="date", line=number,
                             source=source)  # fmt: skip
        found[code][day] = Rate(code, day, value)
    if not found:
        raise InputError("the rates file holds no rates", source=source)
    rates = {code: [by_day[d] for d in sorted(by_day)] for code, by_day in found.items()}
    return ExchangeRates(rates, source)
