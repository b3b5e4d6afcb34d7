"""How much does permutation averaging buy, and how many calls does the balanced schedule save?

On the embedded SmolLM2-135M model and the built-in few-shot tasks (sentiment, parity,
mammal; `cotplan.permutation.fewshot_tasks`), every question is scored under all n! orderings of
its examples (n = 4: 24 one-token requests per question). Each schedule's orderings are then
looked up in that pool, so the spread of the m-ordering average over `--replicates` seeds is
exact for these questions up to Monte Carlo error, at no extra calls.

Prints:
1. the spread of the average versus m for random and balanced orderings: the root mean square
   over questions of the standard deviation of P̄_m (and the variance), beside σ/√m;
2. log-log slopes (the paper reports standard deviation ∝ m^-0.48; the variance slope is twice
   the standard deviation's);
3. the calls balanced needs to match random's spread at m = 20;
4. accuracy, Brier score and calibration error of one ordering versus averaged answers.

    .venv/bin/python benchmarks/permutation_efficiency.py
    .venv/bin/python benchmarks/permutation_efficiency.py --items 4 --out /tmp/perm

With the default call cache, a second run replays the same requests and prints the same table.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _outcome import Outcome

from cotplan.backends.local import LocalModel
from cotplan.permutation.average import permutation_average
from cotplan.permutation.evaluate import (
    OrderingPool,
    brier_score,
    expected_calibration_error,
    loglog_slope,
    matching_m,
    schedule_spread,
    score_every_ordering,
)
from cotplan.permutation.fewshot_tasks import FEWSHOT_FAMILIES, FewShotItem, make_fewshot_tasks
from cotplan.permutation.schedules import Schedule, make_orderings

SHOWN_M = (1, 2, 3, 4, 6, 8, 12, 16, 20, 24)


def _pools(model: LocalModel, args: argparse.Namespace) -> list[tuple[FewShotItem, OrderingPool]]:
    backend = model.backend(cache="default" if args.cache else None)
    out = []
    for family in args.families:
        for item in make_fewshot_tasks(family, n_examples=args.examples, count=args.items,
                                       seed=args.seed):  # fmt: skip
            pool = score_every_ordering(
                backend, item.examples, item.query, item.choices, template=item.template
            )
            out.append((item, pool))
    first_item, first_pool = out[0]
    check = permutation_average(
        backend, first_item.examples, first_item.query, first_item.choices,
        m=args.examples, schedule="balanced", template=first_item.template,
    )  # fmt: skip
    gap = float(np.abs(check.per_ordering - first_pool.lookup(check.orderings)).max())
    print(f"check: permutation_average vs the pool on {first_item.id}: max |diff| = {gap:.2e}")
    print(f"backend: {backend.stats.requests} requests, {backend.stats.cache_hits} cache hits")
    return out


def _averages(pool: OrderingPool, schedule: Schedule, m: int, replicates: int) -> np.ndarray:
    n = pool.orderings.shape[1]
    return np.array([
        pool.lookup(make_orderings(n, m, schedule, seed=r)).mean(axis=0)
        for r in range(replicates)
    ])  # fmt: skip


def _quality(probs: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    correct = probs.argmax(axis=1) == truth
    return {
        "accuracy": float(correct.mean()),
        "brier": brier_score(probs, truth),
        "ece": expected_calibration_error(probs, truth),
    }


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--families", type=lambda s: s.split(","), default=list(FEWSHOT_FAMILIES))
    parser.add_argument("--items", type=int, default=8, help="questions per family")
    parser.add_argument("--examples", type=int, default=4, help="examples per prompt (n! calls)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replicates", type=int, default=2000, help="seeds per schedule")
    parser.add_argument("--quality-replicates", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--no-cache", dest="cache", action="store_false")
    parser.add_argument("--out", type=Path, default=None, help="folder for CSVs and a chart")
    args = parser.parse_args()

    start = time.perf_counter()
    with LocalModel() as model:
        pools = _pools(model, args)
    scored = time.perf_counter() - start
    calls = sum(p.calls for _, p in pools)
    n = args.examples
    print(f"{len(pools)} questions x {math.factorial(n)} orderings = {calls} one-token requests; "
          f"families {', '.join(args.families)}; n = {n} examples")  # fmt: skip
    print(f"scored in {scored:.0f} s")

    # 1. Spread of the average versus m.
    m_values = list(range(1, max(SHOWN_M) + 1))
    rows = []
    sd: dict[Schedule, list[np.ndarray]] = {"random": [], "balanced": []}
    sigma2 = []
    for _, pool in pools:
        sigma2.append(pool.probs[:, 0].var())  # over all n! orderings (population variance)
        for schedule in sd:
            sd[schedule].append(
                schedule_spread(
                    pool, schedule, m_values, replicates=args.replicates, seed=args.seed
                )
            )
    rms = {s: np.sqrt(np.mean(np.square(v), axis=0)) for s, v in sd.items()}
    reference = np.sqrt(np.mean(sigma2) / np.array(m_values))
    # m distinct orderings drawn uniformly without replacement from all N = n! of them: the
    # finite-population correction, exact. Balanced cycles never repeat an ordering within a
    # pass either, so this column separates "not repeating" from "balancing positions".
    population = math.factorial(n)
    fpc = np.sqrt(np.clip((population - np.array(m_values)) / (population - 1), 0.0, None))
    distinct = reference * fpc
    for i, m in enumerate(m_values):
        for schedule in ("random", "balanced"):
            rows.append({"schedule": schedule, "m": m, "sd": rms[schedule][i]})
        rows.append({"schedule": "reference", "m": m, "sd": reference[i]})
        if m <= population:
            rows.append({"schedule": "random, distinct", "m": m, "sd": distinct[i]})
    spread = pd.DataFrame(rows)
    spread["variance"] = spread["sd"] ** 2

    def show(value: float, width: int, places: int) -> str:
        # Below 1e-9 the spread is exactly zero up to rounding: every ordering was used.
        return f"{0.0 if value < 1e-9 else value:{width}.{places}f}"

    print("\n1. Spread of the m-ordering average over seeds (root mean square over questions)")
    print("   sd = standard deviation of P̄_m, var = its variance. σ/√m: independent random")
    print("   orderings (the paper's scheme). distinct: m different orderings out of all")
    print(f"   {population} (exact, finite-population correction), to separate not repeating")
    print("   from balancing positions.")
    header = (f"{'m':>3} {'sd random':>10} {'σ/√m':>7} {'distinct':>9} {'sd balanced':>12} "
              f"{'var random':>11} {'var balanced':>13} {'sd r/b':>7}")  # fmt: skip
    print(header)
    for m in SHOWN_M:
        i = m - 1
        r, b = rms["random"][i], rms["balanced"][i]
        ratio = f"{r / b:7.1f}" if b > 1e-9 else f"{'inf':>7}"
        d = show(distinct[i], 9, 4) if m <= population else f"{'':>9}"
        print(f"{m:>3} {r:10.4f} {reference[i]:7.4f} {d} {show(b, 12, 4)} {r * r:11.6f} "
              f"{show(b * b, 13, 6)} {ratio}")  # fmt: skip

    # 2. Slopes on log-log axes.
    print("\n2. Log-log slopes of the spread, m = 1..20 (OLS; points share replicates, so the")
    print("   intervals are optimistic). Paper: sd ∝ m^-0.48 (95% CI -0.52..-0.44).")
    fit_m = np.arange(1, 21)
    fits = {
        "random": loglog_slope(fit_m, rms["random"][:20]),
        "balanced": loglog_slope(fit_m, rms["balanced"][:20]),
    }
    for name, fit in fits.items():
        print(f"   {name:<9} sd slope {fit.slope:+.3f} ({fit.low:+.3f}..{fit.high:+.3f}); "
              f"variance slope {2 * fit.slope:+.3f}")  # fmt: skip
    print(
        f"   (balanced is not a power law: it drops at whole cycles of {n} and reaches 0 once all"
    )
    print(f"   {population} orderings are used, at m = {population})")

    # 3. Calls to match random at m = 20.
    target = rms["random"][19]
    matched = matching_m(target, m_values, rms["balanced"])
    per_item = [
        matching_m(s_r[19], m_values, s_b)
        for s_r, s_b in zip(sd["random"], sd["balanced"], strict=True)
    ]
    found = [m for m in per_item if m is not None]
    drop = target / rms["random"][0]
    print(f"\n3. Random at m = 20 has sd {target:.4f}: x{1 / drop:.1f} below m = 1 (sd "
          f"-{1 - drop:.0%}, variance -{1 - drop**2:.0%}).")  # fmt: skip
    by_distinct = matching_m(target, m_values[:population], distinct[:population])
    print(f"   m distinct random orderings reach it at m = {by_distinct}.")
    print(f"   Balanced reaches it at m = {matched} (pooled; 1 call per ordering, so {matched} "
          "calls instead of 20);")  # fmt: skip
    print(f"   per question: median {np.median(found) if found else 'n/a'}, max "
          f"{max(found) if found else 'n/a'}, not within {max(SHOWN_M)}: "
          f"{len(per_item) - len(found)} of {len(per_item)}")  # fmt: skip

    if population <= max(m_values):
        # All n! orderings, each once: every replicate averages the same set, so no spread.
        outcome.check(f"balanced has no spread once all {population} orderings are used",
                      rms["balanced"][population - 1] < 1e-9,
                      f"sd {rms['balanced'][population - 1]:.2e}")  # fmt: skip
    outcome.check("the spread of random orderings falls with m",
                  fits["random"].slope < 0, f"slope {fits['random'].slope:+.3f}")  # fmt: skip
    one_cycle = rms["balanced"][n - 1] ** 2 / distinct[n - 1] ** 2
    print(f"   After one balanced cycle (m = {n}) the variance is {one_cycle:.0%} of that of {n} "
          "distinct random orderings:")  # fmt: skip
    print(f"   position effects that cancel within a cycle are about {1 - one_cycle:.0%} of the "
          "order variance.")  # fmt: skip

    # 4. Quality of single-order versus averaged answers.
    truth = np.array([item.choices.index(item.answer) for item, _ in pools])
    reps = args.quality_replicates
    single_probs = np.stack([p.probs for _, p in pools])  # (items, n!, C)
    variants: dict[str, tuple[int, list[dict[str, float]]]] = {}
    per_item_brier: dict[str, np.ndarray] = {}
    per_item_correct: dict[str, np.ndarray] = {}
    # One ordering: the expectation over all n! of them, item by item.
    variants["single ordering"] = (1, [_quality(single_probs[:, j], truth)
                                       for j in range(single_probs.shape[1])])  # fmt: skip
    onehot = np.eye(single_probs.shape[2])[truth]
    per_item_brier["single ordering"] = ((single_probs - onehot[:, None]) ** 2).sum(-1).mean(1)
    per_item_correct["single ordering"] = (single_probs.argmax(-1) == truth[:, None]).mean(1)
    schedules: tuple[Schedule, ...] = ("random", "balanced")
    for schedule in schedules:
        averaged = np.stack([_averages(p, schedule, 20, reps) for _, p in pools])  # (items, R, C)
        name = f"{schedule}, m = 20"
        variants[name] = (20, [_quality(averaged[:, r], truth) for r in range(reps)])
        per_item_brier[name] = ((averaged - onehot[:, None]) ** 2).sum(-1).mean(1)
        per_item_correct[name] = (averaged.argmax(-1) == truth[:, None]).mean(1)
    full = np.stack([p.probs.mean(axis=0) for _, p in pools])
    variants[f"all {math.factorial(n)} orderings"] = (math.factorial(n), [_quality(full, truth)])
    per_item_brier[f"all {math.factorial(n)} orderings"] = ((full - onehot) ** 2).sum(-1)
    per_item_correct[f"all {math.factorial(n)} orderings"] = (full.argmax(-1) == truth).astype(
        float
    )

    print(f"\n4. Answer quality over {len(pools)} questions (expected over orderings/seeds;")
    print("   Brier = Σ_c (p_c - y_c)², 0 best; ECE = top-label calibration error, 10 bins)")
    print(f"   {'answers from':<22} {'calls':>5} {'accuracy':>9} {'Brier':>7} {'ECE':>6}")
    quality_rows = []
    for name, (cost, runs) in variants.items():
        mean = {k: float(np.mean([r[k] for r in runs])) for k in ("accuracy", "brier", "ece")}
        quality_rows.append({"answers": name, "calls": cost, **mean})
        print(f"   {name:<22} {cost:>5} {mean['accuracy']:9.3f} {mean['brier']:7.3f} "
              f"{mean['ece']:6.3f}")  # fmt: skip
    rng = np.random.default_rng(args.seed)
    boot = rng.integers(0, len(pools), size=(args.bootstrap, len(pools)))
    print("   Paired bootstrap over questions (95% percentile interval of the difference):")
    for name in ("random, m = 20", "balanced, m = 20"):
        d_brier = per_item_brier[name] - per_item_brier["single ordering"]
        d_acc = per_item_correct[name] - per_item_correct["single ordering"]
        lo_b, hi_b = np.percentile(d_brier[boot].mean(axis=1), [2.5, 97.5])
        lo_a, hi_a = np.percentile(d_acc[boot].mean(axis=1), [2.5, 97.5])
        print(f"   {name} - single: Brier {d_brier.mean():+.4f} ({lo_b:+.4f}..{hi_b:+.4f}), "
              f"accuracy {d_acc.mean():+.3f} ({lo_a:+.3f}..{hi_a:+.3f})")  # fmt: skip
    by_family = pd.DataFrame({
        "family": [item.family for item, _ in pools],
        "single": per_item_correct["single ordering"],
        "averaged": per_item_correct[f"all {math.factorial(n)} orderings"],
        "sigma": np.sqrt(sigma2),
    }).groupby("family").mean()  # fmt: skip
    print("   By family: accuracy of one ordering / of the full average; σ over orderings")
    for family, row in by_family.iterrows():
        print(
            f"   {family:<10} {row['single']:.3f} / {row['averaged']:.3f}; σ = {row['sigma']:.3f}"
        )

    if args.out is not None:
        from cotplan.charts.costs import save_chart
        from cotplan.charts.permutation import spread_chart

        args.out.mkdir(parents=True, exist_ok=True)
        spread.to_csv(args.out / "spread.csv", index=False)
        pd.DataFrame(quality_rows).to_csv(args.out / "quality.csv", index=False)
        save_chart(spread_chart(spread), args.out / "spread.png")
        print(f"\nsaved spread.csv, quality.csv, spread.png in {args.out}")
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    with Outcome("permutation_efficiency") as outcome:
        main(outcome)
