"""Keeping a shipped cap honest: the call log read against the plan (`cotplan monitor`).

`monitor(log, plan=..., labels=...)` reads the SQLite call log the wrapper, the gateway and the
LiteLLM callback write (`cotplan.production.log`) and says, by size and cap:

- spend: the calls' list price and reasoning tokens, beside the plan's projection (what the
  calibration's answers at the same size and cap cost and spent, times the calls made);
- how often the cap bit and the answer was forced, beside how often it did in calibration at
  that size and cap (predictions exist only where the cap is a calibrated budget: a scaled or
  law cap was never run in calibration);
- with labels for a sample of calls, the error of the labelled calls, tested against the plan's
  ε by a confidence sequence (`cotplan.production.sequential`), which may be read after every
  new label without raising false alarms: the alarm fires with probability at most δ while the
  error is at most ε.

The labels file is a CSV with a header holding `call_id` (the reply's `id`, which the log keeps)
and `correct` (1/0, true/false, yes/no), one labelled call a row, in the order the labels were
made. Which calls get labelled must not depend on their answers (draw them at random), or the
sample says nothing about the rest.
"""

from __future__ import annotations

import csv
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from cotplan.errors import CacheError, CotplanError, InputError
from cotplan.planner import SavedPlan
from cotplan.production.log import CallLog, LogRecord
from cotplan.production.sequential import ErrorTest, error_test

__all__ = ["Label", "MonitorReport", "SizeLine", "load_labels", "monitor"]

_TRUE = frozenset({"1", "true", "yes", "y", "t"})
_FALSE = frozenset({"0", "false", "no", "n", "f"})


@dataclass(frozen=True)
class Label:
    """One labelled call: its `call_id`, whether its answer was `correct`, its file `line`."""

    call_id: str
    correct: bool
    line: int


@dataclass(frozen=True)
class SizeLine:
    """The calls at one size and cap, beside what the calibration predicted there.

    Rates and mean reasoning tokens are over the calls that ran to the end (a stream the caller
    stopped, or that failed, is left out of them unless no call ran to the end); spend is over
    all calls. `predicted_*` come from the calibration's answers at the same size and budget
    (NaN where the cap was not a calibrated budget, or no calibration was found). `cost_usd`
    sums the priced calls (`unpriced` counts the others); `projected_cost_usd` is the
    calibration's mean cost per answer times `calls`. `labelled` and `label_errors` count the
    labelled calls here; `error_bound` is the plan's certified bound at this size (NaN when not
    certified).
    """

    size: float
    cap: int
    basis: str
    calls: int
    cap_bitten: float
    answer_forced: float
    reasoning_tokens: float
    cost_usd: float
    unpriced: int
    predicted_bitten: float = math.nan
    predicted_forced: float = math.nan
    predicted_reasoning_tokens: float = math.nan
    projected_cost_usd: float = math.nan
    labelled: int = 0
    label_errors: int = 0
    error_bound: float = math.nan


@dataclass(frozen=True)
class MonitorReport:
    """What `monitor` found in a call log (see the module).

    `calls` rows read (of the plan's model when a plan is given: `other_models` counts the
    rest); `sizes` one `SizeLine` per size and cap; `spend_usd` / `projected_usd` and
    `reasoning_tokens` / `projected_reasoning_tokens` the totals (projections NaN unless every
    size has one); `test` the sequential error test on the labels (None without labels);
    `alarm` True when that test fired; `notes` what could not be compared and why.
    """

    log: str
    calls: int
    other_models: int
    sizes: tuple[SizeLine, ...]
    spend_usd: float
    projected_usd: float
    reasoning_tokens: int
    projected_reasoning_tokens: float
    test: ErrorTest | None
    notes: tuple[str, ...] = field(default=())

    @property
    def alarm(self) -> bool:
        return self.test is not None and self.test.alarm

    def to_frame(self) -> pd.DataFrame:
        """One row per size and cap (the `SizeLine` fields)."""
        columns = list(SizeLine.__dataclass_fields__)
        return pd.DataFrame([vars(line) for line in self.sizes], columns=columns)


