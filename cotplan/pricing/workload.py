"""The inputs of a spend projection: the workload and the token distribution of its calls.

`Workload` says how many queries, growing how fast, for how long; `EmpiricalTokens` and
`ParametricTokens` say how many tokens each call takes. The checks on numeric arguments live
here too, since these inputs are the first to need them; `cotplan.pricing.projection` explains
how a projection draws from them.
"""

from __future__ import annotations

import calendar
import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from numbers import Real
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from cotplan.backends.base import Completion
from cotplan.errors import InputError
from cotplan.pricing.hours import HourProfile

__all__ = [
    "MAX_QUERIES_PER_DAY",
    "MAX_TOKENS_PER_CALL",
    "MAX_TOKEN_CV",
    "MAX_VOLUME_CV",
    "EmpiricalTokens",
    "ParametricTokens",
    "TokenDistribution",
    "Workload",
]

FloatArray = np.ndarray[Any, np.dtype[np.float64]]

# Bounds on a projection's inputs: far beyond any real service (the busiest answer about 1e10
# queries a day) or context window (about 1e7 tokens), yet low enough that every figure a
# projection prints (queries x tokens x price, compounded over 600 months) stays finite.
#: The most queries a day a projection takes, at the start or after growth.
MAX_QUERIES_PER_DAY = 1e12
#: The most tokens of one kind (prompt, answer, reasoning) one call may take.
MAX_TOKENS_PER_CALL = 1e8
#: The largest spread of tokens per call, as a multiple of the mean (its CV).
MAX_TOKEN_CV = 1000.0
#: The largest coefficient of variation of the volume itself.
MAX_VOLUME_CV = 10.0

# ---------------------------------------------------------------------------------------------
# Validation helpers (one place per entry point; messages name the parameter)


def real_number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InputError(f"must be a number, got {value!r}", field=name)
    number = float(value)
    if not math.isfinite(number):
        raise InputError(f"must be a finite number, got {value!r}", field=name)
    return number


def non_negative(value: Any, name: str) -> float:
    number = real_number(value, name)
    if number < 0:
        raise InputError(f"must not be negative, got {value!r}", field=name)
    return number


def fraction(value: Any, name: str) -> float:
    number = real_number(value, name)
    if not 0.0 <= number <= 1.0:
        raise InputError(f"must be between 0 and 1, got {value!r}", field=name)
    return number


def positive_int(value: Any, name: str) -> int:
    number = real_number(value, name)
    if number != int(number):
        raise InputError(f"must be a whole number, got {value!r}", field=name)
    if number < 1:
        raise InputError(f"must be at least 1, got {value!r}", field=name)
    return int(number)


def _at_record(index: int, message: str, name: str) -> InputError:
    """An error about record `index` (0-based); `from_frame` re-raises it with the record's
    line in the file, as a spreadsheet user counts (the header is line 1)."""
    error = InputError(f"position {index} {message}", field=name)
    error.record = index  # type: ignore[attr-defined]
    error.detail = message  # type: ignore[attr-defined]
    return error


def _check_header(source: str) -> None:
    """Refuse a CSV whose header names a column twice: pandas would rename the second
    (``prompt_tokens.1``) and read the first, silently."""
    try:
        with open(source, newline="", encoding="utf-8", errors="replace") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, csv.Error):
        return  # the reader that follows says what is wrong with the file
    names = [cell.strip() for cell in header]
    twice = next((name for name in names if name and names.count(name) > 1), None)
    if twice is not None:
        raise InputError("the header names this column twice", field=twice, line=1, source=source)


def _token_array(values: Any, name: str) -> FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("must be a sequence of token counts", field=name) from None
    if array.size == 0:
        raise InputError("must not be empty", field=name)
    bad = ~np.isfinite(array)
    if bad.any():
        raise _at_record(int(np.argmax(bad)), f"is {array[bad][0]}: must be finite", name)
    if (array < 0).any():
        index = int(np.argmax(array < 0))
        raise _at_record(index, f"is {array[index]:g}: must not be negative", name)
    if (array > MAX_TOKENS_PER_CALL).any():
        index = int(np.argmax(array > MAX_TOKENS_PER_CALL))
        raise _at_record(
            index,
            f"is {array[index]:g}: must be at most {MAX_TOKENS_PER_CALL:g} tokens a call",
            name,
        )
    return array


def _power_of_ten(log_value: float) -> str:
    """e**`log_value` written as 1.2e+45, even where the number itself overflows a float."""
    exponent = math.floor(log_value / math.log(10))
    return f"{10 ** (log_value / math.log(10) - exponent):.1f}e+{exponent}"


