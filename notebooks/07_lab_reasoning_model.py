# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A lab reasoning model: testing the chain-of-thought length law
#
# The paper claims the optimal chain-of-thought length is k* = Θ(√n · log(1/ε)) and never
# tested it; the embedded 135M model barely gains from reasoning, so it cannot test it either.
# Here a small transformer, trained on CPU, answers task families where writing the
# intermediate steps is necessary and the mechanism is known: every input costs exactly three
# reasoning tokens (its label, the input, the state after it). A budget cuts the trace, then
# the answer is forced. cotplan's own calibration, planner and held-out check run on it
# unchanged, and their output can be held against that ground truth.
#
# The models ship with cotplan (`cotplan/research/lab/reasoning/weights/`): nothing trains here. The
# tiny preset (sizes 2 to 5) runs in seconds; `preset = "standard"` (sizes up to 16) gives the
# study in docs/lab-reasoning.md. Section 6 shows the two models added in round two: an
# over-thinker that goes on long after its answer is settled, and the lamp, where every step
# of reasoning buys a little, measured on the paper's own terms (log-loss B(k), relative ε).
#
# **To rerun on your own model**: the lab's families run on any served reasoning model with
# `cotplan kstar study --backend openai:MODEL --base-url URL` (the preregistered protocol on a
# task whose trace the model writes itself; docs/lab-reasoning.md); `results` set to a folder
# with your full reproduction's `report_verdicts_full_local.csv` shows yours in section 7
# (`None`: the stored full run).

# %% tags=["parameters"]
family = "parity"
preset = "tiny"
threads = 1
results = None  # a folder with your full run's report_verdicts_full_local.csv

# %%
import altair as alt
import torch

import cotplan
from cotplan.generate import budgeted_answer
from cotplan.research.charts.lab_reasoning import budget_law_chart, error_grid_chart
from cotplan.research.lab.reasoning import (
    get_lab_family,
    load_or_train,
    make_lab_tasks,
    reasoning_study,
    solve,
)
from cotplan.research.lab.reasoning.study import STUDY_PRESETS

alt.renderers.enable("png")  # renders with no network
torch.set_num_threads(threads)
info = get_lab_family(family)
print(f"{info.name}: {info.description}")
print(f"a cut trace: {info.truncated}")

# %% [markdown]
# ## 1. The task and its trace
#
# A question of size n, its full trace (3n tokens) and the answer. The blind reference is the
# error of the best guess that knows only what a trace cut at k tokens wrote; a model that also
# reads the unread inputs can do better, never worse.

# %%
item = make_lab_tasks(family, n=5, count=1, seed=3)[0]
example = solve(str(item.prompt))
print(item.prompt)
print("trace:", " ".join(example.trace), "| answer:", example.answer)

# %% [markdown]
# ## 2. The model, as a cotplan backend
#
# Loaded from the weights that ship with cotplan (their record holds the key of every
# training setting and a checksum: stale or damaged files are caught), then served in-process
# by `cotplan.connect("lab:FAMILY")`. `budgeted_answer` drives it exactly as
# it drives an API model: reasoning capped at k tokens, then a forced answer.

# %%
model = load_or_train(family, STUDY_PRESETS[preset].train)
print(model.meta)
backend = cotplan.connect(f"lab:{family}", preset=STUDY_PRESETS[preset].train)
for k in (0, 4, 9, 14, 17):
    answer = budgeted_answer(backend, item, k)
    print(
        f"k = {k:>2}: reasoning {answer.reasoning.strip()!r:<44} answer {answer.extracted} "
        f"({'right' if answer.correct else 'wrong'}; forced: {answer.forced})"
    )

