"""The error laws behind one interface, and their comparison by held-out likelihood.

Each `Law` fits its parameters to the pooled (n, k) cells by maximum likelihood, predicts the
error at any (n, k), and solves for k*(n, ε). `compare_laws` scores every law on ITEMS it did
not see (K-fold cross-validation over items: an item keeps all its budgets, so a fold never
learns an item's other answers) and picks one:

- the parametric law with the highest held-out log-likelihood, unless its lead over the paper's
  law (α free) is within one fold-to-fold standard error of that lead: then the data cannot
  tell them apart and the paper's law, the premise users come for, is kept;
- the shape-free monotone law is scored too, as a reference line, but is never chosen by
  "auto" (it has no law across sizes to extrapolate with); ask for it by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cotplan.planner.data import Cells, Data, percentile_value, pooled_cells
from cotplan.planner.law_location import (
    LOGISTIC_PARAMS,
    STEP_PARAMS,
    fit_logistic,
    fit_step,
    logistic_error,
    logistic_k_star,
    logistic_starts,
    step_error,
    step_k_star,
)
from cotplan.planner.law_monotone import fit_monotone, monotone_error, monotone_k_star
from cotplan.planner.law_paper import (
    PARAMS,
    maximise,
    paper_error,
    paper_k_star,
    paper_starts,
    spread_starts,
)
from cotplan.planner.records import NAN_CI, Estimate, LawComparison, LawFit

__all__ = ["LAW_NAMES", "Law", "LawName"]

LawName = str
#: The laws `BudgetPlanner(law=...)` accepts, besides "auto".
LAW_NAMES = ("paper", "paper-half", "logistic", "step", "monotone")
#: Held-out predictions are kept within [_HELD_CLIP, 1 − _HELD_CLIP]: a law that predicts an
#: error of exactly 0 must not score minus infinity for one unlucky held-out answer.
_HELD_CLIP = 1e-3

Fitter = Callable[[Cells, NDArray[np.float64] | None], tuple[NDArray[np.float64], float]]


@dataclass(frozen=True)
class Law:
    """One error law: its name, parameter names, formula, and how to fit and use it."""

    name: str
    params: tuple[str, ...]
    formula: str
    parametric: bool
    fitter: Fitter
    error_fn: Callable[[NDArray[np.float64], ArrayLike, ArrayLike], NDArray[np.float64]]
    k_star_fn: Callable[[NDArray[np.float64], float, float], float]
    #: The bootstrap's refit where it differs from `fitter` (the step: a member of the set of
    #: maximisers drawn at random, see `fit_step`).
    resample_fitter: Callable[[Cells, np.random.Generator], NDArray[np.float64]] | None = None

    def fit(
        self, cells: Cells, start: NDArray[np.float64] | None = None
    ) -> tuple[NDArray[np.float64], float]:
        return self.fitter(cells, start)

    def error(self, params: NDArray[np.float64], n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
        return self.error_fn(params, n, k)

    def k_star(self, params: NDArray[np.float64], n: float, eps: float) -> float:
        return self.k_star_fn(params, n, eps)

    def floor(self, params: NDArray[np.float64]) -> float:
        """The lowest error the law reaches at any budget."""
        if self.parametric:
            return float(params[0])
        return float(np.min(params[:, 2]))


def make_laws(*, one_size: bool, alpha: float | None, e_base: float | None) -> dict[str, Law]:
    """Every law, configured like the planner: `alpha`/`e_base` fix the paper law's constants
    (None: fitted); with one calibrated size no exponent of n can be fitted, so they are fixed
    (α = 1/2 for the paper law, β = γ = 1 for the location laws)."""
    fixed: dict[int, float] = {} if e_base is None else {1: e_base}
    free_alpha = alpha is None and not one_size
    alpha_value = 0.5 if alpha is None else alpha

    def paper_fitter(fixed_law: Mapping[int, float], free: bool) -> Fitter:
        def fit(
            cells: Cells, start: NDArray[np.float64] | None
        ) -> tuple[NDArray[np.float64], float]:
            alpha = fixed_law.get(4, 0.5)
            starts = (
                # A refit from the full-data optimum also tries a thinned start grid of its own.
                [start, *spread_starts(cells, free_alpha=free, alpha=alpha)]
                if start is not None
                else paper_starts(cells, free_alpha=free, alpha=alpha)
            )
            result = maximise(cells, starts, fixed_law, float(cells.k.max()))
            return result.params, result.loglik

        return fit

    def logistic_fitter(
        cells: Cells, start: NDArray[np.float64] | None
    ) -> tuple[NDArray[np.float64], float]:
        own = logistic_starts(cells)
        if one_size:
            own = [np.array([*s[:3], 1.0, s[4], 1.0]) for s in own]
        if start is None:
            return fit_logistic(cells, own, exponents_fixed=one_size)
        # A refit from the full-data optimum (a fold's, a bootstrap resample's) also scouts from
        # the law's own starts, and follows one that ends higher: a refit held in the full-data
        # optimum's basin would score a fold on a worse optimum and narrow the intervals.
        if one_size:
            start = np.array([*start[:3], 1.0, start[4], 1.0])
        best = fit_logistic(cells, [start], exponents_fixed=one_size)
        scout = fit_logistic(cells, own, exponents_fixed=one_size, ftol=1e-5, maxiter=15)
        if scout[1] > best[1] + 1e-6:
            polished = fit_logistic(cells, [scout[0]], exponents_fixed=one_size)
            if polished[1] > best[1]:
                best = polished
        return best

    step_betas = np.array([1.0]) if one_size else None

    def step_fitter(
        cells: Cells, start: NDArray[np.float64] | None
    ) -> tuple[NDArray[np.float64], float]:
        return fit_step(cells, betas=step_betas)

    def step_resample(cells: Cells, rng: np.random.Generator) -> NDArray[np.float64]:
        return fit_step(cells, betas=step_betas, rng=rng)[0]

    def monotone_fitter(
        cells: Cells, start: NDArray[np.float64] | None
    ) -> tuple[NDArray[np.float64], float]:
        return fit_monotone(cells)

    paper_formula = "e0 + (e_base − e0) · exp(−max(k − k0, 0) / (c · n^α))"
    return {
        "paper": Law(
            "paper",
            PARAMS,
            paper_formula if free_alpha else paper_formula.replace("α", f"{alpha_value:g}"),
            True,
            paper_fitter(fixed if free_alpha else {**fixed, 4: alpha_value}, free_alpha),
            paper_error,
            paper_k_star,
        ),
        "paper-half": Law(
            "paper-half",
            PARAMS,
            paper_formula.replace("n^α", "√n"),
            True,
            paper_fitter({**fixed, 4: 0.5}, False),
            paper_error,
            paper_k_star,
        ),
        "logistic": Law(
            "logistic",
            LOGISTIC_PARAMS,
            "e0 + (e_base − e0) · S((k − a · n^β) / (s · n^γ)), S(z) = 1/(1 + e^z)",
            True,
            logistic_fitter,
            logistic_error,
            logistic_k_star,
        ),
        "step": Law(
            "step",
            STEP_PARAMS,
            "e0 if k ≥ a · n^β else e_base",
            True,
            step_fitter,
            step_error,
            step_k_star,
            resample_fitter=step_resample,
        ),
        "monotone": Law(
            "monotone",
            (),
            "non-increasing error per calibrated size (isotonic binomial fit)",
            False,
            monotone_fitter,
            monotone_error,
            monotone_k_star,
        ),
    }


def _heldout_loglik(law: Law, params: NDArray[np.float64], cells: Cells) -> float:
    e = np.clip(law.error(params, cells.n, cells.k), _HELD_CLIP, 1.0 - _HELD_CLIP)
    wrong = cells.trials - cells.successes
    return float(wrong @ np.log(e) + cells.successes @ np.log1p(-e))


@dataclass(frozen=True)
class _Scored:
    params: NDArray[np.float64]
    loglik: float
    folds: NDArray[np.float64]  # held-out log-likelihood per fold
    draws: NDArray[np.float64]  # bootstrap parameter vectors (rows)


def score_laws(
    data: Data,
    laws: Mapping[str, Law],
    *,
    folds: int,
    n_bootstrap: int,
    seed: int,
    given: Mapping[str, tuple[NDArray[np.float64], float]] | None = None,
    given_draws: Mapping[str, NDArray[np.float64]] | None = None,
    bootstrap_laws: set[str] | None = None,
) -> dict[str, _Scored]:
    """Full-data fit, held-out log-likelihood per item fold and bootstrap draws, per law.

    `given` holds full-data fits already made (the planner's own paper-law fits) and
    `given_draws` their bootstrap draws; `bootstrap_laws` limits the bootstrap to those laws
    (None: every parametric law)."""
    rng = np.random.default_rng(seed)
    fold_of_item = rng.permutation(data.n_items) % folds
    row_fold = fold_of_item[data.item]
    cells = pooled_cells(data)
    train = [pooled_cells(data, (row_fold != f).astype(float)) for f in range(folds)]
    test = [pooled_cells(data, (row_fold == f).astype(float)) for f in range(folds)]
    boot_rng = np.random.default_rng(seed + 1)
    weights = [
        boot_rng.multinomial(data.n_items, np.full(data.n_items, 1.0 / data.n_items))[data.item]
        for _ in range(n_bootstrap)
    ]
    out: dict[str, _Scored] = {}
    for name, law in laws.items():
        params, loglik = (given or {}).get(name) or law.fit(cells)
        fold_ll = np.empty(folds)
        for f in range(folds):
            # The fitters try their own starts besides the full-data optimum (see make_laws),
            # so a fold is not scored on a worse optimum than it could have found.
            fold_params, _ = law.fit(train[f], params if law.parametric else None)
            fold_ll[f] = _heldout_loglik(law, fold_params, test[f])
        if given_draws is not None and name in given_draws:
            draws = np.asarray(given_draws[name], dtype=float)
        elif law.parametric and n_bootstrap and (bootstrap_laws is None or name in bootstrap_laws):
            if law.resample_fitter is not None:
                tie_rng = np.random.default_rng(seed + 2)
                draws = np.array(
                    [
                        law.resample_fitter(pooled_cells(data, w.astype(float)), tie_rng)
                        for w in weights
                    ]
                )
            else:
                draws = np.array(
                    [law.fit(pooled_cells(data, w.astype(float)), params)[0] for w in weights]
                )
        else:
            draws = np.empty((0, len(law.params)))
        out[name] = _Scored(np.asarray(params, dtype=float), loglik, fold_ll, draws)
    return out


def compare_laws(
    scored: Mapping[str, _Scored],
    laws: Mapping[str, Law],
    *,
    asked: str,
    confidence: float,
    alpha_verdict: str | None,
) -> LawComparison:
    """The comparison table and the law chosen (`asked`, or by held-out likelihood for
    "auto")."""
    paper = scored["paper"].folds
    k = len(paper)
    fits = []
    for name, s in scored.items():
        law = laws[name]
        diff = s.folds - paper
        se = float(np.std(diff, ddof=1) * math.sqrt(k)) if k > 1 else math.nan
        parameters = {
            p: Estimate(
                float(s.params[i]),
                percentile_value(s.draws[:, i], confidence) if len(s.draws) else NAN_CI,
            )
            for i, p in enumerate(law.params)
        }
        note = ""
        if name == "paper-half" and alpha_verdict:
            note = alpha_verdict
        elif not law.parametric:
            note = "shape-free reference; not chosen by auto"
        fits.append(
            LawFit(
                law=name,
                formula=law.formula,
                parameters=parameters,
                loglik=s.loglik,
                heldout_loglik=float(s.folds.sum()),
                difference=float(diff.sum()),
                difference_se=se,
                note=note,
            )
        )
    if asked != "auto":
        selected, reason = asked, f"law {asked!r} asked for"
    else:
        candidates = [f for f in fits if laws[f.law].parametric]
        best = max(candidates, key=lambda f: f.heldout_loglik)
        if best.law == "paper":
            selected = "paper"
            reason = "the paper's law has the highest held-out log-likelihood"
        elif not best.difference > best.difference_se:
            selected = "paper"
            reason = (
                f"the data cannot tell the laws apart: {best.law} leads the paper's law by "
                f"{best.difference:.1f} held-out log-likelihood, within its fold-to-fold "
                f"standard error {best.difference_se:.1f}; the paper's law is kept"
            )
        else:
            selected = best.law
            reason = (
                f"{best.law} beats the paper's law by {best.difference:.1f} held-out "
                f"log-likelihood (fold-to-fold standard error {best.difference_se:.1f})"
            )
    return LawComparison(fits=tuple(fits), selected=selected, reason=reason, folds=k)
