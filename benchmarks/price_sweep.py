"""Price every genai-prices price with cotplan and with genai-prices itself; list each difference.

For each model of genai-prices' bundled data and each of its dated prices, a seeded sample of
calls (plain, cached, cache-write, reasoning, at and above the long-context threshold, batch on
every price, flex and priority where the model lists them, inside each time-of-day window) is
priced by `cotplan.call_cost` and by genai-prices' own `calc_price` arithmetic
(`cotplan.pricing.sweep`). Both are exact decimals, so a case agrees only when the totals are
equal. Every disagreement is listed, grouped by reason; a reason in `EXPLAINED` is printed with
why it is deliberate. The check fails on any other reason. Prices cotplan holds no row for are
counted by reason.

    .venv/bin/python benchmarks/price_sweep.py [--seed 0] [--show 5]

Transcript: benchmarks/results/price_sweep.txt (``price_sweep_<arguments>.txt`` with
arguments).
"""

from __future__ import annotations

import argparse
import os
import textwrap
import time
from collections import Counter, defaultdict
from pathlib import Path

from _outcome import Outcome

from cotplan.pricing.sweep import EXPLAINED, SweepCase, sweep


def _line(case: SweepCase) -> str:
    ours = "refused" if case.ours is None else f"{case.ours}"
    tokens = (
        f"prompt {case.prompt_tokens:,} (cached {case.cached_tokens:,}, written "
        f"{case.cache_write_tokens:,}), completion {case.completion_tokens:,}, reasoning "
        f"{case.reasoning_tokens:,}"
    )
    return (
        f"  {case.provider}/{case.model} {case.shape} at {case.when:%Y-%m-%d %H:%M} UTC: "
        f"cotplan {ours}, genai-prices {case.theirs}; {tokens}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="cases listed per reason")
    parser.add_argument("--no-save", action="store_true", help="do not write the transcript")
    args = parser.parse_args()
    transcript = Path(os.devnull) if args.no_save else None
    with Outcome("price_sweep", transcript=transcript) as outcome:
        started = time.process_time()
        result = sweep(seed=args.seed)
        spent = time.process_time() - started
        models = {(c.provider, c.model) for c in result.cases}
        shapes = Counter(c.shape for c in result.cases)
        print(
            f"genai-prices {result.version}, seed {result.seed}: {len(result.cases):,} calls on "
            f"{len(models):,} models ({spent:.1f} CPU s)"
        )
        print("calls by shape: " + ", ".join(f"{s} {n:,}" for s, n in shapes.most_common()))
        agree = len(result.cases) - len(result.disagreements)
        print(f"equal to the last decimal: {agree:,} of {len(result.cases):,}")
        groups: dict[str, list[SweepCase]] = defaultdict(list)
        for case in result.disagreements:
            groups[case.reason].append(case)
        print(f"disagreements: {len(result.disagreements):,}, in {len(groups)} reason"
              f"{'' if len(groups) == 1 else 's'}")  # fmt: skip
        for reason, cases in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            status = "explained" if reason in EXPLAINED else "UNEXPLAINED"
            print(f"\n{reason} ({status}): {len(cases):,} calls on "
                  f"{len({(c.provider, c.model) for c in cases})} models")  # fmt: skip
            if reason in EXPLAINED:
                print(textwrap.fill(EXPLAINED[reason], 98, initial_indent="  why: ",
                                    subsequent_indent="       "))  # fmt: skip
            for case in cases[: args.show]:
                print(_line(case))
            if len(cases) > args.show:
                print(f"  ... and {len(cases) - args.show} more")
        skipped = Counter(reason for _, _, reason in result.skipped)
        print(f"\nmodels of genai-prices without a cotplan row: {len(result.skipped)}")
        for reason, n in skipped.most_common():
            print(f"  {n:4d}  {reason}")
        outcome.check(
            "every disagreement has an explained reason",
            not result.unexplained,
            f"{len(result.unexplained)} unexplained",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
