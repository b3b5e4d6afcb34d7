"""Negotiated terms: committed spend with its discount, volume tiers, credits with expiry.

A terms file (TOML or JSON) lists, per provider::

    [[commitments]]          # committed spend per period, with the discount it buys
    provider = "openai"
    per = "month"            # or "year" (calendar years)
    committed_usd = 10000
    discount = 0.12          # off list price on all spend
    start = "2027-01"        # optional: first month it holds
    end = "2027-12"          # optional: last month it holds

    [[tiers]]                # volume tiers: a discount on the part of a month's spend above
    provider = "anthropic"   # `from_usd` (marginal, as tax brackets work)
    from_usd = 20000
    discount = 0.05

    [[credits]]              # prepaid or promotional credits, used before they expire
    provider = "openai"
    usd = 5000
    granted = "2027-01"
    expires = "2027-06"      # the last month it can be used

`apply_terms` turns list-price spend per provider and month (arrays of Monte Carlo draws, or
exact Decimals) into what is paid: the commitment's discount, then the tiers on what remains,
a true-up to the committed amount where spend falls short of it, then credits, oldest expiry
first. Money in the file is read exactly (Decimal).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from cotplan.errors import InputError
from cotplan.io import read_document

__all__ = [
    "Commitment",
    "Credit",
    "Terms",
    "TermsLedger",
    "VolumeTier",
    "apply_terms",
    "read_terms",
]


@dataclass(frozen=True)
class Commitment:
    provider: str
    per: str
    committed_usd: Decimal
    discount: Decimal
    start: str = ""
    end: str = ""

    def holds(self, month: str) -> bool:
        return (not self.start or month >= self.start) and (not self.end or month <= self.end)


@dataclass(frozen=True)
class VolumeTier:
    provider: str
    from_usd: Decimal
    discount: Decimal


@dataclass(frozen=True)
class Credit:
    provider: str
    usd: Decimal
    granted: str
    expires: str


@dataclass(frozen=True)
class Terms:
    """Everything a terms file holds; `source` names the file."""

    commitments: tuple[Commitment, ...] = ()
    tiers: tuple[VolumeTier, ...] = ()
    credits: tuple[Credit, ...] = ()
    source: str = ""

    def discounts(self, month: str | None = None) -> dict[str, Decimal]:
        """Each provider's committed-spend discount (in `month`, when given): what explains a
        stated cost below list price in a reconciliation."""
        out: dict[str, Decimal] = {}
        for c in self.commitments:
            if month is None or c.holds(month):
                out[c.provider] = c.discount
        return out


def _decimal(value: Any, name: str, where: str, source: str) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise InputError(f"must be a number, got {value!r}", field=f"{where}.{name}", source=source)
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise InputError(
            f"must be a number, got {value!r}", field=f"{where}.{name}", source=source
        ) from None
    if not number.is_finite() or number < 0:
        raise InputError(
            f"must be a number >= 0, got {value!r}", field=f"{where}.{name}", source=source
        )
    return number


def _share(value: Any, name: str, where: str, source: str) -> Decimal:
    number = _decimal(value, name, where, source)
    if number >= 1:
        raise InputError(
            f"must be a fraction below 1 (0.12 for 12%), got {value!r}",
            field=f"{where}.{name}",
            source=source,
        )
    return number


def _month(value: Any, name: str, where: str, source: str, *, required: bool = False) -> str:
    if value is None or value == "":
        if required:
            raise InputError("is required (YYYY-MM)", field=f"{where}.{name}", source=source)
        return ""
    text = str(value).strip()[:7]
    if len(text) != 7 or text[4] != "-" or not (text[:4] + text[5:]).isdigit():
        raise InputError(f"must be YYYY-MM, got {value!r}", field=f"{where}.{name}", source=source)
    if not 1 <= int(text[5:]) <= 12:
        raise InputError(f"must be YYYY-MM, got {value!r}", field=f"{where}.{name}", source=source)
    return text


def _provider(entry: dict[str, Any], where: str, source: str) -> str:
    value = entry.get("provider")
    if not isinstance(value, str) or not value.strip():
        raise InputError("must name the provider", field=f"{where}.provider", source=source)
    return value.strip().lower()


def _entries(data: dict[str, Any], name: str, source: str) -> list[tuple[str, dict[str, Any]]]:
    items = data.get(name, [])
    if not isinstance(items, list):
        raise InputError("must be a list of tables", field=name, source=source)
    out = []
    for i, entry in enumerate(items):
        if not isinstance(entry, dict):
            raise InputError("must be a table/object", field=f"{name}[{i}]", source=source)
        out.append((f"{name}[{i}]", entry))
    return out


def read_terms(path: str | os.PathLike[str]) -> Terms:
    """A terms file (TOML or JSON; see the module docstring). Errors name the file and entry."""
    source = str(Path(path).expanduser())
    data = read_document(path)
    if not isinstance(data, dict):
        raise InputError("must be a table of commitments, tiers and credits", source=source)
    unknown = set(data) - {"commitments", "tiers", "credits"}
    if unknown:
        raise InputError(
            f"unknown section(s) {', '.join(sorted(unknown))}; expected commitments, tiers, "
            "credits",
            source=source,
        )
    commitments = []
    for where, e in _entries(data, "commitments", source):
        per = str(e.get("per", "month"))
        if per not in ("month", "year"):
            raise InputError(
                f"must be 'month' or 'year', got {per!r}", field=f"{where}.per", source=source
            )
        commitments.append(
            Commitment(
                _provider(e, where, source),
                per,
                _decimal(e.get("committed_usd", 0), "committed_usd", where, source),
                _share(e.get("discount", 0), "discount", where, source),
                _month(e.get("start"), "start", where, source),
                _month(e.get("end"), "end", where, source),
            )
        )
    tiers = [
        VolumeTier(
            _provider(e, w, source),
            _decimal(e.get("from_usd"), "from_usd", w, source),
            _share(e.get("discount"), "discount", w, source),
        )
        for w, e in _entries(data, "tiers", source)
    ]
    credits = []
    for where, e in _entries(data, "credits", source):
        granted = _month(e.get("granted"), "granted", where, source, required=True)
        expires = _month(e.get("expires"), "expires", where, source, required=True)
        if expires < granted:
            raise InputError(
                f"{expires} is before it was granted ({granted})",
                field=f"{where}.expires",
                source=source,
            )
        credits.append(
            Credit(
                _provider(e, where, source),
                _decimal(e.get("usd"), "usd", where, source),
                granted,
                expires,
            )
        )
    return Terms(tuple(commitments), tuple(tiers), tuple(credits), source)


def tiered(spend: Any, tiers: Sequence[VolumeTier]) -> Any:
    """Spend after marginal volume-tier discounts: each tier's discount on the part above its
    threshold (the deepest tier that applies wins on each dollar)."""
    ordered = sorted(tiers, key=lambda t: t.from_usd)
    out = spend
    for i, tier in enumerate(ordered):
        previous = ordered[i - 1].discount if i else 0
        extra = float(tier.discount) - float(previous)
        above = np.maximum(np.asarray(spend, dtype=float) - float(tier.from_usd), 0.0)
        out = out - extra * above
    return out


class TermsLedger:
    """Negotiated terms applied to one provider's spend month by month, in order: `pay` takes a
    month's list-price spend (a float, or an array of Monte Carlo draws) and returns what is
    paid, carrying credit balances and a yearly commitment's running total between months.

    Order within a month: the commitment's discount on all spend, volume tiers on the
    discounted spend, a monthly commitment's true-up, then credits, oldest expiry first. A
    yearly commitment's shortfall is paid in the year's twelfth month, when the horizon holds
    all twelve; `notes` says when it does not.
    """

    def __init__(self, terms: Terms, provider: str) -> None:
        wanted = provider.lower()
        self.provider = wanted
        self.commitments = [c for c in terms.commitments if c.provider == wanted]
        self.tiers = [t for t in terms.tiers if t.provider == wanted]
        self.credits = sorted(
            (c for c in terms.credits if c.provider == wanted), key=lambda c: c.expires
        )
        self.left: list[Any] = [None] * len(self.credits)
        self.year: dict[tuple[int, str], tuple[Any, int]] = {}
        self.notes: list[str] = []
        self.last = ""
        if self.commitments or self.tiers or self.credits:
            self.notes.append(f"{wanted}: negotiated terms from {terms.source or 'a file'}")

    @property
    def active(self) -> bool:
        return bool(self.commitments or self.tiers or self.credits)

    def pay(self, month: str, spend: Any) -> Any:
        paid = np.asarray(spend, dtype=float).copy()
        self.last = month
        for c in self.commitments:
            if c.holds(month) and c.discount:
                paid *= 1 - float(c.discount)
        if self.tiers:
            paid = tiered(paid, self.tiers)
        for c in self.commitments:
            if c.holds(month) and c.per == "month" and c.committed_usd:
                paid = np.maximum(paid, float(c.committed_usd))
        for i, c in enumerate(self.commitments):
            if not (c.holds(month) and c.per == "year" and c.committed_usd):
                continue
            key = (i, month[:4])
            total, seen = self.year.get(key, (0.0, 0))
            total, seen = total + paid, seen + 1
            self.year[key] = (total, seen)
            if month[5:] == "12":
                if seen == 12:
                    paid = paid + np.maximum(float(c.committed_usd) - total, 0.0)
                else:
                    self.notes.append(
                        f"{self.provider} {month[:4]}: the yearly commitment is not checked "
                        "on a part year"
                    )
        for i, credit in enumerate(self.credits):
            if not credit.granted <= month <= credit.expires:
                continue
            if self.left[i] is None:
                self.left[i] = np.full_like(paid, float(credit.usd))
            used = np.minimum(self.left[i], paid)
            paid = paid - used
            self.left[i] = self.left[i] - used
        return paid

    def finish(self) -> list[str]:
        """The notes, with credits that outlive the horizon named."""
        for credit in self.credits:
            if self.last and self.last < credit.expires:
                self.notes.append(
                    f"{self.provider}: a credit of ${credit.usd:,} expires {credit.expires}, "
                    "after the horizon"
                )
        return self.notes


def apply_terms(
    terms: Terms, provider: str, months: Sequence[str], spend: Sequence[Any]
) -> tuple[list[Any], list[str]]:
    """What is paid to `provider` in each of `months` (YYYY-MM, in order) for list-price
    `spend` (a float or an array of draws per month), and notes on what applied
    (`TermsLedger`)."""
    ledger = TermsLedger(terms, provider)
    paid = [ledger.pay(month, s) for month, s in zip(months, spend, strict=True)]
    return paid, ledger.finish()
