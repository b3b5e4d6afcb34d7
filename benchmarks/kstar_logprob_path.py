"""The k* study's logprob path end to end on the embedded long thinker: does B(k) agree in
direction with the sampled (forced-answer) path?

`cotplan kstar study` reads B(k), the teacher-forced −ln P(gold | question, trace cut at k,
answer marker), where the server gives prompt log-probabilities (vLLM's ``prompt_logprobs``).
llama.cpp's server gives none (it ignores the field and has no ``echo``), so this puts a
`cotplan.prompt_scoring.PromptScoringProxy` in front of the embedded long thinker: a loopback
server in vLLM's shape that computes each prompt position's log-probability by teacher forcing
on the same llama.cpp server. The study then runs through ``openai:...`` with
``prompt_logprobs=True``, in template mode, as it would against vLLM.

Every forced answer in the run carries both measures on the same trace: B (the gold answer's
teacher-forced loss) and the sampled answer's 0/1 error. The checks:

- the proxy's reading of a position equals llama.cpp's own top-list value for that token;
- the study used the logprob measure;
- item level: B is higher where the forced answer was wrong than where it was right (the
  difference's 95% bootstrap interval over answers lies above 0);
- curve level: over the (n, k) points, mean B and the mean error rank alike (Spearman > 0).

    .venv/bin/python benchmarks/kstar_logprob_path.py             # sizes 2,4,8, 8 items
"""

from __future__ import annotations

import argparse
import tempfile
import time

import httpx2 as httpx
import numpy as np
import pandas as pd
from _outcome import RESULTS, Outcome

from cotplan import connect
from cotplan.backends.local import LocalModel
from cotplan.prompt_scoring import PromptScoringProxy
from cotplan.research.lab.reasoning.kstar_served import check_protocol, kstar_study

MODEL = "smollm2-135m-thinking-long"


def agreement(answers: pd.DataFrame, seed: int = 0) -> tuple[float, float, float]:
    """Mean B over wrong forced answers minus mean B over right ones, with a 95% bootstrap
    interval over answers (resampled within each group)."""
    wrong = answers.loc[answers["wrong"] == 1.0, "loss"].to_numpy(float)
    right = answers.loc[answers["wrong"] == 0.0, "loss"].to_numpy(float)
    if not len(wrong) or not len(right):
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    draws = [
        rng.choice(wrong, len(wrong)).mean() - rng.choice(right, len(right)).mean()
        for _ in range(2000)
    ]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(wrong.mean() - right.mean()), float(low), float(high)


def curve(answers: pd.DataFrame) -> pd.DataFrame:
    """Per (n, k): items, mean B, mean error."""
    grouped = answers.groupby(["n", "k"])
    return pd.DataFrame(
        {
            "items": grouped["item"].nunique(),
            "B": grouped["loss"].mean(),
            "error": grouped["wrong"].mean(),
        }
    ).reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sizes", default="2,4,8")
    parser.add_argument("--items", type=int, default=8)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with (
        Outcome("kstar_logprob_path") as outcome,
        LocalModel("thinking-long") as model,
        PromptScoringProxy(model.base_url) as proxy,
    ):
        # The proxy against llama.cpp's own top list on one prompt: the last token's value.
        text = "Add up these 3 numbers: 4, 5, 6. What is their sum? Answer: 15"
        pieces = proxy.tokens(text)
        ids = [i for i, _ in pieces]
        entry = proxy.position(pieces, len(ids) - 1, 20)
        plain = httpx.post(
            f"{proxy.root}/completion",
            json={"prompt": ids[:-1], "n_predict": 1, "n_probs": 20, "temperature": 0.0},
            timeout=120,
        ).json()["completion_probabilities"][0]["top_logprobs"]
        listed = {int(a["id"]): float(a["logprob"]) for a in plain}
        forced = entry[str(ids[-1])]["logprob"]
        outcome.check(
            "the forced reading of the last token equals llama.cpp's own top-list value",
            ids[-1] in listed and abs(listed[ids[-1]] - forced) < 1e-4,
            f"{forced:.4f} vs {listed.get(ids[-1], float('nan')):.4f}",
        )

        backend = connect(
            f"openai:{MODEL}", base_url=proxy.base_url, prompt_logprobs=True, cache=None
        )
        protocol = check_protocol(
            backend.model,
            sizes=sizes,
            items=args.items,
            seeds=1,
            eps=(0.5, 0.3),
            budget_points=4,
            tokens_per_input=8,
            min_tokens=32,
            measure="logprob",
        )
        print(protocol.plan_text())
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            study = kstar_study(backend, protocol, folder)
        seconds = time.perf_counter() - started
        stats = proxy.stats
        print(
            f"\nran in {seconds:.0f} s: {stats.scored_prompts} prompts scored, "
            f"{stats.positions_computed} positions computed by teacher forcing, "
            f"{stats.positions_cached} read from the proxy's cache, {stats.forwarded} "
            "generation requests forwarded"
        )
        print(study.summary())
        table = curve(study.law.answers)
        print("\nper (n, k): mean B (teacher-forced −ln P(gold)) and mean forced-answer error")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        table.to_csv(RESULTS / "kstar_logprob_path_curve.csv", index=False)

        outcome.check("the study read B(k) from prompt logprobs", study.measure == "logprob")
        diff, low, high = agreement(study.law.answers)
        outcome.target(
            "B is higher where the forced answer is wrong (interval above 0)",
            low > 0,
            f"mean B wrong − right {diff:.2f} [{low:.2f}, {high:.2f}] nats over "
            f"{len(study.law.answers)} answers",
        )
        rho = table["B"].rank().corr(table["error"].rank())
        outcome.target(
            "mean B and mean error rank alike over the (n, k) points (Spearman > 0)",
            bool(rho > 0),
            f"Spearman {rho:.2f} over {len(table)} points",
        )


if __name__ == "__main__":
    main()
