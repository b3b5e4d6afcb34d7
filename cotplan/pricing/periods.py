"""Budgets and fiscal calendars for spend projections: what finance compares a forecast with.

`Budget` is a stated spending limit, per month or per year; a projection reports the chance
its spend goes over it. Fiscal years start in the month `fiscal_year_start` (1 = January) and
are named by the calendar year in which they end, the common convention (with an October start,
FY2027 runs from October 2026 to September 2027); quarters are that fiscal year's quarters.
"""

from __future__ import annotations

import calendar
import math
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.workload import FloatArray, real_number

__all__ = ["BUDGET_PERIODS", "Budget", "BudgetCheck", "check_fiscal_year_start", "fiscal_period"]

#: The columns every period's row of spend starts with (a month, a year, a quarter, a total),
#: in the projection's frame and in the workbook's sheets alike.
PERIOD_COLUMNS = ("label", "start", "days", "queries", "mean_usd", "p10_usd", "p50_usd", "p90_usd")

#: What a budget can be stated per.
BUDGET_PERIODS = ("month", "year")

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name} | {
    name.lower(): i for i, name in enumerate(calendar.month_name) if name
}


@dataclass(frozen=True)
class Budget:
    """A spending limit in USD `per` "month" or "year".

    A yearly budget is compared with every complete twelve months of the horizon and every
    complete fiscal year; a partial year is not compared, since part of its spend falls
    outside the forecast.
    """

    usd: float
    per: str = "month"

    def __post_init__(self) -> None:
        usd = real_number(self.usd, "budget")
        if usd <= 0:
            raise InputError(f"must be a positive amount of USD, got {self.usd!r}", field="budget")
        if self.per not in BUDGET_PERIODS:
            raise InputError(f"must be 'month' or 'year', got {self.per!r}", field="budget_per")
        object.__setattr__(self, "usd", usd)

    @property
    def label(self) -> str:
        """``$50,000 per month``."""
        return f"${self.usd:,.2f} per {self.per}".replace(".00 per", " per")


@dataclass(frozen=True)
class BudgetCheck:
    """How likely a projection's spend is to go over a `Budget`.

    `probability` is the chance that at least one period the budget is stated for (a month,
    or a complete year) goes over it, over the Monte Carlo draws; `periods` has one row per
    such period with its own chance (`p_over_budget`) and the mean overrun when over
    (`mean_over_usd`, 0 when it never is).
    """

    budget: Budget
    probability: float
    periods: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """The per-period table (a copy)."""
        return self.periods.copy()


def check_fiscal_year_start(value: Any) -> int:
    """A month number 1-12, or a month name ("apr", "April"), checked."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _MONTHS:
            return _MONTHS[text]
        if not text.isdigit():
            raise InputError(
                f"must be a month, 1-12 or a name such as 'apr', got {value!r}",
                field="fiscal_year_start",
            )
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 12:
        raise InputError(
            f"must be a month, 1-12 or a name such as 'apr', got {value!r}",
            field="fiscal_year_start",
        )
    return value


def fiscal_period(month_start: date, fiscal_year_start: int) -> tuple[int, int]:
    """The fiscal year (named by the calendar year it ends in) and quarter (1-4) of a month."""
    offset = (month_start.month - fiscal_year_start) % 12
    year = month_start.year
    if fiscal_year_start != 1 and month_start.month >= fiscal_year_start:
        year += 1
    return year, offset // 3 + 1


class Budgeting:
    """Chances of going over a budget, gathered period by period as the draws are made."""

    def __init__(self, budget: Budget | None, draws: int) -> None:
        self.budget = budget
        self.any_over = np.zeros(draws if budget is not None else 0, dtype=bool)
        self.rows: list[dict[str, Any]] = []

    def check(self, period: str, label: str, spend: FloatArray) -> float:
        """P(spend > budget) for one period the budget is stated for; NaN for the others."""
        if self.budget is None:
            return math.nan
        over = spend > self.budget.usd
        self.any_over |= over
        count = int(np.count_nonzero(over))
        p = count / spend.size
        # The mean overrun when over: a masked sum, not a copy of the draws that are over.
        mean_over = float(spend.sum(where=over)) / count - self.budget.usd if count else 0.0
        self.rows.append(
            {
                "period": period,
                "label": label,
                "budget_usd": self.budget.usd,
                "p_over_budget": p,
                "mean_over_usd": mean_over,
            }
        )
        return p

    def result(self) -> BudgetCheck | None:
        if self.budget is None:
            return None
        columns = ["period", "label", "budget_usd", "p_over_budget", "mean_over_usd"]
        probability = float(self.any_over.mean()) if self.rows else math.nan
        return BudgetCheck(self.budget, probability, pd.DataFrame(self.rows, columns=columns))
