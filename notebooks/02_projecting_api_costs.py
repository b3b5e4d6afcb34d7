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
# # Projecting API costs (for finance)
#
# This notebook prices calls from two price sources (cotplan's own dated rows, then
# genai-prices' bundled data for about two thousand more models), projects a year of spend with
# P10/P50/P90 bands on a model of each source, and shows what a reasoning cap, a cheaper model
# and permutation averaging do to the bill. Every number in the text is computed in the cell
# above it.
#
# The parameters cell below can be changed (or injected with papermill) to price another model
# or workload with the same code.

# %% tags=["parameters"]
model = "gpt-6.2-sol"  # priced by cotplan's own row
cheaper_model = "gpt-6.1-terra"
other_source_model = "gemini-2.5-flash"  # priced by genai-prices' bundled data
queries_per_day = 10_000
monthly_growth = 0.03
first_month = "2027-01-01"
reasoning_cap = 512
price_date = "2026-11-29"
seed = 0

# %%
from datetime import date
from pathlib import Path
from tempfile import mkdtemp

import altair as alt

import cotplan
from cotplan.charts import chart
from cotplan.pricing import (
    ParametricTokens,
    Scenario,
    Workload,
    call_cost,
    compare_scenarios,
    project_costs,
)

alt.renderers.enable("png")  # renders with no network; the default HTML renderer needs a CDN
on = date.fromisoformat(price_date)

# %% [markdown]
# ## 1. The price table
#
# Every row says where its price came from: cotplan's own row (the page and the date it was
# read) or genai-prices (its release and the dates a historic price held). Where both price a
# model for the same provider, cotplan's row wins. A model missing from both is an error, never
# a silent zero.

# %%
table = cotplan.prices(on=on)
print(f"{len(table):,} price rows for {len(table.groupby(['provider', 'model'])):,} models")
table["origin"].value_counts()

# %%
columns = ["provider", "model", "input_per_mtok", "output_per_mtok", "reasoning_billing", "source"]
table[table["model"].isin([model, other_source_model])][columns]

# %%
try:
    call_cost("gpt-4o-mini-typo", prompt_tokens=1, completion_tokens=1, on=on)
except cotplan.CotplanError as error:
    print(error)

# %%
# A name several providers sell costs its maker's list price; the notes name the other sellers.
haiku = call_cost("claude-3-5-haiku", prompt_tokens=1, completion_tokens=1, on=on)
print(haiku.provider, "|", haiku.notes.split("; ")[0])

# %% [markdown]
# ## 2. One call, priced exactly
#
# OpenAI counts reasoning tokens inside `completion_tokens`; cotplan does not add them twice.
# Cached prompt tokens pay the cached rate only.

# %%
one = call_cost(
    model,
    prompt_tokens=10_000,
    completion_tokens=3_000,
    reasoning_tokens=2_000,
    cached_tokens=4_000,
    on=on,
)
one.to_frame()

# %%
print(f"one call costs ${one.usd} (an exact Decimal); price: {one.source}")

# %% [markdown]
# ## 3. A year of spend
#
# Tokens per call as means and spreads measured on 200 calls; the band reflects how well those
# means are known.

# %%
workload = Workload(
    queries_per_day=queries_per_day,
    growth_rate=monthly_growth,
    start=date.fromisoformat(first_month),
)
tokens = ParametricTokens(1_500, 600, 300, 150, 2_000, 1_500, n_observed=200)
projection = project_costs(
    model, workload, tokens, cache_hit_rate=0.2, draws=100_000, seed=seed, today=on
)
projection.frame.tail(3)

# %%
year = projection.frame.iloc[-1]
print(
    f"year 1: P10 ${year['p10_usd']:,.0f}, P50 ${year['p50_usd']:,.0f}, P90 ${year['p90_usd']:,.0f}"
)

# %%
chart(projection)

# %% [markdown]
# The same workload on a model priced by genai-prices. Gemini reports thinking tokens apart
# from the answer; cotplan adds them once, at the output rate.

