"""plan.json written as strict JSON and checked as it is read: `SavedPlan.load` calls
`check_plan_record` before it builds anything, so a hand edit or a damaged file is refused with
one line naming the file, the line and the field (`budgets[1].tokens`) before any model starts,
rather than failing later with a traceback (``"eps": "x"``, tokens null) or, worse, being used
(ε = 5, a cap of 10^12 tokens, two budgets for one size).

The checks cover what `run` and `SavedPlan.cap` act on: the targets, the law and its
parameters, and each budget, certificate and peak. Free text (verdicts, notes, formulas) is
only required to be text. `strict_record` turns a plan's record into strict JSON values (null,
never NaN or Infinity; an infinite interval end listed under `infinite`), `record_back` undoes
it when the file is read.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import numpy as np

from cotplan.errors import InputError

__all__ = [
    "MAX_PLAN_TOKENS",
    "check_plan_record",
    "record_back",
    "strict_record",
    "value_lines",
]

#: The largest cap a plan may hold: no model writes a million tokens in one answer, so a
#: larger one is a damaged or hand-edited file, not a plan.
MAX_PLAN_TOKENS = 1_000_000
#: The largest size a plan may name.
MAX_PLAN_N = 1_000_000_000

#: Fields every plan file holds, in every schema version; a file without one is no plan.
_REQUIRED = ("eps", "delta", "budgets")

_Fail = Callable[[str, str], InputError]


def value_lines(text: str) -> dict[str, int]:
    """The 1-based line where each value of the JSON document `text` starts, by path
    (``eps``, ``budgets[0].tokens``); empty when `text` is not the JSON it should be (the
    lines only sharpen a message, they never decide one)."""
    newlines = [i for i, c in enumerate(text) if c == "\n"]
    lines: dict[str, int] = {}
    decoder = json.JSONDecoder()
    blank = re.compile(r"[ \t\n\r]*")

    def skip(i: int) -> int:
        match = blank.match(text, i)
        return match.end() if match else i

    def walk(i: int, path: str) -> int:
        i = skip(i)
        lines[path] = bisect.bisect_right(newlines, i - 1) + 1
        if text[i] == "{":
            i = skip(i + 1)
            if text[i] == "}":
                return i + 1
            while True:
                key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
                i = skip(i) + 1  # past the colon
                i = skip(walk(i, f"{path}.{key}" if path else key))
                if text[i] == "}":
                    return i + 1
                i = skip(i + 1)  # past the comma
        if text[i] == "[":
            i = skip(i + 1)
            if text[i] == "]":
                return i + 1
            index = 0
            while True:
                i = skip(walk(i, f"{path}[{index}]"))
                index += 1
                if text[i] == "]":
                    return i + 1
                i += 1
        _, end = decoder.raw_decode(text, i)
        return int(end)

    try:
        walk(0, "")
    except (ValueError, IndexError):
        return {}
    return lines


def _required(record: Mapping[str, Any], source: str, version: int | None, fail: _Fail) -> None:
    missing = [name for name in _REQUIRED if name not in record]
    if missing:
        raise InputError(
            f"not a plan written by `cotplan plan`: no {', '.join(missing)}",
            field="plan",
            source=source,
        )
    # Every plan cotplan writes from version 2 on names the model it was calibrated on;
    # without it the plan would be applied to any model.
    if version is not None and version >= 2 and "model" not in record:
        raise fail("model", "is missing: a plan names the model it was made for")


def check_plan_record(
    record: Mapping[str, Any], source: str, text: str = "", *, version: int | None = None
) -> None:
    """Raise `InputError` at the first field of a plan.json record that `run` must not use.

    `record` is the parsed file (any schema version), `text` its source for line numbers,
    `version` its `schema_version` (from 2 on, a plan names its `model`).
    """
    lines = value_lines(text) if text else {}

    def fail(path: str, message: str) -> InputError:
        line = lines.get(path)
        if line is None and "." in path:
            line = lines.get(path.rsplit(".", 1)[0])  # a missing field: its record's line
        return InputError(message, field=path, line=line, source=source)

    _required(record, source, version, fail)
    _unit(record, "eps", fail, required=True)
    _unit(record, "delta", fail, required=True)
    _unit(record, "confidence", fail)
    reach = record.get("reach")
    if reach is not None and not (_number(reach) and math.isfinite(reach) and reach >= 1.0):
        raise fail("reach", f"must be a number ≥ 1, got {reach!r}")
    text_fields = ("law", "model", "mode", "protocol", "provider", "family", "status_", "verdict_")
    for name in (*text_fields, "calibration"):
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise fail(name, f"must be text, got {value!r}")
    _numbers(record.get("law_params"), "law_params", fail)
    draws = record.get("law_draws")
    if draws is not None:
        if not isinstance(draws, list):
            raise fail("law_draws", f"must be a list of parameter lists, got {draws!r}")
        for i, draw in enumerate(draws):
            _numbers(draw, f"law_draws[{i}]", fail)
    budgets = record.get("budgets")
    if not isinstance(budgets, list):
        raise fail("budgets", f"must be a list of budgets, got {budgets!r}")
    seen: dict[float, int] = {}
    for i, budget in enumerate(budgets):
        where = f"budgets[{i}]"
        if not isinstance(budget, dict):
            raise fail(where, f"must be a budget record, got {budget!r}")
        n = _size(budget, where, fail)
        if n in seen:
            raise fail(f"{where}.n", f"n = {n:g} has a budget already (budgets[{seen[n]}])")
        seen[n] = i
        _tokens(budget.get("tokens"), f"{where}.tokens", fail, allow_null=False)
        if "eps" in budget:
            _unit(budget, "eps", fail, prefix=where)
        for name in ("k_star", "low", "high", "cap_low", "cap_high"):
            value = budget.get(name)
            if value is not None and not _number(value):
                raise fail(f"{where}.{name}", f"must be a number or null, got {value!r}")
    _certificates(record.get("certificates"), fail)
    _serving(record, fail)
    peaks = record.get("peaks")
    if peaks is not None:
        if not isinstance(peaks, dict):
            raise fail("peaks", f"must map sizes to budgets, got {peaks!r}")
        for n, k in peaks.items():
            if not re.fullmatch(r"[1-9][0-9]*", str(n)):
                raise fail(f"peaks.{n}", f"must be keyed by a size (a whole number), got {n!r}")
            _tokens(k, f"peaks.{n}", fail, allow_null=False)


# -- strict JSON both ways --------------------------------------------------------------------


def strict_record(value: Any) -> Any:
    """`value` with every non-finite float as None; a record (dict) that held +inf in a field
    also lists it under `infinite`, so that an unbounded interval end survives the trip."""
    if isinstance(value, dict):
        out = {str(k): strict_record(v) for k, v in value.items()}
        infinite = [
            str(k) for k, v in value.items() if isinstance(v, float | np.floating) and v == math.inf
        ]
        if infinite:
            out["infinite"] = infinite
        return out
    if isinstance(value, list | tuple):
        return [strict_record(v) for v in value]
    if isinstance(value, np.generic):
        return strict_record(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def record_back(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record read back: null as NaN (as +inf where `infinite` lists the field)."""
    infinite = set(record.get("infinite", ()))
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key == "infinite":
            continue
        if key in infinite:
            out[key] = math.inf
        elif value is None and key not in _OPTIONAL_FIELDS:
            out[key] = math.nan
        elif isinstance(value, dict):
            out[key] = {k: math.nan if v is None else v for k, v in value.items()}
        else:
            out[key] = value
    return out


