"""`BudgetPlanner`: fit how a model's error falls with its reasoning budget, and plan budgets.

The model
---------
For an item of size n answered after at most k reasoning tokens, the probability of a wrong
answer is modelled as

    e(k, n) = e0 + (e_base − e0) · exp(−max(k − k0, 0) / (c · n^α))

- `e0`, the floor: the error no budget removes (the model simply cannot do some items);
- `e_base`, the error without useful reasoning (k ≤ k0). Issue 4 writes the model with
  e_base = 1; that cannot describe a task the model sometimes answers right with no reasoning at
  all (a yes/no question is right half the time by chance), and one such answer at k = 0 would
  make the likelihood zero. So e_base is fitted by default; `e_base=1.0` restores the issue's form;
- `k0`, the offset: tokens spent before reasoning starts to pay (restating the question);
- `c · n^α`, the scale: budget needed per e-fold of improvement. The paper predicts α = 1/2.

Solving e(k*, n) = ε gives the budget for a target error ε:

    k* = k0 + c · n^α · ln((e_base − e0) / (ε − e0))      for e0 < ε < e_base,

k* = 0 when ε ≥ e_base (no reasoning needed) and no k reaches ε ≤ e0 (`InfeasibleTargetError`).

The paper writes k* = c · √n · log(1/ε) without fixing the log base. The model above uses the
natural log by construction (it comes from exp). In base b the same budget reads
k* = k0 + c_b · n^α · log_b(...), with c_b = c · ln b: the budget is the same number, only the
reported constant changes (c_2 ≈ 0.69 c, c_10 ≈ 2.30 c). `log_base` picks the base the reports
use; `c_` itself always holds the natural-log constant.

How it is fitted
----------------
By maximum likelihood on the 0/1 outcomes (rows sharing (n, k) are pooled, which is exact for a
Bernoulli likelihood), by SLSQP with the analytic gradient and several starts, in box bounds on
the natural scale (e0 and e_base in [0, 1], k0 in [0, largest budget], ln c, α in [0, 2]).
Logistic transforms to an unconstrained scale were tried first and dropped: real calibrations
put e0 at 0 or α at an end of its range, where a logistic flattens the likelihood and the
optimiser (and every bootstrap refit started there) stops moving. Intervals come from a seeded
bootstrap over ITEMS: an item keeps all its budgets, so the correlation between one item's
answers at different budgets (an easy item is right at every budget) is respected. The
likelihood itself treats rows as independent; that makes the plain likelihood-ratio test too
eager, which is why its verdict also needs the item-bootstrap test to agree (see
`LikelihoodRatioTest`). When the error has already reached its floor at the smallest positive
budget, the curve's shape (k0, c, α) is not identified by the data: those intervals are NaN and
no test of α is made.

Before fitting a curve the planner asks whether accuracy rises with the budget at all: a
stratified trend test (ranks of the budgets against correctness, within each item; a
Cochran–Armitage / Mantel test with exact permutation moments). Without a significant rise the
planner does not invent a benefit: it reports the error as flat, k* = 0 for targets the model
already meets, and an unattainable target otherwise. When accuracy rises, peaks and then falls
significantly (small models talk themselves out of right answers), the curve is fitted on the
budgets up to the peak (`peak_budget_`) and no cap above the peak is recommended.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from cotplan.errors import InfeasibleTargetError, InputError, NotFittedError
from cotplan.planner.certify import Certification
from cotplan.planner.data import (
    _cells,
    _check_fraction,
    _check_log_base,
    _check_positive,
    _Data,
    _subset,
    _validate_frame,
)
from cotplan.planner.evidence import _peaks_per_size, _percentile, _trend_test
from cotplan.planner.law_paper import (
    _ALPHA_MAX,
    _PARAMS,
    _c_least_squares,
    _error,
    _Fit,
    _k_star,
    _k_star_ls,
    _maximise,
    _optimal_k,
    _paper_starts,
)
from cotplan.planner.laws import LAW_NAMES, compare_laws, make_laws, score_laws
from cotplan.planner.records import (
    _NAN_CI,
    BASE_LABEL,
    LOG_BASES,
    Budget,
    CertifiedBudget,
    ConfidenceInterval,
    Estimate,
    LawComparison,
    LikelihoodRatioTest,
    LogBase,
    OptimalBudget,
    PlanReport,
    Status,
    TrendTest,
    _fmt,
)

__all__ = [
    "Budget",
    "BudgetPlanner",
    "ConfidenceInterval",
    "Estimate",
    "LikelihoodRatioTest",
    "LogBase",
    "OptimalBudget",
    "PlanReport",
    "Status",
    "TrendTest",
]


def _law_formula(law: str, params: NDArray[np.float64], n: float, eps: float) -> str:
    if law == "logistic":
        e0, eb, a, beta, s, gamma = (float(v) for v in params)
        return (
            f"k* = {a:.3g} · {n:g}^{beta:.3g} + {s:.3g} · {n:g}^{gamma:.3g} · ln((1 − r) / r), "
            f"r = ({eps:g} − {e0:.3g}) / ({eb:.3g} − {e0:.3g})"
        )
    if law == "step":
        e0, eb, a, beta = (float(v) for v in params)
        return f"k* = {a:.3g} · {n:g}^{beta:.3g} (the error steps from {eb:.3g} to {e0:.3g})"
    return "k* read off the isotonic error curve (a power of n fitted across sizes elsewhere)"


class BudgetPlanner:
    """Fit e(k, n) on a calibration frame and plan reasoning budgets from it.

    The target error ε is given in one place: `budget(n, eps)` (and `certify(eps)`); nothing
    the fit computes or says depends on it.

    Parameters
    ----------
    law : "auto" (the parametric law with the best held-out likelihood, the paper's unless the
        data tell them apart), or one of "paper" (α free), "paper-half" (α = 1/2), "logistic",
        "step", "monotone" (shape-free, per calibrated size).
    delta : 1 − the confidence of the certified budgets (default 0.05: 95%).
    folds : item folds of the cross-validation that compares the laws.
    log_base : "e", "2" or "10": the base in which reports express c (see the module
        docstring; the budget itself does not depend on it).
    alpha : "fit" to estimate the exponent α in [0, 2], or a number to fix it (0.5 is the
        paper's √n law). With one size n only, α cannot be fitted and 1/2 is used.
    e_base : "fit", or the error without reasoning fixed (1.0 is issue 4's exact model; 0.5
        suits a yes/no task answered at chance).
    n_bootstrap : item-bootstrap resamples for the intervals (0: no intervals).
    confidence : level of the intervals.
    significance : level of the trend and likelihood-ratio tests.
    min_items : fewer items than this is "too few to fit".
    random_state : seed of the bootstrap.

    After `fit`: `e0_`, `e_base_`, `k0_`, `c_`, `alpha_`, `intervals_` (name ->
    ConfidenceInterval), `loglik_`, `alpha_half_` (name -> value for the α = 1/2 fit),
    `alpha_half_loglik_`, `c_least_squares_`, `trend_`, `peak_budget_` (None unless accuracy
    falls after a peak), `lrt_` (None with one size), `status_`, `verdict_`, `bootstrap_` (a
    frame of the resampled constants), `sizes_`, `budgets_`, `n_items_`. Those constants are
    the paper law's (always fitted: the verdict on the √n law is read from them). The law used
    for planning is `law_`; `laws_` (a `LawComparison`) holds every law's fit and held-out
    score (None unless reasoning helps); `certified_` (a `Certification`) the exact evidence per
    calibrated size and budget; `peak_budgets_` the peak per size where accuracy falls after it.
    """

    def __init__(
        self,
        law: str = "auto",
        *,
        delta: float = 0.05,
        folds: int = 5,
        log_base: LogBase | str = "e",
        alpha: float | Literal["fit"] = "fit",
        e_base: float | Literal["fit"] = "fit",
        n_bootstrap: int = 200,
        confidence: float = 0.95,
        significance: float = 0.05,
        min_items: int = 8,
        random_state: int = 0,
    ) -> None:
        self.law = law
        self.delta = delta
        self.folds = folds
        self.log_base = log_base
        self.alpha = alpha
        self.e_base = e_base
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.significance = significance
        self.min_items = min_items
        self.random_state = random_state

    # -- parameters ---------------------------------------------------------------------------

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (scikit-learn convention)."""
        return {
            "law": self.law,
            "delta": self.delta,
            "folds": self.folds,
            "log_base": self.log_base,
            "alpha": self.alpha,
            "e_base": self.e_base,
            "n_bootstrap": self.n_bootstrap,
            "confidence": self.confidence,
            "significance": self.significance,
            "min_items": self.min_items,
            "random_state": self.random_state,
        }

    def __repr__(self) -> str:
        defaults = BudgetPlanner().get_params()
        changed = {k: v for k, v in self.get_params().items() if v != defaults[k]}
        return f"BudgetPlanner({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def _validated_params(self) -> dict[str, Any]:
        checked: dict[str, Any] = {}
        if self.law != "auto" and self.law not in LAW_NAMES:
            raise InputError(
                f"must be 'auto' or one of {', '.join(repr(n) for n in LAW_NAMES)}, "
                f"got {self.law!r}",
                field="law",
            )
        checked["law"] = self.law
        checked["delta"] = _check_fraction(self.delta, "delta")
        checked["log_base"] = _check_log_base(self.log_base)
        if self.alpha == "fit":
            checked["alpha"] = None
        else:
            if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float):
                raise InputError(
                    f"must be 'fit' or a number in [0, 2], got {self.alpha!r}", field="alpha"
                )
            if not 0.0 <= float(self.alpha) <= _ALPHA_MAX:
                raise InputError(f"must be in [0, 2], got {self.alpha:g}", field="alpha")
            checked["alpha"] = float(self.alpha)
        if self.e_base == "fit":
            checked["e_base"] = None
        else:
            checked["e_base"] = _check_fraction(self.e_base, "e_base", closed_high=True)
        for name, low in (("n_bootstrap", 0), ("min_items", 2), ("folds", 2)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"must be an integer ≥ {low}, got {value!r}", field=name)
            checked[name] = value
        checked["confidence"] = _check_fraction(self.confidence, "confidence")
        checked["significance"] = _check_fraction(self.significance, "significance")
        if isinstance(self.random_state, bool) or not isinstance(self.random_state, int):
            raise InputError(
                f"must be an integer seed, got {self.random_state!r}", field="random_state"
            )
        checked["random_state"] = self.random_state
        return checked

    # -- fitting ------------------------------------------------------------------------------

    def fit(self, calibration: pd.DataFrame | Any) -> BudgetPlanner:
        """Fit the constants on a calibration frame (columns item, n, k, correct); returns self.

        Other columns are ignored. `k` is the budget CAP each answer was given. Degenerate
        calibrations (too few items, one budget, every answer right or wrong, no rise in
        accuracy) do not raise: `status_` and `verdict_` say what can and cannot be planned.
        """
        p = self._validated_params()
        data = _validate_frame(calibration)
        self._p = p
        self._data = data
        self.law_: str | None = None
        self.laws_: LawComparison | None = None
        self.peak_budgets_: dict[int, int] = {}
        self._fit_paper(p, data)
        # The certificate reads the calibration itself (up to each size's peak), whatever
        # law was chosen and whether or not reasoning was credited.
        self.certified_: Certification | None = Certification.from_data(
            data, p["delta"], self.peak_budgets_
        )
        return self

    def _fit_paper(self, p: Mapping[str, Any], data: _Data) -> BudgetPlanner:
        """The paper law, the tests and the status; then the other laws where reasoning helps."""
        self.n_items_ = data.n_items
        self.n_rows_ = len(data.y)
        self.sizes_ = tuple(int(v) for v in np.unique(data.n))
        self.budgets_ = tuple(int(v) for v in np.unique(data.k))
        self.trend_: TrendTest | None = None
        self.peak_budget_: int | None = None
        self.lrt_: LikelihoodRatioTest | None = None
        self.mle_: dict[str, float] = {}
        nan_params = np.full(5, math.nan)
        self._set_constants(nan_params, {}, math.nan)
        self._set_half(nan_params, {}, math.nan)
        self.c_least_squares_ = math.nan
        self.intervals_c_least_squares_ = _NAN_CI
        self.bootstrap_ = pd.DataFrame(columns=list(_PARAMS))
        self._draws = np.empty((0, 5))
        self._half_draws = np.empty((0, 5))
        self._ls_draws = np.empty(0)
        self._constant = False
        self._coarse = False

        if data.n_items < p["min_items"]:
            return self._degenerate(
                "too_few",
                f"too few items to fit: {data.n_items} (at least {p['min_items']} needed; "
                "`min_items` sets this)",
            )
        if len(self.budgets_) < 2:
            return self._degenerate(
                "too_few",
                f"one budget only (k = {self.budgets_[0]}): nothing shows what reasoning buys; "
                "calibrate at several budgets, including 0",
            )
        accuracy = float(data.y.mean())
        k_max = self.budgets_[-1]
        self.trend_ = _trend_test(data)
        if accuracy == 1.0:
            # Answers of one item at several budgets are not independent: count items.
            upper = 1.0 - (1.0 - p["confidence"]) ** (1.0 / data.n_items)
            return self._flat(
                "all_correct",
                0.0,
                f"no measurable benefit from reasoning: k* = 0 (all {len(data.y)} answers were "
                f"right at every budget from k = {self.budgets_[0]}; error ≤ {upper:.2g} at "
                f"{p['confidence']:.0%} confidence)",
            )
        if accuracy == 0.0:
            return self._flat(
                "all_wrong",
                1.0,
                f"no answer was right at any budget up to k = {k_max}: the floor e0 = 1 makes "
                "every target ε < 1 unattainable with this model at these budgets",
            )
        peaks = _peaks_per_size(data, p["significance"])
        if peaks:
            keep = np.ones(len(data.y), dtype=bool)
            for size, (peak_k, _) in peaks.items():
                keep &= ~((data.n == size) & (data.k > peak_k))
            up_to_peak = _subset(data, keep)
            rise = _trend_test(up_to_peak)
            # The peaks were chosen by looking at the data: the rise up to them is judged with
            # a Bonferroni factor for the budgets they could have been.
            candidates = sum(len(np.unique(data.k[data.n == size])) - 1 for size in peaks)
            p_rise = min(1.0, rise.p_value * candidates)
            if p_rise < p["significance"]:
                self.peak_budgets_ = {size: peak_k for size, (peak_k, _) in peaks.items()}
                self.peak_budget_ = max(self.peak_budgets_.values())
                data, k_max = up_to_peak, self.peak_budget_
                where = ", ".join(f"k = {k} (n = {size})" for size, k in self.peak_budgets_.items())
                falls = "; ".join(
                    fall.verdict.removeprefix("trend test ") for _, fall in peaks.values()
                )
                self.trend_ = TrendTest(
                    rise.statistic,
                    p_rise,
                    rise.p_value_decrease,
                    f"{rise.verdict} (budgets up to the peak {where}; the p for a rise is "
                    f"×{candidates} for choosing the peak); beyond the peak accuracy falls: "
                    f"{falls}",
                )
        cells = _cells(data)
        free_alpha = p["alpha"] is None and len(self.sizes_) >= 2
        alpha_fixed = p["alpha"] if p["alpha"] is not None else 0.5
        fixed: dict[int, float] = {}
        if p["e_base"] is not None:
            fixed[1] = p["e_base"]
        fixed_primary = dict(fixed) if free_alpha else {**fixed, 4: alpha_fixed}
        starts = _paper_starts(cells, free_alpha=free_alpha, alpha=alpha_fixed)
        primary = _maximise(cells, starts, fixed_primary, k_max)
        half = (
            primary
            if not free_alpha and alpha_fixed == 0.5
            else _maximise(cells, [*starts, primary.params], {**fixed, 4: 0.5}, k_max)
        )
        self.mle_ = dict(zip(_PARAMS, (float(v) for v in primary.params), strict=True))
        self.c_least_squares_ = _c_least_squares(cells)

        trend = self.trend_
        if trend.p_value >= p["significance"]:
            if trend.p_value_decrease < p["significance"]:
                lowest = data.k == data.k.min()
                e_first = 1.0 - float(data.y[lowest].mean())
                return self._flat(
                    "hurts",
                    e_first,
                    f"reasoning hurts: accuracy falls as the budget grows (trend test p = "
                    f"{trend.p_value_decrease:.2g}); k* = 0, error {e_first:.2f} at the smallest "
                    f"budget k = {self.budgets_[0]}",
                    from_lowest=True,
                )
            pooled = 1.0 - accuracy
            return self._flat(
                "no_benefit",
                pooled,
                f"no measurable benefit from reasoning: k* = 0 (error {pooled:.2f} at every "
                f"budget up to k = {k_max}; trend test p = {trend.p_value:.2g} for a rise)",
            )

        self._set_constants(primary.params, {}, primary.loglik)
        self._set_half(half.params, {}, half.loglik)
        self.status_: Status = "helps"
        self._bootstrap(data, primary, half, fixed_primary, fixed, k_max)
        unresolved = self._unresolved()
        self._coarse = unresolved
        if unresolved:
            # A step before the first positive budget fits any small c, any k0 below that
            # budget and any α: the bootstrap would only echo the optimiser's start.
            for name in ("k0", "c", "alpha"):
                if _PARAMS.index(name) not in fixed_primary:
                    self.intervals_[name] = _NAN_CI
            for name in ("k0", "c"):
                self.alpha_half_intervals_[name] = _NAN_CI
        if free_alpha and not unresolved:
            self.lrt_ = self._likelihood_ratio(primary, half)
        self._fit_laws(p, data, primary, half)
        self.verdict_ = self._helps_verdict(free_alpha, p, unresolved)
        return self

    def _fit_laws(self, p: Mapping[str, Any], data: _Data, primary: _Fit, half: _Fit) -> None:
        """Every law, scored on held-out item folds; the one asked for or chosen."""
        laws = make_laws(one_size=len(self.sizes_) < 2, alpha=p["alpha"], e_base=p["e_base"])
        scored = score_laws(
            data,
            laws,
            folds=min(p["folds"], data.n_items),
            n_bootstrap=p["n_bootstrap"],
            seed=p["random_state"],
            given={
                "paper": (primary.params, primary.loglik),
                "paper-half": (half.params, half.loglik),
            },
            given_draws={"paper": self._draws, "paper-half": self._half_draws},
        )
        self.laws_ = compare_laws(
            scored,
            laws,
            asked=p["law"],
            confidence=p["confidence"],
            alpha_verdict=self.lrt_.verdict if self.lrt_ is not None else None,
        )
        self.law_ = self.laws_.selected
        self._law = laws[self.law_]
        self._law_params = scored[self.law_].params
        self._law_draws = scored[self.law_].draws

    def _unresolved(self) -> bool:
        """True when the fitted curve is at its floor already at the smallest positive budget."""
        positive = [k for k in self.budgets_ if k > 0]
        gap = self.e_base_ - self.e0_
        if not positive or gap <= 0:
            return False
        at_first = _error(self._params, np.array(self.sizes_, dtype=float), float(positive[0]))
        return bool(np.all((at_first - self.e0_) / gap < 0.05))

    def _set_constants(
        self, params: NDArray[np.float64], intervals: Mapping[str, ConfidenceInterval], ll: float
    ) -> None:
        self._params = np.asarray(params, dtype=float)
        self.e0_, self.e_base_, self.k0_, self.c_, self.alpha_ = (float(v) for v in params)
        self.intervals_ = {name: intervals.get(name, _NAN_CI) for name in _PARAMS}
        self.loglik_ = ll

    def _set_half(
        self, params: NDArray[np.float64], intervals: Mapping[str, ConfidenceInterval], ll: float
    ) -> None:
        self._half_params = np.asarray(params, dtype=float)
        self.alpha_half_ = dict(zip(_PARAMS, (float(v) for v in params), strict=True))
        self.alpha_half_intervals_ = {name: intervals.get(name, _NAN_CI) for name in _PARAMS}
        self.alpha_half_loglik_ = ll

    def _degenerate(self, status: Status, verdict: str) -> BudgetPlanner:
        self.status_ = status
        self.verdict_ = verdict
        return self

    def _flat(
        self, status: Status, error: float, verdict: str, *, from_lowest: bool = False
    ) -> BudgetPlanner:
        """A constant-error model: reasoning is not credited with any effect."""
        self._constant = True
        data = self._data
        p = self._p
        params = np.array([error, error, 0.0, math.nan, math.nan])
        intervals: dict[str, ConfidenceInterval] = {}
        if p["n_bootstrap"] > 0 and status not in {"all_correct", "all_wrong"}:
            rng = np.random.default_rng(p["random_state"])
            rows = data.k == data.k.min() if from_lowest else np.ones_like(data.y, dtype=bool)
            draws = np.empty(p["n_bootstrap"])
            for b in range(p["n_bootstrap"]):
                w = rng.multinomial(data.n_items, np.full(data.n_items, 1.0 / data.n_items))
                rw = w[data.item][rows]
                draws[b] = 1.0 - np.sum(rw * data.y[rows]) / max(np.sum(rw), 1e-12)
            ci = _percentile(draws, p["confidence"])
            intervals = {"e0": ci, "e_base": ci}
            self._draws = np.column_stack(
                [draws, draws, np.zeros_like(draws), np.full_like(draws, np.nan), draws * np.nan]
            )
            self.bootstrap_ = pd.DataFrame(self._draws, columns=list(_PARAMS))
        elif status in {"all_correct", "all_wrong"}:
            point = ConfidenceInterval(error, error)
            intervals = {"e0": point, "e_base": point}
        ll = float(np.sum(special.xlogy(data.y, 1 - error) + special.xlogy(1 - data.y, error)))
        self._set_constants(params, intervals, ll)
        self.status_ = status
        if 0 < error < 1:
            verdict += f"; attainable targets: ε ≥ {error:.2f}"
        self.verdict_ = verdict
        return self

    def _bootstrap(
        self,
        data: _Data,
        primary: _Fit,
        half: _Fit,
        fixed_primary: Mapping[int, float],
        fixed: Mapping[int, float],
        k_max: float,
    ) -> None:
        p = self._p
        if p["n_bootstrap"] == 0:
            return
        rng = np.random.default_rng(p["random_state"])
        draws = np.empty((p["n_bootstrap"], 5))
        half_draws = np.empty((p["n_bootstrap"], 5))
        ls_draws = np.empty(p["n_bootstrap"])
        probs = np.full(data.n_items, 1.0 / data.n_items)
        for b in range(p["n_bootstrap"]):
            counts = rng.multinomial(data.n_items, probs).astype(float)
            cells = _cells(data, counts[data.item])
            # One start, at the full-data optimum: a resample's optimum lies near it.
            fit = _maximise(cells, [primary.params], fixed_primary, k_max, ftol=1e-7)
            draws[b] = fit.params
            if half is primary:
                half_draws[b] = fit.params
            else:
                half_draws[b] = _maximise(cells, [half.params], {**fixed, 4: 0.5}, k_max).params
            ls_draws[b] = _c_least_squares(cells)
        self._draws, self._half_draws, self._ls_draws = draws, half_draws, ls_draws
        self.bootstrap_ = pd.DataFrame(draws, columns=list(_PARAMS))
        conf = p["confidence"]
        intervals = {
            name: (
                ConfidenceInterval(primary.params[i], primary.params[i])
                if i in fixed_primary
                else _percentile(draws[:, i], conf)
            )
            for i, name in enumerate(_PARAMS)
        }
        self._widen_at_bounds(intervals, data, fixed_primary, conf)
        self.intervals_ = intervals
        self.alpha_half_intervals_ = {
            name: _percentile(half_draws[:, i], conf) for i, name in enumerate(_PARAMS)
        }
        self.intervals_c_least_squares_ = _percentile(ls_draws, conf)

    def _widen_at_bounds(
        self,
        intervals: dict[str, ConfidenceInterval],
        data: _Data,
        fixed: Mapping[int, float],
        confidence: float,
    ) -> None:
        """Replace percentile intervals that collapsed onto 0 or 1 by exact binomial bounds.

        When some budget had no wrong answers, every resample has none either and the
        bootstrap puts e0 at exactly 0: an interval of zero width that 16 answers cannot
        justify. The floor lies below the true error of every (n, k) cell, so the
        Clopper-Pearson upper bound of the best cell (by items, not rows) bounds e0; likewise
        e_base lies above the true error of every cell.
        """
        cells = _cells(data)
        # Distinct items per cell: repeated samples of one item are not independent answers.
        items_per_cell = (
            pd.DataFrame({"cell": data.cell, "item": data.item})
            .groupby("cell")["item"]
            .nunique()
            .reindex(range(len(data.cell_n)), fill_value=0)
            .to_numpy(dtype=float)
        )[np.bincount(data.cell, minlength=len(data.cell_n)) > 0]
        wrong = cells.trials - cells.successes
        tail = (1.0 - confidence) / 2.0
        ci = intervals["e0"]
        if 0 not in fixed and ci.high - ci.low < 1e-6 and ci.high < 1e-6:
            best = int(np.argmin(wrong / cells.trials))
            m = max(float(items_per_cell[best]), 1.0)
            intervals["e0"] = ConfidenceInterval(0.0, 1.0 - tail ** (1.0 / m))
        ci = intervals["e_base"]
        if 1 not in fixed and ci.high - ci.low < 1e-6 and ci.low > 1.0 - 1e-6:
            worst = int(np.argmax(wrong / cells.trials))
            m = max(float(items_per_cell[worst]), 1.0)
            intervals["e_base"] = ConfidenceInterval(tail ** (1.0 / m), 1.0)

    def _likelihood_ratio(self, free: _Fit, half: _Fit) -> LikelihoodRatioTest:
        p = self._p
        statistic = max(2.0 * (free.loglik - half.loglik), 0.0)
        p_chi2 = float(stats.chi2.sf(statistic, 1))
        alpha_hat = float(free.params[4])
        interval = self.intervals_["alpha"]
        p_boot = math.nan
        if len(self._draws):
            # Invert the percentile interval: twice the share of resampled α on the far side
            # of 1/2. Unlike a Wald test it stays valid when α sits at an end of [0, 2].
            draws = self._draws[:, 4]
            p_boot = min(1.0, 2.0 * float(min(np.mean(draws <= 0.5), np.mean(draws >= 0.5))))
        sig = p["significance"]
        ci_text = (
            f"α = {alpha_hat:.2f} ({p['confidence']:.0%} CI {_fmt(interval.low)} to "
            f"{_fmt(interval.high)})"
        )
        boot_text = (
            f"< {1 / len(self._draws):.2g}" if p_boot == 0 and len(self._draws) else _fmt(p_boot)
        )
        tests = f"likelihood-ratio p = {p_chi2:.2g}, item-bootstrap p {boot_text}"
        if not boot_text.startswith("<"):
            tests = tests.replace("item-bootstrap p ", "item-bootstrap p = ")
        plain_rejects = p_chi2 < sig
        boot_rejects = not math.isnan(p_boot) and p_boot < sig
        if plain_rejects and boot_rejects:
            verdict = f"the √n law does not hold for this task: {ci_text}; {tests}"
        elif plain_rejects or boot_rejects:
            verdict = (
                f"the √n law is in doubt: {ci_text}; {tests} (the tests disagree; the "
                "bootstrap one allows for answers of one item being alike)"
            )
        else:
            verdict = f"consistent with the √n law (α = 1/2): {ci_text}; {tests}"
            if interval.high - interval.low > 1.0:
                verdict += "; but the interval is wide: calibrate over a wider range of n"
        return LikelihoodRatioTest(
            statistic, 1, p_chi2, p_boot, Estimate(alpha_hat, interval), verdict
        )

    def _helps_verdict(self, free_alpha: bool, p: Mapping[str, Any], unresolved: bool) -> str:
        parts = [
            f"reasoning helps: error falls from {self.e_base_:.2f} without reasoning to a floor "
            f"e0 = {self.e0_:.2f}"
        ]
        positive = [k for k in self.budgets_ if k > 0]
        if self.peak_budget_ is not None:
            parts.append(
                f"accuracy peaks at k = {self.peak_budget_} and falls at larger budgets, so the "
                f"curve is fitted on budgets up to {self.peak_budget_} and no cap above it is "
                "recommended"
            )
        if unresolved:
            parts.append(
                f"the budgets are too coarse to resolve the curve: the floor is already reached "
                f"at k = {positive[0]}, so k0, c and α are not identified and k* is known only "
                f"to lie below {positive[0]}; calibrate at smaller budgets"
            )
        elif free_alpha:
            parts.append(f"the budget scale grows as n^{self.alpha_:.2f}")
            if self.alpha_ > _ALPHA_MAX - 0.02:
                parts.append(
                    f"α is at the top of its range ({_ALPHA_MAX:g}): at n = {self.sizes_[-1]} the "
                    f"error fell too little by k = {self.budgets_[-1]} to say how fast the "
                    "budget grows; calibrate larger budgets there"
                )
            elif self.alpha_ < 0.02:
                parts.append("α is at 0: the budget needed does not grow with n here")
        elif p["alpha"] is None:
            parts.append(
                f"one size only (n = {self.sizes_[0]}): too few sizes to fit α; fixed α = 1/2 used"
            )
        else:
            parts.append(f"α fixed at {self.alpha_:g}")
        if self.laws_ is not None:
            parts.append(f"planning law: {self.laws_.selected} ({self.laws_.reason})")
        return "; ".join(parts)

    # -- using the fit ------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "status_"):
            raise NotFittedError(
                "this BudgetPlanner is not fitted yet: call `fit(calibration_frame)` first"
            )
        if self.status_ == "too_few":
            raise InputError(
                f"cannot plan from this calibration: {self.verdict_}", field="calibration"
            )

    def predict_error(self, n: ArrayLike, k: ArrayLike) -> Any:
        """The modelled error rate at size `n` and budget `k` (scalars or broadcastable arrays).

        Returns a float for scalar input, else an array; always within [min, max] of e0 and
        e_base.
        """
        self._check_fitted()
        n_arr = np.asarray(n, dtype=float)
        k_arr = np.asarray(k, dtype=float)
        if np.any(~np.isfinite(n_arr)) or np.any(n_arr <= 0):
            raise InputError("must be positive", field="n")
        if np.any(np.isnan(k_arr)) or np.any(k_arr < 0):
            raise InputError("must be non-negative", field="k")
        if self._constant:
            out = np.full(np.broadcast(n_arr, k_arr).shape, self.e0_)
        elif self.law_ is not None:
            out = np.asarray(self._law.error(self._law_params, n_arr, k_arr), dtype=float)
        else:
            out = _error(self._params, n_arr, k_arr)
        return float(out) if out.ndim == 0 else out

    def budget(self, n: float, eps: float) -> Budget:
        """The reasoning cap for size `n` and target error `eps`, and how it is backed.

        `k_star` is the planning law's point k* with its bootstrap interval; `tokens` is the
        cap to use. At a calibrated size the cap is the certified budget (`certified`: the
        error there is at most `eps` with confidence 1 − delta, whatever the curve's shape)
        when the calibration can certify one, else the law's k* rounded up (the note says how
        many items would certify it). At other sizes (`extrapolated`) the nearest certified
        budget is scaled by the law's k*(n) / k*(n_ref); the note says how far beyond the data
        that reaches. Where reasoning is not credited (flat or harmful) the cap is 0.

        Raises `InfeasibleTargetError` (with `attainable`) when `eps` is at or below the law's
        floor and no calibrated budget certifies it, and `InputError` for `eps` outside (0, 1)
        or a non-positive `n`.
        """
        self._check_fitted()
        n_val = _check_positive(n, "n")
        eps_val = _check_fraction(eps, "eps")
        calibrated = self.status_ != "given" and n_val in self.sizes_
        certificate = (
            self.certified_.at(int(n_val), eps_val)
            if calibrated and self.status_ == "helps" and self.certified_ is not None
            else None
        )
        try:
            budget = self._model_budget(n_val, eps_val)
        except InfeasibleTargetError:
            if certificate is None or not certificate.certified:
                raise
            budget = self._certified_only(n_val, eps_val, certificate)
        if self.status_ != "helps":
            return budget
        return self._with_certificate(budget, certificate)

    def _model_budget(self, n_val: float, eps_val: float) -> Budget:
        log_base = self._p["log_base"]
        law = self._law if self.status_ == "helps" else None
        paper = law is None or law.name in ("paper", "paper-half")
        e0 = self.e0_ if law is None else law.floor(self._law_params)
        if law is None:
            # A flat error is met exactly at ε = e0; the fitted curve only approaches its floor.
            unattainable = eps_val < e0 if self._constant else eps_val <= e0
        else:
            unattainable = not math.isfinite(law.k_star(self._law_params, n_val, eps_val))
        if unattainable:
            if self.status_ == "all_wrong":
                reason = f"no answer was right at any budget up to k = {self.budgets_[-1]}"
            elif self._constant:
                reason = (
                    f"reasoning showed no measurable benefit (error {e0:.3f} at every budget up "
                    f"to k = {self.budgets_[-1]})"
                )
            else:
                reason = f"the error floor of this model on this task is e0 = {e0:.3f}"
                if law is not None:
                    reason += f" (by the {law.name} law)"
            bound = "≥" if self._constant or (law is not None and not paper) else ">"
            attainable = f"; attainable: ε {bound} {e0:.3f}" if e0 < 1 else ""
            raise InfeasibleTargetError(
                f"ε = {eps_val:g} is unattainable: {reason}{attainable}",
                field="eps",
                attainable=e0,
            )
        if self._constant:
            k_star = 0.0
            draws = np.array([0.0 if eps_val >= d[0] else math.inf for d in self._draws])
        elif law is not None:
            k_star = law.k_star(self._law_params, n_val, eps_val)
            draws = np.array([law.k_star(d, n_val, eps_val) for d in self._law_draws])
        else:
            k_star = _k_star(self._params, n_val, eps_val)
            draws = np.array([_k_star(d, n_val, eps_val) for d in self._draws])
        if len(draws):
            ci = _percentile(draws, self._p["confidence"])
        elif self._constant:  # every answer right: nothing left to resample
            ci = ConfidenceInterval(0.0, 0.0)
        else:
            ci = _NAN_CI
        coarse_note = ""
        if self._coarse and paper and k_star > 0:
            # The fitted k* below the first positive budget is an artefact of the optimiser's
            # start; what the data show is that that budget suffices.
            first = float(next(k for k in self.budgets_ if k > 0))
            k_star = first
            ci = ConfidenceInterval(0.0, first if np.all(np.isfinite(draws)) else math.inf)
            coarse_note = (
                f"k* ≤ {first:g}: the error was already at its floor at k = {first:g}, the "
                "smallest calibrated budget above 0"
            )
        scale = LOG_BASES[log_base]
        c_in_base = self.c_ * scale
        baselines: dict[str, float] = {}
        if not self._constant:
            baselines["paper"] = _k_star(self._params, n_val, eps_val)
            baselines["alpha_half"] = _k_star(self._half_params, n_val, eps_val)
            if math.isfinite(self.c_least_squares_):
                baselines["least_squares"] = _k_star_ls(self.c_least_squares_, n_val, eps_val)
        extrapolated, notes = False, [coarse_note] if coarse_note else []
        if self.status_ != "given" and not (self.sizes_[0] <= n_val <= self.sizes_[-1]):
            extrapolated = True
            notes.append(
                f"n = {n_val:g} is outside the calibrated sizes {self.sizes_[0]}–{self.sizes_[-1]}"
            )
        if self.peak_budget_ is not None and k_star > self.peak_budget_:
            extrapolated = True
            notes.append(
                f"k* is beyond k = {self.peak_budget_}, where accuracy peaked: larger budgets "
                "lowered accuracy in calibration"
            )
        elif self.status_ != "given" and k_star > self.budgets_[-1]:
            extrapolated = True
            notes.append(f"k* is beyond the largest calibrated budget ({self.budgets_[-1]})")
        if k_star == 0.0 and not self._constant:
            e_at_0 = float(self.predict_error(n_val, 0.0))
            notes.append(f"ε = {eps_val:g} is met without reasoning (error {e_at_0:.2f} at k = 0)")
        label = BASE_LABEL[log_base]
        if coarse_note:
            formula = f"k* ≤ {k_star:g} (the curve is not resolved below that budget)"
        elif self._constant:
            formula = f"k* = 0 (the error stays at {e0:.3g} whatever the budget)"
        elif law is not None and law.name not in ("paper", "paper-half"):
            formula = _law_formula(law.name, self._law_params, n_val, eps_val)
        else:
            formula = (
                f"k* = {self.k0_:.3g} + {c_in_base:.3g} · {n_val:g}^{self.alpha_:.3g} · "
                f"{label}(({self.e_base_:.3g} − {e0:.3g}) / ({eps_val:g} − {e0:.3g}))"
            )
        return Budget(
            n=n_val,
            eps=eps_val,
            k_star=k_star,
            low=ci.low,
            high=ci.high,
            tokens=math.ceil(k_star - 1e-9),
            log_base=log_base,
            c_in_base=c_in_base,
            formula=formula,
            extrapolated=extrapolated,
            note="; ".join(notes),
            baselines=baselines,
            law="flat" if self._constant else ("paper" if law is None else law.name),
        )

    def _certified_only(self, n_val: float, eps_val: float, cert: CertifiedBudget) -> Budget:
        """A certified budget where the law itself cannot reach ε (the data can)."""
        assert cert.k is not None
        return Budget(
            n=n_val,
            eps=eps_val,
            k_star=float(cert.k),
            low=math.nan,
            high=math.nan,
            tokens=cert.k,
            log_base=self._p["log_base"],
            c_in_base=self.c_ * LOG_BASES[self._p["log_base"]],
            formula=f"the {self.law_} law does not reach ε = {eps_val:g}; the calibration does",
            law=str(self.law_),
        )

    def _with_certificate(self, budget: Budget, cert: CertifiedBudget | None) -> Budget:
        """Attach the certified cap (calibrated size) or the scaled one (elsewhere)."""
        n_val, eps_val = budget.n, budget.eps
        assert self.certified_ is not None
        notes = [budget.note] if budget.note else []
        conf = f"{1 - self._p['delta']:.0%}"
        if cert is not None:
            peak = self.peak_budgets_.get(int(n_val))
            if cert.certified:
                assert cert.k is not None
                basis = (
                    f"certified: error ≤ {cert.error_bound:.3f} at k = {cert.k} with {conf} "
                    f"confidence ({cert.errors} of {cert.items} items wrong)"
                )
                return replace(
                    budget,
                    tokens=cert.k,
                    certified=True,
                    error_bound=cert.error_bound,
                    basis=basis,
                    extrapolated=False,
                    note="; ".join(n for n in notes if not n.startswith("k* is beyond")),
                )
            tokens = budget.tokens
            if peak is not None and tokens > peak:
                tokens = peak
                notes.append(f"capped at the peak k = {peak}: larger budgets lowered accuracy")
            notes.append(cert.note)
            basis = f"the {budget.law} law's k* (not certified)"
            return replace(budget, tokens=tokens, basis=basis, note="; ".join(notes))
        sizes = [s for s in self.certified_.sizes]
        refs = [(s, self.certified_.at(s, eps_val)) for s in sizes]
        certified = [(s, c) for s, c in refs if c.certified and c.k is not None]
        largest, smallest = self.sizes_[-1], self.sizes_[0]
        if n_val > largest:
            reach = f"n = {n_val:g} is {n_val / largest:.2g}× the largest calibrated size {largest}"
        elif n_val < smallest:
            reach = f"n = {n_val:g} is below the smallest calibrated size {smallest}"
        else:
            reach = f"n = {n_val:g} lies between calibrated sizes"
        law = self._law
        low, high = math.nan, math.nan
        if certified and math.isfinite(budget.k_star):
            ref_n, ref = min(certified, key=lambda r: abs(math.log(r[0]) - math.log(n_val)))
            assert ref.k is not None
            k_ref = law.k_star(self._law_params, float(ref_n), eps_val)
            if k_ref > 0 and math.isfinite(k_ref):
                ratio = budget.k_star / k_ref
                tokens = math.ceil(ref.k * ratio - 1e-9)
                ratios = np.array(
                    [
                        law.k_star(d, n_val, eps_val) / law.k_star(d, float(ref_n), eps_val)
                        for d in self._law_draws
                    ]
                )
                ratios = ratios[np.isfinite(ratios)]
                if len(ratios):
                    ci = _percentile(ratios, self._p["confidence"])
                    low, high = ref.k * ci.low, ref.k * ci.high
                basis = (
                    f"extrapolated: the certified k = {ref.k} at n = {ref_n} × the {law.name} "
                    f"law's k*({n_val:g}) / k*({ref_n}) = {ratio:.2f}; {reach}"
                )
            else:
                tokens = max(budget.tokens, ref.k)
                basis = f"extrapolated from the certified k = {ref.k} at n = {ref_n}; {reach}"
        else:
            tokens = budget.tokens
            basis = f"extrapolated by the {law.name} law (no calibrated size certifies ε); {reach}"
        return replace(
            budget,
            tokens=tokens,
            cap_low=low,
            cap_high=high,
            basis=basis,
            extrapolated=True,
            reach=n_val / largest,
        )

    def certify(self, eps: float) -> pd.DataFrame:
        """The certified budget at every calibrated size for target `eps` (one row each; see
        `CertifiedBudget`)."""
        self._check_fitted()
        eps_val = _check_fraction(eps, "eps")
        if self.certified_ is None:
            raise InputError("nothing was calibrated to certify", field="calibration")
        return self.certified_.frame_at(eps_val)

    def optimal(self, n: float, value_of_correct: float, price_per_token: float) -> OptimalBudget:
        """The budget minimising value_of_correct · e(k, n) + price_per_token · k per query.

        `value_of_correct` is what a right answer is worth (what a wrong one costs) and
        `price_per_token` the price of one reasoning token, in the same currency.
        """
        self._check_fitted()
        n_val = _check_positive(n, "n")
        value = _check_positive(value_of_correct, "value_of_correct")
        price = _check_positive(price_per_token, "price_per_token")
        if self._constant:
            k = 0.0
            draws = np.zeros(len(self._draws))
        elif self.law_ is not None and self.law_ not in ("paper", "paper-half"):
            # No closed form for the other laws: search the integer budgets up to twice the
            # largest calibrated one (beyond that the law has no data behind it).
            law, grid = self._law, np.arange(0.0, 2.0 * max(self.budgets_[-1], 1) + 1.0)

            def best(params: NDArray[np.float64]) -> float:
                cost = value * law.error(params, n_val, grid) + price * grid
                return float(grid[int(np.argmin(cost))])

            k = best(self._law_params)
            draws = np.array([best(d) for d in self._law_draws])
        else:
            params = self._law_params if self.law_ is not None else self._params
            k = _optimal_k(params, n_val, value, price)
            pool = self._law_draws if self.law_ is not None else self._draws
            draws = np.array([_optimal_k(d, n_val, value, price) for d in pool])
        ci = _percentile(draws, self._p["confidence"]) if len(draws) else _NAN_CI
        error = float(self.predict_error(n_val, k))
        base = float(self.predict_error(n_val, 0.0))
        return OptimalBudget(
            n=n_val,
            k=int(k),
            low=ci.low,
            high=ci.high,
            expected_error=error,
            expected_cost=value * error + price * k,
            cost_without_reasoning=value * base,
            value_of_correct=value,
            price_per_token=price,
        )

    def observed_errors(self) -> pd.DataFrame:
        """The calibration pooled by (n, k): answers, wrong answers, and the error rate."""
        self._check_fitted()
        if self.status_ == "given":
            return pd.DataFrame(columns=["n", "k", "answers", "wrong", "error"])
        cells = _cells(self._data)
        wrong = cells.trials - cells.successes
        return pd.DataFrame(
            {
                "n": cells.n.astype(int),
                "k": cells.k.astype(int),
                "answers": cells.trials.astype(int),
                "wrong": wrong.astype(int),
                "error": wrong / cells.trials,
            }
        )

    def error_curve(
        self, sizes: Sequence[float] | None = None, budgets: ArrayLike | None = None
    ) -> pd.DataFrame:
        """Modelled error over a grid of budgets for each size, with pointwise bootstrap bands.

        Defaults: the calibrated sizes, and 101 budgets from 0 to 1.25 × the largest calibrated
        budget. Columns n, k, error, low, high (low/high NaN without bootstrap).
        """
        self._check_fitted()
        ns = np.asarray(sizes if sizes is not None else self.sizes_, dtype=float)
        if budgets is None:
            top = 1.25 * self.budgets_[-1] if self.budgets_ else 100.0
            ks = np.linspace(0.0, max(top, 1.0), 101)
        else:
            ks = np.asarray(budgets, dtype=float)
        frames = []
        conf = self._p["confidence"]
        for n in ns:
            error = np.atleast_1d(self.predict_error(n, ks)).astype(float)
            low = np.full_like(error, np.nan)
            high = np.full_like(error, np.nan)
            if self.law_ is not None and not self._constant:
                if len(self._law_draws):
                    grid = np.array([self._law.error(d, n, ks) for d in self._law_draws])
                    tail = 100 * (1 - conf) / 2
                    low, high = np.nanpercentile(grid, [tail, 100 - tail], axis=0)
            elif len(self._draws) and not self._constant:
                grid = np.array([_error(d, n, ks) for d in self._draws])
                tail = 100 * (1 - conf) / 2
                low, high = np.nanpercentile(grid, [tail, 100 - tail], axis=0)
            elif len(self._draws):
                ci = _percentile(self._draws[:, 0], conf)
                low, high = np.full_like(error, ci.low), np.full_like(error, ci.high)
            frames.append(pd.DataFrame({"n": n, "k": ks, "error": error, "low": low, "high": high}))
        return pd.concat(frames, ignore_index=True)

    def budget_table(self, sizes: Sequence[float] | None, eps: float) -> pd.DataFrame:
        """`budget(n, eps)` for several sizes, one row each (see `Budget.to_frame`).

        `sizes` None: the calibrated sizes. Raises like `budget` when `eps` is unattainable.
        """
        self._check_fitted()
        ns = list(sizes) if sizes is not None else list(self.sizes_)
        if not ns:
            raise InputError("give the sizes to plan for", field="sizes")
        return pd.concat([self.budget(n, eps).to_frame() for n in ns], ignore_index=True)

    def report(self) -> PlanReport:
        """What the fit found: constants with intervals, baselines, tests and the verdict."""
        if not hasattr(self, "status_"):
            raise NotFittedError(
                "this BudgetPlanner is not fitted yet: call `fit(calibration_frame)` first"
            )
        p = self._p
        constants = {}
        half = {}
        if self.status_ not in {"too_few"}:
            constants = {
                name: Estimate(float(v), self.intervals_[name])
                for name, v in zip(_PARAMS, self._params, strict=True)
            }
            if not self._constant:
                half = {
                    name: Estimate(self.alpha_half_[name], self.alpha_half_intervals_[name])
                    for name in _PARAMS
                }
        return PlanReport(
            status=self.status_,
            verdict=self.verdict_,
            n_items=self.n_items_,
            n_rows=self.n_rows_,
            sizes=self.sizes_,
            budgets=self.budgets_,
            log_base=p["log_base"],
            constants=constants,
            alpha_half=half,
            c_least_squares=Estimate(self.c_least_squares_, self.intervals_c_least_squares_),
            trend=self.trend_,
            lrt=self.lrt_,
            loglik=self.loglik_,
            laws=self.laws_,
        )

    # -- constants from elsewhere -------------------------------------------------------------

    @classmethod
    def from_constants(
        cls,
        *,
        c: float,
        alpha: float = 0.5,
        e0: float = 0.0,
        k0: float = 0.0,
        e_base: float = 1.0,
        log_base: LogBase | str = "e",
    ) -> BudgetPlanner:
        """A planner with given constants instead of fitted ones (e.g. the paper's c).

        `c` is read in `log_base`, as a paper reports it: `from_constants(c=1.2, log_base="2")`
        plans k* = 1.2 · √n · log2(1/ε). No intervals, tests or calibration ranges.
        """
        planner = cls("paper", log_base=log_base, alpha=alpha, n_bootstrap=0)
        p = planner._validated_params()
        c_nat = _check_positive(c, "c") / LOG_BASES[p["log_base"]]
        if not 0.0 <= e0 < 1.0:
            raise InputError(f"must be in [0, 1), got {e0:g}", field="e0")
        if not e0 < e_base <= 1.0:
            raise InputError(f"must be in (e0, 1], got {e_base:g}", field="e_base")
        if not (k0 >= 0 and math.isfinite(k0)):
            raise InputError(f"must be ≥ 0, got {k0:g}", field="k0")
        planner._p = p
        planner._constant = False
        planner._coarse = False
        planner._set_constants(np.array([e0, e_base, k0, c_nat, float(alpha)]), {}, math.nan)
        planner._set_half(np.array([e0, e_base, k0, c_nat, 0.5]), {}, math.nan)
        planner._draws = np.empty((0, 5))
        planner._half_draws = np.empty((0, 5))
        planner.c_least_squares_ = math.nan
        planner.intervals_c_least_squares_ = _NAN_CI
        planner.bootstrap_ = pd.DataFrame(columns=list(_PARAMS))
        planner.trend_ = None
        planner.lrt_ = None
        planner.n_items_ = 0
        planner.n_rows_ = 0
        planner.sizes_ = ()
        planner.budgets_ = ()
        planner.peak_budget_ = None
        planner.peak_budgets_ = {}
        planner.law_ = None
        planner.laws_ = None
        planner.certified_ = None
        planner.status_ = "given"
        planner.verdict_ = "constants given, not fitted"
        return planner