# %%
other = project_costs(
    other_source_model, workload, tokens, cache_hit_rate=0.2, draws=100_000, seed=seed, today=on
)
other_year = other.frame.iloc[-1]
print(
    f"{other_source_model}: year 1 P10 ${other_year['p10_usd']:,.0f}, "
    f"P50 ${other_year['p50_usd']:,.0f}, P90 ${other_year['p90_usd']:,.0f}; "
    f"price: {other.assumptions['price_source']}"
)

# %% [markdown]
# ## 4. Scenarios: a reasoning cap, a cheaper model, permutation averaging
#
# Every scenario sees the same random draws, so the savings are paired.

# %%
comparison = compare_scenarios(
    workload,
    tokens,
    [
        Scenario("uncapped", model, cache_hit_rate=0.2),
        Scenario(f"cap {reasoning_cap}", model, policy=reasoning_cap, cache_hit_rate=0.2),
        Scenario("cheaper model", cheaper_model, cache_hit_rate=0.2),
        Scenario("other source", other_source_model, cache_hit_rate=0.2),
        Scenario(
            f"cap {reasoning_cap}, 5 orderings",
            model,
            policy=reasoning_cap,
            permutations=5,
            cache_hit_rate=0.2,
        ),
    ],
    draws=100_000,
    seed=seed,
    today=on,
)
comparison.frame[["scenario", "total_mean_usd", "total_p10_usd", "total_p90_usd", "savings_pct"]]

# %%
capped = comparison.frame.set_index("scenario").loc[f"cap {reasoning_cap}"]
print(f"capping reasoning at {reasoning_cap} tokens saves {capped['savings_pct']:.1f}% a year")

# %%
chart(comparison)

# %% [markdown]
# ## 5. For the spreadsheet
#
# The workbook opens on a summary sheet (the year and total rows, the budget, price changes in
# the horizon, the inputs as entered beside what was simulated, and the price sources), then
# one sheet per kind of period (monthly, quarters, fiscal years), so a SUM over any one of them
# is the horizon's total, then the assumptions and prices sheets. Dollars are in a currency
# format and shares are fractions with a percent format; every assumption is kept so a
# colleague can rerun the numbers.

# %%
from openpyxl import load_workbook

out = Path(mkdtemp(prefix="cotplan-costs-"))
comparison.to_excel(out / "comparison.xlsx")
projection.to_excel(out / "projection.xlsx")
projection.to_csvs(out)  # one CSV per period kind: summing a file never double counts
print(sorted(p.name for p in out.iterdir()))
load_workbook(out / "projection.xlsx").sheetnames

# %% [markdown]
# ## 6. Month end: the providers' exports, reconciled
#
# At month end a finance team holds the providers' own exports: OpenAI's Usage and Costs API
# pages (or the dashboard's cost CSV), Anthropic's usage and cost reports, a Google Cloud
# billing export. `reconcile` prices each provider's usage with the same table as everything
# above, puts it beside the provider's stated cost and cotplan's own call log, and says for
# every row whether it matched, what explains the difference, or that nothing does.
#
# The exports below are synthetic but in the providers' exact shapes: three days of one
# project's calls, interactive and a batch job, billed under a negotiated 10% discount (the
# terms file `cotplan cost reconcile --terms` reads; here passed as `discounts`).

# %%
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from cotplan.charts.costs import reconciliation_chart, spend_by_chart
from cotplan.pricing import Invoice, price_table, read_export, reconcile
from cotplan.pricing.attribution import calls_from_jsonl, spend_by

month_end = Path(mkdtemp(prefix="cotplan-month-end-"))
days = [date(2026, 11, 2) + timedelta(days=i) for i in range(3)]
mini = price_table().lookup("gpt-4o-mini", on=days[0], warn=False)