#: Record fields for which null means "none" rather than a missing number.
_OPTIONAL_FIELDS = frozenset({"k", "items_needed"})


# -- field checks ----------------------------------------------------------------------------


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: object) -> TypeGuard[int | float]:
    return _number(value) and math.isfinite(value) and float(value).is_integer()


def _unit(
    record: Mapping[str, Any], name: str, fail: _Fail, *, required: bool = False, prefix: str = ""
) -> float:
    """A share strictly between 0 and 1 (ε, δ, a confidence)."""
    path = f"{prefix}.{name}" if prefix else name
    value = record.get(name)
    if value is None and not required:
        return math.nan
    if not (_number(value) and 0.0 < float(value) < 1.0):
        raise fail(path, f"must be a number in (0, 1), got {value!r}")
    return float(value)


def _size(budget: Mapping[str, Any], where: str, fail: _Fail) -> float:
    n = budget.get("n")
    if not (_number(n) and math.isfinite(n) and 1 <= n <= MAX_PLAN_N):
        raise fail(f"{where}.n", f"must be a size in 1..{MAX_PLAN_N:,}, got {n!r}")
    return float(n)


def _tokens(value: object, path: str, fail: _Fail, *, allow_null: bool) -> None:
    if value is None and allow_null:
        return
    if not _whole(value):
        raise fail(path, f"must be a whole number of tokens, got {value!r}")
    if not 0 <= value <= MAX_PLAN_TOKENS:
        raise fail(path, f"must be in 0..{MAX_PLAN_TOKENS:,} tokens, got {value!r}")


