"""Certified early exit against the certified fixed cap and the uncertified adaptive exits.

One run, one model, the same held-out items for every method (issue 29):

- uncapped: reasoning until the model answers on its own (a cap of --uncapped tokens);
- certified fixed cap: per size, the smallest calibrated budget whose error is certified at ε
  with confidence 1 − δ (fixed-sequence testing, `cotplan.planner.early_exit.fixed_caps`);
- certified early exit: the stopping rule certified on the same calibration items
  (`certify_early_exit`), probing every --every thinking tokens, never past the fixed cap;
- Dynasor-style: stop when 3 consecutive probes agree (Dynasor-CoT's published setting; its
  interval of 32 tokens on traces of thousands is --every here), uncertified, up to uncapped;
- DEER-style: stop when the probed answer's probability is at least 0.95, uncertified;
- stable oracle (per item): the smallest budget from which the item is right at every larger
  budget answered (benchmarks/planner_savings.py), with no probes: a bound, not a method.

Calibration answers every calibration item at every budget of the lab study grid; held-out
items are answered at the same grid and uncapped, all budgets of an item from one greedy
reasoning run, so each method reads the probes it would have made. Tokens per item: thinking
up to the stop, probe overhead (answer tokens of the probes before the stop; with
--bill-prompt their prompts too), the answer, and the total of the three.

Issue 29's goals, judged here without --quick: the early exit never spends more total tokens
than the fixed cap and stays within 1.15 times the stable oracle. Its third goal, 25% below the
fixed cap, is stated for a family whose difficulty varies by item; parity settles at the same
step (3n) for every item of a size, so it is a note here, not a target.

    .venv/bin/python benchmarks/early_exit.py                  # lab:parity-overthink, full
    .venv/bin/python benchmarks/early_exit.py --quick          # fewer items, ε = 0.1
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from _outcome import Outcome
from planner_savings import answer_all, calibration_grid, ints, make_items, stable_budget

from cotplan.backends import connect
from cotplan.planner.calibrate import CostUnknownWarning, calibrate
from cotplan.planner.early_exit import (
    StoppingRule,
    apply_rule,
    certify_early_exit,
    deer_rule,
    dynasor_rule,
    fixed_caps,
    probe_sequences,
)
from cotplan.planner.run import wilson_interval

GOAL_ORACLE_RATIO, GOAL_CAP_SAVING = 1.15, 0.25
FIXED, EXIT, ORACLE = "certified fixed cap", "certified early exit", "stable oracle (per item)"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--backend", default="lab:parity-overthink")
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default 8,16)")
    parser.add_argument("--count", type=int, default=None, help="calibration items a size (100)")
    parser.add_argument("--held-out", type=int, default=None, help="held-out items a size (40)")
    parser.add_argument("--eps", type=float, default=None, help="target error (0.03; quick 0.1)")
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--every", type=int, default=4, help="probe every this many tokens")
    parser.add_argument("--family", default="auto", help="agreement, confidence, both, auto")
    parser.add_argument("--bill-prompt", action="store_true", help="probes re-bill the prompt")
    parser.add_argument("--uncapped", type=int, default=256)
    parser.add_argument("--lab-preset", default="standard", help="lab training preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="40 + 20 items a size, ε = 0.1")
    parser.add_argument("--out", type=Path, default=None, help="folder for the CSV tables")
    args = parser.parse_args()
    # Sizes 8 and 16: parity of 4 bits has 16 questions, too few to certify a cap at n = 4.
    args.sizes = args.sizes or "8,16"
    args.count = args.count or (40 if args.quick else 100)
    args.held_out = args.held_out or (20 if args.quick else 40)
    # 0.03 keeps 97% of the over-thinker's accuracy and needs ~100 error-free items a size;
    # the quick preset's 40 items certify 0.1 at best (0.05^(1/40) = 0.93).
    args.eps = args.eps if args.eps is not None else (0.1 if args.quick else 0.03)
    # planner_savings.calibration_grid reads these two: the lab study grid.
    args.budgets, args.paper_count = "study", 8
    return args


def summarise(name: str, stops: pd.DataFrame) -> dict[str, Any]:
    right = int(stops["correct"].sum())
    interval = wilson_interval(right, len(stops))
    return {
        "method": name,
        "items": len(stops),
        "accuracy": right / len(stops),
        "low": interval.low,
        "high": interval.high,
        "thinking": float(stops["thinking_tokens"].mean()),
        "probes": float(stops["probe_tokens"].mean()),
        "total": float(stops["total_tokens"].mean()),
    }


def at_budget(held: pd.DataFrame, budget_of: dict[str, int]) -> pd.DataFrame:
    """Each item's answer at one budget of its own, with no probes (a cap, or the oracle's)."""
    rows = held[held["k"] == held["item"].map(budget_of)]
    return pd.DataFrame(
        {
            "item": rows["item"],
            "n": rows["n"],
            "stop_k": rows["k"],
            "correct": rows["correct"].astype(bool),
            "thinking_tokens": rows["reasoning_tokens"].astype(float),
            "probe_tokens": 0.0,
            "total_tokens": (rows["reasoning_tokens"] + rows["answer_tokens"]).astype(float),
        }
    ).reset_index(drop=True)


def main(outcome: Outcome) -> None:
    args = parse_args()
    started = time.perf_counter()
    sizes = ints(args.sizes)
    family = f"lab-{args.backend.partition(':')[2]}"
    calib_items, held_items = make_items(family, sizes, args.count, args.held_out, args.seed)
    grid = calibration_grid(args)
    with connect(args.backend, preset=args.lab_preset) as backend:
        with warnings.catch_warnings():
            # Lab models have no price: their costs are NaN, which the tables do not use.
            warnings.simplefilter("ignore", CostUnknownWarning)
            frame = calibrate(backend, calib_items, grid, progress=False).frame
        budgets = {it.id: sorted({*grid(it.n), args.uncapped}) for it in held_items}
        held_answers = answer_all(backend, held_items, budgets)
        model = backend.model
    held = pd.DataFrame([a.to_row() for rows in held_answers.values() for a in rows])

    caps = fixed_caps(frame, args.eps, args.delta)
    result = certify_early_exit(
        frame,
        args.eps,
        delta=args.delta,
        ceilings=caps,
        family=args.family,
        every=args.every,
        bill_prompt=args.bill_prompt,
    )
    print(f"\ncertified early exit: {model}, family {family}, sizes n = {args.sizes}")
    print(
        f"calibration: {frame['item'].nunique()} items; held-out: {len(held_items)} items "
        f"(seed {args.seed + 1}); ε = {args.eps:g}, δ = {args.delta:g}; probes every "
        f"{args.every} tokens; prompt re-billed: {'yes' if args.bill_prompt else 'no'}; "
        f"answer_prob known: {bool(frame['answer_prob'].notna().all())}"
    )
    uncertified = [n for n in sizes if n not in caps]
    if uncertified:
        print(f"no fixed cap certified at n = {uncertified}: those sizes are left out")
    print("\nrules tested on the calibration items (most cautious first):")
    print(result.table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print("\ncertified per size:")
    cert = result.to_frame()
    print(cert.drop(columns=["eps", "delta"]).to_string(index=False, float_format="{:.3f}".format))

    held = held[held["n"].isin(list(caps))]
    uncapped = {n: args.uncapped for n in caps}
    n_of = dict(zip(held["item"], held["n"], strict=False))
    methods: dict[str, pd.DataFrame] = {
        f"uncapped (cap {args.uncapped})": at_budget(held, dict.fromkeys(n_of, args.uncapped)),
        FIXED: at_budget(held, {item: caps[n] for item, n in n_of.items()}),
    }
    exits = []
    for n in caps:
        rule = result.rule_at(n) or StoppingRule()
        sequences = probe_sequences(
            held[held["n"] == n], {n: caps[n]}, every=args.every, bill_prompt=args.bill_prompt
        )
        exits.append(apply_rule(rule, sequences))
    methods[EXIT] = pd.concat(exits, ignore_index=True)
    open_ended = probe_sequences(held, uncapped, every=args.every, bill_prompt=args.bill_prompt)
    methods["Dynasor-style (3 agree)"] = apply_rule(dynasor_rule(), open_ended)
    methods["DEER-style (p ≥ 0.95)"] = apply_rule(deer_rule(), open_ended)
    stable = {item: stable_budget(held_answers[item]) for item in n_of}
    methods[ORACLE] = at_budget(held, stable)
    summary = {name: summarise(name, stops) for name, stops in methods.items()}
    table = pd.DataFrame(list(summary.values()))

    print(f"\nheld-out items: {int(table['items'].iloc[0])}; tokens are means per item\n")
    header = (
        f"{'method':<26} {'accuracy [Wilson 95%]':<22} {'thinking':>9} {'probes':>8} {'total':>8}"
    )
    print(header)
    print("-" * len(header))
    for _, r in table.iterrows():
        print(
            f"{r['method']:<26} {r['accuracy']:.2f} [{r['low']:.2f}, {r['high']:.2f}]      "
            f"{r['thinking']:>9.1f} {r['probes']:>8.1f} {r['total']:>8.1f}"
        )
    ours, cap, oracle = summary[EXIT], summary[FIXED], summary[ORACLE]
    past = methods[EXIT]["stop_k"] > methods[EXIT]["ceiling"]
    outcome.check("the early exit never thinks past the fixed cap", not bool(past.any()))
    ratio_cap = float(ours["total"]) / float(cap["total"])
    ratio_oracle = float(ours["total"]) / float(oracle["total"])
    print(
        f"\nearly exit / fixed cap total tokens: {ratio_cap:.2f}; early exit / stable oracle: "
        f"{ratio_oracle:.2f}"
    )
    if not args.quick:
        outcome.target(
            "issue 29: the early exit spends no more total tokens than the fixed cap",
            ratio_cap <= 1.0,
            f"{ours['total']:.1f} / {cap['total']:.1f} = {ratio_cap:.2f}",
        )
        outcome.target(
            f"issue 29: the early exit within {GOAL_ORACLE_RATIO} times the stable oracle's "
            "total tokens",
            ratio_oracle <= GOAL_ORACLE_RATIO,
            f"{ours['total']:.1f} / {oracle['total']:.1f} = {ratio_oracle:.2f}",
        )
    outcome.note(
        f"issue 29's {GOAL_CAP_SAVING:.0%} saving below the fixed cap is stated for a family whose "
        f"difficulty varies by item; here the saving is {1 - ratio_cap:.0%}"
        + (" (--quick: the goals are not judged)" if args.quick else "")
    )
    print(f"finished in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "early_exit.csv", index=False)
        cert.to_csv(args.out / "certified.csv", index=False)
        frame.to_csv(args.out / "calibration.csv", index=False)
        held.to_csv(args.out / "held_out.csv", index=False)
        pd.concat([s.assign(method=m) for m, s in methods.items()]).to_csv(
            args.out / "stops.csv", index=False
        )


if __name__ == "__main__":
    with Outcome("early_exit") as outcome:
        main(outcome)