def unix(day):
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def usage_result(prompt, cached, output, requests, batch):
    return {"object": "organization.usage.completions.result", "input_tokens": prompt,
            "input_cached_tokens": cached, "output_tokens": output,
            "num_model_requests": requests, "project_id": "proj_search",
            "model": "gpt-4o-mini-2024-07-18", "batch": batch}  # fmt: skip


def listed(prompt, cached, output, requests, batch):
    usd = ((prompt - cached) * mini.input_per_mtok + cached * mini.cached_input_per_mtok
           + output * mini.output_per_mtok) / 1_000_000  # fmt: skip
    return usd * (Decimal("0.5") if batch else 1) * Decimal("0.9")  # 10% negotiated off


usage_pages, cost_pages, stated = [], [], Decimal(0)
for n, day in enumerate(days):
    interactive = (400_000 + 10_000 * n, 100_000, 60_000, 300, False)
    batch_job = (2_000_000, 0, 200_000, 1_000, True)
    results = [usage_result(*interactive), usage_result(*batch_job)]
    usage_pages.append({"object": "bucket", "start_time": unix(day),
                        "end_time": unix(day + timedelta(days=1)), "results": results})  # fmt: skip
    amounts = [listed(*interactive), listed(*batch_job)]
    items = zip(amounts, ("input", "batch input"), strict=True)
    stated += sum(amounts)
    cost_pages.append({"object": "bucket", "start_time": unix(day),
                       "end_time": unix(day + timedelta(days=1)),
                       "results": [{"object": "organization.costs.result",
                                    "amount": {"value": float(a), "currency": "usd"},
                                    "line_item": f"gpt-4o-mini-2024-07-18, {kind}",
                                    "project_id": "proj_search"}
                                   for a, kind in items]})  # fmt: skip
(month_end / "usage.json").write_text(json.dumps({"object": "page", "data": usage_pages}))
(month_end / "costs.json").write_text(json.dumps({"object": "page", "data": cost_pages}))

# cotplan's own log: the interactive calls, one response a line, tagged by team and feature.
log_lines = []
for n, day in enumerate(days):
    for team, feature, prompt in (("search", "suggest", 1_300), ("search", "rank", 900),
                                  ("support", "chat", 2_400)):  # fmt: skip
        log_lines.append(json.dumps({
            "object": "chat.completion", "created": unix(day) + 3_600 * (n + 1),
            "model": "gpt-4o-mini", "usage": {"prompt_tokens": prompt, "completion_tokens": 200},
            "metadata": {"team": team, "feature": feature, "project": "proj_search"}}))  # fmt: skip
(month_end / "calls.jsonl").write_text("\n".join(log_lines) + "\n")

lines = [*read_export("openai-usage", month_end / "usage.json"),
         *read_export("openai-costs", month_end / "costs.json")]  # fmt: skip
logged = calls_from_jsonl(month_end / "calls.jsonl", today=date(2026, 12, 1))
invoice = Invoice("openai", "2026-11", total_usd=stated - 10 + Decimal("2.00"),
                  tax_usd=Decimal("2.00"), credits_usd=Decimal(10))  # fmt: skip
result = reconcile(lines, log=logged, invoices=[invoice], discounts={"openai": Decimal("0.10")})
result.frame[["month", "model", "project", "stated_usd", "priced_usd", "logged_usd", "status"]]

# %%
for why in result.frame["why"]:
    print(why)
print(result.invoices[["month", "provider", "status", "why"]].to_string(index=False))
print("every line matched or explained:", result.all_explained)

# %%
reconciliation_chart(result.frame)

# %% [markdown]
# ## 7. Spend by team
#
# Calls carry tags (the request's `metadata`, or a `tags` object on the log line); the same
# log split by team and feature gives each team its share of the month, with untagged calls
# in a row of their own so every dollar is counted once. On the command line:
# `cotplan cost actuals calls.jsonl --by team,feature`.

# %%
by_team = spend_by(logged, ["team", "feature"])
by_team

# %%
spend_by_chart(by_team, "team")
