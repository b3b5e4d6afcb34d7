"""cotplan: plan chain-of-thought token budgets, and measure what reasoning is worth.

The public names, re-exported from the modules that define them:

- models: `connect`, `LocalModel`, `Backend`, `OpenAICompatibleBackend`, `CallCache`
- tokens: `count_tokens`
- costs: `prices`, `call_cost`, `cost_of`, `cost_of_text`, `cost_of_completion`, `project_costs`,
  `compare_scenarios` and the projection inputs
- tasks and planning: `make_tasks`, `load_tasks`, `drop_seen`, `calibrate`, `BudgetPlanner` (its law
  comparison and certified budgets), `adaptive_certify`, `run_plan`
- generation: `budgeted_answer`, `budgeted_answers`, `permutation_average`
- plans: `SavedPlan` (its `cap(n)` is a `PlanCap`, its `request_fields(n)` the provider's
  fields), `Budget` (what `BudgetPlanner.budget` returns) and `InfeasibleTargetError` (what it
  raises when ε cannot be reached)
- production: `capped` (a team's own OpenAI client with a plan's cap applied), `monitor` (the
  log against the plan, with an anytime-valid alarm)
- workflows: `run_demo`, `demo_setup`, `project_run_costs` (what `cotplan demo` runs)
- intervals: `Interval`, `percentile_interval`

The names are imported on first use (PEP 562), so that `import cotplan` (and every command,
and the embedded model's server process) does not pay for openai, scipy and pandas before it
needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cotplan._lazy import lazy_names

if TYPE_CHECKING:
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
    from cotplan.backends.tokens import count_tokens
    from cotplan.errors import CotplanError, InfeasibleTargetError
    from cotplan.generate.budgeted import BudgetedAnswer, budgeted_answer, budgeted_answers
    from cotplan.intervals import Interval, percentile_interval
    from cotplan.permutation.average import AnswerDistribution, permutation_average
    from cotplan.permutation.fewshot import Example, FewShotTemplate, load_examples
    from cotplan.planner import (
        AdaptiveCertificate,
        BoundaryTest,
        Budget,
        BudgetPlanner,
        Certification,
        CertifiedBudget,
        LawComparison,
        LawFit,
        PlanReport,
        PlanResult,
        SavedPlan,
        adaptive_certify,
        plan_from_calibration,
    )
    from cotplan.planner.calibrate import Calibration, calibrate
    from cotplan.planner.records import PlanCap
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
        cost_of,
        cost_of_completion,
        cost_of_text,
        prices,
        project_costs,
    )
    from cotplan.production.model_map import register_model
    from cotplan.production.monitor import MonitorReport, monitor
    from cotplan.production.wrapper import capped
    from cotplan.tasks import TaskItem, drop_seen, list_families, load_tasks, make_tasks, save_tasks
    from cotplan.workflow import demo_setup, project_run_costs, run_demo

_PUBLIC = {  # name: the module that defines it, imported on first use
    "AdaptiveCertificate": "cotplan.planner",
    "AnswerDistribution": "cotplan.permutation.average",
    "Backend": "cotplan.backends",
    "BoundaryTest": "cotplan.planner",
    "Budget": "cotplan.planner",
    "BudgetPlanner": "cotplan.planner",
    "BudgetedAnswer": "cotplan.generate.budgeted",
    "Calibration": "cotplan.planner.calibrate",
    "CallCache": "cotplan.backends",
    "CallCost": "cotplan.pricing",
    "Certification": "cotplan.planner",
    "CertifiedBudget": "cotplan.planner",
    "Comparison": "cotplan.pricing",
    "Completion": "cotplan.backends",
    "CotplanError": "cotplan.errors",
    "EmpiricalTokens": "cotplan.pricing",
    "Example": "cotplan.permutation.fewshot",
    "FewShotTemplate": "cotplan.permutation.fewshot",
    "FixedCap": "cotplan.pricing",
    "InfeasibleTargetError": "cotplan.errors",
    "Interval": "cotplan.intervals",
    "LawComparison": "cotplan.planner",
    "LawFit": "cotplan.planner",
    "LocalModel": "cotplan.backends",
    "MonitorReport": "cotplan.production.monitor",
    "NextTokenProbs": "cotplan.backends",
    "OpenAICompatibleBackend": "cotplan.backends",
    "ParametricTokens": "cotplan.pricing",
    "PlanCap": "cotplan.planner.records",
    "PlanReport": "cotplan.planner",
    "PlanResult": "cotplan.planner",
    "PlanRun": "cotplan.planner.run",
    "PlannerCap": "cotplan.pricing",
    "Projection": "cotplan.pricing",
    "SavedPlan": "cotplan.planner",
    "Scenario": "cotplan.pricing",
    "StalePriceWarning": "cotplan.pricing",
    "TaskItem": "cotplan.tasks",
    "Uncapped": "cotplan.pricing",
    "Usage": "cotplan.backends",
    "Workload": "cotplan.pricing",
    "adaptive_certify": "cotplan.planner",
    "budgeted_answer": "cotplan.generate.budgeted",
    "budgeted_answers": "cotplan.generate.budgeted",
    "calibrate": "cotplan.planner.calibrate",
    "call_cost": "cotplan.pricing",
    "capped": "cotplan.production.wrapper",
    "compare_scenarios": "cotplan.pricing",
    "connect": "cotplan.backends",
    "cost_of": "cotplan.pricing",
    "cost_of_completion": "cotplan.pricing",
    "cost_of_text": "cotplan.pricing",
    "count_tokens": "cotplan.backends.tokens",
    "demo_setup": "cotplan.workflow",
    "drop_seen": "cotplan.tasks",
    "list_families": "cotplan.tasks",
    "load_examples": "cotplan.permutation.fewshot",
    "load_tasks": "cotplan.tasks",
    "make_tasks": "cotplan.tasks",
    "monitor": "cotplan.production.monitor",
    "percentile_interval": "cotplan.intervals",
    "permutation_average": "cotplan.permutation.average",
    "plan_from_calibration": "cotplan.planner",
    "prices": "cotplan.pricing",
    "project_costs": "cotplan.pricing",
    "project_run_costs": "cotplan.workflow",
    "register_model": "cotplan.production.model_map",
    "run_demo": "cotplan.workflow",
    "run_plan": "cotplan.planner.run",
    "save_tasks": "cotplan.tasks",
}

__all__ = [
    "AdaptiveCertificate",
    "AnswerDistribution",
    "Backend",
    "BoundaryTest",
    "Budget",
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
    "InfeasibleTargetError",
    "Interval",
    "LawComparison",
    "LawFit",
    "LocalModel",
    "MonitorReport",
    "NextTokenProbs",
    "OpenAICompatibleBackend",
    "ParametricTokens",
    "PlanCap",
    "PlanReport",
    "PlanResult",
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
    "budgeted_answers",
    "calibrate",
    "call_cost",
    "capped",
    "compare_scenarios",
    "connect",
    "cost_of",
    "cost_of_completion",
    "cost_of_text",
    "count_tokens",
    "demo_setup",
    "drop_seen",
    "list_families",
    "load_examples",
    "load_tasks",
    "make_tasks",
    "monitor",
    "percentile_interval",
    "permutation_average",
    "plan_from_calibration",
    "prices",
    "project_costs",
    "project_run_costs",
    "register_model",
    "run_demo",
    "run_plan",
    "save_tasks",
]
__version__ = "0.1.0"


__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, __all__)
