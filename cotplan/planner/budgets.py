"""Turning the fitted laws and the certificate into the cap for one size and ε.

`model_budget` solves the planning law for k* (with its bootstrap interval and the baselines);
`with_certificate` replaces the cap by the certified budget at a calibrated size, or scales the
nearest certified budget by the law elsewhere (marked as extrapolation, with how far it
reaches); `certified_only` covers a target the law cannot reach but the calibration certifies.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from cotplan.errors import InfeasibleTargetError
from cotplan.intervals import Interval
from cotplan.planner.data import percentile_value
from cotplan.planner.law_paper import k_star_ls, paper_k_star
from cotplan.planner.records import (
    BASE_LABEL,
    LOG_BASES,
    NAN_CI,
    Budget,
    CertifiedBudget,
)
from cotplan.planner.state import LawChoice, PlannerFit

__all__: list[str] = []


def _planning_law(fit: PlannerFit) -> LawChoice:
    """The law chosen where reasoning helps (a fit that helps always has one)."""
    assert fit.law is not None, "a fit where reasoning helps has a planning law"
    return fit.law


def model_budget(fit: PlannerFit, n_val: float, eps_val: float) -> Budget:
    """The planning law's k* for size `n_val` and target `eps_val`, with its bootstrap
    interval, the paper law's baselines and notes on how far it reaches beyond the data."""
    log_base = fit.settings.log_base
    choice = _planning_law(fit) if fit.status == "helps" else None
    paper = choice is None or choice.law.name in ("paper", "paper-half")
    e0 = fit.e0 if choice is None else choice.law.floor(choice.params)
    _check_attainable(fit, choice, n_val, eps_val, e0=e0, paper=paper)
    k_star, ci, coarse_note = _k_star_interval(fit, choice, n_val, eps_val, paper=paper)
    c_in_base = fit.c * LOG_BASES[log_base]
    baselines: dict[str, float] = {}
    if not fit.constant:
        baselines["paper"] = paper_k_star(fit.constants.params, n_val, eps_val)
        baselines["alpha_half"] = paper_k_star(fit.alpha_half.params, n_val, eps_val)
        if math.isfinite(fit.c_least_squares):
            baselines["least_squares"] = k_star_ls(fit.c_least_squares, n_val, eps_val)
    extrapolated, notes = _reach_notes(fit, n_val, eps_val, k_star)
    if coarse_note:
        notes.insert(0, coarse_note)
        formula = f"k* ≤ {k_star:g} (the curve is not resolved below that budget)"
    elif fit.constant:
        formula = f"k* = 0 (the error stays at {e0:.3g} whatever the budget)"
    elif choice is not None and choice.law.name not in ("paper", "paper-half"):
        formula = _law_formula(choice.law.name, choice.params, n_val, eps_val)
    else:
        formula = (
            f"k* = {fit.k0:.3g} + {c_in_base:.3g} · {n_val:g}^{fit.alpha:.3g} · "
            f"{BASE_LABEL[log_base]}(({fit.e_base:.3g} − {e0:.3g}) / ({eps_val:g} − {e0:.3g}))"
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
        law="flat" if fit.constant else ("paper" if choice is None else choice.law.name),
    )


def _check_attainable(
    fit: PlannerFit,
    choice: LawChoice | None,
    n_val: float,
    eps_val: float,
    *,
    e0: float,
    paper: bool,
) -> None:
    """Raise `InfeasibleTargetError` when the law (or a flat error) cannot reach ε at n."""
    if choice is None:
        # A flat error is met exactly at ε = e0; the fitted curve only approaches its floor.
        unattainable = eps_val < e0 if fit.constant else eps_val <= e0
    else:
        unattainable = not math.isfinite(choice.law.k_star(choice.params, n_val, eps_val))
    if not unattainable:
        return
    if fit.status == "all_wrong":
        reason = f"no answer was right at any budget up to k = {fit.budgets[-1]}"
    elif fit.constant:
        reason = (
            f"reasoning showed no measurable benefit (error {e0:.3f} at every budget up "
            f"to k = {fit.budgets[-1]})"
        )
    else:
        reason = f"the error floor of this model on this task is e0 = {e0:.3f}"
        if choice is not None:
            reason += f" (by the {choice.law.name} law)"
    bound = "≥" if fit.constant or (choice is not None and not paper) else ">"
    attainable = f"; attainable: ε {bound} {e0:.3f}" if e0 < 1 else ""
    raise InfeasibleTargetError(
        f"ε = {eps_val:g} is unattainable: {reason}{attainable}",
        field="eps",
        attainable=e0,
    )


