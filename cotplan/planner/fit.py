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
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeVar, overload

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from cotplan.errors import InfeasibleTargetError, InputError, NotFittedError
from cotplan.intervals import Interval
from cotplan.planner.budgets import certified_only, model_budget, with_certificate
from cotplan.planner.data import (
    ALPHA_MAX,
    check_log_base,
    percentile_value,
    pooled_cells,
    validate_frame,
)
from cotplan.planner.fitting import constants_fit, fit_planner
from cotplan.planner.law_paper import PARAMS, optimal_k, paper_error
from cotplan.planner.laws import LAW_NAMES
from cotplan.planner.records import (
    LOG_BASES,
    NAN_CI,
    BoundaryTest,
    Budget,
    Estimate,
    LikelihoodRatioTest,
    LogBase,
    OptimalBudget,
    PlanReport,
    Status,
    TrendTest,
)
from cotplan.planner.state import FitSettings, PlannerFit
from cotplan.validation import (
    SHARE,
    SIZE,
    require_int,
    require_positive,
    require_unit,
    validate_params,
)

__all__ = [
    "BoundaryTest",
    "Budget",
    "BudgetPlanner",
    "Estimate",
    "Interval",
    "LikelihoodRatioTest",
    "LogBase",
    "OptimalBudget",
    "PlanReport",
    "Status",
    "TrendTest",
]


_NOT_FITTED = "this BudgetPlanner is not fitted yet: call `fit(calibration_frame)` first"
_T = TypeVar("_T")


