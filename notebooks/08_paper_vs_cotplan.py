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
# # Paper vs cotplan: the full reproduction, row by row
#
# Every claim of "LLMs are Bayesian, in Expectation, not in Realization" that cotplan tests, with
# the full run's measured value, its 95% interval and its verdict, read from the stored tables
# (`benchmarks/results/reproduce_full_local.md`, re-read through today's verdict rules by
# `python benchmarks/report_verdicts.py` into `report_verdicts_full_local.csv`). Nothing here
# runs a model: the tables are those of the stored run, so this notebook shows what a referee
# would check, and how each verdict follows from its interval.
#
# **To rerun on your own model**, run `cotplan reproduce --preset full --backend
# openai:MODEL --base-url URL` (hours on a small model), then
# `python benchmarks/report_verdicts.py` on its report, and point `results` below at the folder.

# %% tags=["parameters"]
results = None  # a folder with report_verdicts_full_local.csv; None: the stored run's

# %%
from pathlib import Path

import pandas as pd

from cotplan.research.experiments.verdicts import MEANINGS, MODEL_CLAIM_VERDICTS


def stored(name: str) -> Path:
    """A file under benchmarks/results, found from the notebook's folder or the repository."""
    if results is not None:
        return Path(results) / name
    for base in (Path.cwd(), *Path.cwd().parents):
        candidate = base / "benchmarks" / "results" / name
        if candidate.exists():
            return candidate
    raise FileNotFoundError(name)


rows = pd.read_csv(stored("report_verdicts_full_local.csv"), keep_default_na=False)
pd.set_option("display.max_colwidth", 90)

# %% [markdown]
# ## The verdicts, as written and as the intervals allow
#
# `verdict` is what the run printed; `new_verdict` is what today's rules give from the same
# numbers. A row is *reproduced* only when its interval lies inside the paper's value ± the
# stated margin, a miss only when it lies wholly outside, and *not testable* otherwise; *not
# comparable (model)* is kept for a miss of the paper's model's own magnitude.

# %%
table = rows[["experiment", "claim", "interval", "verdict", "new_verdict"]]
table

# %% [markdown]
# ## The rows whose verdict changed, and why

# %%
changed = rows[rows["verdict"] != rows["new_verdict"]]
changed[["experiment", "claim", "interval", "verdict", "new_verdict", "new_why"]]

# %% [markdown]
# ## The tally of claims about models

# %%
claims = list(MODEL_CLAIM_VERDICTS)
tally = pd.DataFrame(
    {
        "as written": rows["verdict"].value_counts().reindex(claims, fill_value=0),
        "today": rows["new_verdict"].value_counts().reindex(claims, fill_value=0),
        "meaning": [MEANINGS[v] for v in claims],
    }
)
tally

# %% [markdown]
# ## The positive control for the k* law
#
# A "not reproduced" on the k* law means little unless the same pipeline recovers the law where
# it is planted. `benchmarks/planted_control.py` plants k* ∝ √n·log(1/ε) (and, as the negative
# control, k* ∝ n) and stores the empirical k* per size beside the construction's exact one.

# %%
planted = pd.read_csv(stored("planted_control_kstar.csv"))
planted.pivot_table(index=["law", "eps", "n"], columns="seed", values="k").join(
    planted.groupby(["law", "eps", "n"])["exact_k"].first()
)