def _k_star_interval(
    fit: PlannerFit, choice: LawChoice | None, n_val: float, eps_val: float, *, paper: bool
) -> tuple[float, Interval, str]:
    """k* with its bootstrap interval, and the note when a coarse grid bounds it instead."""
    if fit.constant:
        k_star = 0.0
        draws = np.array([0.0 if eps_val >= d[0] else math.inf for d in fit.draws])
    elif choice is not None:
        k_star = choice.law.k_star(choice.params, n_val, eps_val)
        draws = np.array([choice.law.k_star(d, n_val, eps_val) for d in choice.draws])
    else:
        k_star = paper_k_star(fit.constants.params, n_val, eps_val)
        draws = np.array([paper_k_star(d, n_val, eps_val) for d in fit.draws])
    if len(draws):
        ci = percentile_value(draws, fit.settings.confidence)
    elif fit.constant:  # every answer right: nothing left to resample
        ci = Interval(0.0, 0.0)
    else:
        ci = NAN_CI
    if not (fit.coarse and paper and k_star > 0):
        return k_star, ci, ""
    # The fitted k* below the first positive budget is an artefact of the optimiser's start;
    # what the data show is that that budget suffices.
    first = float(next(k for k in fit.budgets if k > 0))
    ci = Interval(0.0, first if np.all(np.isfinite(draws)) else math.inf)
    note = (
        f"k* ≤ {first:g}: the error was already at its floor at k = {first:g}, the "
        "smallest calibrated budget above 0"
    )
    return first, ci, note


def _reach_notes(
    fit: PlannerFit, n_val: float, eps_val: float, k_star: float
) -> tuple[bool, list[str]]:
    """Whether k* reaches beyond the data (sizes, the peak, the largest budget), with notes."""
    extrapolated, notes = False, []
    if fit.status != "given" and not (fit.sizes[0] <= n_val <= fit.sizes[-1]):
        extrapolated = True
        notes.append(
            f"n = {n_val:g} is outside the calibrated sizes {fit.sizes[0]}–{fit.sizes[-1]}"
        )
    if fit.peak_budget is not None and k_star > fit.peak_budget:
        extrapolated = True
        notes.append(
            f"k* is beyond k = {fit.peak_budget}, where accuracy peaked: larger budgets "
            "lowered accuracy in calibration"
        )
    elif fit.status != "given" and k_star > fit.budgets[-1]:
        extrapolated = True
        notes.append(f"k* is beyond the largest calibrated budget ({fit.budgets[-1]})")
    if k_star == 0.0 and not fit.constant:
        e_at_0 = float(fit.error(n_val, 0.0))
        notes.append(f"ε = {eps_val:g} is met without reasoning (error {e_at_0:.2f} at k = 0)")
    return extrapolated, notes


def certified_only(fit: PlannerFit, n_val: float, eps_val: float, cert: CertifiedBudget) -> Budget:
    """A certified budget where the law itself cannot reach ε (the data can)."""
    assert cert.k is not None
    return Budget(
        n=n_val,
        eps=eps_val,
        k_star=float(cert.k),
        low=math.nan,
        high=math.nan,
        tokens=cert.k,
        log_base=fit.settings.log_base,
        c_in_base=fit.c * LOG_BASES[fit.settings.log_base],
        formula=f"the {fit.law_name} law does not reach ε = {eps_val:g}; the calibration does",
        law=str(fit.law_name),
    )