def load_labels(path: str | Path) -> list[Label]:
    """The labels file (see the module), every row checked, errors naming file, line, field."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"no such file: {source}", field="labels", source=str(source))
    try:
        with source.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header: list[str] | None = None
            labels: list[Label] = []
            seen: dict[str, int] = {}
            for row in reader:
                line = reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if header is None:
                    header = [cell.strip().lower() for cell in row]
                    missing = [c for c in ("call_id", "correct") if c not in header]
                    if missing:
                        raise InputError(
                            f"the header must name call_id and correct; missing {missing[0]}",
                            field=missing[0],
                            line=line,
                            source=str(source),
                        )
                    continue
                labels.append(_label(row, header, line, seen, str(source)))
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable CSV: {exc}", field="labels", source=str(source)) from exc
    if header is None:
        raise InputError("the file is empty", field="labels", source=str(source))
    return labels


def _label(row: list[str], header: list[str], line: int, seen: dict[str, int], src: str) -> Label:
    if len(row) != len(header):
        raise InputError(
            f"has {len(row)} fields, the header {len(header)}",
            field="labels",
            line=line,
            source=src,
        )
    cells = dict(zip(header, (cell.strip() for cell in row), strict=True))
    call_id, correct = cells["call_id"], cells["correct"].lower()
    if not call_id:
        raise InputError("is empty", field="call_id", line=line, source=src)
    if call_id in seen:
        raise InputError(
            f"{call_id!r} is labelled twice (first on line {seen[call_id]})",
            field="call_id",
            line=line,
            source=src,
        )
    if correct not in _TRUE | _FALSE:
        raise InputError(
            f"must be 1/0, true/false or yes/no, got {cells['correct']!r}",
            field="correct",
            line=line,
            source=src,
        )
    seen[call_id] = line
    return Label(call_id=call_id, correct=correct in _TRUE, line=line)


def _read_log(path: Path) -> list[LogRecord]:
    if not path.is_file():
        raise InputError(f"no such file: {path}", field="log", source=str(path))
    try:
        return CallLog(path).records()
    except CacheError as exc:
        raise InputError(f"not a cotplan call log: {exc}", field="log", source=str(path)) from exc


def _calibration(plan: SavedPlan, plan_path: Path | None, given: Path | None) -> pd.DataFrame | str:
    """The plan's calibration answers, or why there are none."""
    from cotplan.planner.calibrate import load_calibration

    candidates = [given] if given is not None else [Path(plan.calibration)]
    if given is None and plan_path is not None:
        candidates.append(plan_path.parent / Path(plan.calibration).name)
    found = next((c for c in candidates if c is not None and c.is_file()), None)
    if found is None:
        return f"no predictions: the calibration {plan.calibration} was not found (--calibration)"
    digest = hashlib.sha256(found.read_bytes()).hexdigest()
    if plan.calibration_sha256 and digest != plan.calibration_sha256:
        return f"no predictions: {found} is not the calibration the plan was made from (SHA-256)"
    return load_calibration(found).frame


def _predicted(frame: pd.DataFrame | None, size: float, cap: int) -> dict[str, float]:
    if frame is None:
        return {}
    rows = frame[(frame["n"].astype(float) == size) & (frame["k"].astype(int) == cap)]
    if rows.empty:
        return {}

    def mean(column: str) -> float:
        if column not in rows.columns:
            return math.nan
        return float(pd.to_numeric(rows[column], errors="coerce").astype(float).mean())

    return {
        "predicted_bitten": mean("truncated"),
        "predicted_forced": mean("forced"),
        "predicted_reasoning_tokens": mean("reasoning_tokens"),
        "projected_cost_usd": mean("cost_usd"),
    }


def _error_bound(plan: SavedPlan | None, size: float) -> float:
    if plan is None:
        return math.nan
    try:
        cap = plan.cap(size)
    except CotplanError:
        return math.nan
    return cap.error_bound if cap.certified else math.nan


