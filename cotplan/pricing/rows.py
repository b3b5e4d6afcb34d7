"""One dated price of one model (`PriceRow`), its rates and the names its table file uses.

The price table (`cotplan.pricing.table`) and genai-prices' converted rows
(`cotplan.pricing.genai`) both build these rows; keeping them here lets the table read
genai-prices without the two modules importing each other.
"""

from __future__ import annotations

import math
import re
import threading
import warnings
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

__all__ = [
    "LOCAL_SOURCE",
    "PRICES_ENV",
    "REASONING_BILLING",
    "SERVICE_TIERS",
    "STALE_AFTER_DAYS",
    "EarlyDateWarning",
    "PriceRow",
    "Rates",
    "StalePriceWarning",
    "TierPrice",
    "TimeOfDayPrice",
]

#: Environment variable naming a user price file that overrides or extends the shipped table.
PRICES_ENV = "COTPLAN_PRICES"
#: A price read longer ago than this warns when it is used.
STALE_AFTER_DAYS = 180
#: How a provider reports reasoning ("thinking") tokens in its usage:
#: ``in_completion``: already inside the completion/output count (OpenAI, Anthropic);
#: ``separate``: reported apart from the completion count, billed once at the output rate
#: (Gemini's ``thoughtsTokenCount``); ``none``: no hidden reasoning (any chain of thought is
#: ordinary output text).
REASONING_BILLING = ("in_completion", "separate", "none")
#: The source of a local model's deliberate zero price.
LOCAL_SOURCE = "local, no API charge"
#: Service tiers a row may price apart from its standard rates: the batch API, OpenAI's flex
#: processing and priority processing (genai-prices' `processing` and `service_tier` variants).
SERVICE_TIERS = ("batch", "flex", "priority")

PRICE_COLUMNS = (
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "reasoning_per_mtok",
    "request_fee_usd",
    "long_input_per_mtok",
    "long_cached_input_per_mtok",
    "long_cache_write_per_mtok",
    "long_output_per_mtok",
)
REQUIRED = (
    "provider",
    "model",
    "input_per_mtok",
    "cached_input_per_mtok",
    "output_per_mtok",
    "reasoning_billing",
    "batch_discount",
    "as_of",
    "source_url",
)
_OPTIONAL = (
    "aliases",
    "cache_write_per_mtok",
    "reasoning_per_mtok",
    "request_fee_usd",
    "long_context_threshold",
    "long_input_per_mtok",
    "long_cached_input_per_mtok",
    "long_cache_write_per_mtok",
    "long_output_per_mtok",
    "effective_from",
    "notes",
)
COLUMNS = (
    "provider",
    "model",
    "aliases",
    "input_per_mtok",
    "cached_input_per_mtok",
    "cache_write_per_mtok",
    "output_per_mtok",
    "reasoning_per_mtok",
    "request_fee_usd",
    "reasoning_billing",
    "batch_discount",
    "long_context_threshold",
    "long_input_per_mtok",
    "long_cached_input_per_mtok",
    "long_cache_write_per_mtok",
    "long_output_per_mtok",
    "effective_from",
    "as_of",
    "source_url",
    "notes",
)
KNOWN_PROVIDERS = ("openai", "anthropic", "google", "local")
#: Columns of `PriceTable.to_frame` beyond the file columns.
FRAME_EXTRA = ("effective_to", "origin", "source", "tiers")
DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


_SOFT_WARNING_LOCK = threading.Lock()


@dataclass(frozen=True)
class TimeOfDayPrice:
    """A price that holds every day from `start` to `end` UTC (an `end` before `start` runs past
    midnight), such as DeepSeek's peak hours; `row` holds its rates (and no windows of its own).
    """

    start: time
    end: time
    row: PriceRow

    def holds(self, when: datetime) -> bool:
        """True when `when` (naive means UTC) falls in [start, end)."""
        moment = when if when.tzinfo else when.replace(tzinfo=UTC)
        now = moment.astimezone(UTC).time()
        start, end = _utc(self.start), _utc(self.end)
        if end < start:
            return now >= start or now < end
        return start <= now < end

    @property
    def label(self) -> str:
        """The hours, as ``00:30-16:30 UTC``."""
        return f"{_utc(self.start):%H:%M}-{_utc(self.end):%H:%M} UTC"


