"""How well does `BudgetPlanner` recover constants planted in synthetic calibrations?

Data are drawn from the model itself (e0 = 0.1, e_base = 1, k0 = 5, c = 2, α = 1/2; sizes
n = 4, 8, 16, 32; budgets k = 0, 4, ..., 128; every item answered once at every budget), so the
truth is known. Prints the mean and spread of each estimate over replicate fits and, with
bootstrap on, how often the 95% interval covered the truth (nominal: 0.95).

    .venv/bin/python benchmarks/planner_recovery.py --replicates 200 --bootstrap 0
    .venv/bin/python benchmarks/planner_recovery.py --replicates 40 --bootstrap 200

The test tolerances in tests/test_planner_fit*.py come from these numbers. Targets: the mean α
within 0.1 of 1/2 and the mean k* within 10% of the truth; with bootstrap on, every 95%
interval covering the truth in at least 85% of replicates (40 replicates: 3 standard errors
below nominal). It exits 1 on a miss and keeps its transcript in benchmarks/results/ (the
paper's law is fitted, `BudgetPlanner("paper")`: the law these constants belong to).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _outcome import Outcome

from cotplan.planner import BudgetPlanner

TRUTH = {"e0": 0.1, "e_base": 1.0, "k0": 5.0, "c": 2.0, "alpha": 0.5}
SIZES = (4, 8, 16, 32)
BUDGETS = (0, 4, 8, 16, 32, 64, 128)


def planted(seed: int, items: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = np.repeat(np.array(SIZES), items * len(BUDGETS))
    k = np.tile(np.array(BUDGETS), len(SIZES) * items)
    item = np.repeat(np.arange(len(SIZES) * items), len(BUDGETS))
    t = TRUTH
    error = t["e0"] + (t["e_base"] - t["e0"]) * np.exp(
        -np.maximum(k - t["k0"], 0) / (t["c"] * n ** t["alpha"])
    )
    return pd.DataFrame({"item": item, "n": n, "k": k, "correct": rng.random(len(k)) >= error})


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=40)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--items", type=int, default=60, help="items per size")
    args = parser.parse_args()
    estimates = {name: [] for name in TRUTH} | {"k_star": []}
    covered = dict.fromkeys(estimates, 0)
    k_true = 5.0 + 2.0 * 16**0.5 * np.log(0.9 / 0.1)  # n = 16, ε = 0.2
    start = time.perf_counter()
    for r in range(args.replicates):
        planner = BudgetPlanner("paper", n_bootstrap=args.bootstrap, random_state=r)
        planner.fit(planted(1000 + r, args.items))
        budget = planner.budget(16, 0.2)
        for name in TRUTH:
            estimates[name].append(getattr(planner, f"{name}_"))
            interval = planner.intervals_[name]
            # e_base's truth (1) is on the boundary: count an interval reaching it as covering.
            hit = TRUTH[name] in interval or (name == "e_base" and interval.high > 0.999)
            covered[name] += int(hit)
        estimates["k_star"].append(budget.k_star)
        covered["k_star"] += int(budget.low <= k_true <= budget.high)
    seconds = (time.perf_counter() - start) / args.replicates
    print(
        f"{args.replicates} replicates, {args.items} items per size, "
        f"{args.bootstrap} bootstrap resamples, {seconds:.2f} s per fit"
    )
    print(f"{'':>7} {'truth':>7} {'mean':>7} {'sd':>7} {'min':>7} {'max':>7} {'coverage':>9}")
    for name, values in estimates.items():
        arr = np.array(values)
        truth = k_true if name == "k_star" else TRUTH[name]
        cover = f"{covered[name] / args.replicates:.3f}" if args.bootstrap else "-"
        print(
            f"{name:>7} {truth:7.3f} {arr.mean():7.3f} {arr.std():7.3f} "
            f"{arr.min():7.3f} {arr.max():7.3f} {cover:>9}"
        )
        if args.bootstrap:
            share = covered[name] / args.replicates
            outcome.target(f"{name}: 95% interval covers the truth in ≥ 85%", share >= 0.85,
                           f"{share:.3f}")  # fmt: skip
    alpha, k_star = np.mean(estimates["alpha"]), np.mean(estimates["k_star"])
    outcome.target("mean α within 0.1 of 1/2", abs(alpha - 0.5) <= 0.1, f"{alpha:.3f}")
    outcome.target(
        "mean k*(16, 0.2) within 10% of the truth",
        abs(k_star / k_true - 1) <= 0.1,
        f"{k_star:.2f} vs {k_true:.2f}",
    )


if __name__ == "__main__":
    with Outcome("planner_recovery") as outcome:
        main(outcome)
