"""The checks and conversions behind `cotplan cost`'s options: whole counts typed as 1e3, times
of day, output files and folders, the token distribution, growth ranges, xAI's raw counts."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError

__all__ = [
    "answer_mean",
    "count_option",
    "growth_range",
    "hour_used",
    "moment_option",
    "month_after",
    "out_dir",
    "out_file",
    "tokens_from_options",
    "whole",
    "xai_raw_counts",
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


def count_option(text: str, name: str) -> int:
    """A token count typed as 1000, 1_000 or 1e3: whole and not negative."""
    number = whole(text, name)
    if number < 0:
        raise InputError(f"must not be negative, got {text!r}", field=name)
    return number


def moment_option(text: str | None, day: date | None) -> datetime | None:
    """--at: HH:MM (UTC, on --on's date or today) or a full ISO 8601 time."""
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


def xai_raw_counts(
    table: Any, model: str, when: date | None, seller: str | None, counts: dict[str, int]
) -> str:
    """xAI reports completion tokens without its reasoning tokens: add them, as `cost_of`
    reads xAI's usage, so --completion-tokens is the provider's own count for every seller.
    Returns the note that says so (empty for other providers)."""
    from cotplan.pricing.cost import REASONING_APART

    row = table.lookup(model, on=when, provider=seller, warn=False)
    reasoning = counts["reasoning_tokens"]
    if row.provider.lower() not in REASONING_APART or not reasoning:
        return ""
    counts["completion_tokens"] += reasoning
    return (
        f"{row.provider} counts completion tokens without reasoning: the {reasoning:,} "
        "reasoning tokens are added to them"
    )


def hour_used(row: Any, moment: datetime | None) -> str:
    """Which hour's price a model priced by the hour was charged at, in words."""
    hours = ", ".join(w.label for w in row.time_of_day)
    if moment is None:
        return (
            f"hour: none given, so priced outside {hours} (that window has its own price; "
            "give --at HH:MM)"
        )
    inside = any(w.holds(moment) for w in row.time_of_day)
    where = "inside" if inside else "outside"
    return f"hour: priced at {moment.astimezone(UTC):%H:%M} UTC, {where} {hours}"


def month_after(day: date | None) -> date | None:
    """The first day of the month after `day` (None: None, the workload's own default)."""
    if day is None:
        return None
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def out_file(path: Path | None, name: str) -> None:
    """Refuse an output file that cannot be written, before any work is done."""
    if path is None:
        return
    if path.is_dir():
        raise InputError(f"{str(path)!r} is a folder; give a file name", field=name)
    if not path.parent.exists():
        raise InputError(f"folder {str(path.parent)!r} does not exist", field=name)


def out_dir(path: Path | None, name: str) -> None:
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise InputError(f"{str(path)!r} is a file; give a folder", field=name)
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise InputError(f"cannot create a folder under {str(parent)!r}", field=name)


def tokens_from_options(
    sample: Path | None,
    *,
    prompt_mean: float | None,
    prompt_sd: float,
    output_mean: float | None,
    output_sd: float,
    reasoning_mean: float,
    reasoning_sd: float,
    n_observed: int | None,
) -> Any:
    from cotplan.pricing.projection import EmpiricalTokens, ParametricTokens

    if sample is not None:
        if prompt_mean is not None or output_mean is not None:
            raise InputError(
                "give --sample or --prompt-mean/--output-mean, not both", field="sample"
            )
        try:
            frame = pd.read_csv(sample)
        except FileNotFoundError:
            raise InputError("file not found", field="sample", source=str(sample)) from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise InputError(
                f"not a readable CSV: {exc}", field="sample", source=str(sample)
            ) from exc
        return EmpiricalTokens.from_frame(frame, source=str(sample))
    if prompt_mean is None or output_mean is None:
        raise InputError(
            "give a token sample (--sample FILE.csv) or --prompt-mean and --output-mean",
            field="sample",
        )
    return ParametricTokens(
        prompt_mean, prompt_sd, output_mean, output_sd, reasoning_mean, reasoning_sd, n_observed
    )


def answer_mean(
    output_mean: float | None, completion_mean: float | None, reasoning_mean: float
) -> float | None:
    """--output-mean, or --completion-mean less the reasoning inside it."""
    if completion_mean is None:
        return output_mean
    if output_mean is not None:
        raise InputError(
            "give --output-mean (answer only) or --completion-mean (answer and reasoning), "
            "not both",
            field="completion_mean",
        )
    if not completion_mean >= reasoning_mean:
        raise InputError(
            f"{completion_mean!r} is less than --reasoning-mean ({reasoning_mean!r}), which it "
            "includes",
            field="completion_mean",
        )
    return completion_mean - reasoning_mean


def growth_range(
    workload: Any, low: float | None, high: float | None
) -> tuple[float, float] | None:
    """--growth-low and --growth-high, both or neither, around --growth."""
    growth = workload.growth_rate
    if low is None and high is None:
        return None
    if low is None or high is None:
        missing = "growth_low" if low is None else "growth_high"
        raise InputError("give --growth-low and --growth-high together", field=missing)
    for name, value in (("growth_low", low), ("growth_high", high)):
        if not value > -1.0:
            raise InputError(f"must be above -1 (-100%), got {value!r}", field=name)
    if not low <= growth <= high:
        raise InputError(
            f"needs low <= --growth <= high, got {low!r}, {growth!r}, {high!r}",
            field="growth_low" if low > growth else "growth_high",
        )
    workload.check_growth(high, "growth_high")
    return low, high
