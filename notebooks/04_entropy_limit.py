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
# # The entropy limit, and what "99% within 20 examples" can and cannot mean
#
# The paper (v1 §5.3) reports that GPT-3 reaches 99% of the optimal compression within 20
# examples, while Laplace smoothing needs more than 100. Efficiency there is the ratio of the
# true entropy H(p) to the predictor's cross-entropy.
#
# Two facts bound what any predictor can do:
#
# 1. Under a uniform prior on p, Laplace's rule (Beta(1,1)) **is** the Bayes-optimal predictor;
#    no predictor beats the Bayes mixture in expectation under its own prior.
# 2. At step n, Laplace's expected excess loss over the true-p coder is about 1/(2n) nats.
#
# This notebook measures the embedded model beside Laplace, KT, a clipped MLE and the
# Bayes-optimal predictor, and computes from the formulas where the paper's claim can hold.
#
# **To rerun on your own model**: set `backend_spec` to `"openai:MODEL"` and `base_url` to its
# server for the quick runs below; for the full tables run `cotplan reproduce --preset full
# --backend openai:MODEL --base-url URL`, then `python benchmarks/report_verdicts.py` on its
# report, and set `results` to that folder (`None`: the stored full run on the embedded model).

# %% tags=["parameters"]
backend_spec = "local"
base_url = None
seed = 0
results = None  # a folder with your full run's report_verdicts_full_local.csv

# %%
import altair as alt

import cotplan
from cotplan.charts import chart
from cotplan.research.experiments import (
    ENTROPY_QUICK,
    BackendPredictor,
    entropy_efficiency,
    laplace_threshold_table,
)

alt.renderers.enable("png")  # renders with no network
backend = cotplan.connect(backend_spec, base_url=base_url)

# %% [markdown]
# ## 1. What the exact references do
#
# `laplace_threshold_table` computes, from the exact expected losses, the first n at which
# Laplace's efficiency reaches 99% for several p. No sampling is involved.

# %%
thresholds = laplace_threshold_table()
thresholds

# %% [markdown]
# ## 2. The embedded model beside the references
#
# Quick preset: short sequences and few of them; intervals are wide.

# %%
result = entropy_efficiency(BackendPredictor(backend), seed=seed, **ENTROPY_QUICK)
result.to_frame().head(10)

# %%
result.versus_paper()

# %%
chart(result)

# %% [markdown]
# ## 3. With p drawn from the prior, where the Bayes limit applies
#
# At one fixed p (above) a predictor whose prior concentrates near that p may beat Laplace, so
# nothing there breaks a limit. Drawing p per sequence from the uniform prior makes Laplace the
# best any predictor can do in expectation: only then is "99% within 20 examples" flagged as
# impossible, and the measured curves are checked against the Bayes mixture (a *cotplan check*
# row, not a claim of the paper). The same experiment: `cotplan experiment entropy --p prior`.

# %%
prior = entropy_efficiency(BackendPredictor(backend), **{**ENTROPY_QUICK, "p": None, "seed": seed})
prior.versus_paper()[["claim", "measured", "verdict", "holds", "breaks_limit", "why"]]

# %% [markdown]
# The flags below are computed, not typed: any measured curve that beats the Bayes mixture
# under its own prior by more than 3 paired standard errors is listed.

# %%
for flag in prior.flags:
    print("-", flag)

# %% [markdown]
# ## 4. The full run's stored results beside these quick ones
#
# The full preset (at p = 0.3) on the same model, from the stored tables:
# each row's interval, the verdict the run printed and the one today's rules give from the
# same numbers (`cotplan.research.stored`). "Laplace needs > 100 examples" is read at p = 0.3
# only; the formulas of section 1 say where else it holds.

# %%
from cotplan.research.stored import full_run_rows

full_run_rows(["entropy"], results)

# %%
backend.close()