def _utc(moment: time) -> time:
    if moment.tzinfo is None:
        return moment
    # A time with an offset: move it to UTC through any date (offsets do not change by date).
    on_a_day = datetime.combine(date(2000, 1, 3), moment).astimezone(UTC)
    return on_a_day.time()


@dataclass(frozen=True)
class TierPrice:
    """A service tier's price of a model (`tier`: one of `SERVICE_TIERS`), held from `start`
    to `end` (inclusive; None: open). `row` holds every rate of a call in that tier: the token
    types the tier prices apart take its rates, the others keep the standard ones.
    """

    tier: str
    start: date | None
    end: date | None
    row: PriceRow

    def holds(self, day: date) -> bool:
        """True when the tier's price is in effect on `day`."""
        return (self.start is None or self.start <= day) and (self.end is None or day <= self.end)

    @property
    def label(self) -> str:
        """``batch from 2026-10-14: input 2.5, cached 0.25, write 3.125, output 12.5``."""
        valid = []
        if self.start is not None:
            valid.append(f"from {self.start}")
        if self.end is not None:
            valid.append(f"to {self.end}")
        r = self.row
        rates = (
            f"input {r.input_per_mtok}, cached {r.cached_input_per_mtok}, write "
            f"{r.cache_write_per_mtok if r.cache_write_per_mtok is not None else r.input_per_mtok}"
            f", output {r.output_per_mtok}"
        )
        return f"{self.tier}{' ' if valid else ''}{' '.join(valid)}: {rates}"


class StalePriceWarning(UserWarning):
    """A price was read from its source longer ago than `STALE_AFTER_DAYS` days."""


class EarlyDateWarning(UserWarning):
    """A price was asked for a day before any date the price table knows (a clock set to 1990):
    the earliest price is used, which nobody published for that day."""


@dataclass(frozen=True)
class Rates:
    """The USD-per-million-token rates that apply to one call."""

    input: Decimal
    cached_input: Decimal
    cache_write: Decimal
    output: Decimal
    long_context: bool
    reasoning: Decimal | None = None  # None: reasoning pays the output rate
    request: Decimal = Decimal(0)  # USD per request, whatever its tokens

    @property
    def reasoning_rate(self) -> Decimal:
        """The rate of reasoning tokens (the output rate unless the model prices them apart)."""
        return self.output if self.reasoning is None else self.reasoning


