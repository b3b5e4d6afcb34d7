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

Calls under the certified early exit (`exit="certified"`: the log's `exit_rule` is set) get
lines of their own, apart from the fixed-cap calls at the same size and cap, and the
fixed-cap lines read exactly as before. The calibration's bite rate is that of the fixed cap:
an exit call the rule stopped early never ran to the cap, so counting it as "not bitten" would
make the fixed cap look safer than it is, and its forced answer is the rule's, not the cap's.
So the bite and forced rates of a fixed-cap line are over fixed-cap calls only, against the
calibration's answers at that cap; an exit line says how many calls the rule stopped, how many
the model ended itself and how many ran to the ceiling (the cap: a bite), the mean thinking
where they stopped (`stop_k`, against the ceiling) and what probing added (`probe_tokens`, and
its share of the reasoning spend), each beside a replay of the same exit on the calibration's
items (`cotplan.planner.early_exit.probe_sequences`, as `certify_early_exit` replays it), where
the exit plan is found (`exit_plan`, `--exit-plan`; by default exit.json beside the plan) and
its rule and ceiling at that size are the ones the calls ran. Probing is already in the log's
counts (the earlier probes' answers in `reasoning_tokens`, billed re-sent prompts in
`prompt_tokens`, every request in `cost_usd`), so spend is read as logged; no projected cost
is given for exit calls (the calibration priced the fixed cap's answers, not probed calls).
Labels of exit calls go into the one error test with the rest: the certified exit carries the
plan's ε guarantee, as the fixed cap does.

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
from typing import Any

import numpy as np
import pandas as pd

from cotplan.errors import CacheError, CotplanError, InputError
from cotplan.generate.probing import ExitRule
from cotplan.planner import SavedPlan
from cotplan.planner.early_exit import probe_sequences
from cotplan.planner.exit_plan import ExitPlan, exit_plan_for
from cotplan.production.log import CallLog, LogRecord
from cotplan.production.sequential import ErrorTest, error_test

__all__ = [
    "Label",
    "MonitorReport",
    "SizeLine",
    "load_labels",
    "monitor",
    "monitor_files",
]

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

    Under the certified early exit (`exit_rule`, the rule's name; "" for the fixed cap) the
    line holds only that rule's calls: `cap_bitten` is then the share that ran to the ceiling,
    `by_rule`, `by_end` and `by_ceiling` count the calls the rule stopped, the model ended and
    the ceiling stopped (of those that ran to the end), `stop_k` is the mean thinking where they
    stopped, `probe_tokens` the total probing added (all calls) and `probe_share` its share of
    the reasoning spend (the thinking to `stop_k` plus `probe_tokens`). Their `predicted_*`
    come from the exit replayed on the calibration; `projected_cost_usd` stays NaN.

    `unknown_tokens` counts the calls whose token counts are unknown (the log's
    `usage_trusted` 0: the upstream sent no usage): they are left out of `reasoning_tokens`
    (NaN when no call's counts are known) and, their cost unknown too, counted in `unpriced`.
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
    exit_rule: str = ""
    by_rule: int = 0
    by_end: int = 0
    by_ceiling: int = 0
    stop_k: float = math.nan
    probe_tokens: int = 0
    probe_share: float = math.nan
    predicted_stop_k: float = math.nan
    predicted_probe_tokens: float = math.nan
    unknown_tokens: int = 0


@dataclass(frozen=True)
class MonitorReport:
    """What `monitor` found in a call log (see the module).

    `calls` rows read (of the plan's model when a plan is given: `other_models` counts the
    rest); `sizes` one `SizeLine` per size and cap; `spend_usd` / `projected_usd` and
    `reasoning_tokens` / `projected_reasoning_tokens` the totals (projections NaN unless every
    size has one); `test` the sequential error test on the labels (None without labels);
    `alarm` True when that test fired; `exit_calls` how many calls ran under the certified
    early exit; `notes` what could not be compared and why; `unknown_tokens` how many calls'
    token counts are unknown (the upstream sent no usage): left out of `reasoning_tokens` and
    of every line's mean, with a note saying how many.
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
    unknown_tokens: int = 0

    @property
    def alarm(self) -> bool:
        return self.test is not None and self.test.alarm

    @property
    def exit_calls(self) -> int:
        """The calls made under the certified early exit."""
        return sum(line.calls for line in self.sizes if line.exit_rule)

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
                    twice = next((c for c in header if c and header.count(c) > 1), None)
                    if twice is not None:  # csv would read the last one, silently
                        raise InputError(
                            "the header names this column twice",
                            field=twice,
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


def _replay(frame: pd.DataFrame, size: float, rule: ExitRule, bill: bool) -> dict[str, float]:
    """The exit at `size` replayed on the calibration's items: what an exit line's calls are
    read against. An item stops as live probing stops it: where its thinking ended before the
    checkpoint, else where the rule fired, else at the ceiling."""
    sequences = probe_sequences(
        frame, {int(size): rule.ceiling}, every=rule.every, bill_prompt=bill
    )
    if not sequences:
        return {}
    ceiling, forced, thinking, answers, probes = [], [], [], [], []
    for s in sequences:
        fires = rule.rule.fires(s.run, s.prob)
        stop = fires | s.ended
        stop[-1] = True
        j = int(np.argmax(stop))
        # A rule that never fires probes only at the ceiling, and that probe is the answer.
        paid = j if rule.rule.probes else 0
        ceiling.append(not s.ended[j] and not fires[j])
        forced.append(not s.ended[j])
        thinking.append(float(s.reasoning[j]))
        answers.append(float(s.answer[:paid].sum()))
        probes.append(float(s.answer[:paid].sum() + s.prompt[:paid].sum()))
    return {
        "predicted_bitten": float(np.mean(ceiling)),
        "predicted_forced": float(np.mean(forced)),
        # The log's reasoning_tokens hold the thinking and the earlier probes' answers.
        "predicted_reasoning_tokens": float(np.mean(thinking) + np.mean(answers)),
        "predicted_stop_k": float(np.mean(thinking)),
        "predicted_probe_tokens": float(np.mean(probes)),
    }


def _exit_predicted(
    frame: pd.DataFrame | None, exits: ExitPlan | None, key: tuple[float, int, str]
) -> tuple[dict[str, float], str]:
    """The replayed exit for one exit line, or nothing and why (in a note; "" for no note)."""
    size, cap, name = key
    if frame is None or exits is None:
        return {}, ""
    rule = exits.sizes.get(int(size)) if float(size).is_integer() else None
    if rule is None:
        return {}, f"no exit predictions at n = {size:g}: the exit plan has no rule there"
    if rule.rule.name != name or rule.ceiling != cap:
        return {}, (
            f"no exit predictions at n = {size:g}: the exit plan's rule there ({rule.rule.name}, "
            f"ceiling {rule.ceiling}) is not the one the calls ran ({name}, cap {cap})"
        )
    try:
        return _replay(frame, size, rule, exits.bill_prompt), ""
    except InputError as exc:
        return {}, f"no exit predictions at n = {size:g}: {exc}"


def _exit_fields(rows: Sequence[LogRecord], whole: Sequence[LogRecord]) -> dict[str, Any]:
    """An exit line's own counts (see `SizeLine`)."""
    stopped = [r for r in rows if r.stop_k is not None]
    # stop_k is the thinking alone, and probe_tokens all probing added (answers and billed
    # prompts): their sum is the reasoning spend however the exit plan bills prompts.
    spend = sum(r.stop_k or 0 for r in stopped) + sum(r.probe_tokens for r in stopped)
    return {
        "exit_rule": rows[0].exit_rule,
        "by_rule": sum(r.stopped_by == "rule" for r in whole),
        "by_end": sum(r.stopped_by == "ended" for r in whole),
        "by_ceiling": sum(r.stopped_by == "ceiling" for r in whole),
        "stop_k": float(np.mean([r.stop_k for r in stopped])) if stopped else math.nan,
        "probe_tokens": sum(r.probe_tokens for r in rows),
        "probe_share": sum(r.probe_tokens for r in stopped) / spend if spend else math.nan,
    }


def _mean_known(rows: Sequence[LogRecord]) -> float:
    """The mean reasoning tokens of the rows whose counts are known; NaN when none are."""
    known = [r.reasoning_tokens for r in rows if r.tokens_known and r.reasoning_tokens is not None]
    return float(np.mean(known)) if known else math.nan


def unknown_note(unknown: int, calls: int) -> str:
    """What a reader of the log is told when some calls' token counts are unknown."""
    return (
        f"the token counts of {unknown} of {calls} call(s) are unknown (the upstream sent no "
        "usage, or counts that cannot be right): left out of the token means and totals, "
        "and their spend is not priced"
    )


def _size_lines(
    records: Sequence[LogRecord],
    labels: dict[str, bool],
    plan: SavedPlan | None,
    *,
    frame: pd.DataFrame | None,
    exits: ExitPlan | None,
    notes: list[str],
) -> tuple[SizeLine, ...]:
    groups: dict[tuple[float, int, str], list[LogRecord]] = {}
    for record in records:
        # Exit calls apart: the calibration's bite rate is the fixed cap's (see the module).
        groups.setdefault((record.size, record.cap, record.exit_rule), []).append(record)
    lines = []
    for key, rows in sorted(groups.items()):
        size, cap, rule = key
        priced = [r.cost_usd for r in rows if not math.isnan(r.cost_usd)]
        if rule:
            predicted, why = _exit_predicted(frame, exits, key)
            notes.extend([why] if why else [])
        else:
            predicted = _predicted(frame, size, cap)
            if "projected_cost_usd" in predicted:
                predicted["projected_cost_usd"] *= len(rows)
        marked = [labels[r.call_id] for r in rows if r.call_id in labels]
        # A stream the caller stopped (or that failed) ended before the cap could bite or the
        # answer be forced: counting it would make those rates look lower than they are. Its
        # tokens were still paid for, so spend counts every call.
        whole = [r for r in rows if r.outcome == "complete"] or rows
        extra: dict[str, Any] = {**predicted, **(_exit_fields(rows, whole) if rule else {})}
        lines.append(
            SizeLine(
                size=size,
                cap=cap,
                basis=rows[-1].basis,
                calls=len(rows),
                cap_bitten=float(np.mean([r.cap_bitten for r in whole])),
                answer_forced=float(np.mean([r.answer_forced for r in whole])),
                # Under the exit these already hold the earlier probes' answers, and cost_usd
                # every request probing made: nothing is added for probing here. Calls whose
                # counts are unknown are left out of the mean (and counted), never read as 0.
                reasoning_tokens=_mean_known(whole),
                unknown_tokens=sum(not r.tokens_known for r in rows),
                cost_usd=float(sum(priced)),
                unpriced=len(rows) - len(priced),
                labelled=len(marked),
                label_errors=sum(not ok for ok in marked),
                error_bound=_error_bound(plan, size),
                **extra,
            )
        )
    return tuple(lines)


def _exit_plan(
    given: ExitPlan | str | Path | None, plan: SavedPlan | None, plan_path: Path | None
) -> ExitPlan | None:
    """The exit plan named (`exit_plan`), checked against the plan; None when none was."""
    if given is None:
        return None
    if not isinstance(given, ExitPlan | str | Path):
        raise InputError(
            f"must be an ExitPlan or a path, got {type(given).__name__}", field="exit_plan"
        )
    if plan is None:
        raise InputError("is replayed on the plan's calibration: give the plan", field="exit_plan")
    if not isinstance(given, ExitPlan):
        home = plan_path or Path("plan.json")
        return exit_plan_for(Path(given), home, eps=plan.eps, model=plan.model)
    other_model = given.model and plan.model and given.model != plan.model
    if not math.isclose(given.eps, plan.eps) or other_model:
        raise InputError(
            f"certified for ε = {given.eps:g} and model {given.model or '(any)'}, not the "
            f"plan's ε = {plan.eps:g} and model {plan.model or '(any)'}",
            field="exit_plan",
        )
    return given


def _exit_beside(plan: SavedPlan, plan_path: Path | None) -> ExitPlan | str:
    """The exit.json beside the plan file, or why there is none to replay."""
    if plan_path is None or not (plan_path.parent / "exit.json").is_file():
        return "no exit predictions: no exit.json beside the plan (--exit-plan)"
    try:
        return exit_plan_for(None, plan_path, eps=plan.eps, model=plan.model)
    except InputError as exc:
        return f"no exit predictions: {exc}"


def monitor(
    log: str | Path,
    *,
    plan: SavedPlan | str | Path | None = None,
    labels: str | Path | Sequence[Label] | None = None,
    calibration: str | Path | None = None,
    eps: float | None = None,
    delta: float | None = None,
    exit_plan: ExitPlan | str | Path | None = None,
) -> MonitorReport:
    """Read the call log at `log` against `plan` (a `SavedPlan` or its path) and `labels` (a
    labels file or `Label`s); see the module. `calibration` overrides where the plan's
    calibration CSV is looked for (by default its recorded path, then beside the plan file).
    `eps` and `delta` of the error test default to the plan's; without a plan, labels need
    `eps` (δ then defaults to 0.05). `exit_plan` (an `ExitPlan` or the path of an exit.json;
    by default the exit.json beside the plan, read only when the log has exit calls) is
    replayed on the calibration for the exit lines' predictions."""
    plan_path = Path(plan) if isinstance(plan, str | Path) else None
    saved = SavedPlan.load(plan_path) if plan_path is not None else plan
    if saved is not None and not isinstance(saved, SavedPlan):
        raise InputError(f"must be a SavedPlan or a path, got {type(saved).__name__}", field="plan")
    target = eps if eps is not None else (saved.eps if saved is not None else None)
    level = delta if delta is not None else (saved.delta if saved is not None else 0.05)
    if labels is not None and target is None:
        raise InputError("labels are tested against ε: give a plan or eps", field="eps")
    exits = _exit_plan(exit_plan, saved, plan_path)
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
    if frame is not None and any(r.exit_rule for r in records):
        assert saved is not None
        notes.append("no projected spend for exit calls: the calibration priced the fixed cap")
        if exits is None:
            beside = _exit_beside(saved, plan_path)
            if isinstance(beside, str):
                notes.append(beside)
            else:
                exits = beside
    unmeasured = sum(not r.tokens_known for r in records)
    if unmeasured:
        notes.append(unknown_note(unmeasured, len(records)))
    lines = _size_lines(
        records,
        {m.call_id: m.correct for m in marks},
        saved,
        frame=frame,
        exits=exits,
        notes=notes,
    )
    projected = [line.projected_cost_usd for line in lines]
    # Projected over the calls whose counts are known: the total it is read against.
    tokens = [
        line.predicted_reasoning_tokens * (line.calls - line.unknown_tokens) for line in lines
    ]
    test = None
    if marks:
        assert target is not None
        # Every label, exit calls' too: the certified exit is held to the same ε.
        test = error_test([not m.correct for m in marks], target, level)
    return MonitorReport(
        log=str(log),
        calls=len(records),
        other_models=other,
        sizes=lines,
        spend_usd=float(sum(line.cost_usd for line in lines)),
        projected_usd=float(sum(projected)) if projected else math.nan,
        # Probe answers are already in each row's reasoning_tokens: not added again.
        reasoning_tokens=sum(r.reasoning_tokens or 0 for r in records if r.tokens_known),
        unknown_tokens=unmeasured,
        projected_reasoning_tokens=float(sum(tokens)) if tokens else math.nan,
        test=test,
        notes=tuple(notes),
    )


def _existing(path: Path | None, field: str) -> None:
    if path is not None and not path.is_file():
        raise InputError(f"no such file: {path}", field=field, source=str(path))


def monitor_files(
    log: Path,
    *,
    labels: Path | None = None,
    plan: Path | None = None,
    calibration: Path | None = None,
    eps: float | None = None,
    delta: float | None = None,
    exit_plan: Path | None = None,
) -> tuple[MonitorReport, str | None]:
    """`monitor` on files (`cotplan monitor`), every input checked before the log is read; the
    report and the plan's model (None without a plan)."""
    _existing(log, "log")
    _existing(calibration, "calibration")
    _existing(exit_plan, "exit_plan")
    if exit_plan is not None and plan is None:
        raise InputError("is replayed on the plan's calibration: give --plan", field="exit_plan")
    saved = SavedPlan.load(plan) if plan is not None else None
    if eps is not None or delta is not None:
        error_test([], 0.5 if eps is None else eps, 0.05 if delta is None else delta)
    if labels is not None and eps is None and saved is None:
        raise InputError("labels are tested against ε: give --plan or --eps", field="eps")
    marks = load_labels(labels) if labels is not None else None
    # The plan's path, not the loaded plan: its calibration is looked for beside it.
    report = monitor(log, plan=plan, labels=marks, calibration=calibration, eps=eps,
                     delta=delta, exit_plan=exit_plan)  # fmt: skip
    return report, saved.model if saved is not None else None
