"""The price row of a capped call's model, looked up once per model and day, not per call.

Each reply's report prices the call (`cotplan.production.calls.cost_of_requests`). Finding the
model's row in the price table (names, aliases, sellers, dates) cost about a quarter of a
millisecond, on every call of a gateway that serves the same few models all day. The row in
effect today is kept per model, and so is a lookup that failed (an unpriced model gets its
note without searching again); a new day looks again, since prices change by date.
"""

from __future__ import annotations

import threading
from datetime import date

from cotplan.errors import InputError
from cotplan.pricing import price_table
from cotplan.pricing.rows import PriceRow

__all__ = ["price_row"]

_ROWS: dict[tuple[str, date], PriceRow | InputError] = {}
_LOCK = threading.Lock()
#: Models kept at most (a gateway serves a few; a client sending made-up names cannot grow it).
_MAX = 256


def price_row(model: str) -> PriceRow:
    """The price row of `model` in effect today, as `cost_of_completion` looks it up (its
    maker's list price, outside any time-of-day hours); raises the table's `InputError` for a
    model it cannot price, as the lookup does."""
    key = (model, date.today())
    found = _ROWS.get(key)
    if found is None:
        try:
            found = price_table().lookup(model, warn=False)
            found.warn_if_stale(None, soft=True, stacklevel=3)
        except InputError as exc:
            found = exc
        with _LOCK:
            if len(_ROWS) >= _MAX:
                _ROWS.clear()
            _ROWS[key] = found
    if isinstance(found, InputError):
        raise found
    return found
