"""cotplan: plan chain-of-thought token budgets, and measure what reasoning is worth.

The public names, re-exported from the modules that define them:

- models: `connect`, `LocalModel`, `Backend`, `OpenAICompatibleBackend`, `CallCache`
- tokens: `count_tokens`
- costs: `prices`, `call_cost`, `cost_of_text`, `cost_of_completion`, `project_costs`,
  `compare_scenarios` and the projection inputs
- tasks and planning: `make_tasks`, `load_tasks`, `calibrate`, `BudgetPlanner` (its law
  comparison and certified budgets), `adaptive_certify`, `run_plan`
- generation: `budgeted_answer`, `permutation_average`
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
from cotplan.generate.budgeted import BudgetedAnswer, budgeted_answer
from cotplan.generate.fewshot import Example, FewShotTemplate, load_examples
from cotplan.generate.permutation import AnswerDistribution, permutation_average
from cotplan.planner import (
    AdaptiveCertificate,
    BudgetPlanner,
    Certification,
    CertifiedBudget,
    LawComparison,
    LawFit,
    PlanReport,
    SavedPlan,
    adaptive_certify,
)
from cotplan.planner.calibrate import Calibration, calibrate
from cotplan.planner.run import PlanRun, run_plan
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
    "AdaptiveCertificate",
    "AnswerDistribution",
    "Backend",
    "BudgetPlanner",
    "BudgetedAnswer",
    "Calibration",
    "CallCache",
    "CallCost",
    "Certification",
    "CertifiedBudget",
    "Comparison",
    "Completion",
    "CotplanError",
    "EmpiricalTokens",
    "Example",
    "FewShotTemplate",
    "FixedCap",
    "LawComparison",
    "LawFit",
    "LocalModel",
    "NextTokenProbs",
    "OpenAICompatibleBackend",
    "ParametricTokens",
    "PlanReport",
    "PlanRun",
    "PlannerCap",
    "Projection",
    "SavedPlan",
    "Scenario",
    "StalePriceWarning",
    "TaskItem",
    "Uncapped",
    "Usage",
    "Workload",
    "adaptive_certify",
    "budgeted_answer",
    "calibrate",
    "call_cost",
    "compare_scenarios",
    "connect",
    "cost_of_completion",
    "cost_of_text",
    "count_tokens",
    "list_families",
    "load_examples",
    "load_tasks",
    "make_tasks",
    "permutation_average",
    "prices",
    "project_costs",
    "run_plan",
    "save_tasks",
]
__version__ = "0.1.0"
