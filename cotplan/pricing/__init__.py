"""API prices and costs: the dated price table, exact call costs, and spend projections.

- `prices()`: the shipped table (plus a user file) as a DataFrame; `price_table()` for lookups.
- `call_cost`, `cost_of_completion`, `cost_of_text`: what one call costs, in exact Decimal USD.
- `project_costs`, `compare_scenarios`: Monte Carlo spend projections with P10/P50/P90.
"""

from cotplan.pricing.cost import CallCost, call_cost, cost_of_completion, cost_of_text
from cotplan.pricing.projection import (
    Comparison,
    CotPolicy,
    EmpiricalTokens,
    FixedCap,
    ParametricTokens,
    PlannerCap,
    Projection,
    Scenario,
    TokenDistribution,
    Uncapped,
    Workload,
    compare_scenarios,
    project_costs,
)
from cotplan.pricing.table import (
    PRICES_ENV,
    REASONING_BILLING,
    STALE_AFTER_DAYS,
    PriceRow,
    PriceTable,
    Rates,
    StalePriceWarning,
    load_price_file,
    price_table,
    prices,
)

__all__ = [
    "PRICES_ENV",
    "REASONING_BILLING",
    "STALE_AFTER_DAYS",
    "CallCost",
    "Comparison",
    "CotPolicy",
    "EmpiricalTokens",
    "FixedCap",
    "ParametricTokens",
    "PlannerCap",
    "PriceRow",
    "PriceTable",
    "Projection",
    "Rates",
    "Scenario",
    "StalePriceWarning",
    "TokenDistribution",
    "Uncapped",
    "Workload",
    "call_cost",
    "compare_scenarios",
    "cost_of_completion",
    "cost_of_text",
    "load_price_file",
    "price_table",
    "prices",
    "project_costs",
]
