"""Turning the fitted laws and the certificate into the cap for one size and ε.

`model_budget` solves the planning law for k* (with its bootstrap interval and the baselines);
`with_certificate` replaces the cap by the certified budget at a calibrated size, or scales the
nearest certified budget by the law elsewhere (marked as extrapolation, with how far it
reaches); `certified_only` covers a target the law cannot reach but the calibration certifies.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from cotplan.errors import InfeasibleTargetError
from cotplan.planner.data import _percentile
from cotplan.planner.law_paper import _k_star, _k_star_ls
from cotplan.planner.records import (
    _NAN_CI,
    BASE_LABEL,
    LOG_BASES,
    Budget,
    CertifiedBudget,
    ConfidenceInterval,
)

if TYPE_CHECKING:
    from cotplan.planner.fit import BudgetPlanner

__all__: list[str] = []


def model_budget(planner: BudgetPlanner, n_val: float, eps_val: float) -> Budget:
    log_base = planner._p["log_base"]
    law = planner._law if planner.status_ == "helps" else None
    paper = law is None or law.name in ("paper", "paper-half")
    e0 = planner.e0_ if law is None else law.floor(planner._law_params)
    if law is None:
        # A flat error is met exactly at ε = e0; the fitted curve only approaches its floor.
        unattainable = eps_val < e0 if planner._constant else eps_val <= e0
    else:
        unattainable = not math.isfinite(law.k_star(planner._law_params, n_val, eps_val))
    if unattainable:
        if planner.status_ == "all_wrong":
            reason = f"no answer was right at any budget up to k = {planner.budgets_[-1]}"
        elif planner._constant:
            reason = (
                f"reasoning showed no measurable benefit (error {e0:.3f} at every budget up "
                f"to k = {planner.budgets_[-1]})"
            )
        else:
            reason = f"the error floor of this model on this task is e0 = {e0:.3f}"
            if law is not None:
                reason += f" (by the {law.name} law)"
        bound = "≥" if planner._constant or (law is not None and not paper) else ">"
        attainable = f"; attainable: ε {bound} {e0:.3f}" if e0 < 1 else ""
        raise InfeasibleTargetError(
            f"ε = {eps_val:g} is unattainable: {reason}{attainable}",
            field="eps",
            attainable=e0,
        )
    if planner._constant:
        k_star = 0.0
        draws = np.array([0.0 if eps_val >= d[0] else math.inf for d in planner._draws])
    elif law is not None:
        k_star = law.k_star(planner._law_params, n_val, eps_val)
        draws = np.array([law.k_star(d, n_val, eps_val) for d in planner._law_draws])
    else:
        k_star = _k_star(planner._params, n_val, eps_val)
        draws = np.array([_k_star(d, n_val, eps_val) for d in planner._draws])
    if len(draws):
        ci = _percentile(draws, planner._p["confidence"])
    elif planner._constant:  # every answer right: nothing left to resample
        ci = ConfidenceInterval(0.0, 0.0)
    else:
        ci = _NAN_CI
    coarse_note = ""
    if planner._coarse and paper and k_star > 0:
        # The fitted k* below the first positive budget is an artefact of the optimiser's
        # start; what the data show is that that budget suffices.
        first = float(next(k for k in planner.budgets_ if k > 0))
        k_star = first
        ci = ConfidenceInterval(0.0, first if np.all(np.isfinite(draws)) else math.inf)
        coarse_note = (
            f"k* ≤ {first:g}: the error was already at its floor at k = {first:g}, the "
            "smallest calibrated budget above 0"
        )
    scale = LOG_BASES[log_base]
    c_in_base = planner.c_ * scale
    baselines: dict[str, float] = {}
    if not planner._constant:
        baselines["paper"] = _k_star(planner._params, n_val, eps_val)
        baselines["alpha_half"] = _k_star(planner._half_params, n_val, eps_val)
        if math.isfinite(planner.c_least_squares_):
            baselines["least_squares"] = _k_star_ls(planner.c_least_squares_, n_val, eps_val)
    extrapolated, notes = False, [coarse_note] if coarse_note else []
    if planner.status_ != "given" and not (planner.sizes_[0] <= n_val <= planner.sizes_[-1]):
        extrapolated = True
        notes.append(
            f"n = {n_val:g} is outside the calibrated sizes "
            f"{planner.sizes_[0]}–{planner.sizes_[-1]}"
        )
    if planner.peak_budget_ is not None and k_star > planner.peak_budget_:
        extrapolated = True
        notes.append(
            f"k* is beyond k = {planner.peak_budget_}, where accuracy peaked: larger budgets "
            "lowered accuracy in calibration"
        )
    elif planner.status_ != "given" and k_star > planner.budgets_[-1]:
        extrapolated = True
        notes.append(f"k* is beyond the largest calibrated budget ({planner.budgets_[-1]})")
    if k_star == 0.0 and not planner._constant:
        e_at_0 = float(planner.predict_error(n_val, 0.0))
        notes.append(f"ε = {eps_val:g} is met without reasoning (error {e_at_0:.2f} at k = 0)")
    label = BASE_LABEL[log_base]
    if coarse_note:
        formula = f"k* ≤ {k_star:g} (the curve is not resolved below that budget)"
    elif planner._constant:
        formula = f"k* = 0 (the error stays at {e0:.3g} whatever the budget)"
    elif law is not None and law.name not in ("paper", "paper-half"):
        formula = _law_formula(law.name, planner._law_params, n_val, eps_val)
    else:
        formula = (
            f"k* = {planner.k0_:.3g} + {c_in_base:.3g} · {n_val:g}^{planner.alpha_:.3g} · "
            f"{label}(({planner.e_base_:.3g} − {e0:.3g}) / ({eps_val:g} − {e0:.3g}))"
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
        law="flat" if planner._constant else ("paper" if law is None else law.name),
    )


def certified_only(
    planner: BudgetPlanner, n_val: float, eps_val: float, cert: CertifiedBudget
) -> Budget:
    """A certified budget where the law itself cannot reach ε (the data can)."""
    assert cert.k is not None
    return Budget(
        n=n_val,
        eps=eps_val,
        k_star=float(cert.k),
        low=math.nan,
        high=math.nan,
        tokens=cert.k,
        log_base=planner._p["log_base"],
        c_in_base=planner.c_ * LOG_BASES[planner._p["log_base"]],
        formula=f"the {planner.law_} law does not reach ε = {eps_val:g}; the calibration does",
        law=str(planner.law_),
    )


def with_certificate(
    planner: BudgetPlanner, budget: Budget, cert: CertifiedBudget | None
) -> Budget:
    """Attach the certified cap (calibrated size) or the scaled one (elsewhere)."""
    n_val, eps_val = budget.n, budget.eps
    assert planner.certified_ is not None
    notes = [budget.note] if budget.note else []
    conf = f"{1 - planner._p['delta']:.0%}"
    if cert is not None:
        peak = planner.peak_budgets_.get(int(n_val))
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
    sizes = [s for s in planner.certified_.sizes]
    refs = [(s, planner.certified_.at(s, eps_val)) for s in sizes]
    certified = [(s, c) for s, c in refs if c.certified and c.k is not None]
    largest, smallest = planner.sizes_[-1], planner.sizes_[0]
    if n_val > largest:
        reach = f"n = {n_val:g} is {n_val / largest:.2g}× the largest calibrated size {largest}"
    elif n_val < smallest:
        reach = f"n = {n_val:g} is below the smallest calibrated size {smallest}"
    else:
        reach = f"n = {n_val:g} lies between calibrated sizes"
    law = planner._law
    low, high = math.nan, math.nan
    if certified and math.isfinite(budget.k_star):
        ref_n, ref = min(certified, key=lambda r: abs(math.log(r[0]) - math.log(n_val)))
        assert ref.k is not None
        k_ref = law.k_star(planner._law_params, float(ref_n), eps_val)
        if k_ref > 0 and math.isfinite(k_ref):
            ratio = budget.k_star / k_ref
            tokens = math.ceil(ref.k * ratio - 1e-9)
            ratios = np.array(
                [
                    law.k_star(d, n_val, eps_val) / law.k_star(d, float(ref_n), eps_val)
                    for d in planner._law_draws
                ]
            )
            ratios = ratios[np.isfinite(ratios)]
            if len(ratios):
                ci = _percentile(ratios, planner._p["confidence"])
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
