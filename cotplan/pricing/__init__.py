"""API prices and costs: two dated price sources, exact call costs, and spend projections.

- `prices()`: cotplan's own rows (plus a user file), then genai-prices' bundled data, as a
  DataFrame with each price's source; `price_table()` for lookups.
- `call_cost`, `cost_of_completion`, `cost_of_text`: what one call costs, in exact Decimal USD,
  by one formula (`price_parts`) that projections share.
- `cost_of`: what a call cost, from the usage object its provider returned, read by that
  provider's own rule (`read_usage`).
- `project_costs`, `compare_scenarios`, `project_growth`: Monte Carlo spend projections with
  P10/P50/P90, the chance of going over a `Budget`, fiscal quarters and years, low/base/high
  growth, and workbooks a finance analyst can open and sum.
- `read_export`, `reconcile`: the providers' usage and cost exports beside cotplan's price of
  the same usage and its own log, every difference explained or flagged (`Invoice` checks).
"""

from cotplan.pricing.comparison import (
    GrowthScenarios,
    Scenario,
    compare_scenarios,
    project_growth,
)
from cotplan.pricing.cost import CallCost, call_cost, cost_of_completion, cost_of_text, price_parts
from cotplan.pricing.export_readers import read_export
from cotplan.pricing.exports import ExportLine
from cotplan.pricing.genai import GENAI_PRICES_VERSION
from cotplan.pricing.periods import Budget, BudgetCheck
from cotplan.pricing.projection import (
    MAX_DRAWS,
    Comparison,
    CotPolicy,
    EmpiricalTokens,
    FixedCap,
    ParametricTokens,
    PlannerCap,
    Projection,
    TokenDistribution,
    Uncapped,
    Workload,
    project_costs,
)
from cotplan.pricing.reconcile import Invoice, LoggedCall, Reconciliation, reconcile
from cotplan.pricing.table import (
    LOCAL_SOURCE,
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
from cotplan.pricing.usage import ProviderUsage, cost_of, read_usage

__all__ = [
    "GENAI_PRICES_VERSION",
    "LOCAL_SOURCE",
    "MAX_DRAWS",
    "PRICES_ENV",
    "REASONING_BILLING",
    "STALE_AFTER_DAYS",
    "Budget",
    "BudgetCheck",
    "CallCost",
    "Comparison",
    "CotPolicy",
    "EmpiricalTokens",
    "ExportLine",
    "FixedCap",
    "GrowthScenarios",
    "Invoice",
    "LoggedCall",
    "ParametricTokens",
    "PlannerCap",
    "PriceRow",
    "PriceTable",
    "Projection",
    "ProviderUsage",
    "Rates",
    "Reconciliation",
    "Scenario",
    "StalePriceWarning",
    "TokenDistribution",
    "Uncapped",
    "Workload",
    "call_cost",
    "compare_scenarios",
    "cost_of",
    "cost_of_completion",
    "cost_of_text",
    "load_price_file",
    "price_parts",
    "price_table",
    "prices",
    "project_costs",
    "project_growth",
    "read_export",
    "read_usage",
    "reconcile",
]