# %% [markdown]
# ## 3. The study: error grid, planner fit, law, oracle, held-out items
#
# Every calibration item is answered at every budget from 0 to past the full trace, at several
# sizes. The planner fits the paper's exponential, e(k, n) = e0 + (e_base − e0) ·
# exp(−max(k − k0, 0) / (c · n^α)), beside other shapes (a logistic, a step), and plans with the
# one that predicts held-out items best: the verdict's last clause names it ("planning law").
# On parity the error does not decay: it stays at a coin flip and drops at the end of the
# trace, so a logistic wins and the exponential's α is not a reading of this model. The law is
# also read off the observed errors without any model: the smallest budget from which the
# error stays below ε, per n, and its slope on log-log axes.

# %%
study = reasoning_study(family, preset, backend=backend)
print(study.verdict)
print()
print("law:", study.law)

# %% [markdown]
# The exponential's free α ran to the top of its range, and the verdict says why: the error
# had reached its floor within the budgets tried, so the bound comes from too few sizes, not from
# budgets too small, and more sizes (not larger budgets) would pin α down. The observed errors
# agree: the worst error at n = 5 from k = 15 on, printed below, is already the floor.

# %%
at_5 = study.to_frame().query("n == 5")
settled = at_5[at_5["k"] >= 15]
print(f"n = 5, k = 15 to {settled['k'].max()}: worst error {settled['error'].max():.2f}")

# %%
error_grid_chart(study)

# %% [markdown]
# The planner's constants with 95% item-bootstrap intervals, and the same curve with α fixed
# at 1/2 (the paper) and at 1 (a fixed number of tokens per input), compared by likelihood.

# %%
study.constants_frame().round(3)

# %%
study.laws.round(2)

# %% [markdown]
# k*(n, ε) observed, beside the planner's k*, the full trace (3n + 2 tokens) and what the √n
# law would plan with its constant fitted to the same observations.

# %%
study.law_frame().round(2)

# %%
study.exponents.round(2)

# %%
budget_law_chart(study)

# %% [markdown]
# ## 4. The oracle per-item budget and the held-out policies
#
# The oracle budget of an item is the smallest budget at which it was answered right (a lucky
# guess counts); the stable budget is where every larger one was right too. On held-out items:
# uncapped reasoning, fixed caps, the planned k* and the oracle, with paired intervals.

# %%
study.oracle_summary().round(1)

# %%
study.plan.drop(columns=["note"]).round(2)

# %%
study.heldout[
    ["policy", "items", "accuracy", "accuracy_low", "accuracy_high", "reasoning_tokens",
     "tokens_saved", "tokens_saved_low", "tokens_saved_high"]
].round(2)  # fmt: skip

# %% [markdown]
# ## 5. For the reproduction report
#
# One row per claim, in the reproduction report's format.

# %%
import pandas as pd

pd.DataFrame([row.as_dict() for row in study.report_rows()])[
    ["claim", "measured", "interval", "verdict"]
]


# %% [markdown]
# ## 6. An over-thinker, and a task where each step helps a little
#
# `lab:parity-overthink` answers the same parity questions, but after the steps that settle
# the answer it goes on with a verification pass (`Check:`) that re-reads n to 2n inputs and
# restates the answer: uncapped it spends 2 to 3 times the tokens the answer needs, as
# reasoning models do. A cap just past the settling point keeps the answer.

# %%
overthinker = cotplan.connect("lab:parity-overthink", preset=STUDY_PRESETS[preset].train)
n = 4
for question in make_lab_tasks("parity-overthink", n=n, count=3, seed=1):
    uncapped = budgeted_answer(overthinker, question, 256)
    capped = budgeted_answer(overthinker, question, 3 * n + 3)
    print(
        f"uncapped: {uncapped.reasoning_tokens} tokens ({'right' if uncapped.correct else 'wrong'})"
        f"; capped at {3 * n + 3}: {capped.reasoning_tokens} tokens "
        f"({'right' if capped.correct else 'wrong'})"
    )
print(uncapped.reasoning.strip())

