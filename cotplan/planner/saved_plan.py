"""The plan as a file (plan.json): `SavedPlan`, the cap for any size within its reach.

`SavedPlan` is strict JSON with a schema version. It is bound to the model and the reasoning
protocol it was calibrated on (`cotplan.planner.binding` refuses another), gives the cap for
any size within its reach (`cap(n)`: certified at a calibrated size, scaled by the law
elsewhere and marked so) and the provider's request fields for that cap with room for the
answer (`request_fields(n)`). `load` checks every field (`cotplan.planner.plan_file`) before
anything uses one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from cotplan.backends.budgets import request_fields as budget_fields
from cotplan.errors import InfeasibleTargetError, InputError
from cotplan.intervals import Interval, percentile_interval
from cotplan.io import read_json_text, write_text
from cotplan.planner.plan_file import check_plan_record, record_back, strict_record
from cotplan.planner.pooled import POOLED_N, pooled_certificate, pooled_record
from cotplan.planner.records import (
    Budget,
    CapBasis,
    CertifiedBudget,
    PlanCap,
)
from cotplan.planner.size_rule import SizeRule
from cotplan.validation import require_number

if TYPE_CHECKING:
    from cotplan.planner.fit import BudgetPlanner

__all__ = [
    "DEFAULT_REACH",
    "NO_BENEFIT_STATUSES",
    "SCHEMA_VERSION",
    "SavedPlan",
    "cap_of_budget",
]

#: Planner verdicts under which reasoning is not credited with any effect: the plan is k* = 0.
NO_BENEFIT_STATUSES = frozenset({"no_benefit", "hurts", "all_correct", "all_wrong"})


#: The plan.json format this version writes. A file without `schema_version` is version 1:
#: budgets for the sizes planned only, no model, and NaN where a number is missing. Version 2
#: added the model, the certificates and the law; version 3 the reasoning `protocol` (a
#: version-2 file loads with protocol None: not recorded).
SCHEMA_VERSION = 3
#: How far `SavedPlan.cap` scales a cap beyond the calibrated sizes by default: n up to twice
#: the largest (and down to half the smallest). Further out the law is a guess, not a plan.
DEFAULT_REACH = 2.0

#: k*(params, n, ε) of one law.
_KStar = Callable[[NDArray[np.float64], float, float], float]


@dataclass(frozen=True)
class SavedPlan:
    """A plan as `cotplan plan` writes it (plan.json): the cap for any size, for one ε.

    `cap(n)` gives the cap to enforce at size `n` (a `PlanCap`): the certified budget at a
    calibrated size that certifies ε, elsewhere a certified cap scaled by the law (marked so),
    refused beyond `reach` × the calibrated sizes. `budget(n, eps)` answers like the planner
    it came from, for the sizes and the ε it was made for (`budgets`, as printed).

    The plan records what it was made from: the `model` of the calibration (and its `mode`
    where the calibration records one: template, chat or hidden, and the reasoning `protocol`
    that wrote and closed the thinking: None where the calibration does not say, or mixes
    several), the `provider` that served it (whose request fields `request_fields` gives) and
    the task `family`, the `calibration` file with its SHA-256 and cost, `eps`, `delta`, the
    chosen `law` with its fitted parameters and bootstrap draws (so `cap` needs no refit), and
    the certificate per calibrated size.
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
    protocol: str | None = None
    provider: str | None = None
    family: str | None = None
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
    #: The cap certified on every calibrated size's items pooled (`cotplan.planner.pooled`),
    #: for calls that carry no size; None where the calibration cannot give one (older plans).
    pooled: CertifiedBudget | None = None
    #: How a call without a size gets one from its prompt (`cotplan.planner.size_rule`);
    #: None: no rule (written by an operator, `with_size_rule`).
    size_rule: SizeRule | None = None

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
        certificates: Sequence[CertifiedBudget] | None = None,
    ) -> SavedPlan:
        """The plan of a fitted planner; `frame` (the calibration's answers) supplies the
        model, mode, protocol and cost, `reach` how far `cap` may scale (a factor of n, at
        least 1). `certificates` are the planner's certified budgets for `eps` where the
        caller has them already (`plan_from_calibration`), so one ε is certified once."""
        reach = require_number(reach, "reach", low=1.0)
        helps = planner.status_ == "helps" and planner.certified_ is not None
        if not helps:
            certificates = ()
        elif certificates is None and planner.certified_ is not None:
            certificates = tuple(planner.certified_.at(n, eps) for n in planner.certified_.sizes)
        pooled = None
        if helps and planner.certified_ is not None:
            pooled = pooled_certificate(planner.certified_, eps)
        law_params = law_draws = None
        law = planner.state_.law
        if planner.status_ == "helps" and planner.law_ is not None and law is not None:
            law_params = np.asarray(law.params, dtype=float).tolist()
            law_draws = np.asarray(law.draws, dtype=float).tolist()
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
            protocol=_only_value(frame, "protocol") or None,
            provider=_only_value(frame, "provider") or None,
            family=_only_value(frame, "family") or None,
            schema_version=SCHEMA_VERSION,
            reach=float(reach),
            confidence=float(planner.confidence),
            certificates=tuple(certificates or ()),
            peaks={int(n): int(k) for n, k in planner.peak_budgets_.items()},
            law_params=law_params,
            law_draws=law_draws,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            calibration_sha256=digest,
            calibration_cost_usd=float(cost),
            pooled=pooled,
        )

    def with_size_rule(self, rule: SizeRule | Mapping[str, Any] | None) -> SavedPlan:
        """This plan with `rule` (a `SizeRule` or its record; None: no rule) giving calls
        without a size theirs: save it to ship it."""
        if rule is not None and not isinstance(rule, SizeRule):
            rule = SizeRule.from_record(rule)
        return replace(self, size_rule=rule)

    def pooled_cap(self) -> PlanCap | None:
        """The pooled cap (`pooled`) as the cap a call without a size gets; None without one."""
        cert = self.pooled
        if cert is None or cert.k is None:
            return None
        return PlanCap(
            n=float(POOLED_N),
            eps=self.eps,
            tokens=cert.k,
            basis="certified",
            certified=True,
            calibrated=True,
            nothing_certified=self.nothing_certified,
            error_bound=cert.error_bound,
            note=(
                f"pooled cap: error ≤ {cert.error_bound:.3f} at k = {cert.k} with "
                f"{1 - self.delta:.0%} confidence over {cert.items} items "
                f"({cert.errors} wrong), {cert.note}"
            ),
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
        if self.status_ in NO_BENEFIT_STATUSES:
            return PlanCap(
                n=n_val,
                eps=self.eps,
                tokens=0,
                basis="not_credited",
                certified=False,
                calibrated=n_val in self.calibrated_sizes,
                nothing_certified=self.nothing_certified,
                note=f"reasoning not credited ({self.status_}): k* = 0",
            )
        if self.law_params is None or not self.certificates:
            return self._cap_from_budgets(n_val)
        self._check_reach(n_val)
        common: dict[str, Any] = {
            "n": n_val,
            "eps": self.eps,
            "calibrated": n_val in self.calibrated_sizes,
            "nothing_certified": self.nothing_certified,
            "reach": n_val / max(self.calibrated_sizes),
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
        return self._scaled_cap(n_val, notes, common) or self._law_cap(n_val, notes, common)

    def _check_reach(self, n: float) -> None:
        sizes = self.calibrated_sizes
        smallest, largest = min(sizes), max(sizes)
        if n > largest * self.reach or n < smallest / self.reach:
            raise InputError(
                f"n = {n:g} is beyond this plan's reach: it scales caps from the calibrated "
                f"sizes {smallest}–{largest} by at most {self.reach:g}× (n from "
                f"{smallest / self.reach:g} to {largest * self.reach:g}); calibrate at sizes "
                f"near {n:g} to plan for it, or plan with a wider reach "
                "(`cotplan plan --reach`)",
                field="n",
            )

    def _law(self) -> tuple[_KStar, NDArray[np.float64], list[NDArray[np.float64]]]:
        """The law's k*(params, n, ε), its fitted parameters and its bootstrap draws."""
        params = np.asarray(self.law_params, dtype=float)
        draws = [np.asarray(d, dtype=float) for d in self.law_draws or ()]
        return _law_k_star(str(self.law)), params, draws

    def _scaled_cap(self, n: float, notes: list[str], common: dict[str, Any]) -> PlanCap | None:
        """The certified cap of the nearest calibrated size (in log n) scaled by the law's
        k*(n) / k*(that size); None when no size is certified or the law cannot scale."""
        k_star, params, draws = self._law()
        k_n = k_star(params, n, self.eps)
        certified = [c for c in self.certificates if c.k is not None]
        if not certified or not math.isfinite(k_n):
            return None
        ref = min(certified, key=lambda c: abs(math.log(c.n) - math.log(n)))
        assert ref.k is not None
        k_ref = k_star(params, float(ref.n), self.eps)
        if not (math.isfinite(k_ref) and k_ref > 0):
            return None
        ratio = k_n / k_ref
        ratios = np.array(
            [k_star(d, n, self.eps) / k_star(d, float(ref.n), self.eps) for d in draws]
        )
        with np.errstate(invalid="ignore"):
            ratios = ratios[np.isfinite(ratios)]
        ci = _bootstrap_interval(ratios, self.confidence)
        tokens = math.ceil(ref.k * ratio - 1e-9)
        notes.insert(
            0,
            f"scaled: the certified k = {ref.k} at n = {ref.n} × the {self.law} law's "
            f"k*({n:g}) / k*({ref.n}) = {ratio:.2f}; not certified at n = {n:g}",
        )
        # A coarse budget grid can certify the same k at two sizes; scaling down from the
        # larger must not undercut a smaller size the law says needs no more.
        below = [c for c in certified if c.n < n and k_star(params, float(c.n), self.eps) <= k_n]
        floor = max(below, key=lambda c: c.k or 0, default=None)
        if floor is not None and floor.k is not None and tokens < floor.k:
            tokens = floor.k
            notes.append(
                f"raised to the certified k = {floor.k} at n = {floor.n}, a smaller size the "
                "law says needs no more"
            )
        return PlanCap(
            tokens=self._below_peak(n, tokens, notes),
            basis="scaled",
            certified=False,
            reference=ref.n,
            low=ref.k * ci.low,
            high=ref.k * ci.high,
            note="; ".join(notes),
            **common,
        )

    def _law_cap(self, n: float, notes: list[str], common: dict[str, Any]) -> PlanCap:
        """The law's own k* where nothing certified can be scaled: the conservative end of its
        interval where it has one (a point estimate misses ε about half the time)."""
        k_star, params, draws = self._law()
        k_n = k_star(params, n, self.eps)
        if not math.isfinite(k_n):
            raise InfeasibleTargetError(
                f"ε = {self.eps:g} is unattainable at n = {n:g} by the {self.law} law, and "
                "no calibration at this size certifies it",
                field="eps",
            )
        ci = _bootstrap_interval(np.array([k_star(d, n, self.eps) for d in draws]), self.confidence)
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
        return PlanCap(
            tokens=self._below_peak(n, tokens, notes),
            basis="law",
            certified=False,
            conservative=conservative,
            low=ci.low,
            high=ci.high,
            note="; ".join(notes),
            **common,
        )

    def request_fields(
        self, n: float, *, answer_tokens: int | None = None, provider: str | None = None
    ) -> dict[str, Any]:
        """The request fields that hold reasoning to `cap(n)` at `provider` for the plan's
        model, with room for the answer (`answer_tokens`, 16 by default) wherever one cap
        covers both: `cotplan.backends.budgets.request_fields`. `provider` is a key of
        `cotplan.backends.budgets.PROVIDER_RULES`; by default the one the calibration ran on
        (the plan's `provider`), else an OpenAI-compatible server (vLLM, llama.cpp, SGLang)."""
        provider = provider or self.provider or "openai-compatible"
        if not self.model:
            raise InputError(
                "the plan does not record the model it was made for (written by an older "
                "cotplan): plan again to bind it",
                field="model",
            )
        cap = self.cap(n)
        room = {} if answer_tokens is None else {"answer_tokens": answer_tokens}
        return dict(budget_fields(provider, self.model, cap.tokens, **room).params)

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
                return cap_of_budget(n, self.eps, budget, self.nothing_certified)
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
            "protocol": self.protocol,
            "provider": self.provider,
            "family": self.family,
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
            "pooled": asdict(self.pooled) if self.pooled is not None else None,
            "size_rule": self.size_rule.to_record() if self.size_rule is not None else None,
            "peaks": {str(n): k for n, k in self.peaks.items()},
            "law_params": self.law_params,
            "law_draws": self.law_draws,
            "budgets": [{**asdict(b), "baselines": dict(b.baselines)} for b in self.budgets],
        }
        # allow_nan=False: anything non-finite that slipped past `strict_record` fails here, loudly,
        # rather than writing a file other languages' JSON parsers reject.
        return json.dumps(strict_record(record), indent=2, ensure_ascii=False, allow_nan=False)

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_text(path, self.to_json() + "\n", private=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SavedPlan:
        """Read a plan.json written by `save`: every field checked, and the file read as any
        untrusted JSON is (`cotplan.io.read_json`: nesting, size, UTF-8, a key given twice),
        so that a damaged or hostile file is one error line naming it."""
        path = Path(path)
        if path.is_dir():
            raise InputError(
                f"{path} is a folder; give the plan.json in it",
                field="plan",
                source=str(path),
            )
        if not path.is_file():
            raise InputError(
                f"no such file: {path} (write one with `cotplan plan`)",
                field="plan",
                source=str(path),
            )
        # Lenient on NaN: version-1 files hold it, and they still load.
        record, text = read_json_text(path)
        try:
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
        check_plan_record(
            record, str(path), text, version=version
        )  # every field, before anything uses one
        try:
            for derived in ("caps", "nothing_certified"):
                record.pop(derived, None)  # recomputed from the rest
            budgets = tuple(Budget(**record_back(b)) for b in record.pop("budgets"))
            certificates = tuple(
                CertifiedBudget(**record_back(c)) for c in record.pop("certificates", ())
            )
            peaks = {int(n): int(k) for n, k in record.pop("peaks", {}).items()}
            pooled = pooled_record(record.pop("pooled", None))
            rule = record.pop("size_rule", None)
            size_rule = SizeRule.from_record(rule) if rule is not None else None
            cost = record.pop("calibration_cost_usd", None)
            return cls(
                **record,
                budgets=budgets,
                certificates=certificates,
                peaks=peaks,
                pooled=pooled,
                size_rule=size_rule,
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


def _law_k_star(law: str) -> _KStar:
    """k*(params, n, ε) of a law by name; the parameters carry its configuration (a fixed α
    is a stored parameter), so the law's default setup solves any of its fits."""
    from cotplan.planner.laws import make_laws

    laws = make_laws(one_size=False, alpha=None, e_base=None)
    if law not in laws:
        raise InputError(f"unknown law {law!r} in the plan", field="law")
    return laws[law].k_star


def _bootstrap_interval(draws: NDArray[np.float64], confidence: float) -> Interval:
    return percentile_interval(draws, confidence, keep_infinite=True)


def cap_of_budget(n: float, eps: float, budget: Budget | None, nothing: bool) -> PlanCap:
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