# ---------------------------------------------------------------------------------------------
# Workload


@dataclass(frozen=True)
class Workload:
    """How many queries, growing how fast, for how long.

    Give `queries_per_day` or `queries_per_month` (the first month's volume). `growth_rate`
    compounds per `growth_per` ("month" or "year"; a yearly rate is spread evenly over the
    months). `start` is the first day of the first month (default: the first day of next
    month). `volume_cv` is the coefficient of variation of the volume itself, for a forecast
    you are unsure of (0 = the volume is known). `hour_profile` is when in the day (UTC) the
    calls are made (`HourProfile`; None: evenly over the 24 hours), which sets the blend of a
    model's time-of-day prices.
    """

    queries_per_day: float | None = None
    queries_per_month: float | None = None
    growth_rate: float = 0.0
    growth_per: str = "month"
    horizon_months: int = 12
    start: date | None = None
    volume_cv: float = 0.0
    hour_profile: HourProfile | None = None

    def __post_init__(self) -> None:
        self._check_volume()
        growth = real_number(self.growth_rate, "growth_rate")
        if growth <= -1.0:
            raise InputError(f"must be above -1 (-100%), got {growth!r}", field="growth_rate")
        if self.growth_per not in ("month", "year"):
            raise InputError(
                f"must be 'month' or 'year', got {self.growth_per!r}", field="growth_per"
            )
        positive_int(self.horizon_months, "horizon_months")
        if self.horizon_months > 600:
            raise InputError(
                f"must be at most 600 months, got {self.horizon_months}", field="horizon_months"
            )
        if self.start is not None and not isinstance(self.start, date):
            raise InputError(f"must be a date, got {self.start!r}", field="start")
        self._check_calendar()
        cv = non_negative(self.volume_cv, "volume_cv")
        if cv > MAX_VOLUME_CV:
            raise InputError(
                f"must be at most {MAX_VOLUME_CV:g} ({100 * MAX_VOLUME_CV:g}%), got "
                f"{self.volume_cv!r}",
                field="volume_cv",
            )
        self.check_growth(growth, "growth_rate")
        if self.hour_profile is not None and not isinstance(self.hour_profile, HourProfile):
            raise InputError(
                f"must be an HourProfile or None, got {self.hour_profile!r}", field="hour_profile"
            )

    def _check_volume(self) -> None:
        if (self.queries_per_day is None) == (self.queries_per_month is None):
            raise InputError(
                "give exactly one of `queries_per_day` and `queries_per_month`",
                field="queries_per_day",
            )
        # A month of 31 days: a monthly volume may be as busy as the busiest daily one.
        for name, most in (
            ("queries_per_day", MAX_QUERIES_PER_DAY),
            ("queries_per_month", 31 * MAX_QUERIES_PER_DAY),
        ):
            value = getattr(self, name)
            if value is not None and non_negative(value, name) > most:
                raise InputError(f"must be at most {most:g}, got {value!r}", field=name)

    def _check_calendar(self) -> None:
        # Python's dates end in 9999: a horizon past it has months no date can name.
        first = self.first_day
        last = first.year * 12 + first.month - 1 + self.horizon_months - 1
        if last // 12 > date.max.year:
            raise InputError(
                f"{self.horizon_months} months from {first:%Y-%m} run past 9999-12, the last "
                "month a date can hold",
                field="start" if self.start is not None else "horizon_months",
            )

    def check_growth(self, rate: float, field: str) -> None:
        """Refuse a growth `rate` (per `growth_per`) that, compounded over the horizon, takes
        the volume past `MAX_QUERIES_PER_DAY` (`field` names the option in the error)."""
        first = (
            31.0 * float(self.queries_per_day)
            if self.queries_per_day is not None
            else float(self.queries_per_month or 0.0)
        )
        if first <= 0 or rate <= 0:
            return
        per_month = math.log1p(rate) / (12.0 if self.growth_per == "year" else 1.0)
        # In logarithms: the compounded volume itself may be past what a float holds.
        peak = math.log(first) + (self.horizon_months - 1) * per_month
        if peak > math.log(31 * MAX_QUERIES_PER_DAY):
            raise InputError(
                f"{rate:g} a {self.growth_per} takes the volume to about {_power_of_ten(peak)} "
                f"queries a month by month {self.horizon_months}, past the "
                f"{31 * MAX_QUERIES_PER_DAY:g} ({MAX_QUERIES_PER_DAY:g} a day) a projection "
                "takes: give a lower rate or fewer months",
                field=field,
            )

    @property
    def hours(self) -> HourProfile:
        """The hour profile in use (uniform when none was given)."""
        return self.hour_profile or HourProfile.uniform()

    @property
    def monthly_growth(self) -> float:
        """The growth rate per month."""
        if self.growth_per == "year":
            return float((1.0 + self.growth_rate) ** (1.0 / 12.0) - 1.0)
        return float(self.growth_rate)

    @property
    def first_day(self) -> date:
        """The first day of the first month."""
        if self.start is not None:
            return self.start.replace(day=1)
        today = date.today()
        return date(today.year + today.month // 12, today.month % 12 + 1, 1)

    def months(self) -> pd.DataFrame:
        """One row per month: label, first day, days, expected queries."""
        first = self.first_day
        growth = self.monthly_growth
        rows = []
        for i in range(self.horizon_months):
            year, month = divmod(first.month - 1 + i, 12)
            start = date(first.year + year, month + 1, 1)
            days = calendar.monthrange(start.year, start.month)[1]
            factor = (1.0 + growth) ** i
            if self.queries_per_day is not None:
                queries = float(self.queries_per_day) * days * factor
            else:
                queries = float(self.queries_per_month or 0.0) * factor
            rows.append(
                {"label": start.strftime("%Y-%m"), "start": start, "days": days, "queries": queries}
            )
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Token distributions


@runtime_checkable
class TokenDistribution(Protocol):
    """Tokens per call: prompt, visible answer, reasoning.

    `sample` returns the three arrays (float64, one entry per call) and `n_observed` is the
    number of real observations behind the distribution (None: treat its mean as known).
    """

    @property
    def n_observed(self) -> int | None: ...

    def sample(
        self, draws: int, rng: np.random.Generator
    ) -> tuple[FloatArray, FloatArray, FloatArray]: ...


@dataclass(frozen=True, eq=False)
class EmpiricalTokens:
    """An observed sample of calls, such as calibration records.

    `completion_tokens` follows cotplan's `Usage` convention (reasoning inside completion); pass
    ``reasoning_in_completion=False`` when the counts come from a provider that reports them
    apart (Gemini). Every record is priced exactly; the sample size sets the uncertainty of the
    mean. `skipped` counts the calls left out before these records because their usage could not
    be trusted (`from_completions`); a projection's inputs say so.
    """

    prompt_tokens: Any
    completion_tokens: Any
    reasoning_tokens: Any = None
    reasoning_in_completion: bool = True
    skipped: int = 0
    _arrays: tuple[FloatArray, FloatArray, FloatArray] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if isinstance(self.skipped, bool) or not isinstance(self.skipped, int) or self.skipped < 0:
            raise InputError(
                f"must be a whole number of calls, got {self.skipped!r}", field="skipped"
            )
        prompt = _token_array(self.prompt_tokens, "prompt_tokens")
        completion = _token_array(self.completion_tokens, "completion_tokens")
        if self.reasoning_tokens is None:
            reasoning = np.zeros_like(completion)
        else:
            reasoning = _token_array(self.reasoning_tokens, "reasoning_tokens")
        if not prompt.size == completion.size == reasoning.size:
            raise InputError(
                f"prompt ({prompt.size}), completion ({completion.size}) and reasoning "
                f"({reasoning.size}) token lists must have the same length",
                field="completion_tokens",
            )
        if prompt.size < 2:
            left_out = f" ({self.skipped} more left out: usage not trusted)" if self.skipped else ""
            raise InputError(f"needs at least 2 records{left_out}", field="prompt_tokens")
        if self.reasoning_in_completion:
            over = reasoning > completion
            if over.any():
                i = int(np.argmax(over))
                raise _at_record(
                    i,
                    f"has {reasoning[i]:g} reasoning tokens, more than its "
                    f"{completion[i]:g} completion tokens (reasoning is counted inside "
                    "completion; pass reasoning_in_completion=False if it is not)",
                    "reasoning_tokens",
                )
            answer = completion - reasoning
        else:
            answer = completion
        object.__setattr__(self, "_arrays", (prompt, answer, reasoning))

    @property
    def n_observed(self) -> int:
        return int(self._arrays[0].size)

    def records(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Prompt, visible-answer and reasoning tokens of every record."""
        return self._arrays

    def sample(
        self, draws: int, rng: np.random.Generator
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        index = rng.integers(0, self.n_observed, size=draws)
        prompt, answer, reasoning = self._arrays
        return prompt[index], answer[index], reasoning[index]

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        prompt: str = "prompt_tokens",
        completion: str = "completion_tokens",
        reasoning: str | None = "reasoning_tokens",
        reasoning_in_completion: bool = True,
        source: str | None = None,
    ) -> EmpiricalTokens:
        """From DataFrame columns (a missing reasoning column means no reasoning tokens).

        With `source` (the CSV file the frame was read from, with a header line and one record
        a line), an error about one record names the file and the record's line."""
        if source is not None:
            _check_header(source)
        for column in (prompt, completion):
            if column not in frame.columns:
                raise InputError(
                    f"no column {column!r}; columns are {list(frame.columns)}",
                    field=column,
                    source=source,
                )
        has_reasoning = reasoning is not None and reasoning in frame.columns
        columns = {"prompt_tokens": prompt, "completion_tokens": completion}
        if reasoning is not None:
            columns["reasoning_tokens"] = reasoning
        try:
            return cls(
                frame[prompt].to_numpy(),
                frame[completion].to_numpy(),
                frame[reasoning].to_numpy() if has_reasoning and reasoning else None,
                reasoning_in_completion=reasoning_in_completion,
            )
        except InputError as exc:
            record = getattr(exc, "record", None)
            if source is None:
                raise
            if record is None:  # about a whole column: name the file all the same
                detail = str(exc).removeprefix(f"`{exc.field}`: ")
                field = columns.get(exc.field or "", exc.field)
                raise InputError(detail, field=field, source=source) from None
            # Line 1 is the header: record 0 is what a spreadsheet shows as row 2.
            raise InputError(
                exc.detail,  # type: ignore[attr-defined]
                field=columns.get(exc.field or "", exc.field),
                line=record + 2,
                source=source,
            ) from None

    @classmethod
    def from_completions(cls, completions: Iterable[Completion]) -> EmpiricalTokens:
        """From completions already made (their `Usage`), e.g. a calibration run.

        A completion whose usage cannot be trusted (`Completion.usage_trusted` False: its
        counts read 0 but are no measurement) is left out, not taken as a free call;
        `skipped` says how many were."""
        done = list(completions)
        usages = [c.usage for c in done if c.usage_trusted]
        return cls(
            [u.prompt_tokens for u in usages],
            [u.completion_tokens for u in usages],
            [u.reasoning_tokens for u in usages],
            skipped=len(done) - len(usages),
        )


def _lognormal(rng: np.random.Generator, mean: float, sd: float, draws: int) -> FloatArray:
    if mean == 0.0:
        return np.zeros(draws)
    if sd == 0.0:
        return np.full(draws, mean)
    sigma2 = math.log1p((sd / mean) ** 2)
    return rng.lognormal(math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2), size=draws)


def _check_spread(mean: float, sd: float, part: str) -> None:
    if mean > MAX_TOKENS_PER_CALL:
        raise InputError(
            f"must be at most {MAX_TOKENS_PER_CALL:g} tokens a call, got {mean!r}",
            field=f"{part}_mean",
        )
    if mean == 0 and sd > 0:
        raise InputError(
            "a zero mean needs a zero spread (token counts are never negative)",
            field=f"{part}_sd",
        )
    if sd > MAX_TOKEN_CV * mean:
        raise InputError(
            f"must be at most {MAX_TOKEN_CV:g} times {part}_mean ({mean!r}), got {sd!r}",
            field=f"{part}_sd",
        )


@dataclass(frozen=True)
class ParametricTokens:
    """Tokens per call as mean and standard deviation (independent lognormals).

    `output_*` are visible answer tokens, `reasoning_*` hidden reasoning tokens on top of them.
    `n_observed` is how many calls the means were estimated from, if they were (None: the
    means are taken as known and add no uncertainty).
    """

    prompt_mean: float
    prompt_sd: float
    output_mean: float
    output_sd: float
    reasoning_mean: float = 0.0
    reasoning_sd: float = 0.0
    n_observed: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "prompt_mean",
            "prompt_sd",
            "output_mean",
            "output_sd",
            "reasoning_mean",
            "reasoning_sd",
        ):
            non_negative(getattr(self, name), name)
        for part in ("prompt", "output", "reasoning"):
            _check_spread(getattr(self, f"{part}_mean"), getattr(self, f"{part}_sd"), part)
        if self.n_observed is not None:
            positive_int(self.n_observed, "n_observed")

    def sample(
        self, draws: int, rng: np.random.Generator
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        return (
            _lognormal(rng, self.prompt_mean, self.prompt_sd, draws),
            _lognormal(rng, self.output_mean, self.output_sd, draws),
            _lognormal(rng, self.reasoning_mean, self.reasoning_sd, draws),
        )
