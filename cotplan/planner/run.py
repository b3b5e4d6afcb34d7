"""Apply a plan on held-out items and compare it with uncapped reasoning.

`run_plan(backend, planner, items, eps)` answers each held-out item twice: with its planned
budget k*(n, ε) and "uncapped" (a cap high enough that the model stops on its own, 512 tokens
by default). Both use `budgeted_answers`, so with greedy decoding one reasoning run per item
serves both, and the planned answer is exactly what a call capped at k* returns.

`compare_answers` puts any set of policies answered on the same items side by side against a
baseline: accuracy with Wilson intervals, mean tokens and cost, and, paired over items by a
seeded bootstrap, the accuracy retained, the accuracy change and the share of reasoning tokens
saved, each with its interval. The savings benchmark (`benchmarks/planner_savings.py`) uses it
for its fixed caps and prompt-stated budgets too.

`SavedPlan` is the plan as a file (plan.json, strict JSON with a schema version): bound to the
model it was calibrated on (`check_plan_model` refuses another), it gives the cap for any size
within its reach (`cap(n)`). `check_against_eps` judges each size's held-out error against ε,
which `run_plan` reports beside the comparison with uncapped.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from cotplan.backends.base import Backend
from cotplan.errors import InfeasibleTargetError, InputError
from cotplan.generate.budgeted import BudgetedAnswer, CoTPrompt, Mode, answers_frame
from cotplan.intervals import percentile_interval
from cotplan.io import write_text
from cotplan.planner.calibrate import _answer_items, _check_items, _stat
from cotplan.planner.certify import clopper_pearson_interval
from cotplan.planner.fit import Budget, BudgetPlanner, ConfidenceInterval
from cotplan.planner.plan_file import check_plan_record
from cotplan.planner.records import (
    CapBasis,
    CertifiedBudget,
    PlanCap,
    SizeCheck,
    SizeChecks,
    Verdict,
)
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import item_size
from cotplan.validation import require_int

__all__ = [
    "DEFAULT_REACH",
    "NO_BENEFIT_STATUSES",
    "SCHEMA_VERSION",
    "PlanRun",
    "SavedPlan",
    "backend_model",
    "check_against_eps",
    "check_plan_model",
    "compare_answers",
    "plan_budgets",
    "relative_target",
    "run_plan",
    "wilson_interval",
]

#: Planner verdicts under which reasoning is not credited with any effect: the plan is k* = 0.
NO_BENEFIT_STATUSES = frozenset({"no_benefit", "hurts", "all_correct", "all_wrong"})


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> ConfidenceInterval:
    """Wilson score interval of a binomial proportion (NaN ends when n = 0)."""
    if n <= 0:
        return ConfidenceInterval(math.nan, math.nan, confidence)
    if not 0 <= successes <= n:
        raise InputError(f"must be between 0 and n = {n}, got {successes}", field="successes")
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return ConfidenceInterval(max(0.0, centre - half), min(1.0, centre + half), confidence)


def _percentile(values: np.ndarray[Any, Any], confidence: float) -> tuple[float, float]:
    interval = percentile_interval(values, confidence)
    return interval.low, interval.high


def compare_answers(
    answers: Mapping[str, Sequence[BudgetedAnswer]],
    *,
    baseline: str,
    confidence: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per policy, in the order given, against `baseline` on the same items.

    Columns: policy, items, correct, accuracy (with `accuracy_low`/`accuracy_high`, Wilson),
    mean `reasoning_tokens`, `answer_tokens`, `prompt_tokens` and `completion_tokens` per item,
    `cost_usd` (total, list price), and paired item-bootstrap estimates against the baseline:
    `accuracy_retained` (accuracy / baseline accuracy), `accuracy_change` (difference),
    `tokens_ratio` (mean reasoning tokens / the baseline's) and `tokens_saved` (1 − ratio),
    each with `_low`/`_high`.
    """
    if baseline not in answers:
        raise InputError(f"{baseline!r} is not one of {list(answers)}", field="baseline")
    n_bootstrap = require_int(n_bootstrap, "n_bootstrap", low=0)
    order = [a.item for a in answers[baseline]]
    if len(set(order)) != len(order) or not order:
        raise InputError("the baseline must answer each item exactly once", field="answers")

    def by_item(name: str, rows: Sequence[BudgetedAnswer]) -> dict[str, BudgetedAnswer]:
        table = {a.item: a for a in rows}
        if sorted(table) != sorted(order) or len(rows) != len(order):
            raise InputError(
                f"policy {name!r} must answer the same items as {baseline!r}, once each",
                field="answers",
            )
        return table

    aligned = {name: by_item(name, rows) for name, rows in answers.items()}
    correct = {
        name: np.array([table[i].correct for i in order], dtype=float)
        for name, table in aligned.items()
    }
    reasoning = {
        name: np.array([table[i].reasoning_tokens for i in order], dtype=float)
        for name, table in aligned.items()
    }
    rng = np.random.default_rng(seed)
    resamples = rng.integers(0, len(order), size=(n_bootstrap, len(order)))
    base_acc = correct[baseline][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
    base_tok = reasoning[baseline][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
    rows = []
    for name, table in aligned.items():
        items = [table[i] for i in order]
        hits = int(correct[name].sum())
        wilson = wilson_interval(hits, len(items), confidence)
        acc = hits / len(items)
        acc_base = float(correct[baseline].mean())
        tok = float(reasoning[name].mean())
        tok_base = float(reasoning[baseline].mean())
        costs = [a.cost_usd for a in items]
        row: dict[str, Any] = {
            "policy": name,
            "items": len(items),
            "correct": hits,
            "accuracy": acc,
            "accuracy_low": wilson.low,
            "accuracy_high": wilson.high,
            "reasoning_tokens": tok,
            "answer_tokens": float(np.mean([a.answer_tokens for a in items])),
            "prompt_tokens": float(np.mean([a.prompt_tokens for a in items])),
            "completion_tokens": float(np.mean([a.completion_tokens for a in items])),
            "cost_usd": math.nan if any(math.isnan(c) for c in costs) else float(sum(costs)),
            "accuracy_retained": acc / acc_base if acc_base > 0 else math.nan,
            "accuracy_change": acc - acc_base,
            "tokens_ratio": tok / tok_base if tok_base > 0 else math.nan,
        }
        row["tokens_saved"] = 1.0 - row["tokens_ratio"]
        with np.errstate(divide="ignore", invalid="ignore"):
            sample_acc = correct[name][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
            sample_tok = reasoning[name][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
            retained = np.where(base_acc > 0, sample_acc / base_acc, np.nan)
            ratio = np.where(base_tok > 0, sample_tok / base_tok, np.nan)
        for column, draws in (
            ("accuracy_retained", retained),
            ("accuracy_change", sample_acc - base_acc),
            ("tokens_ratio", ratio),
            ("tokens_saved", 1.0 - ratio),
        ):
            row[f"{column}_low"], row[f"{column}_high"] = _percentile(draws, confidence)
        rows.append(row)
    return pd.DataFrame(rows)


def relative_target(planner: BudgetPlanner, remaining: float = 0.25) -> float:
    """An absolute target error from the paper's relative one: ε = e0 + remaining · (e_base −
    e0), i.e. `remaining` of the improvement reasoning can buy is left unclaimed (rounded up to
    a hundredth so it stays attainable). Where reasoning is not credited (`NO_BENEFIT_STATUSES`)
    it is the flat error itself."""
    if not 0.0 < remaining < 1.0:
        raise InputError(f"must be in (0, 1), got {remaining!r}", field="remaining")
    status = getattr(planner, "status_", None)
    if status is None:
        raise InputError("fit the planner first", field="planner")
    if status == "too_few":
        raise InputError(f"cannot plan from this calibration: {planner.verdict_}", field="planner")
    if status in NO_BENEFIT_STATUSES:
        return min(0.99, math.ceil(max(planner.e0_, 0.01) * 100) / 100)
    e0, e_base = planner.e0_, planner.e_base_
    if getattr(planner, "law_", None) in ("logistic", "step"):
        # The planning law's own floor and base error (the paper law's may not fit the curve).
        e0, e_base = (float(v) for v in planner._law_params[:2])
    eps = e0 + remaining * (e_base - e0)
    return min(0.99, math.ceil(eps * 100 - 1e-9) / 100)


#: The plan.json format this version writes. A file without `schema_version` is version 1:
#: budgets for the sizes planned only, no model, and NaN where a number is missing.
SCHEMA_VERSION = 2
#: How far `SavedPlan.cap` scales a cap beyond the calibrated sizes by default: n up to twice
#: the largest (and down to half the smallest). Further out the law is a guess, not a plan.
DEFAULT_REACH = 2.0


@dataclass(frozen=True)
class SavedPlan:
    """A plan as `cotplan plan` writes it (plan.json): the cap for any size, for one ε.

    `cap(n)` gives the cap to enforce at size `n` (a `PlanCap`): the certified budget at a
    calibrated size that certifies ε, elsewhere a certified cap scaled by the law (marked so),
    refused beyond `reach` × the calibrated sizes. `budget(n, eps)` answers like the planner
    it came from, for the sizes and the ε it was made for (`budgets`, as printed).

    The plan records what it was made from: the `model` of the calibration (and its `mode`
    where the calibration records one: template, chat or hidden), the `calibration` file with
    its SHA-256 and cost, `eps`, `delta`, the chosen `law` with its fitted parameters and
    bootstrap draws (so `cap` needs no refit), and the certificate per calibrated size.
    `save` writes strict JSON (null, never NaN or Infinity) with a `schema_version`.
    """

    eps: float
    delta: float
    law: str | None
    status_: str
    verdict_: str
    calibration: str
    budgets: tuple[Budget, ...]
    model: str = ""
    mode: str = ""
    schema_version: int = 1
    reach: float = DEFAULT_REACH
    confidence: float = 0.95
    certificates: tuple[CertifiedBudget, ...] = ()
    peaks: Mapping[int, int] = field(default_factory=dict)
    law_params: Any = field(default=None, repr=False, compare=False)
    law_draws: Any = field(default=None, repr=False, compare=False)
    created: str = ""
    calibration_sha256: str = ""
    calibration_cost_usd: float = math.nan

    @property
    def sizes_(self) -> tuple[int, ...]:
        """The sizes the plan was printed for (its `budgets`)."""
        return tuple(int(b.n) for b in self.budgets)

    @property
    def calibrated_sizes(self) -> tuple[int, ...]:
        """The sizes the calibration covered (empty for a version-1 file)."""
        return tuple(c.n for c in self.certificates)

    @property
    def nothing_certified(self) -> bool:
        """True when no calibrated size certifies ε: every cap is then an estimate."""
        if self.certificates:
            return not any(c.certified for c in self.certificates)
        return not any(b.certified for b in self.budgets)

    @classmethod
    def from_planner(
        cls,
        planner: BudgetPlanner,
        budgets: Sequence[Budget],
        eps: float,
        calibration: str,
        *,
        frame: pd.DataFrame | None = None,
        reach: float = DEFAULT_REACH,
    ) -> SavedPlan:
        """The plan of a fitted planner; `frame` (the calibration's answers) supplies the
        model, mode and cost, `reach` how far `cap` may scale (a factor of n, at least 1)."""
        if not (isinstance(reach, int | float) and math.isfinite(reach) and reach >= 1.0):
            raise InputError(f"must be a number ≥ 1, got {reach!r}", field="reach")
        helps = planner.status_ == "helps" and planner.certified_ is not None
        certificates = (
            tuple(planner.certified_.at(n, eps) for n in planner.certified_.sizes)
            if helps and planner.certified_ is not None
            else ()
        )
        law_params = law_draws = None
        if planner.status_ == "helps" and planner.law_ is not None:
            law_params = np.asarray(planner._law_params, dtype=float).tolist()
            law_draws = np.asarray(planner._law_draws, dtype=float).tolist()
        source = Path(calibration)
        digest = hashlib.sha256(source.read_bytes()).hexdigest() if source.is_file() else ""
        cost = math.nan
        if frame is not None:
            from cotplan.planner.calibrate import calibration_spend

            cost = calibration_spend(frame)["cost_usd"]
        return cls(
            eps=eps,
            delta=float(planner.delta),
            law=planner.law_,
            status_=planner.status_,
            verdict_=planner.verdict_,
            calibration=calibration,
            budgets=tuple(budgets),
            model=_only_value(frame, "model"),
            mode=_only_value(frame, "mode"),
            schema_version=SCHEMA_VERSION,
            reach=float(reach),
            confidence=float(planner.confidence),
            certificates=certificates,
            peaks={int(n): int(k) for n, k in planner.peak_budgets_.items()},
            law_params=law_params,
            law_draws=law_draws,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            calibration_sha256=digest,
            calibration_cost_usd=float(cost),
        )

    def budget(self, n: float, eps: float) -> Budget:
        if not math.isclose(eps, self.eps):
            raise InputError(
                f"the plan was made for ε = {self.eps:g}, not {eps:g}: plan again with "
                f"`cotplan plan --eps {eps:g}`",
                field="eps",
            )
        for budget in self.budgets:
            if budget.n == n:
                return budget
        raise InputError(
            f"the plan has no budget for n = {n:g} (it has n = "
            f"{', '.join(str(s) for s in self.sizes_)}): plan it with `cotplan plan --n {n:g}`",
            field="n",
        )

    def cap(self, n: float) -> PlanCap:
        """The cap to enforce at size `n` (see `PlanCap` for what backs it).

        Raises `InputError` naming `n` when `n` lies beyond the plan's reach (more than
        `reach` × the largest calibrated size, or below the smallest / `reach`) or, for a
        version-1 file, is not one of its sizes; `InfeasibleTargetError` when the law cannot
        reach ε at `n` and no calibration certifies it.
        """
        if isinstance(n, bool) or not isinstance(n, int | float | np.integer | np.floating):
            raise InputError(f"must be a positive number, got {n!r}", field="n")
        n_val = float(n)
        if not (math.isfinite(n_val) and n_val > 0):
            raise InputError(f"must be a positive number, got {n!r}", field="n")
        nothing = self.nothing_certified
        if self.status_ in NO_BENEFIT_STATUSES:
            return PlanCap(
                n=n_val,
                eps=self.eps,
                tokens=0,
                basis="not_credited",
                certified=False,
                calibrated=n_val in self.calibrated_sizes,
                nothing_certified=nothing,
                note=f"reasoning not credited ({self.status_}): k* = 0",
            )
        if self.law_params is None or not self.certificates:
            return self._cap_from_budgets(n_val)
        sizes = self.calibrated_sizes
        smallest, largest = min(sizes), max(sizes)
        if n_val > largest * self.reach or n_val < smallest / self.reach:
            raise InputError(
                f"n = {n_val:g} is beyond this plan's reach: it scales caps from the calibrated "
                f"sizes {smallest}–{largest} by at most {self.reach:g}× (n from "
                f"{smallest / self.reach:g} to {largest * self.reach:g}); calibrate at sizes "
                f"near {n_val:g} to plan for it, or plan with a wider reach "
                "(`cotplan plan --reach`)",
                field="n",
            )
        common: dict[str, Any] = {
            "n": n_val,
            "eps": self.eps,
            "calibrated": n_val in sizes,
            "nothing_certified": nothing,
            "reach": n_val / largest,
        }
        own = next((c for c in self.certificates if c.n == n_val), None)
        if own is not None and own.k is not None:
            return PlanCap(
                tokens=own.k,
                basis="certified",
                certified=True,
                error_bound=own.error_bound,
                reference=own.n,
                note=(
                    f"error ≤ {own.error_bound:.3f} at k = {own.k} with "
                    f"{1 - self.delta:.0%} confidence ({own.errors} of {own.items} items wrong)"
                ),
                **common,
            )
        notes = [own.note] if own is not None and own.note else []
        k_star = _law_k_star(str(self.law))
        params = np.asarray(self.law_params, dtype=float)
        draws = [np.asarray(d, dtype=float) for d in self.law_draws or ()]
        k_n = k_star(params, n_val, self.eps)
        certified = [c for c in self.certificates if c.k is not None]
        if certified and math.isfinite(k_n):
            ref = min(certified, key=lambda c: abs(math.log(c.n) - math.log(n_val)))
            assert ref.k is not None
            k_ref = k_star(params, float(ref.n), self.eps)
            if math.isfinite(k_ref) and k_ref > 0:
                ratio = k_n / k_ref
                ratios = np.array(
                    [k_star(d, n_val, self.eps) / k_star(d, float(ref.n), self.eps) for d in draws]
                )
                with np.errstate(invalid="ignore"):
                    ratios = ratios[np.isfinite(ratios)]
                ci = _bootstrap_interval(ratios, self.confidence)
                tokens = math.ceil(ref.k * ratio - 1e-9)
                notes.insert(
                    0,
                    f"scaled: the certified k = {ref.k} at n = {ref.n} × the {self.law} law's "
                    f"k*({n_val:g}) / k*({ref.n}) = {ratio:.2f}; not certified at n = {n_val:g}",
                )
                # A coarse budget grid can certify the same k at two sizes; scaling down from
                # the larger must not undercut a smaller size the law says needs no more.
                below = [
                    c
                    for c in certified
                    if c.n < n_val and k_star(params, float(c.n), self.eps) <= k_n
                ]
                floor = max(below, key=lambda c: c.k or 0, default=None)
                if floor is not None and floor.k is not None and tokens < floor.k:
                    tokens = floor.k
                    notes.append(
                        f"raised to the certified k = {floor.k} at n = {floor.n}, a smaller "
                        "size the law says needs no more"
                    )
                tokens = self._below_peak(n_val, tokens, notes)
                return PlanCap(
                    tokens=tokens,
                    basis="scaled",
                    certified=False,
                    reference=ref.n,
                    low=ref.k * ci.low,
                    high=ref.k * ci.high,
                    note="; ".join(notes),
                    **common,
                )
        if not math.isfinite(k_n):
            raise InfeasibleTargetError(
                f"ε = {self.eps:g} is unattainable at n = {n_val:g} by the {self.law} law, and "
                "no calibration at this size certifies it",
                field="eps",
            )
        ci = _bootstrap_interval(
            np.array([k_star(d, n_val, self.eps) for d in draws]), self.confidence
        )
        conservative = math.isfinite(ci.high)
        if conservative:
            tokens = math.ceil(max(ci.high, k_n) - 1e-9)
            notes.insert(
                0,
                f"not certified: the upper end of the {self.law} law's {self.confidence:.0%} "
                f"interval for k* ({k_n:.1f} [{ci.low:.1f}, {ci.high:.1f}])",
            )
        else:
            tokens = math.ceil(k_n - 1e-9)
            why = "unbounded" if ci.high == math.inf else "not computed: no bootstrap draws"
            notes.insert(
                0,
                f"not certified: the {self.law} law's point k* = {k_n:.1f} (its interval is "
                f"{why}); a point estimate misses ε about half the time",
            )
        tokens = self._below_peak(n_val, tokens, notes)
        return PlanCap(
            tokens=tokens,
            basis="law",
            certified=False,
            conservative=conservative,
            low=ci.low,
            high=ci.high,
            note="; ".join(notes),
            **common,
        )

    def _below_peak(self, n: float, tokens: int, notes: list[str]) -> int:
        # Past the peak, longer reasoning lowered accuracy in calibration: a larger cap buys
        # nothing there (the planner caps its own budgets the same way).
        peak = self.peaks.get(int(n)) if float(n).is_integer() else None
        if peak is not None and tokens > peak:
            notes.append(f"capped at the peak k = {peak}: larger budgets lowered accuracy")
            return peak
        return tokens

    def _cap_from_budgets(self, n: float) -> PlanCap:
        """A version-1 file knows only the sizes it printed."""
        for budget in self.budgets:
            if budget.n == n:
                return _cap_of_budget(n, self.eps, budget, self.nothing_certified)
        raise InputError(
            f"the plan has no cap for n = {n:g} (it has n = "
            f"{', '.join(str(s) for s in self.sizes_)}; a file without `schema_version` holds "
            f"no law to scale by): plan it with `cotplan plan --n {n:g}`",
            field="n",
        )

    def caps(self) -> list[dict[str, Any]]:
        """`cap(n)` at every calibrated and planned size, as records; a size the plan refuses
        has `tokens` None and the reason in `note`."""
        rows: list[dict[str, Any]] = []
        for n in sorted({*self.calibrated_sizes, *self.sizes_}):
            try:
                rows.append(asdict(self.cap(n)))
            except InputError as exc:
                rows.append({"n": float(n), "eps": self.eps, "tokens": None, "note": str(exc)})
        return rows

    def to_frame(self) -> pd.DataFrame:
        """One row per calibrated or planned size: the cap and what backs it."""
        columns = list(PlanCap.__dataclass_fields__)
        return pd.DataFrame(self.caps(), columns=columns)

    def to_json(self) -> str:
        """The plan as strict JSON (RFC 8259: null for a missing number, never NaN)."""
        record: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
            "mode": self.mode,
            "calibration": self.calibration,
            "calibration_sha256": self.calibration_sha256,
            "calibration_cost_usd": self.calibration_cost_usd,
            "created": self.created,
            "eps": self.eps,
            "delta": self.delta,
            "confidence": self.confidence,
            "law": self.law,
            "status_": self.status_,
            "verdict_": self.verdict_,
            "reach": self.reach,
            "nothing_certified": self.nothing_certified,
            "caps": self.caps(),
            "certificates": [asdict(c) for c in self.certificates],
            "peaks": {str(n): k for n, k in self.peaks.items()},
            "law_params": self.law_params,
            "law_draws": self.law_draws,
            "budgets": [{**asdict(b), "baselines": dict(b.baselines)} for b in self.budgets],
        }
        # allow_nan=False: anything non-finite that slipped past `_strict` fails here, loudly,
        # rather than writing a file other languages' JSON parsers reject.
        return json.dumps(_strict(record), indent=2, ensure_ascii=False, allow_nan=False)

    def save(self, path: Path) -> Path:
        write_text(path, self.to_json() + "\n", private=False)
        return path

    @classmethod
    def load(cls, path: Path) -> SavedPlan:
        if not path.is_file():
            raise InputError(
                f"no such file: {path} (write one with `cotplan plan`)",
                field="plan",
                source=str(path),
            )
        try:
            # Lenient on NaN: version-1 files hold it, and they still load.
            text = path.read_text(encoding="utf-8")
            record = json.loads(text)
            if not isinstance(record, dict):
                raise TypeError("the file holds no JSON object")
            version = record.pop("schema_version", 1)
        except (ValueError, TypeError) as exc:
            raise InputError(
                f"not a plan written by `cotplan plan`: {exc}", field="plan", source=str(path)
            ) from exc
        if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
            raise InputError(
                f"must be 1 to {SCHEMA_VERSION} for this cotplan, got {version!r}: the plan was "
                "written by another version; plan again with `cotplan plan`",
                field="schema_version",
                source=str(path),
            )
        check_plan_record(record, str(path), text)  # every field, before anything uses one
        try:
            for derived in ("caps", "nothing_certified"):
                record.pop(derived, None)  # recomputed from the rest
            budgets = tuple(Budget(**_finite_back(b)) for b in record.pop("budgets"))
            certificates = tuple(
                CertifiedBudget(**_finite_back(c)) for c in record.pop("certificates", ())
            )
            peaks = {int(n): int(k) for n, k in record.pop("peaks", {}).items()}
            cost = record.pop("calibration_cost_usd", None)
            return cls(
                **record,
                budgets=budgets,
                certificates=certificates,
                peaks=peaks,
                schema_version=version,
                calibration_cost_usd=math.nan if cost is None else float(cost),
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InputError(
                f"not a plan written by `cotplan plan`: {exc}", field="plan", source=str(path)
            ) from exc


def _only_value(frame: pd.DataFrame | None, column: str) -> str:
    """The one value of `column` in a calibration frame; "" when absent or mixed (a plan made
    from answers of several models belongs to none of them)."""
    if frame is None or column not in frame.columns:
        return ""
    values = {str(v) for v in frame[column].dropna().unique()}
    return values.pop() if len(values) == 1 else ""


def _law_k_star(law: str) -> Callable[[NDArray[np.float64], float, float], float]:
    """k*(params, n, ε) of a law by name; the parameters carry its configuration (a fixed α
    is a stored parameter), so the law's default setup solves any of its fits."""
    from cotplan.planner.laws import make_laws

    laws = make_laws(one_size=False, alpha=None, e_base=None)
    if law not in laws:
        raise InputError(f"unknown law {law!r} in the plan", field="law")
    return laws[law].k_star


def _bootstrap_interval(draws: NDArray[np.float64], confidence: float) -> ConfidenceInterval:
    return percentile_interval(draws, confidence, keep_infinite=True)


def _strict(value: Any) -> Any:
    """`value` with every non-finite float as None; a record (dict) that held +inf in a field
    also lists it under `infinite`, so that an unbounded interval end survives the trip."""
    if isinstance(value, dict):
        out = {str(k): _strict(v) for k, v in value.items()}
        infinite = [
            str(k) for k, v in value.items() if isinstance(v, float | np.floating) and v == math.inf
        ]
        if infinite:
            out["infinite"] = infinite
        return out
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    if isinstance(value, np.generic):
        return _strict(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _finite_back(record: Mapping[str, Any]) -> dict[str, Any]:
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


def plan_budgets(
    planner: BudgetPlanner | SavedPlan, sizes: Iterable[int], eps: float
) -> dict[int, Budget | None]:
    """k*(n, ε) for each size; None where the planner credits reasoning with no effect
    (`NO_BENEFIT_STATUSES`: the plan is then k* = 0). Raises `InfeasibleTargetError` when ε
    cannot be reached at some size."""
    status = getattr(planner, "status_", None)
    out: dict[int, Budget | None] = {}
    for n in sorted(set(sizes)):
        out[n] = None if status in NO_BENEFIT_STATUSES else planner.budget(n, eps)
    return out


def check_against_eps(
    sizes: Sequence[int],
    correct: Sequence[bool],
    eps: float,
    *,
    confidence: float = 0.95,
    caps: Mapping[int, PlanCap] | None = None,
) -> SizeChecks:
    """Each size's held-out error against the target `eps` (see `SizeCheck`).

    `sizes` and `correct` run in parallel, one entry per held-out answer under the plan;
    `caps` (optional) are the caps applied, reported beside each size. A size `meets` ε when
    the upper end of its exact interval is at most ε, `misses` it when the lower end is above,
    and is `undecided` otherwise. Sizes are judged apart because ε is promised per size: a
    pooled error can hide one size that misses."""
    if len(sizes) != len(correct):
        raise InputError(
            f"must be as long as `sizes` ({len(sizes)}), got {len(correct)}", field="correct"
        )
    target = float(eps)
    if not 0.0 < target < 1.0:
        raise InputError(f"must be in (0, 1), got {eps!r}", field="eps")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"must be in (0, 1), got {confidence!r}", field="confidence")
    tally: dict[int, list[int]] = {}
    for n, right in zip(sizes, correct, strict=True):
        counts = tally.setdefault(int(n), [0, 0])
        counts[0] += 1
        counts[1] += 0 if right else 1
    checks = []
    for n in sorted(tally):
        items, errors = tally[n]
        interval = clopper_pearson_interval(errors, items, confidence)
        verdict: Verdict = "undecided"
        if interval.high <= target:
            verdict = "meets"
        elif interval.low > target:
            verdict = "misses"
        cap = (caps or {}).get(n)
        checks.append(
            SizeCheck(
                n=n,
                items=items,
                errors=errors,
                error=errors / items,
                low=interval.low,
                high=interval.high,
                eps=target,
                confidence=confidence,
                verdict=verdict,
                cap=None if cap is None else cap.tokens,
                certified=cap is not None and cap.certified,
            )
        )
    return SizeChecks(eps=target, confidence=confidence, sizes=tuple(checks))


def backend_model(spec: str, base_url: str | None = None) -> str | None:
    """The model name `connect(spec, base_url=...)` will report, found without starting it;
    None where only the started backend can tell (a provider added by a plugin, a lab model
    whose weights key is known once trained).

    The embedded model's name carries its weights' checksum (``name@sha256-prefix``), so a
    plan made on other weights under the same file name is told apart."""
    provider, _, rest = spec.partition(":")
    if provider == "local":
        from cotplan.backends.models import DEFAULT_MODEL, KNOWN_MODELS, locate

        name = rest or DEFAULT_MODEL
        # A known name's id is in the table; reading the file to check it is the server's job.
        return KNOWN_MODELS[name].model_id if name in KNOWN_MODELS else locate(name)[1]
    if provider == "openai":
        return rest or None
    if base_url is not None and not rest:
        return spec
    return None


def check_plan_model(
    plan: SavedPlan,
    model: str | None = None,
    *,
    backend: str | None = None,
    base_url: str | None = None,
    allow_other_model: bool = False,
) -> str:
    """Refuse to apply `plan` to a model it was not made for (`InputError` naming `backend`).

    Give the started backend's `model`, or, before starting anything, the `backend` spec (and
    `base_url`) it will be started from: a ``lab:FAMILY`` spec is checked by family, since its
    weights are known only once loaded. With `allow_other_model` nothing is refused and the
    returned line says what is being done; "" when there is nothing to say. A plan that
    records no model (a version-1 file) is applied with a note."""
    if not plan.model:
        return (
            "the plan does not record the model it was made for (written by an older "
            "cotplan): plan again to bind it"
        )
    if model is None and backend is not None:
        provider, _, rest = backend.partition(":")
        if provider == "lab" and rest:
            family = plan.model.partition("@")[0]
            if family == rest:
                return ""
            model = backend
        else:
            model = backend_model(backend, base_url)
    if model is None or model == plan.model:
        return ""
    if allow_other_model:
        return (
            f"applying a plan made for model {plan.model!r} to {model!r} "
            "(--allow-other-model): its caps are not certified for this model"
        )
    raise InputError(
        f"the plan was made for model {plan.model!r}, not {model!r} (calibrate this one, or "
        "--allow-other-model)",
        field="backend",
    )


@dataclass(frozen=True)
class PlanRun:
    """A plan applied to held-out items next to uncapped reasoning.

    `comparison` is `compare_answers` for the policies "planned" and "uncapped" (baseline).
    `frame` has one row per answer (the `BudgetedAnswer` fields plus `policy`). `plan` has one
    row per size: k* (real), the cap used (`tokens`), its interval and notes. `status` and
    `verdict` are the planner's. `by_size` judges each size's held-out error under the plan
    against ε (`check_against_eps`); the `conclusion` leads with it.
    """

    comparison: pd.DataFrame
    frame: pd.DataFrame
    plan: pd.DataFrame
    eps: float
    uncapped: int
    model: str
    status: str
    verdict: str
    requests: int = 0
    cache_hits: int = 0
    answers: Mapping[str, tuple[BudgetedAnswer, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )
    by_size: SizeChecks | None = None

    def to_frame(self) -> pd.DataFrame:
        """The comparison table (a copy)."""
        return self.comparison.copy()

    def row(self, policy: str) -> pd.Series:
        """The comparison row of `policy` ("planned" or "uncapped")."""
        table = self.comparison.set_index("policy")
        if policy not in table.index:
            raise InputError(f"must be one of {list(table.index)}, got {policy!r}", field="policy")
        return cast(pd.Series, table.loc[policy])

    @property
    def tokens_saved(self) -> float:
        """Share of the uncapped reasoning tokens the plan did not spend."""
        return float(self.row("planned")["tokens_saved"])

    @property
    def accuracy_change(self) -> float:
        """Planned accuracy minus uncapped accuracy."""
        return float(self.row("planned")["accuracy_change"])

    @property
    def conclusion(self) -> str:
        """What the held-out items say about the plan, in words: against ε per size (when
        judged), then against uncapped reasoning."""
        if self.by_size is None:
            return self._against_uncapped()
        return f"{self.by_size}; against uncapped: {self._against_uncapped()}"

    def _against_uncapped(self) -> str:
        row = self.row("planned")
        low, high = float(row["accuracy_change_low"]), float(row["accuracy_change_high"])
        saved = float(row["tokens_saved"])
        if high < 0:
            return (
                f"the plan LOST accuracy on held-out items ({row['accuracy_change']:+.2f}, "
                f"interval {low:+.2f} to {high:+.2f}) while saving {saved:.0%} of reasoning "
                "tokens: the calibration missed a benefit; calibrate with more items or finer "
                "budgets before using this plan"
            )
        if low > 0:
            return (
                f"the plan was MORE accurate than uncapped ({row['accuracy_change']:+.2f}, "
                f"interval {low:+.2f} to {high:+.2f}) and saved {saved:.0%} of reasoning tokens"
            )
        if math.isnan(low):
            return f"the plan saved {saved:.0%} of reasoning tokens (no interval computed)"
        return (
            f"the plan saved {saved:.0%} of reasoning tokens; its accuracy change "
            f"({row['accuracy_change']:+.2f}, interval {low:+.2f} to {high:+.2f}) is not "
            f"distinguishable from 0 on {int(row['items'])} items"
        )

    def chart(self) -> Any:
        """Accuracy (with Wilson intervals) against mean reasoning tokens, one point per
        policy."""
        return comparison_chart(self.comparison, title=f"Plan (ε = {self.eps:g}) vs uncapped")


def comparison_chart(comparison: pd.DataFrame, *, title: str = "Policies") -> Any:
    """Accuracy with its interval against mean reasoning tokens per item, one point per policy
    (a `compare_answers` frame)."""
    import altair as alt

    x = alt.X("reasoning_tokens:Q", title="mean reasoning tokens per item")
    y_title = "accuracy (95% Wilson interval)"
    base = alt.Chart(comparison)
    bars = base.mark_rule().encode(
        x=x, y=alt.Y("accuracy_low:Q", title=y_title), y2="accuracy_high:Q", color="policy:N"
    )
    points = base.mark_point(filled=True, size=90).encode(
        x=x,
        y=alt.Y("accuracy:Q", title=y_title, scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("policy:N", title="policy"),
        tooltip=[
            "policy:N",
            alt.Tooltip("accuracy:Q", format=".2f"),
            alt.Tooltip("reasoning_tokens:Q", format=".1f"),
        ],
    )
    return alt.layer(bars, points).properties(title=title, width=480, height=300)


def run_plan(
    backend: Backend,
    planner: BudgetPlanner | SavedPlan,
    items: Iterable[TaskItem],
    eps: float,
    *,
    uncapped: int = 512,
    concurrency: int | None = None,
    progress: bool = True,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    prompt: CoTPrompt | None = None,
    confidence: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 0,
) -> PlanRun:
    """Answer held-out `items` at the planned k*(n, ε) and uncapped; compare (see module doc).

    `eps` is the target the plan is made for. Planned budgets above `uncapped` are capped
    there (at calibrated sizes the cap is the certified budget where one exists).
    Raises `InfeasibleTargetError` when ε is below what the model reaches at some size.
    """
    chosen = _check_items(items)
    uncapped = require_int(uncapped, "uncapped", low=1)
    target = float(eps)
    sizes = {item.id: item_size(item, counter=backend.count_tokens) for item in chosen}
    plan_caps = _plan_caps(planner, sizes.values(), target)
    caps = {n: min(c.tokens, uncapped) for n, c in plan_caps.items()}
    requests0 = _stat(backend, "requests")
    hits0 = _stat(backend, "cache_hits")
    answers = _answer_items(
        backend,
        chosen,
        lambda item: sorted({caps[sizes[item.id]], uncapped}),
        description="running the plan",
        concurrency=concurrency,
        progress=progress,
        answer_tokens=answer_tokens,
        mode=mode,
        prompt=prompt,
    )
    planned: list[BudgetedAnswer] = []
    free: list[BudgetedAnswer] = []
    for item in chosen:
        mine = [a for a in answers if a.item == item.id]
        cap = caps[sizes[item.id]]
        planned.append(next(a for a in mine if a.k == cap))
        free.append(next(a for a in mine if a.k == uncapped))
    by_policy = {"planned": tuple(planned), "uncapped": tuple(free)}
    comparison = compare_answers(
        by_policy, baseline="uncapped", confidence=confidence, n_bootstrap=n_bootstrap, seed=seed
    )
    frame = pd.concat(
        [answers_frame(rows).assign(policy=name) for name, rows in by_policy.items()],
        ignore_index=True,
    )
    plan_rows = []
    for n, applied in plan_caps.items():
        budget = applied.budget
        plan_rows.append(
            {
                "n": n,
                "items": sum(1 for s in sizes.values() if s == n),
                "k_star": budget.k_star if budget is not None else 0.0,
                "low": budget.low if budget is not None else 0.0,
                "high": budget.high if budget is not None else 0.0,
                "tokens": caps[n],
                "certified": applied.certified,
                "basis": applied.basis,
                "note": applied.note,
            }
        )
    by_size = check_against_eps(
        [sizes[a.item] for a in planned],
        [a.correct for a in planned],
        target,
        confidence=confidence,
        caps={n: c.cap for n, c in plan_caps.items()},
    )
    return PlanRun(
        comparison=comparison,
        frame=frame,
        plan=pd.DataFrame(plan_rows),
        eps=target,
        uncapped=uncapped,
        model=answers[0].model if answers else backend.model,
        status=str(getattr(planner, "status_", "")),
        verdict=str(getattr(planner, "verdict_", "")),
        requests=_stat(backend, "requests") - requests0,
        cache_hits=_stat(backend, "cache_hits") - hits0,
        answers=by_policy,
        by_size=by_size,
    )


@dataclass(frozen=True)
class _AppliedCap:
    """The cap `run_plan` applies at one size, with the planner's budget where there is one."""

    cap: PlanCap
    budget: Budget | None

    @property
    def tokens(self) -> int:
        return self.cap.tokens

    @property
    def certified(self) -> bool:
        return self.cap.certified

    @property
    def basis(self) -> str:
        return self.cap.basis

    @property
    def note(self) -> str:
        return self.cap.note


def _plan_caps(
    planner: BudgetPlanner | SavedPlan, sizes: Iterable[int], eps: float
) -> dict[int, _AppliedCap]:
    """The caps to run: a saved plan's `cap(n)` (what would be deployed, any size in reach),
    or a fitted planner's budget (at the sizes it can plan)."""
    if isinstance(planner, SavedPlan):
        if not math.isclose(eps, planner.eps):
            raise InputError(
                f"the plan was made for ε = {planner.eps:g}, not {eps:g}: plan again with "
                f"`cotplan plan --eps {eps:g}`",
                field="eps",
            )
        out: dict[int, _AppliedCap] = {}
        for n in sorted(set(sizes)):
            stored = next((b for b in planner.budgets if b.n == n), None)
            out[n] = _AppliedCap(planner.cap(n), stored)
        return out
    budgets = plan_budgets(planner, sizes, eps)
    certificates = planner.certified_
    nothing = certificates is None or not any(
        certificates.at(n, eps).certified for n in certificates.sizes
    )
    return {n: _AppliedCap(_cap_of_budget(n, eps, b, nothing), b) for n, b in budgets.items()}


def _cap_of_budget(n: float, eps: float, budget: Budget | None, nothing: bool) -> PlanCap:
    """A planner's budget as the cap it stands for (None: reasoning not credited)."""
    if budget is None:
        return PlanCap(
            n=float(n),
            eps=eps,
            tokens=0,
            basis="not_credited",
            certified=False,
            calibrated=False,
            nothing_certified=nothing,
            note="reasoning not credited: k* = 0",
        )
    basis: CapBasis = "law"
    if budget.certified:
        basis = "certified"
    elif budget.extrapolated:
        basis = "scaled"
    return PlanCap(
        n=float(n),
        eps=eps,
        tokens=budget.tokens,
        basis=basis,
        certified=budget.certified,
        calibrated=not budget.extrapolated,
        nothing_certified=nothing,
        error_bound=budget.error_bound,
        low=budget.cap_low,
        high=budget.cap_high,
        note="; ".join(part for part in (budget.basis, budget.note) if part),
    )