# %% [markdown]
# `lab:lamp`: a lamp starts off, each input 1 toggles it; was it on after more than half of
# the steps? Each written lamp state is one vote and each unread one a fair coin, so the error
# falls gradually with every step. `mechanism_error` is that curve, exactly.

# %%
from cotplan.research.lab.reasoning.logloss import logloss_study
from cotplan.research.lab.reasoning.tasks import mechanism_error

print([round(mechanism_error("lamp", 16, k), 3) for k in range(0, 49, 6)])

# %% [markdown]
# The paper's terms: B(k) = mean −ln P(correct answer) from the backend's `next_token_probs`,
# the relative ε = (B(k) − B_opt) / (B(0) − B_opt), and k*(n, ε) with item-bootstrap intervals.
# Theorem 4.5's domain ε ∈ [max(n^−1/4, 1/V), 1/2] is empty below n = 16; `in_domain` marks the
# tested (n, ε) inside it.

# %%
lamp = cotplan.connect("lab:lamp", preset=STUDY_PRESETS[preset].train)
law = logloss_study(lamp, sizes=list(STUDY_PRESETS[preset].sizes), items=40, n_bootstrap=100)
print(law.verdict())
law.budgets.round(2)

# %% [markdown]
# ## 7. Inside the theorem's domain: the lamp to n = 64
#
# The domain [max(n^−1/4, 1/V), 1/2] is a single point at n = 16 and widens with n: [0.42, 1/2]
# at n = 32, [0.354, 1/2] at n = 64. The "long" lamp, trained by a curriculum that moves its
# sizes up to 64 and then mixes every size back in, ships too; its training check says it
# writes its trace exactly at every size up to 64 (the "wide" lamp, one stage earlier, stopped
# at 32, going wrong at the late position labels). So the law is read inside the domain up to
# n = 64. The cell below runs 10 items per size, enough to see which (n, ε) fall inside the
# domain and how k* sits against the full trace, not enough for the exponent: its n-exponents
# on B over the three sizes (printed) exclude √n but run from below linear to about n²
# (n^1.85 [0.74, 2.00] at ε = 0.5), and those on the 0/1 error are wider still. The exponent
# to quote is the full run's, 120 items at seven sizes: n^1.07 [0.91, 1.30] at ε = 0.5, linear
# with √n excluded (benchmarks/results/kstar_lab_law_lamp_long.txt; docs/lab-reasoning.md).
# That run also tests the theorem's premise on B(k), that it falls fastest first: on this
# model B falls slowest first at every size, so the law is read outside the theorem's
# premise, and the run's verdict says so rather than "not reproduced". It is one seed's model:
# the same recipe with two other training seeds gave models that do not write the trace at the
# largest sizes, and their exponents cannot tell √n from linear (docs/lab-reasoning.md, "Three
# seeds"), so the linear law is this model's, not yet the recipe's.

# %%
from cotplan.research.lab.reasoning.logloss import in_domain

long_lamp = cotplan.connect("lab:lamp", preset="long")
print("trace written exactly:", long_lamp.lab.meta["trace_exact"])
sizes, targets = [32, 48, 64], [0.5, 0.4, 0.36]
in_reach = logloss_study(long_lamp, sizes=sizes, items=10, eps_grid=targets, n_bootstrap=50)
print(in_reach.verdict())
print([(n, e) for n in sizes for e in targets if in_domain(n, e, in_reach.vocab)])
in_reach.budgets[in_reach.budgets["measure"] == "B"].round(2)

# %% [markdown]
# ## 7. The full runs' stored results beside these quick ones
#
# The standard study of five families and the lamp's law, from the full reproduction's stored
# tables: each row's interval, the verdict the run printed and the one today's rules give
# (`cotplan.research.stored`). Where the theorem's premise on B(k) fails, the law's row reads
# *outside the theorem's premise*, not "not reproduced".

# %%
from cotplan.research.stored import full_run_rows

full_run_rows(["cot-lab"], results)
