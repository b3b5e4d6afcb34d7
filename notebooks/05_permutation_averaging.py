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
# # Permutation averaging: order variance, schedules, calibration
#
# Few-shot answers change when the examples are reordered. Averaging the answer probability over
# orderings removes that dependence in expectation (the paper's "Bayesian in expectation, not in
# realization"). This notebook measures how much the order moves one answer on the embedded
# model, compares the `random` and `balanced` (Latin-square) schedules, and reads the intervals.
#
# A note on words: **sd** and **variance** below are the spread of ONE ordering's probability;
# the paper's "spread falls as m^-0.48" is about the standard deviation of the *average*, which
# the standard error `se` estimates.

# %% tags=["parameters"]
# To rerun on your own model: backend_spec = "openai:MODEL" and base_url = "http://HOST/v1"
# (any OpenAI-compatible server with logprobs); a larger m sweeps further in section 4.
backend_spec = "local"
base_url = None
m = 8
seed = 0

# %%
import altair as alt
import pandas as pd

import cotplan
from cotplan.charts.permutation import orderings_chart
from cotplan.permutation.average import permutation_average

alt.renderers.enable("png")  # renders with no network
backend = cotplan.connect(backend_spec, base_url=base_url)
examples = [
    ("The movie was wonderful.", "positive"),
    ("The meal was awful.", "negative"),
    ("The trip was lovely.", "positive"),
    ("The show was boring.", "negative"),
]
query = "The party was great."
choices = ["positive", "negative"]

# %% [markdown]
# ## 1. One answer, averaged over balanced orderings

# %%
balanced = permutation_average(
    backend, examples, query, choices, m=m, schedule="balanced", seed=seed
)
balanced.to_frame()

# %%
print(
    f"answer {balanced.answer!r}: P = {balanced.probs[balanced.answer]:.3f}; one ordering's "
    f"probability moves by sd {balanced.sd[balanced.answer]:.3f} "
    f"(variance {balanced.variance[balanced.answer]:.4f}) across orderings"
)

# %%
orderings_chart(balanced)

# %% [markdown]
# ## 2. Random versus balanced orderings
#
# The same budget of orderings, two schedules. Balanced orderings put every example in every
# position equally often, so first-order position bias cancels within each cycle.

# %%
random_orders = permutation_average(
    backend, examples, query, choices, m=m, schedule="random", seed=seed
)
pd.DataFrame(
    {
        "schedule": ["random", "balanced"],
        "P(positive)": [random_orders.probs["positive"], balanced.probs["positive"]],
        "se": [random_orders.se["positive"], balanced.se["positive"]],
        "interval": [random_orders.interval_method, balanced.interval_method],
        "calls": [random_orders.calls, balanced.calls],
    }
)

# %% [markdown]
# ## 3. What the intervals mean
#
# The interval is for the averaged probability, not for whether the answer is right. How it was
# computed is stated with the result:

# %%
print(balanced.interval_description)
for note in balanced.notes:
    print("-", note)

# %% [markdown]
# ## 4. How many orderings?
#
# The same random orderings, averaged over the first m' of them for growing m' (no new model
# calls). The average settles while its standard error falls as 1/√m'; what averaging cannot
# remove is the bias every ordering shares, which no number of orderings shows. The full run's
# sweep over many more orderings of binary sequences is in `docs/experiments.md` (order rows).

# %%
first = random_orders.per_ordering[:, list(random_orders.choices).index("positive")]
sizes = sorted({1, *(2**i for i in range(1, m.bit_length())), m})
pd.DataFrame(
    {
        "orderings": sizes,
        "P(positive)": [first[:k].mean() for k in sizes],
        "se": [first[:k].std(ddof=1) / k**0.5 if k > 1 else float("nan") for k in sizes],
    }
)

# %%
backend.close()