@dataclass(frozen=True)
class PriceRow:
    """One model's published prices, per million tokens, with where and when they were read.

    `cache_write_per_mtok` is None when the provider charges no separate cache-write rate
    (written tokens then cost the input rate). `long_context_threshold` is the prompt size
    (input, cached and written tokens together) above which the whole request pays the
    ``long_*`` rates. `effective_from` is None for a price in effect until a later row for the
    same model takes over; `effective_to` is the last day of a price a later row replaces
    (genai-prices' historic prices). `reasoning_per_mtok` is None when reasoning tokens pay the
    output rate; `request_fee_usd` is a charge per request on top of the tokens. `origin` is
    "cotplan" for a shipped row, the file for a user's row and "genai-prices VERSION" for the
    second source. `time_of_day` holds prices that replace this one during some hours of each
    day (genai-prices' peak hours); `at` picks the price of a moment.
    """

    provider: str
    model: str
    input_per_mtok: Decimal
    cached_input_per_mtok: Decimal
    output_per_mtok: Decimal
    reasoning_billing: str
    batch_discount: Decimal
    as_of: date
    source_url: str
    aliases: tuple[str, ...] = ()
    cache_write_per_mtok: Decimal | None = None
    long_context_threshold: int | None = None
    long_input_per_mtok: Decimal | None = None
    long_cached_input_per_mtok: Decimal | None = None
    long_cache_write_per_mtok: Decimal | None = None
    long_output_per_mtok: Decimal | None = None
    effective_from: date | None = None
    notes: str = ""
    origin: str = field(default="cotplan", compare=False)
    reasoning_per_mtok: Decimal | None = None
    effective_to: date | None = None
    request_fee_usd: Decimal | None = None
    time_of_day: tuple[TimeOfDayPrice, ...] = ()
    tiers: tuple[TierPrice, ...] = ()

    def for_tier(self, tier: str, on: date | None = None) -> PriceRow | None:
        """The row of a call in service tier `tier` on `on` (default today), or None when the
        tier has no price that day.

        A row with `tiers` (genai-prices' batch, flex and priority prices) uses the tier's own
        price that holds on `on`, so a discount reaches only the token types it lists and only
        the dates it holds. A row without them (cotplan's own) knows a batch discount alone:
        `batch_discount` off every rate.
        """
        listed = [t for t in self.tiers if t.tier == tier]
        if listed:
            day = on or date.today()
            return next((t.row for t in listed if t.holds(day)), None)
        if tier == "batch" and self.batch_discount:
            return self.scaled(1 - self.batch_discount)
        return None

    def tier_bounds(self, tiers: tuple[str, ...] = SERVICE_TIERS) -> set[date]:
        """The days a price of one of `tiers` starts or stops inside this row's span (the day
        after an end): where the price of a call in that tier changes though this row does not.
        """
        out: set[date] = set()
        for t in (t for t in self.tiers if t.tier in tiers):
            if t.start is not None:
                out.add(t.start)
            if t.end is not None:
                out.add(t.end + timedelta(days=1))
        return out

    def scaled(self, factor: Decimal) -> PriceRow:
        """Every rate (and the request fee) times `factor`, without tiers or a batch discount."""

        def times(value: Decimal | None) -> Decimal | None:
            return None if value is None else value * factor

        rates: dict[str, Any] = {name: times(getattr(self, name)) for name in PRICE_COLUMNS}
        return replace(
            self,
            **rates,
            batch_discount=Decimal(0),
            tiers=(),
            time_of_day=(),
        )

    def at(self, when: datetime | None) -> PriceRow:
        """The row priced at the time of day `when` (UTC; naive means UTC): the last of
        `time_of_day` whose hours hold it, else this row. None: this row."""
        if when is None:
            return self
        held = [window for window in self.time_of_day if window.holds(when)]
        return held[-1].row if held else self

    @property
    def is_local(self) -> bool:
        """True for a local model's deliberate zero price (never stale)."""
        return self.provider == "local"

    @property
    def from_genai(self) -> bool:
        """True when the price comes from genai-prices' bundled data."""
        return self.origin.startswith("genai-prices")

    @property
    def source(self) -> str:
        """Where the price came from, in one line: the page and the date read, or genai-prices'
        version and the price's validity dates."""
        if self.is_local:
            return LOCAL_SOURCE
        if self.from_genai:
            valid = []
            if self.effective_from is not None:
                valid.append(f"from {self.effective_from}")
            if self.effective_to is not None:
                valid.append(f"to {self.effective_to}")
            when = f", valid {' '.join(valid)}" if valid else ""
            return f"{self.origin}{when} ({self.source_url})"
        where = "" if self.origin == "cotplan" else f"{self.origin}: "
        return f"{where}{self.source_url}, read {self.as_of}"

    def is_long(self, prompt_tokens: Any) -> Any:
        """Whether a prompt of `prompt_tokens` pays the long-context rates (numbers or arrays):
        the one place the threshold rule is written."""
        if self.long_context_threshold is None:
            return prompt_tokens > math.inf  # False, or an all-False array
        return prompt_tokens > self.long_context_threshold

    def rates(self, prompt_tokens: int | float | Decimal) -> Rates:
        """The rates for a call whose prompt holds `prompt_tokens` tokens."""
        return self.long_rates() if bool(self.is_long(prompt_tokens)) else self.short_rates()

    def long_rates(self) -> Rates:
        """The rates above the long-context threshold (the short ones if there is none)."""
        if self.long_context_threshold is None:
            return self.short_rates()
        assert self.long_input_per_mtok is not None  # checked when the row was read
        assert self.long_cached_input_per_mtok is not None
        assert self.long_output_per_mtok is not None
        return self._rates(
            self.long_input_per_mtok,
            self.long_cached_input_per_mtok,
            self.long_cache_write_per_mtok,
            self.long_output_per_mtok,
            long=True,
        )

    def short_rates(self) -> Rates:
        """The rates at or below the long-context threshold."""
        return self._rates(
            self.input_per_mtok,
            self.cached_input_per_mtok,
            self.cache_write_per_mtok,
            self.output_per_mtok,
            long=False,
        )

    def _rates(
        self,
        input_: Decimal,
        cached_input: Decimal,
        cache_write: Decimal | None,
        output: Decimal,
        *,
        long: bool,
    ) -> Rates:
        # A provider that lists no cache-write price bills writes as ordinary input.
        return Rates(
            input_,
            cached_input,
            cache_write if cache_write is not None else input_,
            output,
            long,
            self.reasoning_per_mtok,
            self.request_fee_usd or Decimal(0),
        )

    def age_days(self, on: date | None = None) -> int:
        """Days between the date the price was read and `on` (default: today)."""
        return ((on or date.today()) - self.as_of).days

    def is_stale(self, on: date | None = None) -> bool:
        """True when the price was read more than `STALE_AFTER_DAYS` days before `on`.

        A local model's deliberate zero never goes stale."""
        return not self.is_local and self.age_days(on) > STALE_AFTER_DAYS

    def stale_message(self, on: date | None = None) -> str:
        """The one text of the stale-price warning (used by every code path that warns)."""
        when = on or date.today()
        if self.from_genai:
            fix = "install a newer genai-prices release or override it with a price file"
        else:
            fix = f"check {self.source_url} and override it with a price file"
        return (
            f"the price of {self.model} ({self.provider}) was read on {self.as_of.isoformat()}, "
            f"{self.age_days(when)} days before {when.isoformat()} (more than "
            f"{STALE_AFTER_DAYS}); {fix} ({PRICES_ENV})"
        )

    def warn_if_stale(
        self, on: date | None = None, *, soft: bool = False, stacklevel: int = 2
    ) -> None:
        """Warn with `StalePriceWarning` when the price is stale on `on`.

        ``soft=True`` is for code paths that only record a cost (a completion already made):
        the warning is shown even where warnings are turned into errors, and never raised.
        `stacklevel` counts from the caller, as in `warnings.warn`.
        """
        if not self.is_stale(on):
            return
        warning = StalePriceWarning(self.stale_message(on))
        if soft:
            # The lock keeps concurrent recordings (threads of `Backend.map`) from restoring
            # each other's filters out of order.
            with _SOFT_WARNING_LOCK, warnings.catch_warnings():
                warnings.simplefilter("always", StalePriceWarning)
                warnings.warn(warning, stacklevel=stacklevel + 1)
        else:
            warnings.warn(warning, stacklevel=stacklevel + 1)

    def to_dict(self) -> dict[str, Any]:
        """The row as a plain dict (Decimal prices, `date` dates), in file column order, then
        `effective_to`, `origin` and `source`."""
        out: dict[str, Any] = {name: getattr(self, name) for name in COLUMNS}
        out["aliases"] = ";".join(self.aliases)
        for name in FRAME_EXTRA[:-1]:
            out[name] = getattr(self, name)
        out["tiers"] = "; ".join(t.label for t in self.tiers)
        return out
