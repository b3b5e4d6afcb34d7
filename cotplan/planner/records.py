"""Result records of the planner: intervals, estimates, tests, budgets and reports."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from cotplan.intervals import Interval

__all__ = [
    "BoundaryTest",
    "Budget",
    "CapBasis",
    "CertifiedBudget",
    "Estimate",
    "LawComparison",
    "LawFit",
    "LikelihoodRatioTest",
    "LogBase",
    "OptimalBudget",
    "PlanCap",
    "PlanReport",
    "SizeCheck",
    "SizeChecks",
    "Status",
    "TrendTest",
    "Verdict",
]

LogBase = Literal["e", "2", "10"]
#: What the fit concluded: reasoning `helps`; `no_benefit` (flat error); `hurts`; every answer
#: right (`all_correct`) or wrong (`all_wrong`); `too_few` data to say; constants `given`.
Status = Literal["helps", "no_benefit", "hurts", "all_correct", "all_wrong", "too_few", "given"]

LOG_BASES: dict[str, float] = {"e": 1.0, "2": math.log(2.0), "10": math.log(10.0)}
BASE_LABEL = {"e": "ln", "2": "log2", "10": "log10"}


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval."""

    value: float
    interval: Interval


@dataclass(frozen=True)
class TrendTest:
    """Does accuracy rise with the budget? Stratified by item, one-sided.

    `statistic` is a z-score (positive: more correct answers at larger budgets); `p_value`
    tests "no rise", `p_value_decrease` tests "no fall".
    """

    statistic: float
    p_value: float
    p_value_decrease: float
    verdict: str


@dataclass(frozen=True)
class LikelihoodRatioTest:
    """Free α against the paper's α = 1/2, with one degree of freedom.

    `p_value` is the textbook χ² p-value; it assumes independent rows, which answers of one
    item at several budgets are not, so it rejects too often. `p_value_bootstrap` is the
    item-bootstrap Wald test of α = 1/2 (robust spread of the bootstrap α's), which respects that
    clustering. The √n law is called rejected only when both reject.
    """

    statistic: float
    df: int
    p_value: float
    p_value_bootstrap: float
    alpha: Estimate
    verdict: str


@dataclass(frozen=True)
class BoundaryTest:
    """A likelihood-ratio test of a null value on the boundary of its parameter's range.

    The planner's one: α = 0 ("the budget needed does not grow with n") against α in (0, 2].
    With the null on the boundary, the free fit lands on it for about half the samples drawn
    under the null, where the statistic is exactly 0, so the statistic's reference is the 50:50
    mixture of χ²₀ (a point mass at 0) and χ²₁ (Self & Liang 1987), not χ²₁: `p_value` is
    ½·P(χ²₁ ≥ statistic) for a positive statistic and 1 at 0. `p_value_naive` is the plain χ²₁
    p-value, twice as large, kept to show the difference. Like `LikelihoodRatioTest.p_value`,
    both treat the rows as independent.
    """

    parameter: str
    null: float
    statistic: float
    p_value: float
    p_value_naive: float
    verdict: str


@dataclass(frozen=True)
class Budget:
    """The reasoning budget k* that meets target error `eps` at size `n`.

    `k_star` is the real-valued solution and `tokens` the cap to use (k* rounded up). `low` and
    `high` bound k* (bootstrap percentiles; `high` is inf when some resamples cannot reach
    `eps`). `c_in_base` is the model's c expressed for `log_base` (the budget does not depend on
    the base). `extrapolated` is True when `n` or k* lies outside what was calibrated.
    `baselines` holds k* by the paper's law (α free), by its fixed-α = 1/2 fit and by the
    through-origin least-squares c (k* = c · √n · ln(1/ε)), for comparison.

    `law` is the law k* comes from. `tokens` is the cap to use: with `certified` it is the
    smallest calibrated budget whose error is at most `eps` with confidence 1 − delta
    (`error_bound` is the exact upper bound there); where nothing certifies ε, the upper end
    of the law's k* interval rounded up (the largest calibrated budget where that interval is
    unbounded), or, at a size not calibrated, a certified budget scaled by the law
    (`extrapolated`; `reach` is n over the largest calibrated size; `cap_low`/`cap_high` bound
    that cap over the law's bootstrap). `basis` says which in words.
    """

    n: float
    eps: float
    k_star: float
    low: float
    high: float
    tokens: int
    log_base: LogBase
    c_in_base: float
    formula: str
    extrapolated: bool = False
    note: str = ""
    baselines: Mapping[str, float] = field(default_factory=dict)
    law: str = "paper"
    certified: bool = False
    error_bound: float = math.nan
    basis: str = ""
    reach: float = 1.0
    cap_low: float = math.nan
    cap_high: float = math.nan

    def __float__(self) -> float:
        """`float(budget)` is k*, for code that wants the number alone."""
        return self.k_star

    def to_frame(self) -> pd.DataFrame:
        """One row: the budget, its interval and the baselines."""
        row: dict[str, Any] = {
            "n": self.n,
            "eps": self.eps,
            "k_star": self.k_star,
            "low": self.low,
            "high": self.high,
            "tokens": self.tokens,
            "log_base": self.log_base,
            "c_in_base": self.c_in_base,
            "extrapolated": self.extrapolated,
            "law": self.law,
            "certified": self.certified,
            "error_bound": self.error_bound,
            "reach": self.reach,
            "cap_low": self.cap_low,
            "cap_high": self.cap_high,
            "basis": self.basis,
        }
        row.update({f"k_star_{name}": value for name, value in self.baselines.items()})
        return pd.DataFrame([row])


