"""The steps of `BudgetPlanner.fit`, as functions from the data to a `PlannerFit`.

`fit_planner` runs them in order: describe the calibration; stop at a degenerate one (too few
items or budgets, every answer right or wrong); cut each size at a peak before a significant
fall; fit the paper law (α free and α = 1/2); stop where accuracy does not rise (flat or
harmful reasoning); otherwise bootstrap the paper law, test α, score the other laws and say
the verdict. Each step returns a new record (`dataclasses.replace`), so nothing is half-set
when a step stops early. `constants_fit` is the record of constants given instead of fitted.
The module docstring of `cotplan.planner.fit` explains the statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from cotplan.intervals import Interval
from cotplan.planner.certify import Certification
from cotplan.planner.data import Cells, Data, percentile_value, pooled_cells, subset
from cotplan.planner.evidence import (
    growth_test,
    helps_verdict,
    likelihood_ratio,
    peaks_per_size,
    trend_test,
)
from cotplan.planner.law_paper import (
    PARAMS,
    Fit,
    maximise,
    maximise_all,
    paper_basins,
    paper_bootstrap,
    paper_c_least_squares,
    paper_error,
    paper_starts,
)
from cotplan.planner.laws import compare_laws, make_laws, score_laws
from cotplan.planner.records import NAN_CI, Status, TrendTest
from cotplan.planner.state import FitSettings, LawChoice, PaperConstants, PlannerFit

__all__ = ["constants_fit", "fit_planner"]

_NAN_PARAMS = (math.nan,) * 5


def fit_planner(settings: FitSettings, data: Data) -> PlannerFit:
    """The whole fit of a validated calibration, with its certificate."""
    fit = _fit_paper(settings, data)
    # The certificate reads the calibration itself (up to each size's peak), whatever law was
    # chosen and whether or not reasoning was credited.
    return replace(fit, certified=Certification.from_data(data, settings.delta, fit.peak_budgets))


def constants_fit(
    settings: FitSettings, params: tuple[float, float, float, float, float]
) -> PlannerFit:
    """The record of constants given (e0, e_base, k0, natural c, α): no data, intervals,
    tests or calibration ranges; the α = 1/2 baseline shares every other constant."""
    half = (*params[:4], 0.5)
    return PlannerFit(
        settings=settings,
        status="given",
        verdict="constants given, not fitted",
        data=None,
        n_items=0,
        n_rows=0,
        sizes=(),
        budgets=(),
        constants=PaperConstants.of(params),
        alpha_half=PaperConstants.of(half),
        # Given constants never had a maximum-likelihood fit: `mle_` stays unset.
        mle=None,
    )


def _fit_paper(settings: FitSettings, data: Data) -> PlannerFit:
    """The paper law, the tests and the status; then the other laws where reasoning helps."""
    p = settings
    start = _described(settings, data)
    if data.n_items < p.min_items:
        verdict = (
            f"too few items to fit: {data.n_items} (at least {p.min_items} needed; "
            "`min_items` sets this)"
        )
        return replace(start, status="too_few", verdict=verdict)
    if len(start.budgets) < 2:
        verdict = (
            f"one budget only (k = {start.budgets[0]}): nothing shows what reasoning buys; "
            "calibrate at several budgets, including 0"
        )
        return replace(start, status="too_few", verdict=verdict)
    accuracy = float(data.y.mean())
    start = replace(start, trend=trend_test(data))
    if accuracy == 1.0:
        # Answers of one item at several budgets are not independent: count items.
        upper = 1.0 - (1.0 - p.confidence) ** (1.0 / data.n_items)
        return _flat(
            start,
            data,
            "all_correct",
            0.0,
            f"no measurable benefit from reasoning: k* = 0 (all {len(data.y)} answers were "
            f"right at every budget from k = {start.budgets[0]}; error ≤ {upper:.2g} at "
            f"{p.confidence:.0%} confidence)",
        )
    if accuracy == 0.0:
        return _flat(
            start,
            data,
            "all_wrong",
            1.0,
            f"no answer was right at any budget up to k = {start.budgets[-1]}: the floor e0 = 1 "
            "makes every target ε < 1 unattainable with this model at these budgets",
        )
    start, used = _cut_at_peaks(start, data)
    k_max = start.peak_budget if start.peak_budget is not None else start.budgets[-1]
    cells = pooled_cells(used)
    pair = _paper_pair(settings, cells, len(start.sizes), k_max)
    start = replace(
        start,
        mle=dict(zip(PARAMS, (float(v) for v in pair.primary.params), strict=True)),
        c_least_squares=paper_c_least_squares(cells),
    )
    trend = start.trend
    assert trend is not None
    if trend.p_value >= p.significance:
        return _no_rise(start, data, used, trend, accuracy=accuracy, k_max=k_max)
    return _helps(start, used, cells, pair, k_max)


def _described(settings: FitSettings, data: Data) -> PlannerFit:
    """What the calibration holds, every constant NaN: the record the steps below fill in.
    Its status is a placeholder that every path out of `_fit_paper` replaces."""
    return PlannerFit(
        settings=settings,
        status="too_few",
        verdict="",
        data=data,
        n_items=data.n_items,
        n_rows=len(data.y),
        sizes=tuple(int(v) for v in np.unique(data.n)),
        budgets=tuple(int(v) for v in np.unique(data.k)),
        constants=PaperConstants.of(_NAN_PARAMS),
        alpha_half=PaperConstants.of(_NAN_PARAMS),
    )


def _flat(
    fit: PlannerFit,
    data: Data,
    status: Status,
    error: float,
    verdict: str,
    *,
    from_lowest: bool = False,
) -> PlannerFit:
    """A constant-error model: reasoning is not credited with any effect."""
    p = fit.settings
    params = np.array([error, error, 0.0, math.nan, math.nan])
    intervals: dict[str, Interval] = {}
    draws = fit.draws
    if p.n_bootstrap > 0 and status not in {"all_correct", "all_wrong"}:
        rng = np.random.default_rng(p.random_state)
        rows = data.k == data.k.min() if from_lowest else np.ones_like(data.y, dtype=bool)
        errors = np.empty(p.n_bootstrap)
        for b in range(p.n_bootstrap):
            w = rng.multinomial(data.n_items, np.full(data.n_items, 1.0 / data.n_items))
            rw = w[data.item][rows]
            errors[b] = 1.0 - np.sum(rw * data.y[rows]) / max(np.sum(rw), 1e-12)
        ci = percentile_value(errors, p.confidence)
        intervals = {"e0": ci, "e_base": ci}
        draws = np.column_stack(
            [errors, errors, np.zeros_like(errors), np.full_like(errors, np.nan), errors * np.nan]
        )
    elif status in {"all_correct", "all_wrong"}:
        point = Interval(error, error)
        intervals = {"e0": point, "e_base": point}
    ll = float(np.sum(special.xlogy(data.y, 1 - error) + special.xlogy(1 - data.y, error)))
    if 0 < error < 1:
        verdict += f"; attainable targets: ε ≥ {error:.2f}"
    return replace(
        fit,
        status=status,
        verdict=verdict,
        constant=True,
        constants=PaperConstants.of(params, intervals, ll),
        draws=draws,
    )


def _cut_at_peaks(fit: PlannerFit, data: Data) -> tuple[PlannerFit, Data]:
    """Where accuracy peaks and then falls significantly at some sizes, and the rise up to
    the peaks is significant too: the peaks, the trend test of that rise, and the data up to
    the peaks (the curve is fitted there). Otherwise `fit` and `data` unchanged."""
    significance = fit.settings.significance
    peaks = peaks_per_size(data, significance)
    if not peaks:
        return fit, data
    keep = np.ones(len(data.y), dtype=bool)
    for size, (peak_k, _) in peaks.items():
        keep &= ~((data.n == size) & (data.k > peak_k))
    up_to_peak = subset(data, keep)
    rise = trend_test(up_to_peak)
    # The peaks were chosen by looking at the data: the rise up to them is judged with a
    # Bonferroni factor for the budgets they could have been.
    candidates = sum(len(np.unique(data.k[data.n == size])) - 1 for size in peaks)
    p_rise = min(1.0, rise.p_value * candidates)
    if p_rise >= significance:
        return fit, data
    peak_budgets = {size: peak_k for size, (peak_k, _) in peaks.items()}
    where = ", ".join(f"k = {k} (n = {size})" for size, k in peak_budgets.items())
    falls = "; ".join(fall.verdict.removeprefix("trend test ") for _, fall in peaks.values())
    trend = TrendTest(
        rise.statistic,
        p_rise,
        rise.p_value_decrease,
        f"{rise.verdict} (budgets up to the peak {where}; the p for a rise is "
        f"×{candidates} for choosing the peak); beyond the peak accuracy falls: {falls}",
    )
    cut = replace(
        fit, trend=trend, peak_budgets=peak_budgets, peak_budget=max(peak_budgets.values())
    )
    return cut, up_to_peak


@dataclass(frozen=True)
class _PaperPair:
    """The paper law fitted with α free (or fixed as asked) and with α = 1/2, every start's
    optimum best first, and which constants were held fixed in each."""

    primary_fits: list[Fit]
    half_fits: list[Fit]
    fixed: dict[int, float]  # held in both fits (e_base when given)
    fixed_primary: dict[int, float]  # held in the primary fit (and α unless it is free)
    free_alpha: bool

    @property
    def primary(self) -> Fit:
        return self.primary_fits[0]

    @property
    def half(self) -> Fit:
        return self.half_fits[0]


def _paper_pair(settings: FitSettings, cells: Cells, n_sizes: int, k_max: float) -> _PaperPair:
    free_alpha = settings.alpha is None and n_sizes >= 2
    alpha_fixed = settings.alpha if settings.alpha is not None else 0.5
    fixed: dict[int, float] = {}
    if settings.e_base is not None:
        fixed[1] = settings.e_base
    fixed_primary = dict(fixed) if free_alpha else {**fixed, 4: alpha_fixed}
    starts = paper_starts(cells, free_alpha=free_alpha, alpha=alpha_fixed)
    primary_fits = maximise_all(cells, starts, fixed_primary, k_max)
    half_fits = (
        primary_fits
        if not free_alpha and alpha_fixed == 0.5
        else maximise_all(cells, [*starts, primary_fits[0].params], {**fixed, 4: 0.5}, k_max)
    )
    return _PaperPair(primary_fits, half_fits, fixed, fixed_primary, free_alpha)


def _no_rise(
    fit: PlannerFit, data: Data, used: Data, trend: TrendTest, *, accuracy: float, k_max: int
) -> PlannerFit:
    """Accuracy does not rise significantly with the budget: it falls (reasoning hurts) or
    stays flat. `data` is the whole calibration, `used` the part the curve would be fitted on."""
    significance = fit.settings.significance
    if trend.p_value_decrease < significance:
        lowest = used.k == used.k.min()
        e_first = 1.0 - float(used.y[lowest].mean())
        return _flat(
            fit,
            data,
            "hurts",
            e_first,
            f"reasoning hurts: accuracy falls as the budget grows (trend test p = "
            f"{trend.p_value_decrease:.2g}); k* = 0, error {e_first:.2f} at the smallest "
            f"budget k = {fit.budgets[0]}",
            from_lowest=True,
        )
    pooled = 1.0 - accuracy
    return _flat(
        fit,
        data,
        "no_benefit",
        pooled,
        f"no measurable benefit from reasoning: k* = 0 (error {pooled:.2f} at every "
        f"budget up to k = {k_max}; trend test p = {trend.p_value:.2g} for a rise)",
    )


def _helps(fit: PlannerFit, used: Data, cells: Cells, pair: _PaperPair, k_max: int) -> PlannerFit:
    """Reasoning helps: the paper law's constants and bootstrap, the tests of α, every law
    scored, and the verdict."""
    p = fit.settings
    primary, half = pair.primary, pair.half
    fit = replace(
        fit,
        status="helps",
        constants=PaperConstants.of(primary.params, {}, primary.loglik),
        alpha_half=PaperConstants.of(half.params, {}, half.loglik),
    )
    fit = _bootstrapped(fit, used, pair, k_max)
    unresolved = _unresolved(fit)
    if unresolved:
        fit = _without_shape_intervals(fit, pair.fixed_primary)
    fit = replace(fit, coarse=unresolved)
    if pair.free_alpha and not unresolved:
        lrt = likelihood_ratio(
            primary,
            half,
            fit.constants.intervals["alpha"],
            fit.draws,
            significance=p.significance,
            confidence=p.confidence,
        )
        flat = maximise(
            cells,
            [*paper_starts(cells, free_alpha=False, alpha=0.0), primary.params],
            {**pair.fixed, 4: 0.0},
            k_max,
        )
        fit = replace(fit, lrt=lrt, growth=growth_test(primary, flat, p.significance))
    fit = _with_laws(fit, used, primary, half)
    verdict = helps_verdict(fit, pair.free_alpha, unresolved, top_error=_top_error(used))
    return replace(fit, verdict=verdict)


def _top_error(data: Data) -> tuple[float, float, float]:
    """(n, k, observed error) at the largest size's largest budget: whether the calibration
    already reached the floor there decides what a bound α can be blamed on."""
    at_n = data.n == data.n.max()
    k_top = float(data.k[at_n].max())
    rows = at_n & (data.k == k_top)
    return float(data.n.max()), k_top, float(1.0 - data.y[rows].mean())


def _bootstrapped(fit: PlannerFit, used: Data, pair: _PaperPair, k_max: int) -> PlannerFit:
    """The item bootstrap's draws and intervals of both paper fits (none without resamples)."""
    p = fit.settings
    boot = paper_bootstrap(
        used,
        pair.primary,
        pair.half,
        pair.fixed_primary,
        pair.fixed,
        k_max=k_max,
        n_bootstrap=p.n_bootstrap,
        seed=p.random_state,
        confidence=p.confidence,
        basins=paper_basins(pair.primary_fits, k_max),
        half_basins=paper_basins(pair.half_fits, k_max),
    )
    if boot is None:
        return fit
    return replace(
        fit,
        draws=boot.draws,
        half_draws=boot.half_draws,
        ls_draws=boot.ls_draws,
        constants=replace(fit.constants, intervals=boot.intervals),
        alpha_half=replace(fit.alpha_half, intervals=boot.half_intervals),
        intervals_c_least_squares=boot.ls_interval,
    )


