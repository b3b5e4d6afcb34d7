"""The long lamp's k* law on several training seeds: does its conclusion survive another seed?

Issue 32 asks for the k* study on 3 seeds of the long lamp. Each seed's model is loaded from the
user folder (seed 0: the weights that ship with cotplan) or trained when missing; training the
long lamp is five curriculum stages, about 2 hours of one thread per seed (docs/lab-reasoning.md,
"Another seed"), which `cotplan kstar-lab train lamp --preset long --seed S` does ahead. Every
seed then runs the law exactly as

    cotplan kstar-lab law lamp --preset long --seed S --sizes ... --items ... --eps ...

does (the same items and bootstrap draws for every seed, so only the model differs), and this
prints per seed k*(n, ε = 0.5) raw and robust with the premise test at each size, then across
seeds the n-exponent of k* per ε with its interval, and whether each seed reads it the same way.

    .venv/bin/python benchmarks/lab_seeds.py                 # seeds 0,1,2: the documented run
    .venv/bin/python benchmarks/lab_seeds.py --seeds 0,1 --sizes 16,40,64 --items 40

Seeds run side by side, one process and one torch thread each (--jobs, default 2). A seed not
yet trained is refused unless --train is given.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
from _outcome import Outcome

from cotplan.research.lab.reasoning.logloss import LogLossStudy, n_form
from cotplan.research.lab.reasoning.train import is_trained

SIZES = "16,24,32,40,48,56,64"
EPS = "0.5,0.45,0.4,0.36,0.3,0.2,0.1,0.05"
#: The ε whose k* the per-seed tables show: the one target inside the theorem's domain at
#: every size of the long lamp (docs/lab-reasoning.md).
SHOWN_EPS = 0.5


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2", help="training seeds, comma-separated")
    parser.add_argument("--sizes", default=SIZES, help="sizes n, comma-separated")
    parser.add_argument("--items", type=int, default=120, help="items per size")
    parser.add_argument("--eps", default=EPS, help="relative targets ε, comma-separated")
    parser.add_argument("--bootstrap", type=int, default=200, help="item-bootstrap resamples")
    parser.add_argument("--jobs", type=int, default=2, help="seeds measured at once")
    parser.add_argument("--out", type=Path, default=None, help="folder for each seed's CSVs")
    parser.add_argument("--train", action="store_true", help="train the seeds not yet trained")
    args = parser.parse_args()
    args.seed_list = [int(s) for s in args.seeds.split(",")]
    args.size_list = [int(n) for n in args.sizes.split(",")]
    args.eps_list = [float(e) for e in args.eps.split(",")]
    if len(set(args.seed_list)) != len(args.seed_list) or min(args.seed_list) < 0:
        parser.error(f"--seeds must be distinct non-negative integers, got {args.seeds}")
    if SHOWN_EPS not in args.eps_list:
        parser.error(f"--eps must include {SHOWN_EPS}: the per-seed tables show k* there")
    missing = [s for s in args.seed_list if not is_trained("lamp", "long", seed=s)]
    if missing and not args.train:
        parser.error(
            f"seeds {missing} are not trained; `cotplan kstar-lab train lamp --preset long "
            "--seed S` trains one (about 2 h of one thread), or give --train"
        )
    return args


def measure_seed(seed: int, args: argparse.Namespace) -> tuple[LogLossStudy, dict[str, Any]]:
    """One seed's law, as `cotplan kstar-lab law lamp --preset long --seed S` measures it, and
    its model's training record (its own check: accuracy and exact traces by size)."""
    from cotplan.research.lab.reasoning.backend import LabBackend
    from cotplan.research.lab.reasoning.logloss import logloss_study
    from cotplan.research.lab.reasoning.train import one_thread

    with one_thread():
        backend = LabBackend.for_family("lamp", "long", seed=seed)
        study = logloss_study(
            backend,
            sizes=args.size_list,
            items=args.items,
            eps_grid=args.eps_list,
            n_bootstrap=args.bootstrap,
        )
        return study, dict(backend.lab.meta)


def _interval(value: Any, low: Any, high: Any) -> str:
    value, low, high = float(value), float(low), float(high)
    if not math.isfinite(value):
        return "–"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{value:.0f}"
    return f"{value:.0f} [{low:.0f}, {high:.0f}]"


def _check_line(meta: dict[str, Any]) -> str:
    """The model's training check by size: full-trace accuracy and exact traces."""
    accuracy = meta.get("accuracy_full_trace", {})
    exact = meta.get("trace_exact", {})
    sizes = sorted(accuracy, key=int)
    if not sizes:
        return "not recorded"
    return ", ".join(
        f"n = {n}: accuracy {accuracy[n]:.2f}, trace exact {exact.get(n, math.nan):.2f}"
        for n in sizes
    )


def _shown_budgets(study: LogLossStudy) -> pd.DataFrame:
    """The study's k* rows on B at the shown ε, one per size."""
    budgets = study.budgets
    return budgets[(budgets["measure"] == "B") & (budgets["eps"] == SHOWN_EPS)]