@dataclass(frozen=True)
class OptimalBudget:
    """The budget that minimises value_of_correct · e(k, n) + price_per_token · k.

    `expected_cost` is that sum at `k`; `cost_without_reasoning` is it at k = 0, so `saving` is
    what the budget is worth per query. `low`/`high` bound `k` over the bootstrap.
    """

    n: float
    k: int
    low: float
    high: float
    expected_error: float
    expected_cost: float
    cost_without_reasoning: float
    value_of_correct: float
    price_per_token: float

    @property
    def saving(self) -> float:
        return self.cost_without_reasoning - self.expected_cost

    def to_frame(self) -> pd.DataFrame:
        """One row with every field and the saving."""
        return pd.DataFrame(
            [
                {
                    "n": self.n,
                    "k": self.k,
                    "low": self.low,
                    "high": self.high,
                    "expected_error": self.expected_error,
                    "expected_cost": self.expected_cost,
                    "cost_without_reasoning": self.cost_without_reasoning,
                    "saving": self.saving,
                    "value_of_correct": self.value_of_correct,
                    "price_per_token": self.price_per_token,
                }
            ]
        )


@dataclass(frozen=True)
class PlanReport:
    """Everything a fit found, for printing (`str(report)`) or tabulating (`to_frame()`)."""

    status: Status
    verdict: str
    n_items: int
    n_rows: int
    sizes: tuple[int, ...]
    budgets: tuple[int, ...]
    log_base: LogBase
    constants: Mapping[str, Estimate]
    alpha_half: Mapping[str, Estimate]
    c_least_squares: Estimate
    trend: TrendTest | None
    lrt: LikelihoodRatioTest | None
    loglik: float
    laws: LawComparison | None = None
    growth: BoundaryTest | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per (model, parameter): estimate, low, high.

        Models: `fit` (the paper's law, α free), `alpha=1/2` (the paper's fixed exponent),
        `least squares` (the through-origin c of the paper's code), then the other laws by
        name. c is natural-log based; the `c (log base b)` rows give it in the report's base.
        """
        scale = LOG_BASES[self.log_base]
        rows = []
        for model, constants in (("fit", self.constants), ("alpha=1/2", self.alpha_half)):
            for name, est in constants.items():
                rows.append(_row(model, name, est))
                if name == "c" and self.log_base != "e":
                    rows.append(_row(model, f"c (log base {self.log_base})", est, scale))
        rows.append(_row("least squares", "c", self.c_least_squares))
        if self.log_base != "e":
            rows.append(
                _row("least squares", f"c (log base {self.log_base})", self.c_least_squares, scale)
            )
        if self.laws is not None:
            for law in self.laws.fits:
                if law.law in ("paper", "paper-half"):
                    continue  # the rows `fit` and `alpha=1/2` above
                rows.extend(_row(law.law, name, est) for name, est in law.parameters.items())
        return pd.DataFrame(rows, columns=["model", "parameter", "estimate", "low", "high"])

    def __str__(self) -> str:
        lines = [self.verdict, ""]
        lines.append(
            f"{self.n_items} items, {self.n_rows} answers; sizes n = {_join(self.sizes)}; "
            f"budgets k = {_join(self.budgets)}"
        )
        if self.constants:
            lines.append("constants (95% bootstrap intervals unless stated):")
            for name, est in self.constants.items():
                lines.append(
                    f"  {name:>7} = {fmt(est.value)}  "
                    f"[{fmt(est.interval.low)}, {fmt(est.interval.high)}]"
                )
        if self.trend is not None:
            lines.append(self.trend.verdict)
        if self.lrt is not None:
            lines.append(self.lrt.verdict)
        if self.growth is not None:
            lines.append(self.growth.verdict)
        if self.laws is not None:
            lines.append(str(self.laws))
        return "\n".join(lines)


def _row(model: str, name: str, est: Estimate, scale: float = 1.0) -> dict[str, Any]:
    return {
        "model": model,
        "parameter": name,
        "estimate": est.value * scale,
        "low": est.interval.low * scale,
        "high": est.interval.high * scale,
    }


def fmt(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.3g}"


def _join(values: Sequence[int]) -> str:
    return (
        ", ".join(str(v) for v in values)
        if len(values) <= 8
        else (f"{values[0]}, {values[1]}, ..., {values[-1]} ({len(values)} values)")
    )


NAN_CI = Interval(math.nan, math.nan)


# --------------------------------------------------------------------------------------------
# The laws and the certified budgets


@dataclass(frozen=True)
class LawFit:
    """One law's fit: parameters with item-bootstrap intervals and its held-out score.

    `heldout_loglik` sums the log-likelihood of each item fold under the law fitted without
    it; `difference` is that minus the paper law's (positive: better than the paper's law) and
    `difference_se` its fold-to-fold standard error.
    """

    law: str
    formula: str
    parameters: Mapping[str, Estimate]
    loglik: float
    heldout_loglik: float
    difference: float
    difference_se: float
    note: str = ""

    def parameter_text(self) -> str:
        return ", ".join(
            f"{name} {fmt(est.value)}"
            + (
                ""
                if math.isnan(est.interval.low)
                else f" [{fmt(est.interval.low)}, {fmt(est.interval.high)}]"
            )
            for name, est in self.parameters.items()
        )


@dataclass(frozen=True)
class LawComparison:
    """The laws side by side (`to_frame()`, `str()`), the one selected and why."""

    fits: tuple[LawFit, ...]
    selected: str
    reason: str
    folds: int

    def __getitem__(self, law: str) -> LawFit:
        for fit in self.fits:
            if fit.law == law:
                return fit
        raise KeyError(law)

    def to_frame(self) -> pd.DataFrame:
        """One row per law: held-out and in-sample log-likelihood, parameters, selection."""
        return pd.DataFrame(
            [
                {
                    "law": f.law,
                    "heldout_loglik": f.heldout_loglik,
                    "vs_paper": f.difference,
                    "vs_paper_se": f.difference_se,
                    "loglik": f.loglik,
                    "parameters": f.parameter_text(),
                    "selected": f.law == self.selected,
                    "note": f.note,
                }
                for f in self.fits
            ]
        )

    def __str__(self) -> str:
        lines = [
            f"laws compared by held-out log-likelihood ({self.folds}-fold cross-validation over "
            "items; vs paper: difference to the paper's law ± its fold-to-fold standard error)"
        ]
        for f in self.fits:
            mark = "*" if f.law == self.selected else " "
            lines.append(
                f" {mark} {f.law:<10} held-out {f.heldout_loglik:9.1f}  vs paper "
                f"{f.difference:+7.1f} ± {fmt(f.difference_se):<5}  {f.parameter_text()}"
            )
            if f.note:
                lines.append(f"     {'':<10} {f.note}")
        lines.append(f"chosen: {self.selected} ({self.reason})")
        return "\n".join(lines)


@dataclass(frozen=True)
class CertifiedBudget:
    """The smallest calibrated budget whose error is at most `eps` with confidence 1 − `delta`.

    Budgets are tested from the largest (at most the peak) down with an exact one-sided
    binomial (Clopper-Pearson) bound, stopping at the first that fails (fixed-sequence testing,
    "Learn then Test"): whatever the curve's shape, the chance that the certified budget's
    true error exceeds `eps` is at most `delta`. `k` is None when no budget passes;
    `items_needed` then estimates how many items a size would let the best budget pass.
    `error_bound` is the upper bound at `k` (or at the best budget when none passes).
    """

    n: int
    eps: float
    delta: float
    k: int | None
    error_bound: float
    errors: int
    items: int
    tested: int
    items_needed: int | None = None
    note: str = ""

    @property
    def certified(self) -> bool:
        return self.k is not None

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "n": self.n,
                    "eps": self.eps,
                    "delta": self.delta,
                    "k": self.k,
                    "error_bound": self.error_bound,
                    "errors": self.errors,
                    "items": self.items,
                    "budgets_tested": self.tested,
                    "items_needed": self.items_needed,
                    "note": self.note,
                }
            ]
        )


# --------------------------------------------------------------------------------------------
# The saved plan's caps, and a run judged against ε per size

#: Where a `PlanCap` comes from (see `PlanCap`).
CapBasis = Literal["certified", "scaled", "law", "not_credited"]


@dataclass(frozen=True)
class PlanCap:
    """The reasoning cap a saved plan gives for one size (`SavedPlan.cap(n)`).

    `tokens` is the cap to enforce. `basis` says what backs it:

    - `certified`: a calibrated size whose calibration certifies ε (error ≤ ε with confidence
      1 − δ; `error_bound` is the exact bound there);
    - `scaled`: the certified cap of the calibrated size nearest in log n (`reference`) times
      the law's k*(n) / k*(reference); `low`/`high` bound it over the law's bootstrap;
    - `law`: no calibrated size certifies ε, so the law's k* alone: the upper end of its
      bootstrap interval when that is finite (`conservative`), else its point estimate, which
      misses ε about half the time (the note says so);
    - `not_credited`: the calibration credits reasoning with no effect: the cap is 0.

    `certified` is True only for the first. `nothing_certified` is True when no calibrated
    size certifies ε, so every cap of the plan is an estimate. `calibrated` says whether `n`
    was calibrated; `reach` is n over the largest calibrated size (NaN when unknown).
    """

    n: float
    eps: float
    tokens: int
    basis: CapBasis
    certified: bool
    calibrated: bool
    nothing_certified: bool
    conservative: bool = False
    reach: float = math.nan
    error_bound: float = math.nan
    reference: int | None = None
    low: float = math.nan
    high: float = math.nan
    note: str = ""

    def to_frame(self) -> pd.DataFrame:
        """One row with every field."""
        return pd.DataFrame([{f: getattr(self, f) for f in self.__dataclass_fields__}])


#: A size's held-out error against ε: `meets` (the interval lies at or below ε), `misses`
#: (it lies above ε) or `undecided` (it straddles ε: too few items to tell).
Verdict = Literal["meets", "misses", "undecided"]


@dataclass(frozen=True)
class SizeCheck:
    """One size's held-out error under the plan's cap, against the target ε.

    `error` is errors / items with its exact two-sided Clopper-Pearson interval
    [`low`, `high`] at `confidence`; `verdict` compares that interval with `eps`. `cap` and
    `certified` are the cap applied and whether the plan certified it.
    """

    n: int
    items: int
    errors: int
    error: float
    low: float
    high: float
    eps: float
    confidence: float
    verdict: Verdict
    cap: int | None = None
    certified: bool = False

    def __str__(self) -> str:
        cap = "" if self.cap is None else f", cap {self.cap}"
        backing = " certified" if self.certified else ""
        return (
            f"n = {self.n}: error {self.error:.2f} [{self.low:.2f}, {self.high:.2f}] on "
            f"{self.items} items{cap}{backing}: {self.verdict} ε = {self.eps:g}"
        )


@dataclass(frozen=True)
class SizeChecks:
    """Every size's `SizeCheck`, in size order; `verdict` is the worst of them."""

    eps: float
    confidence: float
    sizes: tuple[SizeCheck, ...]

    @property
    def verdict(self) -> Verdict:
        verdicts = {s.verdict for s in self.sizes}
        if "misses" in verdicts:
            return "misses"
        return "undecided" if "undecided" in verdicts or not verdicts else "meets"

    def __str__(self) -> str:
        missed = [s for s in self.sizes if s.verdict == "misses"]
        open_ = [s for s in self.sizes if s.verdict == "undecided"]
        if missed:
            return f"the plan MISSES ε = {self.eps:g} at " + "; ".join(str(s) for s in missed)
        if open_:
            return (
                f"held-out items cannot tell whether the plan meets ε = {self.eps:g} at "
                + "; ".join(
                    f"n = {s.n} (error {s.error:.2f} [{s.low:.2f}, {s.high:.2f}])" for s in open_
                )
                + f": the {self.confidence:.0%} intervals straddle ε; more items would decide"
            )
        return f"the plan meets ε = {self.eps:g} at every size run"

    def to_frame(self) -> pd.DataFrame:
        """One row per size."""
        columns = list(SizeCheck.__dataclass_fields__)
        return pd.DataFrame(
            [{c: getattr(s, c) for c in columns} for s in self.sizes], columns=columns
        )