def _unresolved(fit: PlannerFit) -> bool:
    """True when the fitted curve is at its floor already at the smallest positive budget."""
    positive = [k for k in fit.budgets if k > 0]
    gap = fit.e_base - fit.e0
    if not positive or gap <= 0:
        return False
    at_first = paper_error(
        fit.constants.params, np.array(fit.sizes, dtype=float), float(positive[0])
    )
    return bool(np.all((at_first - fit.e0) / gap < 0.05))


def _without_shape_intervals(fit: PlannerFit, fixed_primary: dict[int, float]) -> PlannerFit:
    """NaN intervals for the curve's shape where the data do not resolve it: a step before
    the first positive budget fits any small c, any k0 below that budget and any α, so the
    bootstrap would only echo the optimiser's start."""
    intervals = dict(fit.constants.intervals)
    for name in ("k0", "c", "alpha"):
        if PARAMS.index(name) not in fixed_primary:
            intervals[name] = NAN_CI
    half_intervals = dict(fit.alpha_half.intervals)
    for name in ("k0", "c"):
        half_intervals[name] = NAN_CI
    return replace(
        fit,
        constants=replace(fit.constants, intervals=intervals),
        alpha_half=replace(fit.alpha_half, intervals=half_intervals),
    )


def _with_laws(fit: PlannerFit, used: Data, primary: Fit, half: Fit) -> PlannerFit:
    """Every law, scored on held-out item folds; the one asked for or chosen."""
    p = fit.settings
    laws = make_laws(one_size=len(fit.sizes) < 2, alpha=p.alpha, e_base=p.e_base)
    scored = score_laws(
        used,
        laws,
        folds=min(p.folds, used.n_items),
        n_bootstrap=p.n_bootstrap,
        seed=p.random_state,
        given={
            "paper": (primary.params, primary.loglik),
            "paper-half": (half.params, half.loglik),
        },
        given_draws={"paper": fit.draws, "paper-half": fit.half_draws},
        # A law asked for by name needs its own intervals only; "auto" shows them all.
        bootstrap_laws=None if p.law == "auto" else {p.law},
    )
    comparison = compare_laws(
        scored,
        laws,
        asked=p.law,
        confidence=p.confidence,
        alpha_verdict=fit.lrt.verdict if fit.lrt is not None else None,
    )
    chosen = scored[comparison.selected]
    return replace(
        fit,
        laws=comparison,
        law=LawChoice(laws[comparison.selected], chosen.params, chosen.draws),
    )
