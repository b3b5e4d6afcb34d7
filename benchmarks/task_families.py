"""Does reasoning help the embedded model on each built-in task family? Measure it.

For every family, at two sizes n, items are answered greedily (temperature 0) by the embedded
SmolLM2-135M-Instruct in two ways:

- budget 0: the chat prompt, then the assistant turn starts with "Answer:";
- budget k: the assistant turn starts with "Let's think step by step.", the model reasons for at
  most k tokens, then "\\nAnswer:" is appended and the answer read.

One reasoning run per item at the largest budget serves every smaller budget: greedy decoding
makes the first k tokens of the long run the k-token run, so it is cut at k tokens (by the
returned token strings). Requests go one at a time, so that llama.cpp never batches two of
them together: batch composition can change floating-point results, and so greedy choices.
Answers are scored with `cotplan.tasks.is_correct(..., prefilled=True)`. Each family's answers
are then given to `BudgetPlanner` as a calibration frame, whose trend test decides whether
reasoning measurably helps (the "demo" column).

    .venv/bin/python benchmarks/task_families.py --count 16 --out answers.csv
    .venv/bin/python benchmarks/task_families.py --families addition parity --count 10
    .venv/bin/python benchmarks/task_families.py \
        --from-csv benchmarks/results/task_families_smollm2.csv

The first command took 9 minutes on a shared 2-core machine (17 to 142 s per family, as it
prints; over an hour when other model servers shared the cores); its answers are kept in
benchmarks/results/task_families_smollm2.csv, and `--from-csv` re-prints the tables and the
planner's verdicts from them without the model. Options: --count items per size, --budgets,
--seed, --out FILE.csv (the answers, one row per item and budget).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

import pandas as pd
from _outcome import Outcome

from cotplan.backends.base import Backend
from cotplan.backends.local import LocalModel, default_cache
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.planner import BudgetPlanner
from cotplan.tasks import TaskItem, families, is_correct, list_families, make_tasks

#: Two sizes per family (the smallest interesting one and a harder one): the task registry's.
SIZES = {name: info.sizes for name, info in families.items()}
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
END = "<|im_end|>"


def chat_prefix(item: TaskItem) -> str:
    """SmolLM2's ChatML template, ending inside the assistant turn (so we can prefill it)."""
    assert isinstance(item.prompt, str)
    return (
        f"<|im_start|>system\n{SYSTEM}{END}\n<|im_start|>user\n{item.prompt}{END}\n"
        "<|im_start|>assistant\n"
    )


@dataclass
class Row:
    item: str
    family: str
    n: int
    k: int
    correct: bool
    reasoning_tokens: int
    answer: str


def answer_item(backend: Backend, item: TaskItem, budgets: list[int]) -> list[Row]:
    prefix = chat_prefix(item)
    rows = []
    direct = backend.generate(prefix + "Answer:", max_tokens=16, stop=["\n", END])
    rows.append(
        Row(item.id, item.family, item.n or 0, 0, is_correct(direct.text, item, prefilled=True),
            0, direct.text.strip())
    )  # fmt: skip
    positive = [k for k in budgets if k > 0]
    if not positive:
        return rows
    lead = prefix + "Let's think step by step."
    reasoning = backend.generate(lead, max_tokens=max(positive), stop=[END], logprobs=1)
    tokens = [t.token for t in (reasoning.logprobs or ())]
    for k in positive:
        used = min(k, len(tokens))
        thought = "".join(tokens[:used])
        reply = backend.generate(lead + thought + "\nAnswer:", max_tokens=16, stop=["\n", END])
        rows.append(
            Row(item.id, item.family, item.n or 0, k,
                is_correct(reply.text, item, prefilled=True), used, reply.text.strip())
        )  # fmt: skip
    return rows


