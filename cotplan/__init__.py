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

from cotplan._lazy import lazy_face

# The public names, each written once: imported here for type checkers and editors, and read
# from these lines by `lazy_face` to import on first use at run time.
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

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_face(__name__, __file__)
