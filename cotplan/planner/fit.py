"""`BudgetPlanner`: fit how a model's error falls with its reasoning budget, and plan budgets.

In short
--------
1. The paper's law (below) is always fitted: its constants, the trend test, the peak per size
   and the verdict on the √n law come from it.
2. Where reasoning helps, every law in `cotplan.planner.laws` (the paper's with α free and
   α = 1/2, a logistic and a step located at a · n^β, a shape-free monotone curve) is scored
   on held-out items; `law="auto"` keeps the paper's law unless another beats it by more than
   the fold-to-fold standard error (`laws_`, `law_`).
3. `certified_` holds the exact evidence per calibrated size and budget; `budget(n, eps)`
   returns the certified cap at a calibrated size (error ≤ ε with confidence 1 − delta, any
   curve shape) and the law-scaled cap elsewhere (`cotplan.planner.budgets`).

The paper's law
---------------
For an item of size n answered after at most k reasoning tokens, the probability of a wrong
answer is modelled as

    e(k, n) = e0 + (e_base − e0) · exp(−max(k − k0, 0) / (c · n^α))

- `e0`, the floor: the error no budget removes (the model simply cannot do some items);
- `e_base`, the error without useful reasoning (k ≤ k0). The paper-derived form has
  e_base = 1; that cannot describe a task the model sometimes answers right with no reasoning at
  all (a yes/no question is right half the time by chance), and one such answer at k = 0 would
  make the likelihood zero. So e_base is fitted by default; `e_base=1.0` restores that form;
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
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from cotplan.errors import InfeasibleTargetError, InputError, NotFittedError
from cotplan.planner.budgets import certified_only, model_budget, with_certificate
from cotplan.planner.certify import Certification
from cotplan.planner.data import (
    _ALPHA_MAX,
    _cells,
    _check_fraction,
    _check_log_base,
    _check_positive,
    _Data,
    _percentile,
    _subset,
    _validate_frame,
)
from cotplan.planner.evidence import (
    _peaks_per_size,
    _trend_test,
    growth_test,
    helps_verdict,
    likelihood_ratio,
)
from cotplan.planner.law_paper import (
    _PARAMS,
    _basins,
    _c_least_squares,
    _error,
    _Fit,
    _maximise,
    _maximise_all,
    _optimal_k,
    _paper_starts,
    paper_bootstrap,
)
from cotplan.planner.laws import LAW_NAMES, compare_laws, make_laws, score_laws
from cotplan.planner.records import (
    _NAN_CI,
    LOG_BASES,
    BoundaryTest,
    Budget,
    ConfidenceInterval,
    Estimate,
    LawComparison,
    LikelihoodRatioTest,
    LogBase,
    OptimalBudget,
    PlanReport,
    Status,
    TrendTest,
)
from cotplan.validation import require_int

__all__ = [
    "BoundaryTest",
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
    e_base : "fit", or the error without reasoning fixed (1.0 is the paper-derived form; 0.5
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
            checked[name] = require_int(getattr(self, name), name, low=low)
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
        self.growth_: BoundaryTest | None = None
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
        primary_fits = _maximise_all(cells, starts, fixed_primary, k_max)
        primary = primary_fits[0]
        half_fits = (
            primary_fits
            if not free_alpha and alpha_fixed == 0.5
            else _maximise_all(cells, [*starts, primary.params], {**fixed, 4: 0.5}, k_max)
        )
        half = half_fits[0]
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
        paper_bootstrap(
            self,
            data,
            primary,
            half,
            fixed_primary,
            fixed,
            k_max,
            basins=_basins(primary_fits, k_max),
            half_basins=_basins(half_fits, k_max),
        )
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
            self.lrt_ = likelihood_ratio(self, primary, half)
            flat = _maximise(
                cells,
                [*_paper_starts(cells, free_alpha=False, alpha=0.0), primary.params],
                {**fixed, 4: 0.0},
                k_max,
            )
            self.growth_ = growth_test(primary, flat, p["significance"])
        self._fit_laws(p, data, primary, half)
        self.verdict_ = helps_verdict(self, free_alpha, p, unresolved)
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
            # A law asked for by name needs its own intervals only; "auto" shows them all.
            bootstrap_laws=None if p["law"] == "auto" else {p["law"]},
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
            budget = model_budget(self, n_val, eps_val)
        except InfeasibleTargetError:
            if certificate is None or not certificate.certified:
                raise
            budget = certified_only(self, n_val, eps_val, certificate)
        if self.status_ != "helps":
            return budget
        return with_certificate(self, budget, certificate)

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
            growth=self.growth_,
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
        planner.growth_ = None
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