def main(outcome: Outcome) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", nargs="*", default=list(families))
    parser.add_argument("--count", type=int, default=20, help="items per size")
    parser.add_argument("--budgets", nargs="*", type=int, default=[0, 32, 64, 128])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sizes", nargs="*", type=int, default=None, help="sizes n (default: two per family)"
    )
    parser.add_argument("--out", default=None, help="write the calibration frame as CSV")
    parser.add_argument("--from-csv", default=None, help="analyse saved answers, no model")
    args = parser.parse_args()
    if args.from_csv:
        calibration = pd.read_csv(args.from_csv)
        args.families = [f for f in families if f in set(calibration["family"])]
        args.count = int(calibration.groupby(["family", "n"])["item"].nunique().max())
        budgets = sorted(int(k) for k in calibration["k"].unique())
    else:
        budgets = sorted(set(args.budgets) | {0})
        calibration = measure(args, budgets)
    if args.out:
        calibration.to_csv(args.out, index=False)
    helped = report(calibration, args, budgets)
    # The shipped demo flags (`cotplan tasks list`) were measured by this benchmark, 16 items
    # per size at seed 0 (benchmarks/results/task_families_smollm2.csv): the same run must agree.
    if args.count == 16 and args.seed == 0 and args.sizes is None:
        shipped = {info.name for info in list_families() if info.demo}
        measured = set(helped)
        outcome.check("demo flags agree with `cotplan tasks list`",
                      shipped & set(args.families) == measured,
                      f"measured {sorted(measured)}, shipped {sorted(shipped)}")  # fmt: skip
    else:
        outcome.note("demo flags are compared for the shipped measurement's settings only")


def measure(args: argparse.Namespace, budgets: list[int]) -> pd.DataFrame:
    """Answer every family's items with the embedded model at every budget."""
    frames = []
    with LocalModel() as model:
        # LocalModel.backend() waits 60 s per request; on a busy 2-core machine a 128-token
        # reasoning run can take longer, so build the same client with a longer timeout.
        backend = OpenAICompatibleBackend(
            model.model_id,
            base_url=model.base_url,
            cache=default_cache(),
            cache_namespace=f"local:{model.model_id}",
            text_completions=True,
            timeout=900.0,
            concurrency=model.parallel,
        )
        for family in args.families:
            start = time.perf_counter()
            items = [
                item
                for n in (args.sizes or SIZES[family])
                for item in make_tasks(family, n=n, count=args.count, seed=args.seed)
            ]
            # One request at a time: llama.cpp batches concurrent requests together, and which
            # requests share a batch (a matter of timing) changes the numerics enough to flip
            # greedy choices; alone, each request is reproducible.
            results = backend.map(
                lambda it: answer_item(backend, it, budgets), items, concurrency=1
            )
            frame = pd.DataFrame([r.__dict__ for rows in results for r in rows])
            frames.append(frame)
            print(f"{family}: {len(items)} items in {time.perf_counter() - start:.0f} s",
                  file=sys.stderr)  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def report(calibration: pd.DataFrame, args: argparse.Namespace, budgets: list[int]) -> list[str]:
    """Accuracy table, reasoning tokens used, and the planner's verdict per family."""
    accuracy = calibration.pivot_table(
        index=["family", "n"], columns="k", values="correct", aggfunc="mean"
    )
    used = calibration[calibration.k > 0].groupby(["family", "k"])["reasoning_tokens"].mean()
    print(f"\naccuracy by budget k (greedy, {args.count} items per size, seed {args.seed})")
    header = "family        n  " + "".join(f"k={k:<6}" for k in budgets)
    print(header)
    for (family, n), row in accuracy.iterrows():
        cells = "".join(f"{row[k]:<8.2f}" for k in budgets)
        print(f"{family:<12} {n:>2}  {cells}")
    print("\nmean reasoning tokens used at each cap:")
    for family in args.families:
        parts = ", ".join(f"k={k}: {used[(family, k)]:.0f}" for k in budgets if k > 0)
        print(f"  {family:<12} {parts}")

    print(
        "\nBudgetPlanner per family (trend test within items at the 5% level; with "
        f"{len(args.families)} families, p < {0.05 / len(args.families):.3f} survives a "
        "Bonferroni correction):"
    )
    helped = []
    for family in args.families:
        frame = calibration[calibration.family == family]
        planner = BudgetPlanner(random_state=args.seed).fit(frame)
        trend = planner.trend_
        p_rise = f"{trend.p_value:.2g}" if trend is not None else "-"
        demo = "yes" if planner.status_ == "helps" else "no"
        print(f"  {family:<12} demo={demo:<3} status={planner.status_:<11} p(rise)={p_rise:<8} "
              f"{planner.verdict_}")  # fmt: skip
        if planner.status_ == "helps":
            helped.append((family, planner))
    for family, planner in helped:
        print(f"\n--- {family} ---\n{planner.report()}")
    return [family for family, _ in helped]


if __name__ == "__main__":
    with Outcome("task_families") as outcome:
        main(outcome)
