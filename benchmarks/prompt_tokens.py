"""Prompt tokens per capped call against the uncapped call, on the embedded thinking model.

Where the server caps the thinking itself (llama.cpp with its reasoning parser, found by
`provider="detect"`), a capped call is the client's one request with the cap added: its
prompt should cost what the uncapped call's does (target: at most 1.05 times). Two-phase
forcing (an OpenAI-compatible address, `cotplan.capped`'s default) sends the question twice,
the second time with the thinking after it; its ratio is printed beside, for comparison.

The uncapped call's prompt is counted from a one-token completion: the prompt does not depend
on how long the model then writes.

    .venv/bin/python benchmarks/prompt_tokens.py [--items 6]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import openai
from _outcome import Outcome

from cotplan.backends.local import LocalModel
from cotplan.planner.records import Budget
from cotplan.planner.saved_plan import SCHEMA_VERSION, SavedPlan
from cotplan.production import capped, report_of
from cotplan.tasks import make_tasks

CAP = 16


def plan_for(model: str) -> SavedPlan:
    """A one-size plan with the cap `CAP` at n = 3 (the calls give no size: it applies)."""
    budget = Budget(
        n=3, eps=0.1, k_star=CAP, low=CAP, high=CAP, tokens=CAP, log_base="e", c_in_base=1.0,
        formula="k*", baselines={},
    )  # fmt: skip
    return SavedPlan(
        eps=0.1, delta=0.05, law=None, status_="helps", verdict_="v", calibration="-",
        budgets=(budget,), model=model, schema_version=SCHEMA_VERSION,
    )  # fmt: skip


def main(outcome: Outcome, items: int) -> None:
    questions = [str(item.prompt) for item in make_tasks("addition", n=3, count=items, seed=0)]
    with LocalModel("thinking", threads=1, replicas=1) as model:
        raw = openai.OpenAI(base_url=model.base_url, api_key="none")
        plan = plan_for(model.model_id)
        server = capped(raw, plan, provider="detect", log=False, size=3)
        two_phase = capped(raw, plan, log=False, size=3)
        rows: dict[str, list[int]] = {"uncapped": [], "server cap": [], "two-phase": []}
        requests: dict[str, list[int]] = {"server cap": [], "two-phase": []}
        for question in questions:
            messages: list[Any] = [{"role": "user", "content": question}]
            plain = raw.chat.completions.create(
                model=model.model_id, messages=messages, max_tokens=1, temperature=0
            )
            assert plain.usage is not None
            rows["uncapped"].append(plain.usage.prompt_tokens)
            for name, client in (("server cap", server), ("two-phase", two_phase)):
                report = report_of(
                    client.chat.completions.create(model=model.model_id, messages=messages)
                )
                rows[name].append(report.prompt_tokens)
                requests[name].append(report.requests)
    base = statistics.mean(rows["uncapped"])
    print(f"embedded thinking model, {items} addition items (n = 3), cap k = {CAP}")
    print(f"{'call':<12} {'requests':>8} {'prompt tokens':>14} {'vs uncapped':>12}")
    for name, counts in rows.items():
        mean = statistics.mean(counts)
        sent = statistics.mean(requests[name]) if name in requests else 1
        print(f"{name:<12} {sent:>8.1f} {mean:>14.1f} {mean / base:>11.2f}x")
    ratio = statistics.mean(rows["server cap"]) / base
    outcome.target(
        "server cap: prompt tokens at most 1.05x uncapped", ratio <= 1.05, f"{ratio:.2f}x"
    )
    outcome.check("server cap: one request per call", set(requests["server cap"]) == {1})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=6)
    args = parser.parse_args()
    with Outcome("prompt_tokens") as outcome:
        main(outcome, args.items)
