"""The planted √n positive control, on several seeds, beside the construction's exact k*.

`cotplan.research.lab.reasoning.planted` plants k* ∝ √n · log(1/ε) (an exact reader of votes from a
coin whose bias shrinks as n^(−1/4)). This runs the pipeline on it per seed: the empirical k*(n, ε),
the item-bootstrap n-exponent with its interval and verdict, the premise test and the planner's
α; beside it the exact k* of the construction at these sizes (binomial error, no sampling), whose
exponent is what a perfect pipeline would read at finite n (the √n law holds as n grows; at
n = 16..256 the odd vote counts make it 0.44 at ε = 0.1). Then the same for the planted linear
law (the negative control). Targets: the √n interval holds 1/2 and excludes 1 on every seed;
the linear one reads "not reproduced". The k* curves go to
`benchmarks/results/planted_control_kstar.csv`.

    .venv/bin/python benchmarks/planted_control.py            # 3 seeds, 1000 items a size
    .venv/bin/python benchmarks/planted_control.py --seeds 0 --items 400
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd
from _outcome import RESULTS, Outcome
from scipy import stats

from cotplan.research.lab.reasoning.planted import PLANTED_SIZES, planted_control

EPS = (0.2, 0.1, 0.05)


def exact_kstar(n: int, eps: float, c: float, exponent: float) -> int:
    """The construction's k* without sampling: 3 · the fewest votes whose majority (a tie: a
    fair coin) errs with probability ≤ ε from there on."""
    q = 0.5 - min(c * n ** (-exponent), 0.49)
    error = [0.5]
    for j in range(1, n + 1):
        wrong = stats.binom.sf(j // 2, j, q)
        if j % 2 == 0:
            wrong += 0.5 * stats.binom.pmf(j // 2, j, q)
        error.append(float(wrong))
    envelope = np.maximum.accumulate(np.asarray(error)[::-1])[::-1]
    ok = np.flatnonzero(envelope <= eps)
    return 3 * int(ok[0]) if len(ok) else -1


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--items", type=int, default=1000)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    with Outcome("planted_control") as outcome:
        rows = []
        for label, exponent, c in (("sqrt", 0.25, 0.6), ("linear", 0.5, 1.5)):
            exact = {eps: [exact_kstar(n, eps, c, exponent) for n in PLANTED_SIZES] for eps in EPS}
            for eps in EPS:
                slope = np.polyfit(np.log(PLANTED_SIZES), np.log(exact[eps]), 1)[0]
                print(f"{label}: exact k* at ε = {eps:g}: {exact[eps]} (n-exponent {slope:.2f})")
            for seed in seeds:
                started = time.perf_counter()
                control = planted_control(
                    items=args.items,
                    eps=0.1,
                    eps_grid=EPS,
                    exponent=exponent,
                    c=c,
                    n_bootstrap=200,
                    planner_bootstrap=30,
                    seed=seed,
                )
                print(
                    f"{label}, seed {seed}: {control.summary()} "
                    f"({time.perf_counter() - started:.0f} s)"
                )
                for _, row in control.exponents.iterrows():
                    print(
                        f"    ε = {row['eps']:g}: n^{row['beta']:.2f} "
                        f"[{row['low']:.2f}, {row['high']:.2f}]"
                    )
                for _, row in control.empirical.iterrows():
                    rows.append(
                        {
                            "law": label,
                            "seed": seed,
                            "n": int(row["n"]),
                            "eps": float(row["eps"]),
                            "k": float(row["k"]),
                            "exact_k": exact[float(row["eps"])][PLANTED_SIZES.index(int(row["n"]))],
                        }
                    )
                interval = control.exponent
                if label == "sqrt":
                    outcome.target(
                        f"seed {seed}: the √n interval holds 1/2 and excludes 1",
                        interval is not None and 0.5 in interval and interval.high < 1,
                        str(interval),
                    )
                else:
                    outcome.target(
                        f"seed {seed}: the linear law reads 'not reproduced'",
                        control.verdict == "not reproduced",
                        control.verdict,
                    )
        frame = pd.DataFrame(rows)
        frame.to_csv(RESULTS / "planted_control_kstar.csv", index=False)
        assert not math.isnan(float(frame["k"].replace(math.inf, 0).sum()))
        print(f"k* curves: {RESULTS / 'planted_control_kstar.csv'} ({len(frame)} rows)")


if __name__ == "__main__":
    main()
