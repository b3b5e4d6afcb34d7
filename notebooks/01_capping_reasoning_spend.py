# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Capping reasoning spend (for product teams)
#
# You have a task and a model. How many reasoning tokens does the task need? This notebook runs
# a small calibration (the same items at several reasoning budgets), fits how the error falls
# with the budget, reads the fitted constants and their intervals, picks a target error ε, and
# checks the plan on held-out items against uncapped reasoning.
#
# It runs on the embedded SmolLM2-135M by default. That model is weak: for most tasks reasoning
# does not measurably help it, and then the planner says so instead of inventing a benefit.
# Point `backend_spec` at a real API or a vLLM server for a meaningful plan.

# %% tags=["parameters"]
backend_spec = "local"
base_url = None
family = "count"
sizes = (3, 6)
items_per_size = 8
budgets = (0, 16, 64)
held_out_per_size = 4
uncapped = 128
seed = 0

# %%
import altair as alt

import cotplan
from cotplan.charts import chart
from cotplan.charts.planner import budget_chart, calibration_chart
from cotplan.planner.calibrate import calibrate
from cotplan.planner.run import NO_BENEFIT_STATUSES, plan_budgets, relative_target, run_plan
from cotplan.tasks import get_family, make_tasks

alt.renderers.enable("png")  # renders with no network
backend = cotplan.connect(backend_spec, base_url=base_url)
info = get_family(family)
print(f"{family}: {info.description} n = {info.n_meaning}")

# %% [markdown]
# ## 1. Calibrate
#
# Every item is answered at every budget k (k = 0 answers directly). Calls are cached, so
# rerunning this cell costs nothing, and a killed run resumes.

# %%
items = [it for n in sizes for it in make_tasks(family, n=n, count=items_per_size, seed=seed)]
calibration = calibrate(backend, items, list(budgets), progress=False)
frame = calibration.frame
frame.groupby(["n", "k"])["correct"].mean().unstack("k").round(2)

# %%
spent = frame.groupby("k")["reasoning_tokens"].mean()
print("mean reasoning tokens actually used per budget:", spent.round(1).to_dict())

# %% [markdown]
# ## 2. Fit the budget model
#
# The paper's law e(k, n) = e0 + (e_base − e0) · exp(−max(k − k0, 0) / (c · n^α)) and the
# other laws (α = 1/2, a logistic fall around a budget that grows with n, a step, a shape-free
# monotone curve), each by maximum likelihood with intervals from a bootstrap over items. They
# are compared on held-out items; the verdict says in words whether reasoning helps, whether
# the √n law holds, and which law plans.

# %%
planner = cotplan.BudgetPlanner(n_bootstrap=100, random_state=seed).fit(frame)
planner.report().to_frame()

# %%
planner.laws_.to_frame() if planner.laws_ is not None else "reasoning is not credited: no law"

# %%
print(planner.verdict_)

# %%
calibration_chart(planner)

# %% [markdown]
# ## 3. Choose ε and read k*
#
# The paper's ε is relative: the share of the achievable improvement left unclaimed. Here we
# leave a quarter of it; where reasoning is not credited, the target is the flat error itself
# and k* is 0.

# %%
eps = relative_target(planner, 0.25)
plan = plan_budgets(planner, sizes, eps)
credited = planner.status_ not in NO_BENEFIT_STATUSES
print(f"status {planner.status_}; target ε = {eps:.2f}")
for n, budget in plan.items():
    if budget is None:
        print(f"n = {n}: cap 0 (reasoning not credited)")
    else:
        print(f"n = {n}: k* = {budget.k_star:.1f}, cap {budget.tokens} ({budget.basis})")

# %%
budget_chart(planner, eps=eps) if credited else "no budget curve: reasoning is not credited"

# %% [markdown]
# ## 4. Check the plan on held-out items
#
# The planned cap against uncapped reasoning, on items the fit never saw.

# %%
held = [
    it
    for n in sizes
    for it in make_tasks(family, n=n, count=held_out_per_size, seed=seed + 1, exclude=items)
]
result = run_plan(backend, planner, held, eps, uncapped=uncapped, progress=False)
result.comparison

# %%
chart(result)

# %%
backend.close()
