"""The production log read as spend: what the month-end cost commands and `cost project
--actuals` take from a log of real calls.

A log is either the production log (SQLite, `cotplan.production.log`) or a JSONL file of
provider responses (`cotplan.pricing`). The SQLite one is read here because pricing sits below
production in the layers; the pricing functions take these readers as arguments.
"""

from __future__ import annotations

import sqlite3
import warnings
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import CotplanError, InputError
from cotplan.pricing.actuals import (
    Actuals,
    actuals_from_calls,
    actuals_from_jsonl,
    not_future,
    utc_time,
)
from cotplan.pricing.reconcile import LoggedCall
from cotplan.production.tags import decode_tags

__all__ = ["UnknownSpendWarning", "logged_calls", "read_actuals"]


class UnknownSpendWarning(UserWarning):
    """Calls of the production log left out of a spend because their cost is unknown (the
    upstream sent no usage, or the model has no price); the text says how many."""


_SQLITE = (".sqlite", ".sqlite3", ".db")


def read_actuals(path: Path, table: Any, today: date | None = None) -> Actuals:
    """A log of real calls: the production log (SQLite) or a JSONL file of responses; a call
    dated after `today` (default: the system's date) by more than a day is refused."""
    if path.suffix.lower() not in _SQLITE:
        return actuals_from_jsonl(path, table=table, today=today)
    from cotplan.production.log import CallLog

    try:
        frame = CallLog(path).to_frame()
    except (CotplanError, sqlite3.Error) as exc:
        raise InputError(
            f"not a cotplan production log: {exc}", field="actuals", source=str(path)
        ) from exc
    if frame.empty:
        raise InputError("the log holds no calls", field="actuals", source=str(path))
    calls = [
        (
            utc_time(time, field=f"calls[{number}].time", source=str(path)),
            None if pd.isna(usd) else float(usd),
        )
        for number, (time, usd) in enumerate(zip(frame["time"], frame["cost_usd"], strict=True), 1)
    ]
    limit = today or date.today()
    for number, (moment, _) in enumerate(calls, 1):
        not_future(moment, limit, field=f"calls[{number}].time", line=None, source=str(path))
    return actuals_from_calls(calls, source=str(path))


def logged_calls(path: Path, table: Any, today: date | None = None) -> list[LoggedCall]:
    """A log's priced calls with their tags: the production log's (each row's `tags`; rows
    written before the log kept them count as untagged) or a JSONL file's
    (`cotplan.pricing.attribution.calls_from_jsonl`)."""
    from cotplan.pricing.attribution import calls_from_jsonl

    if path.suffix.lower() not in _SQLITE:
        return calls_from_jsonl(path, table=table, today=today)
    from cotplan.production.log import CallLog

    frame = CallLog(path).to_frame()
    out = []
    unmeasured = unpriced = 0
    for number, rec in enumerate(frame.to_dict("records"), start=1):
        if not rec["usage_trusted"]:
            unmeasured += 1  # no usage, so no cost: never a call that cost nothing
            continue
        if pd.isna(rec["cost_usd"]):
            unpriced += 1
            continue
        moment = utc_time(rec["time"], field=f"calls[{number}].time", source=str(path))
        provider = table.lookup(rec["model"], warn=False).provider
        usd = Decimal(str(rec["cost_usd"]))
        out.append(LoggedCall(moment.date(), provider, rec["model"], usd, decode_tags(rec["tags"])))
    if unmeasured or unpriced:
        warnings.warn(
            _left_out(path, len(frame), unmeasured, unpriced), UnknownSpendWarning, stacklevel=2
        )
    return out


def _left_out(path: Path, calls: int, unmeasured: int, unpriced: int) -> str:
    why = [
        f"{unmeasured} with unknown token counts (the upstream sent no usage)"
        if unmeasured
        else "",
        f"{unpriced} whose model has no price" if unpriced else "",
    ]
    return (
        f"{unmeasured + unpriced} of {calls} call(s) in {path} left out of the spend, their "
        f"cost unknown: {' and '.join(w for w in why if w)}"
    )
