"""The fitted state of a `BudgetPlanner` as one frozen value.

`fitting.fit_planner` builds a `PlannerFit` from the settings and the calibration, step by step,
each step returning a new value; `BudgetPlanner.fit` keeps it and copies its public parts into
the `*_` attributes (scikit-learn style). Everything that plans from a fit (`budgets`,
`evidence`) reads this record, never the planner, so no module writes another's state and the
modules of the planner import each other in one direction only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from cotplan.intervals import Interval
from cotplan.planner.certify import Certification
from cotplan.planner.data import Data
from cotplan.planner.law_paper import PARAMS, paper_error
from cotplan.planner.laws import Law
from cotplan.planner.records import (
    NAN_CI,
    BoundaryTest,
    LawComparison,
    LikelihoodRatioTest,
    LogBase,
    Status,
    TrendTest,
)

__all__ = ["FitSettings", "LawChoice", "PaperConstants", "PlannerFit"]


@dataclass(frozen=True)
class FitSettings:
    """The planner's parameters after validation (`alpha`/`e_base` None: fitted)."""

    law: str
    delta: float
    log_base: LogBase
    alpha: float | None
    e_base: float | None
    n_bootstrap: int
    min_items: int
    folds: int
    confidence: float
    significance: float
    random_state: int


@dataclass(frozen=True)
class PaperConstants:
    """One fit of the paper's law: the constants (e0, e_base, k0, c, α in that order), their
    intervals by name (NaN where none was computed) and the log-likelihood."""

    params: NDArray[np.float64]
    intervals: Mapping[str, Interval]
    loglik: float

    @classmethod
    def of(
        cls,
        params: ArrayLike,
        intervals: Mapping[str, Interval] | None = None,
        loglik: float = math.nan,
    ) -> PaperConstants:
        given = intervals or {}
        return cls(
            np.asarray(params, dtype=float),
            {name: given.get(name, NAN_CI) for name in PARAMS},
            loglik,
        )

    def named(self) -> dict[str, float]:
        return dict(zip(PARAMS, (float(v) for v in self.params), strict=True))


def _no_draws() -> NDArray[np.float64]:
    return np.empty((0, 5))


def _no_values() -> NDArray[np.float64]:
    return np.empty(0)


@dataclass(frozen=True)
class LawChoice:
    """The law used for planning, with its full-data parameters and bootstrap draws (rows)."""

    law: Law
    params: NDArray[np.float64]
    draws: NDArray[np.float64]


@dataclass(frozen=True)
class PlannerFit:
    """Everything `BudgetPlanner.fit` (or `from_constants`) found; see the planner's docstring
    for the meaning of each public counterpart (`constants` -> `e0_` ... `alpha_`,
    `intervals_`, `loglik_`; `alpha_half` -> `alpha_half_*`; and so on).

    `data` is the whole calibration (None for given constants); `draws`, `half_draws` and
    `ls_draws` the bootstrap draws of the paper law, its α = 1/2 fit and the least-squares c;
    `constant` is True where reasoning is credited with no effect (a flat error), `coarse`
    where the curve is not resolved below the first positive budget; `mle` None only for given
    constants (which never had one).
    """

    settings: FitSettings
    status: Status
    verdict: str
    data: Data | None
    n_items: int
    n_rows: int
    sizes: tuple[int, ...]
    budgets: tuple[int, ...]
    constants: PaperConstants
    alpha_half: PaperConstants
    c_least_squares: float = math.nan
    intervals_c_least_squares: Interval = NAN_CI
    draws: NDArray[np.float64] = field(default_factory=_no_draws)
    half_draws: NDArray[np.float64] = field(default_factory=_no_draws)
    ls_draws: NDArray[np.float64] = field(default_factory=_no_values)
    constant: bool = False
    coarse: bool = False
    mle: Mapping[str, float] | None = field(default_factory=dict)
    trend: TrendTest | None = None
    peak_budget: int | None = None
    peak_budgets: Mapping[int, int] = field(default_factory=dict)
    lrt: LikelihoodRatioTest | None = None
    growth: BoundaryTest | None = None
    laws: LawComparison | None = None
    law: LawChoice | None = None
    certified: Certification | None = None

    # The paper law's constants by name, as the planner reports them.
    @property
    def e0(self) -> float:
        return float(self.constants.params[0])

    @property
    def e_base(self) -> float:
        return float(self.constants.params[1])

    @property
    def k0(self) -> float:
        return float(self.constants.params[2])

    @property
    def c(self) -> float:
        return float(self.constants.params[3])

    @property
    def alpha(self) -> float:
        return float(self.constants.params[4])

    @property
    def law_name(self) -> str | None:
        """The planning law's name; None where no law was chosen (reasoning not credited)."""
        return self.laws.selected if self.laws is not None else None

    def error(self, n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
        """The modelled error at (n, k), inputs already checked; an array (0-d for scalars)."""
        n_arr = np.asarray(n, dtype=float)
        k_arr = np.asarray(k, dtype=float)
        if self.constant:
            return np.full(np.broadcast(n_arr, k_arr).shape, self.e0)
        if self.law is not None:
            return np.asarray(self.law.law.error(self.law.params, n_arr, k_arr), dtype=float)
        return paper_error(self.constants.params, n_arr, k_arr)

    def bootstrap_frame(self) -> pd.DataFrame:
        """The paper law's resampled constants, one row a draw (no columns' dtype without
        draws, as an unfitted frame has always had)."""
        if not len(self.draws):
            return pd.DataFrame(columns=list(PARAMS))
        return pd.DataFrame(self.draws, columns=list(PARAMS))