def seed_table(seed: int, study: LogLossStudy) -> pd.DataFrame:
    """Per size: the full trace, raw and robust k* on B at ε = 0.5, and the premise on B."""
    shown = _shown_budgets(study)
    premise = study.premise[study.premise["measure"] == "B"].set_index("n")["premise"]
    return pd.DataFrame(
        {
            "seed": seed,
            "n": shown["n"].to_numpy(),
            "full trace": shown["full_trace"].to_numpy(),
            "k* raw": [_interval(r.k, r.low, r.high) for r in shown.itertuples()],
            "k* robust": [
                _interval(r.k_robust, r.robust_low, r.robust_high) for r in shown.itertuples()
            ],
            "premise on B": [premise.get(n, "–") for n in shown["n"]],
        }
    )


def exponent_table(studies: dict[int, LogLossStudy]) -> pd.DataFrame:
    """Per reading and ε: each seed's n-exponent of k* on B with its interval and its reading
    (√n, linear, ...), and whether every seed reads it the same way."""
    rows = []
    first = next(iter(studies.values())).exponents
    keys = first[first["measure"] == "B"][["reading", "eps"]].itertuples(index=False)
    for reading, eps in keys:
        row: dict[str, object] = {"reading": reading, "eps": eps}
        forms = []
        for seed, study in studies.items():
            ex = study.exponents
            hit = ex[(ex["measure"] == "B") & (ex["reading"] == reading) & (ex["eps"] == eps)]
            r = hit.iloc[0]
            form = n_form(r["low"], r["high"])
            forms.append(form)
            row[f"seed {seed}"] = (
                f"n^{r['beta']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"
                if math.isfinite(r["beta"])
                else "–"
            )
        row["every seed"] = (
            forms[0] if len(set(forms)) == 1 else "seeds differ: " + " / ".join(forms)
        )
        rows.append(row)
    return pd.DataFrame(rows)


def spread_table(studies: dict[int, LogLossStudy]) -> pd.DataFrame:
    """Per size: raw and robust k*(ε = 0.5) of every seed, and their range across seeds."""
    rows = []
    for seed, study in studies.items():
        shown = _shown_budgets(study)
        rows += [
            {"n": r.n, "seed": seed, "raw": r.k, "robust": r.k_robust} for r in shown.itertuples()
        ]
    frame = pd.DataFrame(rows)
    out = frame.groupby("n").agg(
        raw_min=("raw", "min"),
        raw_max=("raw", "max"),
        robust_min=("robust", "min"),
        robust_max=("robust", "max"),
    )
    return out.reset_index()


def conclusion(studies: dict[int, LogLossStudy]) -> str:
    """Per seed, the seed-0 study's two findings read again: what raw and robust k* at ε = 0.5
    say of √n against linear, and at how many sizes the premise on B fails, holds or cannot be
    tested."""
    lines = []
    for seed, study in studies.items():
        ex = study.exponents
        at = ex[(ex["measure"] == "B") & (ex["eps"] == SHOWN_EPS)].set_index("reading")
        forms = {
            reading: n_form(at.loc[reading, "low"], at.loc[reading, "high"]) for reading in at.index
        }
        premise = study.premise[study.premise["measure"] == "B"]["premise"]
        counts = ", ".join(
            f"{word} at {int(count)}" for word, count in premise.value_counts().items()
        )
        lines.append(
            f"seed {seed} ({study.model}): ε = {SHOWN_EPS}: raw {forms.get('raw', '–')}, "
            f"robust {forms.get('robust', '–')}; the premise on B {counts} of {len(premise)} sizes"
        )
    return "\n".join(lines)


def main(outcome: Outcome) -> None:
    args = parse_args()
    started = time.perf_counter()
    print(
        f"the long lamp's law on seeds {args.seeds}: sizes {args.sizes}, {args.items} items a "
        f"size, ε = {args.eps}, {args.bootstrap} bootstrap resamples; {args.jobs} at once",
        flush=True,
    )
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {seed: pool.submit(measure_seed, seed, args) for seed in args.seed_list}
        results = {seed: future.result() for seed, future in futures.items()}
    studies = {seed: study for seed, (study, _) in results.items()}
    models = [study.model for study in studies.values()]
    outcome.check("each seed is its own model", len(set(models)) == len(models), ", ".join(models))
    pd.set_option("display.width", 200)
    for seed, study in studies.items():
        print(f"\nseed {seed}: {study.model}, {study.seconds:.0f} s")
        print(f"  training's own check: {_check_line(results[seed][1])}")
        print(seed_table(seed, study).drop(columns="seed").to_string(index=False))
        if args.out is not None:
            study.save(args.out / f"seed_{seed}")
    print("\nn-exponent of k* on B across seeds (95% item bootstrap over the sizes given):")
    print(exponent_table(studies).to_string(index=False))
    print(f"\nk*(ε = {SHOWN_EPS}) on B across seeds, raw and robust (range):")
    print(spread_table(studies).to_string(index=False))
    print("\nper seed:")
    print(conclusion(studies))
    print(f"finished in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    with Outcome("lab_seeds") as outcome:
        main(outcome)
