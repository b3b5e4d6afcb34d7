"""The providers' own usage and cost exports, read into one shape: `ExportLine` rows.

Each reader takes a file exactly as the provider hands it over and returns one line per
(day, model, project, key, tier) it holds, with token counts (usage exports) or a stated cost
(cost exports). Money is `Decimal`; errors name the file and the record. The formats, where
each was read and when, are in docs/costs.md ("Reconciling against the providers' exports"):

- OpenAI organization Usage API, completions (`read_openai_usage`): a page
  ``{"object": "page", "data": [bucket...]}`` whose buckets (``start_time``, ``end_time`` in
  Unix seconds) hold ``organization.usage.completions.result`` results: ``input_tokens``
  (cached included), ``input_cached_tokens``, ``output_tokens``, ``num_model_requests`` and,
  when grouped by them, ``model``, ``project_id``, ``api_key_id``, ``batch``, ``service_tier``.
- OpenAI organization Costs API (`read_openai_costs`): the same page shape, results
  ``organization.costs.result`` with ``amount`` ``{"value", "currency"}``, ``line_item``
  (``"<model>, <kind>"`` when grouped by line item) and ``project_id``; and its CSV export
  from the usage dashboard (`read_openai_costs_csv`): ``start_time``, ``end_time``,
  ``line_item``, ``project_id``/``project_name`` and ``amount_value``/``amount_currency``.
- Anthropic Admin API usage report, messages (`read_anthropic_usage`): ``data`` buckets with
  ``starting_at``/``ending_at`` (RFC 3339) and ``results``: ``uncached_input_tokens``,
  ``cache_read_input_tokens``, ``cache_creation`` (``ephemeral_5m_input_tokens``,
  ``ephemeral_1h_input_tokens``), ``output_tokens``, ``model``, ``workspace_id``,
  ``api_key_id``, ``service_tier``, ``context_window``.
- Anthropic Admin API cost report (`read_anthropic_costs`): the same buckets, results with
  ``amount`` as a decimal string in the currency's lowest unit (cents: ``"123.45"`` is
  $1.2345), ``currency``, ``description``, ``cost_type``, ``model``, ``service_tier``,
  ``token_type``, ``workspace_id``, ``context_window``.
- Google Cloud Billing export to BigQuery, standard usage cost table, saved as CSV
  (`exports_gcp.read_gcp_billing_csv`): ``service.description``, ``sku.description``,
  ``usage_start_time``, ``project.id``, ``cost``, ``currency``, ``usage.amount``,
  ``usage.unit``, ``cost_type`` and ``credits`` (the repeated record as JSON text, or a
  ``credits.amount`` column).

Several pages may be given as a JSON list of pages or as JSONL (one page a line).
`cotplan.pricing.export_readers.read_export` picks the reader by the export's kind.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cotplan.errors import InputError
from cotplan.io import parse_json

__all__ = [
    "ExportLine",
    "read_anthropic_costs",
    "read_anthropic_usage",
    "read_openai_costs",
    "read_openai_costs_csv",
    "read_openai_usage",
]

_ZERO = Decimal(0)


@dataclass(frozen=True)
class ExportLine:
    """One row of a provider's export, in one shape for every provider.

    `kind` is "usage" (token counts) or "cost" (a stated amount, `usd`, after conversion from
    `currency` only where it is USD: other currencies are kept as stated and flagged later).
    `input_tokens` are uncached prompt tokens; `cached_tokens` read from the cache;
    `cache_write_tokens` written to it; `output_tokens` include reasoning. `batch` and `tier`
    say how the calls were served (tier "" is standard). `long_context` is True for a line the
    provider marks as above its long-context threshold. `item` is the provider's own label
    (a line item, a SKU, a description), `source` the file and record it came from.
    """

    provider: str
    kind: str
    day: date
    model: str
    project: str = ""
    api_key: str = ""
    batch: bool = False
    tier: str = ""
    long_context: bool | None = None
    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    usd: Decimal = _ZERO
    currency: str = "USD"
    item: str = ""
    credit: bool = False
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def month(self) -> str:
        return f"{self.day:%Y-%m}"

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cached_tokens + self.cache_write_tokens


# ---------------------------------------------------------------------------------------------
# Shared readers


def _pages(path: Path) -> list[Any]:
    """A JSON page, a JSON list of pages, or JSONL of pages; each read by `parse_json`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    text = data.decode("utf-8-sig", errors="strict") if data else ""
    stripped = text.strip()
    if not stripped:
        raise InputError("the export is empty", source=str(path))
    try:
        whole = parse_json(stripped, source=str(path))
    except InputError:
        lines = [line for line in stripped.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        out = []
        for number, line in enumerate(lines, start=1):
            try:
                out.append(parse_json(line, source=str(path)))
            except InputError as exc:
                raise InputError(
                    str(exc).split(": ", 1)[-1], line=number, source=str(path)
                ) from None
        return out
    return whole if isinstance(whole, list) else [whole]


def _buckets(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every bucket of every page, with where it sits (``data[3]`` of page 2)."""
    out = []
    for p, page in enumerate(_pages(path), start=1):
        if not isinstance(page, dict) or not isinstance(page.get("data"), list):
            raise InputError(
                f"page {p}: expected an object with a `data` list of buckets",
                field="data",
                source=str(path),
            )
        for b, bucket in enumerate(page["data"]):
            if not isinstance(bucket, dict) or not isinstance(bucket.get("results"), list):
                raise InputError(
                    f"page {p}: expected a bucket with a `results` list",
                    field=f"data[{b}].results",
                    source=str(path),
                )
            out.append((f"page {p} data[{b}]", bucket))
    return out


def _count(record: dict[str, Any], key: str, where: str, source: str) -> int:
    value = record.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InputError(
            f"must be a whole number of tokens, got {value!r}",
            field=f"{where}.{key}",
            source=source,
        )
    if value != int(value):
        raise InputError(
            f"must be a whole number of tokens, got {value!r}",
            field=f"{where}.{key}",
            source=source,
        )
    return int(value)


def money(value: Any, where: str, source: str) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise InputError(f"must be an amount, got {value!r}", field=where, source=source)
    try:
        # str() of a float keeps what the provider wrote (0.06, not 0.0599999...).
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise InputError(f"must be an amount, got {value!r}", field=where, source=source) from None
    if not amount.is_finite():
        raise InputError(f"must be a finite amount, got {value!r}", field=where, source=source)
    return amount


def _unix_day(value: Any, where: str, source: str) -> date:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"must be Unix seconds, got {value!r}", field=where, source=source)
    try:
        return datetime.fromtimestamp(value, tz=UTC).date()
    except (OverflowError, OSError, ValueError):
        raise InputError(
            f"{value!r} is outside the years 1 to 9999", field=where, source=source
        ) from None


def iso_day(value: Any, where: str, source: str) -> date:
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{value!r} is not an RFC 3339 time", field=where, source=source) from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.date()


def export_text(value: Any) -> str:
    return "" if value is None else str(value).strip()


# ---------------------------------------------------------------------------------------------
# OpenAI


def read_openai_usage(path: str | os.PathLike[str]) -> list[ExportLine]:
    """OpenAI's organization completions usage (Usage API pages), one line per result."""
    file = Path(path)
    out = []
    for where, bucket in _buckets(file):
        day = _unix_day(bucket.get("start_time"), f"{where}.start_time", str(file))
        for r, result in enumerate(bucket["results"]):
            at = f"{where}.results[{r}]"
            if not isinstance(result, dict):
                raise InputError("must be an object", field=at, source=str(file))
            total = _count(result, "input_tokens", at, str(file))
            cached = _count(result, "input_cached_tokens", at, str(file))
            if cached > total:
                raise InputError(
                    f"input_cached_tokens ({cached}) exceed input_tokens ({total}), which "
                    "include them",
                    field=f"{at}.input_cached_tokens",
                    source=str(file),
                )
            tier = export_text(result.get("service_tier")).lower()
            out.append(
                ExportLine(
                    provider="openai",
                    kind="usage",
                    day=day,
                    model=export_text(result.get("model")),
                    project=export_text(result.get("project_id")),
                    api_key=export_text(result.get("api_key_id")),
                    batch=bool(result.get("batch")),
                    tier="" if tier in ("", "default", "standard", "auto") else tier,
                    input_tokens=total - cached,
                    cached_tokens=cached,
                    output_tokens=_count(result, "output_tokens", at, str(file)),
                    requests=_count(result, "num_model_requests", at, str(file)),
                    source=f"{file.name} {at}",
                )
            )
    return out


def _line_item(item: str) -> tuple[str, bool, str]:
    """(model, batch, tier) from an OpenAI cost line item such as ``"o3, batch input"``."""
    model, _, rest = item.partition(",")
    words = rest.lower()
    tier = next((t for t in ("flex", "priority") if t in words), "")
    return model.strip(), "batch" in words, tier


def _openai_cost_line(
    day: date,
    value: Any,
    currency: Any,
    item: str,
    project: str,
    *,
    key: str,
    where: str,
    src: Path,
) -> ExportLine:
    amount = money(value, f"{where}.amount.value", str(src))
    model, batch, tier = _line_item(item)
    return ExportLine(
        provider="openai",
        kind="cost",
        day=day,
        model=model,
        project=project,
        api_key=key,
        batch=batch,
        tier=tier,
        usd=amount,
        currency=export_text(currency).upper() or "USD",
        item=item,
        credit=amount < 0,
        source=f"{src.name} {where}",
    )


def read_openai_costs(path: str | os.PathLike[str]) -> list[ExportLine]:
    """OpenAI's organization costs (Costs API pages), one line per result."""
    file = Path(path)
    out = []
    for where, bucket in _buckets(file):
        day = _unix_day(bucket.get("start_time"), f"{where}.start_time", str(file))
        for r, result in enumerate(bucket["results"]):
            at = f"{where}.results[{r}]"
            amount = result.get("amount") if isinstance(result, dict) else None
            if not isinstance(amount, dict):
                raise InputError("needs an `amount` object", field=at, source=str(file))
            out.append(
                _openai_cost_line(
                    day,
                    amount.get("value"),
                    amount.get("currency"),
                    export_text(result.get("line_item")),
                    export_text(result.get("project_id")),
                    key=export_text(result.get("api_key_id")),
                    where=at,
                    src=file,
                )
            )
    return out


def csv_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None
    reader = csv.DictReader(io.StringIO(text))
    rows = [(number, row) for number, row in enumerate(reader, start=2)]
    if not rows:
        raise InputError("the export holds no rows", source=str(path))
    return rows


def export_column(row: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        if name in row and row[name] is not None:
            return row[name]
    return None


def read_openai_costs_csv(path: str | os.PathLike[str]) -> list[ExportLine]:
    """The usage dashboard's cost export (CSV, grouped by line item, one-day interval)."""
    file = Path(path)
    out = []
    for number, row in csv_rows(file):
        value = export_column(row, ("amount_value", "amount", "cost"))
        start = export_column(row, ("start_time",))
        if value is None or start is None:
            raise InputError(
                "needs `start_time` and `amount_value` columns", line=number, source=str(file)
            )
        try:
            seconds: Any = float(start)
        except ValueError:
            seconds = start
        day = (
            _unix_day(seconds, "start_time", str(file))
            if not isinstance(seconds, str)
            else (iso_day(seconds, "start_time", str(file)))
        )
        try:
            out.append(
                _openai_cost_line(
                    day,
                    value,
                    export_column(row, ("amount_currency", "currency")) or "usd",
                    export_text(export_column(row, ("line_item",))),
                    export_text(export_column(row, ("project_id", "project_name"))),
                    key=export_text(export_column(row, ("api_key_id",))),
                    where=f"line {number}",
                    src=file,
                )
            )
        except InputError as exc:
            raise InputError(
                str(exc).split(": ", 1)[-1], line=number, field="amount_value", source=str(file)
            ) from None
    return out


# ---------------------------------------------------------------------------------------------
# Anthropic


def _tier_of(value: Any) -> tuple[bool, str]:
    tier = export_text(value).lower()
    if tier == "batch":
        return True, ""
    return False, "" if tier in ("", "standard") else tier


def _long_of(value: Any) -> bool | None:
    window = export_text(value)
    if not window:
        return None
    return not window.startswith("0-")


def read_anthropic_usage(path: str | os.PathLike[str]) -> list[ExportLine]:
    """Anthropic's messages usage report (Admin API), one line per result."""
    file = Path(path)
    out = []
    for where, bucket in _buckets(file):
        day = iso_day(bucket.get("starting_at"), f"{where}.starting_at", str(file))
        for r, result in enumerate(bucket["results"]):
            at = f"{where}.results[{r}]"
            if not isinstance(result, dict):
                raise InputError("must be an object", field=at, source=str(file))
            creation = result.get("cache_creation") or {}
            if not isinstance(creation, dict):
                raise InputError(
                    "must be an object", field=f"{at}.cache_creation", source=str(file)
                )
            written = _count(
                creation, "ephemeral_5m_input_tokens", f"{at}.cache_creation", str(file)
            )
            written_1h = _count(
                creation, "ephemeral_1h_input_tokens", f"{at}.cache_creation", str(file)
            )
            batch, tier = _tier_of(result.get("service_tier"))
            out.append(
                ExportLine(
                    provider="anthropic",
                    kind="usage",
                    day=day,
                    model=export_text(result.get("model")),
                    project=export_text(result.get("workspace_id")),
                    api_key=export_text(result.get("api_key_id")),
                    batch=batch,
                    tier=tier,
                    long_context=_long_of(result.get("context_window")),
                    input_tokens=_count(result, "uncached_input_tokens", at, str(file)),
                    cached_tokens=_count(result, "cache_read_input_tokens", at, str(file)),
                    cache_write_tokens=written + written_1h,
                    output_tokens=_count(result, "output_tokens", at, str(file)),
                    source=f"{file.name} {at}",
                    # One-hour cache writes cost more than five-minute ones: kept apart.
                    extra={"cache_write_1h_tokens": written_1h},
                )
            )
    return out


def read_anthropic_costs(path: str | os.PathLike[str]) -> list[ExportLine]:
    """Anthropic's cost report (Admin API): amounts in cents, as decimal strings."""
    file = Path(path)
    out = []
    for where, bucket in _buckets(file):
        day = iso_day(bucket.get("starting_at"), f"{where}.starting_at", str(file))
        for r, result in enumerate(bucket["results"]):
            at = f"{where}.results[{r}]"
            if not isinstance(result, dict):
                raise InputError("must be an object", field=at, source=str(file))
            # "123.45" in USD is $1.2345: the lowest currency unit, as the report documents.
            cents = money(result.get("amount"), f"{at}.amount", str(file))
            batch, tier = _tier_of(result.get("service_tier"))
            out.append(
                ExportLine(
                    provider="anthropic",
                    kind="cost",
                    day=day,
                    model=export_text(result.get("model")),
                    project=export_text(result.get("workspace_id")),
                    batch=batch,
                    tier=tier,
                    long_context=_long_of(result.get("context_window")),
                    usd=cents / 100,
                    currency=export_text(result.get("currency")).upper() or "USD",
                    item=export_text(result.get("description"))
                    or export_text(result.get("token_type")),
                    credit=cents < 0,
                    source=f"{file.name} {at}",
                )
            )
    return out