def _numbers(value: object, path: str, fail: _Fail) -> None:
    """A list of numbers (null for a missing one), or null."""
    if value is None:
        return
    if not isinstance(value, list) or not all(v is None or _number(v) for v in value):
        raise fail(path, f"must be a list of numbers, got {value!r}")


def _serving(record: Mapping[str, Any], fail: _Fail) -> None:
    """What serves calls without a size: the pooled cap and the operator's size rule."""
    _pooled(record.get("pooled"), fail)
    if record.get("size_rule") is not None:
        from cotplan.planner.size_rule import SizeRule

        try:
            SizeRule.from_record(record["size_rule"])
        except InputError as exc:
            raise fail(exc.field or "size_rule", str(exc).removeprefix(f"`{exc.field}`: ")) from exc


def _pooled(pooled: object, fail: _Fail) -> None:
    """The pooled certificate (`cotplan.planner.pooled`): absent or null in older plans."""
    if pooled is None:
        return
    if not isinstance(pooled, dict):
        raise fail("pooled", f"must be a certificate record or null, got {pooled!r}")
    _tokens(pooled.get("k"), "pooled.k", fail, allow_null=True)
    for name in ("errors", "items", "tested"):
        count = pooled.get(name)
        if not (_whole(count) and count >= 0):
            raise fail(f"pooled.{name}", f"must be a whole number ≥ 0, got {count!r}")
    if pooled["errors"] > pooled["items"]:
        raise fail("pooled.errors", f"{pooled['errors']} errors among {pooled['items']} items")
    _unit(pooled, "eps", fail, prefix="pooled", required=True)
    _unit(pooled, "delta", fail, prefix="pooled", required=True)
    bound = pooled.get("error_bound")
    if bound is not None and not _number(bound):
        raise fail("pooled.error_bound", f"must be a number or null, got {bound!r}")
    if not isinstance(pooled.get("note", ""), str):
        raise fail("pooled.note", f"must be text, got {pooled.get('note')!r}")


def _certificates(certificates: object, fail: _Fail) -> None:
    if certificates is None:
        return
    if not isinstance(certificates, list):
        raise fail("certificates", f"must be a list, got {certificates!r}")
    seen: set[int] = set()
    for i, cert in enumerate(certificates):
        where = f"certificates[{i}]"
        if not isinstance(cert, dict):
            raise fail(where, f"must be a certificate record, got {cert!r}")
        n = cert.get("n")
        if not (_whole(n) and 1 <= n <= MAX_PLAN_N):
            raise fail(f"{where}.n", f"must be a size in 1..{MAX_PLAN_N:,}, got {n!r}")
        if int(n) in seen:
            raise fail(f"{where}.n", f"n = {n} is certified twice")
        seen.add(int(n))
        _tokens(cert.get("k"), f"{where}.k", fail, allow_null=True)
        for name in ("errors", "items", "tested"):
            count = cert.get(name)
            if not (_whole(count) and count >= 0):
                raise fail(f"{where}.{name}", f"must be a whole number ≥ 0, got {count!r}")
        if cert["errors"] > cert["items"]:
            raise fail(f"{where}.errors", f"{cert['errors']} errors among {cert['items']} items")
