"""Spend attributed to teams, features and projects: tags on calls, carried into actuals.

A call's tags are what its log line says about who made it: a ``tags`` object on a JSONL line
of a provider response (``{"team": "search", "feature": "autocomplete"}``), the request's
``metadata`` that OpenAI's Responses API echoes back, and a top-level ``project`` (the
provider's project or workspace id, as the exports name it). String values only; a call
without a tag is counted under ``(untagged)``, never dropped, so every dollar is in one row.
"""

from __future__ import annotations

import os
import warnings
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.actuals import actual_lines, line_json, not_future, reason, utc_time
from cotplan.pricing.reconcile import LoggedCall
from cotplan.pricing.table import PriceTable, StalePriceWarning, price_table

__all__ = ["UNTAGGED", "calls_from_jsonl", "spend_by", "tags_of"]

UNTAGGED = "(untagged)"
_TAG_KEYS = ("metadata", "tags")


def tags_of(body: dict[str, Any]) -> dict[str, str]:
    """A response line's tags: its ``metadata``, then its ``tags`` (which win), then a
    top-level ``project``; only string values are kept."""
    out: dict[str, str] = {}
    for key in _TAG_KEYS:
        value = body.get(key)
        if isinstance(value, dict):
            out.update({str(k): v.strip() for k, v in value.items() if isinstance(v, str)})
    project = body.get("project")
    if isinstance(project, str) and "project" not in out:
        out["project"] = project.strip()
    return {k: v for k, v in out.items() if v}


def calls_from_jsonl(
    path: str | os.PathLike[str],
    *,
    table: PriceTable | None = None,
    today: date | None = None,
) -> list[LoggedCall]:
    """Every call of a JSONL log of provider responses, priced exactly by `cost_of` at its
    time, with its provider, model and tags. Errors name the file and the line, as
    `actuals_from_jsonl`'s do; a stale price is said once per price."""
    from cotplan.pricing.usage import cost_of, read_usage

    file = Path(path).expanduser()
    chosen = table or price_table()
    limit = today or date.today()
    out: list[LoggedCall] = []
    stale: dict[str, Warning] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number, text in actual_lines(file):
            body = line_json(text, file, number)
            try:
                stamp = body.get("time")
                at = read_usage(body).created if stamp is None else stamp
                if at is None:
                    raise InputError(
                        "no time: add `created` (Unix seconds) or `time` (ISO 8601)",
                        field="time",
                    )
                moment = utc_time(at, field="time" if stamp is not None else "created")
                cost = cost_of(body, at=moment, table=chosen)
            except InputError as exc:
                raise InputError(
                    reason(exc), field=exc.field, line=number, source=str(file)
                ) from exc
            not_future(moment, limit, field="time", line=number, source=str(file))
            out.append(
                LoggedCall(moment.date(), cost.provider, cost.model, cost.usd, tags_of(body))
            )
            for item in caught:
                key = str(item.message).split(" was read on ")[0]
                if issubclass(item.category, StalePriceWarning) or key not in stale:
                    stale[key] = item.message  # type: ignore[assignment]
            caught.clear()
    for message in stale.values():
        warnings.warn(message, stacklevel=2)
    if not out:
        raise InputError("the log holds no calls", field="actuals", source=str(file))
    return out


def spend_by(calls: Iterable[LoggedCall], by: Sequence[str]) -> pd.DataFrame:
    """Spend per month and per value of each tag in `by` (``["team", "feature"]``): columns
    ``month``, the tags, ``calls``, ``usd`` (exact Decimal) and ``share`` (of the month's
    spend). Untagged calls count under ``(untagged)``; rows sum to each month's total."""
    names = [b.strip() for b in by if b.strip()]
    if not names:
        raise InputError("name at least one tag, e.g. team,feature", field="by")
    if len(set(names)) < len(names):
        raise InputError(f"names a tag twice: {', '.join(names)}", field="by")
    groups: dict[tuple[str, ...], list[Any]] = defaultdict(lambda: [0, Decimal(0)])
    months: dict[str, Decimal] = defaultdict(lambda: Decimal(0))
    for call in calls:
        month = f"{call.day:%Y-%m}"
        key = (month, *(call.tags.get(n, UNTAGGED) for n in names))
        groups[key][0] += 1
        groups[key][1] += call.usd
        months[month] += call.usd
    rows = []
    for key in sorted(groups):
        count, usd = groups[key]
        total = months[key[0]]
        share = float(usd / total) if total else float("nan")
        rows.append(
            {
                "month": key[0],
                **dict(zip(names, key[1:], strict=True)),
                "calls": count,
                "usd": usd,
                "share": share,
            }
        )
    return pd.DataFrame(rows, columns=["month", *names, "calls", "usd", "share"])
