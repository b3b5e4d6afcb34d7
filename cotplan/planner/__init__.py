"""Calibration runs, the error laws, certified budgets, and the `BudgetPlanner`.

Modules: `records` (result dataclasses), `data` (the calibration as the planner reads it),
`law_paper`, `law_location`, `law_monotone` (one per law's likelihood), `laws` (the common
interface and the held-out comparison), `certify` (exact bounds, fixed-sequence testing),
`adaptive` (an adaptive grid for hidden reasoning), `evidence` (trend test, peaks), `shapes`
(known curves for testing), `state` (the fitted state as one frozen record), `fitting` (the steps
that build it from the data), `budgets` (caps planned from it), `fit` (the planner, which holds
the record), `calibrate`, `run`.
"""

from cotplan.planner.adaptive import AdaptiveCertificate, adaptive_certify
from cotplan.planner.certify import Certification
from cotplan.planner.fit import BudgetPlanner
from cotplan.planner.plan_result import PlanResult, plan_from_calibration
from cotplan.planner.records import (
    BoundaryTest,
    Budget,
    CertifiedBudget,
    Estimate,
    LawComparison,
    LawFit,
    LikelihoodRatioTest,
    OptimalBudget,
    PlanReport,
    TrendTest,
)
from cotplan.planner.saved_plan import SavedPlan

__all__ = [
    "AdaptiveCertificate",
    "BoundaryTest",
    "Budget",
    "BudgetPlanner",
    "Certification",
    "CertifiedBudget",
    "Estimate",
    "LawComparison",
    "LawFit",
    "LikelihoodRatioTest",
    "OptimalBudget",
    "PlanReport",
    "PlanResult",
    "SavedPlan",
    "TrendTest",
    "adaptive_certify",
    "plan_from_calibration",
]
