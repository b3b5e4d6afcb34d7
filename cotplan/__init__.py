"""cotplan: plan chain-of-thought token budgets, and measure what reasoning is worth.

The public names, re-exported from the modules that define them:

- models: `connect`, `LocalModel`, `Backend`, `OpenAICompatibleBackend`, `CallCache`
- tokens: `count_tokens`
- costs: `prices`, `call_cost`, `cost_of_text`, `cost_of_completion`, `project_costs`,
  `compare_scenarios` and the projection inputs
- tasks and planning: `make_tasks`, `load_tasks`, `BudgetPlanner`
"""

from cotplan.backends import (
    Backend,
    CallCache,
    Completion,
    LocalModel,
    NextTokenProbs,
    OpenAICompatibleBackend,
    Usage,
    connect,
)
from cotplan.errors import CotplanError
from cotplan.planner import BudgetPlanner, PlanReport
from cotplan.pricing import (
    CallCost,
    Comparison,
    EmpiricalTokens,
    FixedCap,
    ParametricTokens,
    PlannerCap,
    Projection,
    Scenario,
    StalePriceWarning,
    Uncapped,
    Workload,
    call_cost,
    compare_scenarios,
    cost_of_completion,
    cost_of_text,
    prices,
    project_costs,
)
from cotplan.tasks import TaskItem, list_families, load_tasks, make_tasks, save_tasks
from cotplan.tokens import count_tokens

__all__ = [
    "Backend",
    "BudgetPlanner",
    "CallCache",
    "CallCost",
    "Comparison",
    "Completion",
    "CotplanError",
    "EmpiricalTokens",
    "FixedCap",
    "LocalModel",
    "NextTokenProbs",
    "OpenAICompatibleBackend",
    "ParametricTokens",
    "PlanReport",
    "PlannerCap",
    "Projection",
    "Scenario",
    "StalePriceWarning",
    "TaskItem",
    "Uncapped",
    "Usage",
    "Workload",
    "call_cost",
    "compare_scenarios",
    "connect",
    "cost_of_completion",
    "cost_of_text",
    "count_tokens",
    "list_families",
    "load_tasks",
    "make_tasks",
    "prices",
    "project_costs",
    "save_tasks",
]
__version__ = "0.1.0"
