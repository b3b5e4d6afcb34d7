"""The positional-encoding lab: training speed and time to the Bayes-optimal loss, per encoding.

Trains the full preset's model once per encoding (plus the ordinary decoder without one) and
prints, per model: training steps per second (training time only, evaluation excluded), the
training time until the held-out loss came within 0.001 nats of the Bayes predictor's on the same
held-out bits (checked every `eval_every` steps), and the final excess with its standard error.
The models are saved to the store, so a following `cotplan experiment pe-ablation` only
evaluates them. The load average is printed before and after: other processes on the same cores
slow training down, and the numbers are only comparable at similar load.

    .venv/bin/python benchmarks/pe_lab.py [--threads 2] [--quick] [--encodings none,rope]
        [--no-ordinary] [--target 0.001] [--no-save]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import pandas as pd
from _outcome import Outcome
from rich.console import Console

from cotplan.research.lab.pe_trainer import PE_LAB_PRESETS, EvalPoint, train
from cotplan.research.lab.transformer import POSITIONAL_ENCODINGS


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: the idle cores when each model starts, 1 to 4)",
    )
    parser.add_argument("--quick", action="store_true", help="the quick preset's tiny model")
    parser.add_argument("--encodings", default=",".join(POSITIONAL_ENCODINGS))
    parser.add_argument("--no-ordinary", action="store_true", help="skip the ordinary decoder")
    parser.add_argument("--target", type=float, default=0.001, help="nats above Bayes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None, help="training steps (preset's)")
    parser.add_argument("--no-save", action="store_true", help="do not store the weights")
    args = parser.parse_args()
    console = Console(width=160)
    preset = "quick" if args.quick else "full"
    settings = PE_LAB_PRESETS[preset]
    variants = [(pe.strip(), "tokens") for pe in args.encodings.split(",") if pe.strip()]
    if not args.no_ordinary:
        variants.append(("none", "states"))
    console.print(
        f"preset {preset}: d = {settings['d_model']}, {settings['n_layers']} layers, "
        f"{settings['n_heads']} heads, sequences of {settings['seq_len']} bits, batch "
        f"{settings['batch_size']}, {settings['steps']} steps, evaluation every "
        f"{settings['eval_every']} steps on {settings['eval_sequences']} held-out sequences; "
        f"threads {args.threads or 'chosen per model'}, {os.cpu_count()} cores visible"
    )
    console.print(f"before: {_load()}")
    rows = []
    started = time.perf_counter()
    for pe, attend_to in variants:

        def show(point: EvalPoint, name: str = f"{pe}/{attend_to}") -> None:
            console.print(
                f"  {name} step {point.step}: excess {point.excess:.5f} nats after "
                f"{point.train_s:.1f} s of training"
            )

        model = train(
            pe,
            attend_to=attend_to,  # type: ignore[arg-type]
            preset=preset,
            seed=args.seed,
            threads=args.threads,
            retrain=True,
            save=not args.no_save,
            steps=args.steps,
            on_eval=show,
        )
        report = model.report
        within = report.first_within(args.target)
        settled = report.settled_within(args.target)
        rows.append(
            {
                "model": model.name,
                "parameters": report.parameters,
                "threads": report.threads,
                "steps_per_s": round(report.steps_per_s, 2),
                f"step_within_{args.target:g}": within.step if within else math.nan,
                f"s_within_{args.target:g}": round(within.train_s, 1) if within else math.nan,
                "step_settled": settled.step if settled else math.nan,
                "s_settled": round(settled.train_s, 1) if settled else math.nan,
                "train_s": round(report.train_s, 1),
                "wall_s": round(report.wall_s, 1),
                "excess": f"{report.excess:.5f}",
                "excess_se": f"{report.excess_se:.5f}",
            }
        )
        console.print(
            f"{model.name}: {report.threads} threads, {report.steps_per_s:.2f} steps/s, "
            + (
                f"within {args.target:g} nats at step {within.step} ({within.train_s:.1f} s)"
                if within
                else f"never within {args.target:g} nats in {report.settings.steps} steps"
            )
            + (f", within from step {settled.step} on ({settled.train_s:.1f} s)" if settled else "")
            + f", final excess {report.excess:.5f} ± {report.excess_se:.5f} nats ({_load()})"
        )
    total = time.perf_counter() - started
    for row in rows:
        reached = not math.isnan(row[f"step_within_{args.target:g}"])
        if args.quick or args.steps is not None:
            outcome.note(f"{row['model']}: the target is stated for the full preset's steps")
        else:
            excess = f"final excess {row['excess']} ± {row['excess_se']}"
            outcome.target(
                f"{row['model']} within {args.target:g} nats of the Bayes loss", reached, excess
            )
    console.print(pd.DataFrame(rows).to_string(index=False))
    console.print(
        f"all {len(rows)} models: {total:.1f} s ({total / 60:.1f} min) wall; after: {_load()}"
    )


if __name__ == "__main__":
    with Outcome("pe_lab") as outcome:
        main(outcome)
