"""Time a one-year spend projection with 10^6 Monte Carlo draws on one CPU core, for 20 models.

The projection is `project_costs` on a growing workload (12 months), lognormal token
distributions with estimation uncertainty, cache hits, cache writes and a batch share, with a
monthly budget and an April fiscal year (so the chance of going over and the fiscal quarters
and years are part of the work timed), for each of 20 models: cotplan's own rows and three
from genai-prices' bundled data. Threads are limited to one and the process is pinned to one
core before numpy loads. One small warm-up run comes first (imports, first-call allocations);
then each repeat is timed, in CPU seconds of this process (the work done on its one core,
which other jobs on a shared machine do not inflate) and in wall seconds. Target: a median
under 1 CPU second for every model; the load average is printed beside the wall times. A check
inside: the projected cost per call equals the float of `call_cost` on the mean tokens, at the
price of the first month, within 1%.

Then all 20 models at once: `compare_scenarios` with the same 10^6 draws, timed as one call,
with the ranked comparison chart drawn from it; target: under 1 CPU second per model.

Then a portfolio: `project_portfolio` on 5 workloads over 4 models (each its own volume,
growth and tokens, one shared growth shock), 10^6 draws, timed over the repeats; target: a
median under 5 CPU seconds in all. Checks: the company's mean equals the sum of the
workloads' means, and its P90 is at most the sum of their P90s. ``--portfolio-only`` runs this
part alone.

Exits 1 when a model misses the target or the check fails. The transcript is written to
benchmarks/results/cost_projection.txt (``cost_projection_<arguments>.txt`` when run with
arguments; ``--no-save`` to skip), with the command, date and load average on top.

    .venv/bin/python benchmarks/cost_projection.py [--draws 1000000] [--repeats 5]
        [--portfolio-only]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import argparse  # noqa: E402  (the thread limits above must be set before numpy is imported)
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import date  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from _outcome import Outcome  # noqa: E402

from cotplan.pricing import (  # noqa: E402
    Budget,
    ParametricTokens,
    Scenario,
    Workload,
    call_cost,
    compare_scenarios,
    price_table,
    project_costs,
)

TARGET_S = 1.0
PORTFOLIO_TARGET_S = 5.0
#: cotplan's own rows (two with a scheduled price change before the horizon starts) and three
#: of genai-prices' rows.
MODELS = (
    "gpt-6.2-astra",
    "gpt-6.2-sol",
    "gpt-6.1-sol",
    "gpt-6.1-terra",
    "gpt-6-astra",
    "gpt-6-luna",
    "claude-fable-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-haiku-4-5",
    "gemini-4-neon",
    "gemini-4-hydrogen",
    "gemini-4-carbon",
    "gemini-4-argon",
    "openai/gpt-4o-mini",
    "google/gemini-2.5-flash",
    "anthropic/claude-3-5-haiku-latest",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--draws", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", action="append", help="model to time (repeatable)")
    parser.add_argument("--no-save", action="store_true", help="do not write the transcript")
    parser.add_argument(
        "--portfolio-only", action="store_true", help="time the portfolio case alone"
    )
    args = parser.parse_args()
    transcript = Path(os.devnull) if args.no_save else None
    with Outcome("cost_projection", transcript=transcript) as outcome:
        if not args.portfolio_only:
            run_models(args, outcome)
        run_portfolio(args, outcome)
    return 0


def run_portfolio(args: argparse.Namespace, outcome: Outcome) -> None:
    """Five workloads on four models, one shared growth shock, projected together."""
    from cotplan.pricing.portfolio import PortfolioWorkload, project_portfolio

    table = price_table()
    today = date(2026, 11, 29)

    def item(name: str, model: str, per_day: float, growth: float, **extra: Any) -> Any:
        work = Workload(queries_per_day=per_day, growth_rate=growth, start=date(2027, 1, 1))
        tokens = ParametricTokens(1_500, 600, 300, 150, 2_000, 1_500, n_observed=200)
        return PortfolioWorkload(name, model, work, tokens, **extra)

    workloads = [
        item("search", "openai/gpt-4o-mini", 200_000, 0.04, cache_hit_rate=0.5),
        item("support", "claude-sonnet-5", 20_000, 0.02),
        item("summaries", "gpt-6.2-sol", 30_000, 0.06, batch_share=0.5, policy=1024),
        item("extraction", "gemini-4-neon", 10_000, 0.10, growth_beta=1.5),
        item("rank", "openai/gpt-4o-mini", 500_000, 0.01),
    ]
    models = len({w.model for w in workloads})

    def run(draws: int) -> tuple[float, float, Any]:
        cpu, wall = time.process_time(), time.perf_counter()
        result = project_portfolio(
            workloads, growth_sd=0.02, draws=draws, seed=0, table=table, today=today
        )
        return time.process_time() - cpu, time.perf_counter() - wall, result

    run(10_000)
    times, walls = [], []
    for _ in range(args.repeats):
        elapsed, wall, result = run(args.draws)
        times.append(elapsed)
        walls.append(wall)
    median = statistics.median(times)
    t = result.total
    means = abs(t["mean_usd"] / result.workloads["mean_usd"].sum() - 1) < 1e-9
    below = t["p90_usd"] <= t["sum_of_p90_usd"]
    met = median < PORTFOLIO_TARGET_S
    print(
        f"portfolio of {len(workloads)} workloads on {models} models ({args.draws:,} draws, 12 "
        f"months, shared growth sd 0.02): median {median:.3f} CPU s, best {min(times):.3f} CPU "
        f"s over {args.repeats} runs (median {statistics.median(walls):.3f} wall s, load "
        f"{os.getloadavg()[0]:.1f}); {'met' if met else 'MISSED'}; year P10 "
        f"${t['p10_usd']:,.0f}, P50 ${t['p50_usd']:,.0f}, P90 ${t['p90_usd']:,.0f} (sum of "
        f"the workloads' P90s ${t['sum_of_p90_usd']:,.0f})"
    )
    outcome.target(
        f"portfolio: median under {PORTFOLIO_TARGET_S:.0f} CPU s", met, f"{median:.3f} CPU s"
    )
    outcome.check("portfolio: the company's mean is the sum of the workloads' means", means,
                  f"${t['mean_usd']:,.2f}")  # fmt: skip
    outcome.check("portfolio: the company's P90 is at most the sum of the workloads' P90s",
                  below, f"${t['p90_usd']:,.0f} <= ${t['sum_of_p90_usd']:,.0f}")  # fmt: skip


def run_models(args: argparse.Namespace, outcome: Outcome) -> None:
    table = price_table()
    today = date(2026, 11, 29)
    start = date(2027, 1, 1)
    workload = Workload(queries_per_day=10_000, growth_rate=0.03, start=start)
    tokens = ParametricTokens(1_500, 600, 300, 150, 2_000, 1_500, n_observed=200)
    budget = Budget(20_000, "month")
    levers: dict[str, Any] = {"cache_hit_rate": 0.2, "cache_write_rate": 0.05, "batch_share": 0.3}
    finance: dict[str, Any] = {"budget": budget, "fiscal_year_start": 4}
    models = args.model or list(MODELS)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(
        f"cotplan cost projection benchmark: {args.draws:,} draws, 12 months, {cores} core, "
        f"{len(models)} models, prices of {today}, {platform.python_version()}, "
        f"numpy {np.__version__}"
    )
    medians: dict[str, float] = {}
    for model in models:

        def run(draws: int, model: str = model) -> tuple[float, float, Any]:
            cpu, wall = time.process_time(), time.perf_counter()
            projection = project_costs(
                model,
                workload,
                tokens,
                draws=draws,
                seed=0,
                table=table,
                today=today,
                **levers,
                **finance,
            )
            return time.process_time() - cpu, time.perf_counter() - wall, projection

        run(10_000)
        times, walls = [], []
        for _ in range(args.repeats):
            elapsed, wall, projection = run(args.draws)
            times.append(elapsed)
            walls.append(wall)
        median = statistics.median(times)
        medians[model] = median
        # The check: the mean cost per call matches call_cost on the mean tokens, give or take
        # the nonlinearity of the long-context rule and the lognormal sampling (within 1%), at
        # the price of the first month (not today's: a scheduled change may lie between).
        a = projection.assumptions
        prompt = round(a["mean_prompt_tokens_per_call"])
        reasoning = round(a["mean_reasoning_tokens_per_call"])
        batch_share = levers["batch_share"]
        # call_cost reads counts by the model's own rule: reasoning inside the completion
        # count, or (Gemini's "separate") reported apart from it.
        billing = table.lookup(model, on=start, warn=False).reasoning_billing
        answer = round(a["mean_answer_tokens_per_call"])
        completion = answer if billing == "separate" else answer + reasoning
        plain = call_cost(
            model,
            prompt_tokens=prompt,
            cached_tokens=round(0.2 * prompt),
            cache_write_tokens=round(0.05 * prompt),
            completion_tokens=completion,
            reasoning_tokens=reasoning,
            on=start,
            table=table,
        )
        batch = call_cost(
            model,
            prompt_tokens=prompt,
            cached_tokens=round(0.2 * prompt),
            cache_write_tokens=round(0.05 * prompt),
            completion_tokens=completion,
            reasoning_tokens=reasoning,
            on=start,
            table=table,
            batch=True,
        )
        expected = (1 - batch_share) * float(plain.usd) + batch_share * float(batch.usd)
        check = abs(a["usd_per_call"] / expected - 1) < 0.01
        met = median < TARGET_S
        year = projection.frame[projection.frame["period"] == "year"].iloc[0]
        assert projection.budget is not None
        print(
            f"{model}: median {median:.3f} CPU s, best {min(times):.3f} CPU s over "
            f"{args.repeats} runs (median {statistics.median(walls):.3f} wall s, load "
            f"{os.getloadavg()[0]:.1f}); {'met' if met else 'MISSED'}; annual mean "
            f"${float(year['mean_usd']):,.0f}, P(a month over {budget.label}) "
            f"{100 * projection.budget.probability:.1f}%; cost per call "
            f"${a['usd_per_call']:.6f} vs call_cost ${expected:.6f}: "
            f"{'ok' if check else 'FAILED'}"
        )
        outcome.target(f"{model}: median under {TARGET_S:.0f} CPU s", met, f"{median:.3f} CPU s")
        outcome.check(
            f"{model}: cost per call equals call_cost on the mean tokens within 1%",
            check,
            f"${a['usd_per_call']:.6f} vs ${expected:.6f}",
        )
    ranked = sorted(medians.values())
    print(
        f"{len(models)} models one by one: median of the per-model medians "
        f"{statistics.median(ranked):.3f} CPU s, slowest {ranked[-1]:.3f} CPU s "
        f"({max(medians, key=medians.__getitem__)}), target < {TARGET_S:.0f} s per model"
    )

    # All at once: one comparison of every model, the same draws, and its chart.
    from cotplan.charts.costs import comparison_chart

    scenarios = [Scenario(m, m, **levers) for m in models]
    cpu, wall = time.process_time(), time.perf_counter()
    comparison = compare_scenarios(
        workload,
        tokens,
        scenarios,
        draws=args.draws,
        seed=0,
        table=table,
        today=today,
        **finance,
    )
    elapsed, walled = time.process_time() - cpu, time.perf_counter() - wall
    spec = comparison_chart(comparison).to_dict()
    per_model = elapsed / len(models)
    met = per_model < TARGET_S
    cheapest = comparison.frame.sort_values("total_mean_usd").iloc[0]
    dearest = comparison.frame.sort_values("total_mean_usd").iloc[-1]
    print(
        f"{len(models)} models at once (compare_scenarios, {args.draws:,} draws each): "
        f"{elapsed:.2f} CPU s, {walled:.2f} wall s, {per_model:.3f} CPU s per model; "
        f"{'met' if met else 'MISSED'}; annual mean from ${cheapest['total_mean_usd']:,.0f} "
        f"({cheapest['scenario']}) to ${dearest['total_mean_usd']:,.0f} "
        f"({dearest['scenario']}); chart {spec['width']}x{spec['height']} px, one row "
        f"per model"
    )
    outcome.target(
        f"{len(models)} models at once: under {TARGET_S:.0f} CPU s per model",
        met,
        f"{per_model:.3f} CPU s per model",
    )


if __name__ == "__main__":
    sys.exit(main())