def with_certificate(fit: PlannerFit, budget: Budget, cert: CertifiedBudget | None) -> Budget:
    """Attach the certified cap (calibrated size) or the scaled one (elsewhere)."""
    n_val, eps_val = budget.n, budget.eps
    assert fit.certified is not None
    notes = [budget.note] if budget.note else []
    conf = f"{1 - fit.settings.delta:.0%}"
    if cert is not None:
        peak = fit.peak_budgets.get(int(n_val))
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
        tokens, conservative = _conservative(fit, budget)
        if peak is not None and tokens > peak:
            tokens = peak
            notes.append(f"capped at the peak k = {peak}: larger budgets lowered accuracy")
        notes.append(cert.note)
        basis = f"the {budget.law} law's {conservative} (not certified)"
        return replace(budget, tokens=tokens, basis=basis, note="; ".join(notes))
    sizes = [s for s in fit.certified.sizes]
    refs = [(s, fit.certified.at(s, eps_val)) for s in sizes]
    certified = [(s, c) for s, c in refs if c.certified and c.k is not None]
    largest, smallest = fit.sizes[-1], fit.sizes[0]
    if n_val > largest:
        reach = f"n = {n_val:g} is {n_val / largest:.2g}× the largest calibrated size {largest}"
    elif n_val < smallest:
        reach = f"n = {n_val:g} is below the smallest calibrated size {smallest}"
    else:
        reach = f"n = {n_val:g} lies between calibrated sizes"
    choice = _planning_law(fit)
    law, law_params, law_draws = choice.law, choice.params, choice.draws
    low, high = math.nan, math.nan
    if certified and math.isfinite(budget.k_star):
        ref_n, ref = min(certified, key=lambda r: abs(math.log(r[0]) - math.log(n_val)))
        assert ref.k is not None
        k_ref = law.k_star(law_params, float(ref_n), eps_val)
        if k_ref > 0 and math.isfinite(k_ref):
            ratio = budget.k_star / k_ref
            tokens = math.ceil(ref.k * ratio - 1e-9)
            ratios = np.array(
                [
                    law.k_star(d, n_val, eps_val) / law.k_star(d, float(ref_n), eps_val)
                    for d in law_draws
                ]
            )
            ratios = ratios[np.isfinite(ratios)]
            if len(ratios):
                ci = percentile_value(ratios, fit.settings.confidence)
                low, high = ref.k * ci.low, ref.k * ci.high
            basis = (
                f"extrapolated: the certified k = {ref.k} at n = {ref_n} × the {law.name} "
                f"law's k*({n_val:g}) / k*({ref_n}) = {ratio:.2f}; {reach}"
            )
        else:
            tokens = max(budget.tokens, ref.k)
            basis = f"extrapolated from the certified k = {ref.k} at n = {ref_n}; {reach}"
    else:
        tokens, conservative = _conservative(fit, budget)
        basis = (
            f"extrapolated: the {law.name} law's {conservative} (no calibrated size "
            f"certifies ε); {reach}"
        )
    return replace(
        budget,
        tokens=tokens,
        cap_low=low,
        cap_high=high,
        basis=basis,
        extrapolated=True,
        reach=n_val / largest,
    )


def _conservative(fit: PlannerFit, budget: Budget) -> tuple[int, str]:
    """The cap where nothing certifies ε: the upper end of k*'s bootstrap interval, not the
    point k*, which on a smooth curve sits at the true k* about as often below as above, so
    it misses ε about half the time. Where some resamples never reach ε (an infinite upper
    end), the largest calibrated budget, or k* where that is larger."""
    high = budget.high
    if math.isfinite(high) and high >= budget.k_star:
        return max(budget.tokens, math.ceil(high - 1e-9)), (
            f"k* at the conservative end of its {fit.settings.confidence:.0%} interval "
            f"({budget.k_star:.1f} at the point estimate)"
        )
    if math.isinf(high):
        top = max(fit.budgets)
        return max(budget.tokens, top), (
            f"k* interval reaching past every budget: the largest calibrated k = {top} "
            f"({budget.k_star:.1f} at the point estimate)"
        )
    return budget.tokens, "k* (no interval to be conservative with)"


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