def _size_lines(
    records: Sequence[LogRecord],
    labels: dict[str, bool],
    plan: SavedPlan | None,
    frame: pd.DataFrame | None,
) -> tuple[SizeLine, ...]:
    groups: dict[tuple[float, int], list[LogRecord]] = {}
    for record in records:
        groups.setdefault((record.size, record.cap), []).append(record)
    lines = []
    for (size, cap), rows in sorted(groups.items()):
        priced = [r.cost_usd for r in rows if not math.isnan(r.cost_usd)]
        predicted = _predicted(frame, size, cap)
        if "projected_cost_usd" in predicted:
            predicted["projected_cost_usd"] *= len(rows)
        marked = [labels[r.call_id] for r in rows if r.call_id in labels]
        # A stream the caller stopped (or that failed) ended before the cap could bite or the
        # answer be forced: counting it would make those rates look lower than they are. Its
        # tokens were still paid for, so spend counts every call.
        whole = [r for r in rows if r.outcome == "complete"] or rows
        lines.append(
            SizeLine(
                size=size,
                cap=cap,
                basis=rows[-1].basis,
                calls=len(rows),
                cap_bitten=float(np.mean([r.cap_bitten for r in whole])),
                answer_forced=float(np.mean([r.answer_forced for r in whole])),
                reasoning_tokens=float(np.mean([r.reasoning_tokens for r in whole])),
                cost_usd=float(sum(priced)),
                unpriced=len(rows) - len(priced),
                labelled=len(marked),
                label_errors=sum(not ok for ok in marked),
                error_bound=_error_bound(plan, size),
                **predicted,
            )
        )
    return tuple(lines)


def monitor(
    log: str | Path,
    *,
    plan: SavedPlan | str | Path | None = None,
    labels: str | Path | Sequence[Label] | None = None,
    calibration: str | Path | None = None,
    eps: float | None = None,
    delta: float | None = None,
) -> MonitorReport:
    """Read the call log at `log` against `plan` (a `SavedPlan` or its path) and `labels` (a
    labels file or `Label`s); see the module. `calibration` overrides where the plan's
    calibration CSV is looked for (by default its recorded path, then beside the plan file).
    `eps` and `delta` of the error test default to the plan's; without a plan, labels need
    `eps` (δ then defaults to 0.05)."""
    plan_path = Path(plan) if isinstance(plan, str | Path) else None
    saved = SavedPlan.load(plan_path) if plan_path is not None else plan
    if saved is not None and not isinstance(saved, SavedPlan):
        raise InputError(f"must be a SavedPlan or a path, got {type(saved).__name__}", field="plan")
    target = eps if eps is not None else (saved.eps if saved is not None else None)
    level = delta if delta is not None else (saved.delta if saved is not None else 0.05)
    if labels is not None and target is None:
        raise InputError("labels are tested against ε: give a plan or eps", field="eps")
    given = [] if labels is None else labels
    marks = load_labels(given) if isinstance(given, str | Path) else list(given)
    records = _read_log(Path(log))
    notes: list[str] = []
    other = 0
    if saved is not None and saved.model:
        other = sum(r.model != saved.model for r in records)
        records = [r for r in records if r.model == saved.model]
        if other:
            notes.append(f"{other} call(s) for models other than the plan's {saved.model} left out")
    known = {r.call_id for r in records if r.call_id}
    unknown = [m for m in marks if m.call_id not in known]
    if unknown:
        raise InputError(
            f"{unknown[0].call_id!r} is not a call in the log{' of the plan' if other else ''}",
            field="call_id",
            line=unknown[0].line,
            source=str(labels) if isinstance(labels, str | Path) else None,
        )
    frame: pd.DataFrame | None = None
    if saved is not None:
        found = _calibration(saved, plan_path, None if calibration is None else Path(calibration))
        if isinstance(found, str):
            notes.append(found)
        else:
            frame = found
    lines = _size_lines(records, {m.call_id: m.correct for m in marks}, saved, frame)
    projected = [line.projected_cost_usd for line in lines]
    tokens = [line.predicted_reasoning_tokens * line.calls for line in lines]
    test = None
    if marks:
        assert target is not None
        test = error_test([not m.correct for m in marks], target, level)
    return MonitorReport(
        log=str(log),
        calls=len(records),
        other_models=other,
        sizes=lines,
        spend_usd=float(sum(line.cost_usd for line in lines)),
        projected_usd=float(sum(projected)) if projected else math.nan,
        reasoning_tokens=int(sum(r.reasoning_tokens for r in records)),
        projected_reasoning_tokens=float(sum(tokens)) if tokens else math.nan,
        test=test,
        notes=tuple(notes),
    )
