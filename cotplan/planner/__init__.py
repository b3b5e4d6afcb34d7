"""Calibration runs, constant fitting, and the `BudgetPlanner`."""

from cotplan.planner.fit import (
    Budget,
    BudgetPlanner,
    ConfidenceInterval,
    Estimate,
    LikelihoodRatioTest,
    OptimalBudget,
    PlanReport,
    TrendTest,
)

__all__ = [
    "Budget",
    "BudgetPlanner",
    "ConfidenceInterval",
    "Estimate",
    "LikelihoodRatioTest",
    "OptimalBudget",
    "PlanReport",
    "TrendTest",
]