class _view(Generic[_T]):
    """A read-only fitted attribute computed from the planner's one record, `state_`."""

    def __init__(self, read: Callable[[PlannerFit], _T]) -> None:
        self._read = read

    @overload
    def __get__(self, planner: None, owner: type) -> _view[_T]: ...
    @overload
    def __get__(self, planner: BudgetPlanner, owner: type) -> _T: ...
    def __get__(self, planner: BudgetPlanner | None, owner: type) -> _view[_T] | _T:
        if planner is None:
            return self
        return self._read(planner._fitted())


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
    Interval), `loglik_`, `alpha_half_` (name -> value for the α = 1/2 fit),
    `alpha_half_loglik_`, `c_least_squares_`, `trend_`, `peak_budget_` (None unless accuracy
    falls after a peak), `lrt_` (None with one size), `status_`, `verdict_`, `bootstrap_` (a
    frame of the resampled constants), `sizes_`, `budgets_`, `n_items_`. Those constants are
    the paper law's (always fitted: the verdict on the √n law is read from them). The law used
    for planning is `law_`; `laws_` (a `LawComparison`) holds every law's fit and held-out
    score (None unless reasoning helps); `certified_` (a `Certification`) the exact evidence per
    calibrated size and budget; `peak_budgets_` the peak per size where accuracy falls after it.
    All of these are read from one frozen record, `state_` (a `PlannerFit`), which holds the
    calibration, every fit and its bootstrap draws.
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

    def check_params(self) -> FitSettings:
        """The parameters, checked (each once per value: a planner checked before its data is
        read is not checked again by `fit`), as the `FitSettings` a fit uses."""
        params = tuple(self.get_params().items())
        checked = vars(self).get("_checked")
        if checked is not None and checked[0] == params:
            settings: FitSettings = checked[1]
            return settings
        settings = self._settings()
        self._checked = (params, settings)
        return settings

    def _settings(self) -> FitSettings:
        if self.law != "auto" and self.law not in LAW_NAMES:
            raise InputError(
                f"must be 'auto' or one of {', '.join(repr(n) for n in LAW_NAMES)}, "
                f"got {self.law!r}",
                field="law",
            )
        delta = require_unit(self.delta, "delta")
        log_base = check_log_base(self.log_base)
        alpha: float | None = None
        if self.alpha != "fit":
            if isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float):
                raise InputError(
                    f"must be 'fit' or a number in [0, 2], got {self.alpha!r}", field="alpha"
                )
            if not 0.0 <= float(self.alpha) <= ALPHA_MAX:
                raise InputError(f"must be in [0, 2], got {self.alpha:g}", field="alpha")
            alpha = float(self.alpha)
        e_base: float | None = None
        if self.e_base != "fit":
            e_base = require_unit(self.e_base, "e_base", closed_high=True)
        counts = {
            name: require_int(getattr(self, name), name, low=low)
            for name, low in (("n_bootstrap", 0), ("min_items", 2), ("folds", 2))
        }
        confidence = require_unit(self.confidence, "confidence")
        significance = require_unit(self.significance, "significance")
        if isinstance(self.random_state, bool) or not isinstance(self.random_state, int):
            raise InputError(
                f"must be an integer seed, got {self.random_state!r}", field="random_state"
            )
        return FitSettings(
            law=self.law,
            delta=delta,
            log_base=log_base,
            alpha=alpha,
            e_base=e_base,
            n_bootstrap=counts["n_bootstrap"],
            min_items=counts["min_items"],
            folds=counts["folds"],
            confidence=confidence,
            significance=significance,
            random_state=self.random_state,
        )

    # -- fitting ------------------------------------------------------------------------------

    def fit(self, calibration: pd.DataFrame | Any) -> BudgetPlanner:
        """Fit the constants on a calibration frame (columns item, n, k, correct); returns self.

        Other columns are ignored. `k` is the budget CAP each answer was given. Degenerate
        calibrations (too few items, one budget, every answer right or wrong, no rise in
        accuracy) do not raise: `status_` and `verdict_` say what can and cannot be planned.
        """
        settings = self.check_params()
        data = validate_frame(calibration)
        self._assign(fit_planner(settings, data))
        return self

    def _assign(self, state: PlannerFit) -> None:
        self.state_ = state

    # The fitted attributes, scikit-learn style, are views of the one record `state_` (a frozen
    # `PlannerFit`): the planner holds its state once. Before `fit` each raises
    # `NotFittedError` (an AttributeError, so `hasattr(planner, "c_")` is False); dicts are
    # copies, so a caller who edits one does not edit the record the planner plans from.
    e0_ = _view(lambda fit: float(fit.constants.params[0]))
    e_base_ = _view(lambda fit: float(fit.constants.params[1]))
    k0_ = _view(lambda fit: float(fit.constants.params[2]))
    c_ = _view(lambda fit: float(fit.constants.params[3]))
    alpha_ = _view(lambda fit: float(fit.constants.params[4]))
    intervals_ = _view(lambda fit: dict(fit.constants.intervals))
    loglik_ = _view(lambda fit: fit.constants.loglik)
    alpha_half_ = _view(lambda fit: fit.alpha_half.named())
    alpha_half_intervals_ = _view(lambda fit: dict(fit.alpha_half.intervals))
    alpha_half_loglik_ = _view(lambda fit: fit.alpha_half.loglik)
    c_least_squares_ = _view(lambda fit: fit.c_least_squares)
    intervals_c_least_squares_ = _view(lambda fit: fit.intervals_c_least_squares)
    bootstrap_ = _view(lambda fit: fit.bootstrap_frame())
    trend_ = _view(lambda fit: fit.trend)
    lrt_ = _view(lambda fit: fit.lrt)
    growth_ = _view(lambda fit: fit.growth)
    n_items_ = _view(lambda fit: fit.n_items)
    n_rows_ = _view(lambda fit: fit.n_rows)
    sizes_ = _view(lambda fit: fit.sizes)
    budgets_ = _view(lambda fit: fit.budgets)
    peak_budget_ = _view(lambda fit: fit.peak_budget)
    peak_budgets_ = _view(lambda fit: dict(fit.peak_budgets))
    law_ = _view(lambda fit: fit.law_name)
    laws_ = _view(lambda fit: fit.laws)
    certified_ = _view(lambda fit: fit.certified)
    status_ = _view(lambda fit: fit.status)
    verdict_ = _view(lambda fit: fit.verdict)

    @property
    def mle_(self) -> dict[str, float]:
        """The unconstrained maximum-likelihood constants, where the fit kept them."""
        mle = self._fitted().mle
        if mle is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'mle_'")
        return dict(mle)

    def _fitted(self) -> PlannerFit:
        state: PlannerFit | None = vars(self).get("state_")
        if state is None:
            raise NotFittedError(_NOT_FITTED)
        return state

    def _check_fitted(self) -> PlannerFit:
        """The fitted record, where it can plan (not too few items or budgets)."""
        state = self._fitted()
        if state.status == "too_few":
            raise InputError(
                f"cannot plan from this calibration: {state.verdict}", field="calibration"
            )
        return state

    def predict_error(self, n: ArrayLike, k: ArrayLike) -> Any:
        """The modelled error rate at size `n` and budget `k` (scalars or broadcastable arrays).

        Returns a float for scalar input, else an array; always within [min, max] of e0 and
        e_base.
        """
        state = self._check_fitted()
        n_arr = np.asarray(n, dtype=float)
        k_arr = np.asarray(k, dtype=float)
        if np.any(~np.isfinite(n_arr)) or np.any(n_arr <= 0):
            raise InputError("must be positive", field="n")
        if np.any(np.isnan(k_arr)) or np.any(k_arr < 0):
            raise InputError("must be non-negative", field="k")
        out = state.error(n_arr, k_arr)
        return float(out) if out.ndim == 0 else out

    @validate_params(n=SIZE, eps=SHARE)
    def budget(self, n: float, eps: float) -> Budget:
        """The reasoning cap for size `n` and target error `eps`, and how it is backed.

        `k_star` is the planning law's point k* with its bootstrap interval; `tokens` is the
        cap to use. At a calibrated size the cap is the certified budget (`certified`: the
        error there is at most `eps` with confidence 1 − delta, whatever the curve's shape)
        when the calibration can certify one, else the upper end of the law's k* interval
        (the conservative end: the point k* misses ε about half the time; the note says how
        many items would certify it). At other sizes (`extrapolated`) the nearest certified
        budget is scaled by the law's k*(n) / k*(n_ref); the note says how far beyond the data
        that reaches. Where reasoning is not credited (flat or harmful) the cap is 0.

        Raises `InfeasibleTargetError` (with `attainable`) when `eps` is at or below the law's
        floor and no calibrated budget certifies it, and `InputError` for `eps` outside (0, 1)
        or a non-positive `n`.
        """
        state = self._check_fitted()
        n_val, eps_val = float(n), float(eps)
        calibrated = state.status != "given" and n_val in state.sizes
        certificate = (
            state.certified.at(int(n_val), eps_val)
            if calibrated and state.status == "helps" and state.certified is not None
            else None
        )
        try:
            budget = model_budget(state, n_val, eps_val)
        except InfeasibleTargetError:
            if certificate is None or not certificate.certified:
                raise
            budget = certified_only(state, n_val, eps_val, certificate)
        if state.status != "helps":
            return budget
        return with_certificate(state, budget, certificate)

    @validate_params(eps=SHARE)
    def certify(self, eps: float) -> pd.DataFrame:
        """The certified budget at every calibrated size for target `eps` (one row each; see
        `CertifiedBudget`)."""
        state = self._check_fitted()
        eps_val = float(eps)
        if state.certified is None:
            raise InputError("nothing was calibrated to certify", field="calibration")
        return state.certified.frame_at(eps_val)

    @validate_params(n=SIZE)
    def optimal(self, n: float, value_of_correct: float, price_per_token: float) -> OptimalBudget:
        """The budget minimising value_of_correct · e(k, n) + price_per_token · k per query.

        `value_of_correct` is what a right answer is worth (what a wrong one costs) and
        `price_per_token` the price of one reasoning token, in the same currency.
        """
        state = self._check_fitted()
        n_val = float(n)
        value = require_positive(value_of_correct, "value_of_correct")
        price = require_positive(price_per_token, "price_per_token")
        choice = state.law
        if state.constant:
            k = 0.0
            draws = np.zeros(len(state.draws))
        elif choice is not None and choice.law.name not in ("paper", "paper-half"):
            # No closed form for the other laws: search the integer budgets up to twice the
            # largest calibrated one (beyond that the law has no data behind it).
            law, grid = choice.law, np.arange(0.0, 2.0 * max(state.budgets[-1], 1) + 1.0)

            def best(params: NDArray[np.float64]) -> float:
                cost = value * law.error(params, n_val, grid) + price * grid
                return float(grid[int(np.argmin(cost))])

            k = best(choice.params)
            draws = np.array([best(d) for d in choice.draws])
        else:
            params = choice.params if choice is not None else state.constants.params
            k = optimal_k(params, n_val, value, price)
            pool = choice.draws if choice is not None else state.draws
            draws = np.array([optimal_k(d, n_val, value, price) for d in pool])
        ci = percentile_value(draws, state.settings.confidence) if len(draws) else NAN_CI
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
        state = self._check_fitted()
        if state.status == "given":
            return pd.DataFrame(columns=["n", "k", "answers", "wrong", "error"])
        assert state.data is not None, "only given constants come without data"
        cells = pooled_cells(state.data)
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
        state = self._check_fitted()
        ns = np.asarray(sizes if sizes is not None else state.sizes, dtype=float)
        if budgets is None:
            top = 1.25 * state.budgets[-1] if state.budgets else 100.0
            ks = np.linspace(0.0, max(top, 1.0), 101)
        else:
            ks = np.asarray(budgets, dtype=float)
        frames = []
        conf = state.settings.confidence
        for n in ns:
            error = np.atleast_1d(self.predict_error(n, ks)).astype(float)
            low = np.full_like(error, np.nan)
            high = np.full_like(error, np.nan)
            if state.law is not None and not state.constant:
                if len(state.law.draws):
                    law = state.law.law
                    grid = np.array([law.error(d, n, ks) for d in state.law.draws])
                    tail = 100 * (1 - conf) / 2
                    low, high = np.nanpercentile(grid, [tail, 100 - tail], axis=0)
            elif len(state.draws) and not state.constant:
                grid = np.array([paper_error(d, n, ks) for d in state.draws])
                tail = 100 * (1 - conf) / 2
                low, high = np.nanpercentile(grid, [tail, 100 - tail], axis=0)
            elif len(state.draws):
                ci = percentile_value(state.draws[:, 0], conf)
                low, high = np.full_like(error, ci.low), np.full_like(error, ci.high)
            frames.append(pd.DataFrame({"n": n, "k": ks, "error": error, "low": low, "high": high}))
        return pd.concat(frames, ignore_index=True)

    def budget_table(self, sizes: Sequence[float] | None, eps: float) -> pd.DataFrame:
        """`budget(n, eps)` for several sizes, one row each (see `Budget.to_frame`).

        `sizes` None: the calibrated sizes. Raises like `budget` when `eps` is unattainable.
        """
        state = self._check_fitted()
        ns = list(sizes) if sizes is not None else list(state.sizes)
        if not ns:
            raise InputError("give the sizes to plan for", field="sizes")
        return pd.concat([self.budget(n, eps).to_frame() for n in ns], ignore_index=True)

    def report(self) -> PlanReport:
        """What the fit found: constants with intervals, baselines, tests and the verdict."""
        state = self._fitted()
        constants = {}
        half = {}
        if state.status not in {"too_few"}:
            constants = {
                name: Estimate(float(v), state.constants.intervals[name])
                for name, v in zip(PARAMS, state.constants.params, strict=True)
            }
            if not state.constant:
                named = state.alpha_half.named()
                half = {
                    name: Estimate(named[name], state.alpha_half.intervals[name]) for name in PARAMS
                }
        return PlanReport(
            status=state.status,
            verdict=state.verdict,
            n_items=state.n_items,
            n_rows=state.n_rows,
            sizes=state.sizes,
            budgets=state.budgets,
            log_base=state.settings.log_base,
            constants=constants,
            alpha_half=half,
            c_least_squares=Estimate(state.c_least_squares, state.intervals_c_least_squares),
            trend=state.trend,
            lrt=state.lrt,
            loglik=state.constants.loglik,
            laws=state.laws,
            growth=state.growth,
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
        settings = planner.check_params()
        c_nat = require_positive(c, "c") / LOG_BASES[settings.log_base]
        if not 0.0 <= e0 < 1.0:
            raise InputError(f"must be in [0, 1), got {e0:g}", field="e0")
        if not e0 < e_base <= 1.0:
            raise InputError(f"must be in (e0, 1], got {e_base:g}", field="e_base")
        if not (k0 >= 0 and math.isfinite(k0)):
            raise InputError(f"must be ≥ 0, got {k0:g}", field="k0")
        planner._assign(constants_fit(settings, (e0, e_base, k0, c_nat, float(alpha))))
        return planner
