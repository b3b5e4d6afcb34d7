"""Judging answers on held-out items: policies against a baseline, and sizes against ε.

`compare_answers` puts any set of policies answered on the same items side by side against a
baseline: accuracy with Wilson intervals, mean tokens and cost, and, paired over items by a
seeded bootstrap, the accuracy retained, the accuracy change and the share of reasoning tokens
saved, each with its interval. The savings benchmark (`benchmarks/planner_savings.py`) uses it
for its fixed caps and prompt-stated budgets too. `check_against_eps` judges each size's
held-out error under a plan against the target ε, with exact intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from cotplan.errors import InputError
from cotplan.generate.budgeted import BudgetedAnswer
from cotplan.intervals import Interval, percentile_interval
from cotplan.planner.certify import clopper_pearson_interval
from cotplan.planner.records import PlanCap, SizeCheck, SizeChecks, Verdict
from cotplan.validation import SHARE, require_int, validate_params

__all__ = ["check_against_eps", "compare_answers", "wilson_interval"]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval of a binomial proportion (NaN ends when n = 0)."""
    if n <= 0:
        return Interval(math.nan, math.nan, confidence)
    if not 0 <= successes <= n:
        raise InputError(f"must be between 0 and n = {n}, got {successes}", field="successes")
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return Interval(max(0.0, centre - half), min(1.0, centre + half), confidence)


def _percentile(values: np.ndarray[Any, Any], confidence: float) -> tuple[float, float]:
    interval = percentile_interval(values, confidence)
    return interval.low, interval.high


def _nanmean_rows(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean of each row over its finite entries (NaN for a row with none), without numpy's
    empty-slice warning."""
    finite = np.isfinite(values)
    counts = finite.sum(axis=1)
    sums = np.where(finite, values, 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def compare_answers(
    answers: Mapping[str, Sequence[BudgetedAnswer]],
    *,
    baseline: str,
    confidence: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per policy, in the order given, against `baseline` on the same items.

    Columns: policy, items, correct, accuracy (with `accuracy_low`/`accuracy_high`, Wilson),
    mean `reasoning_tokens`, `answer_tokens`, `prompt_tokens` and `completion_tokens` per item,
    `cost_usd` (total, list price), and paired item-bootstrap estimates against the baseline:
    `accuracy_retained` (accuracy / baseline accuracy), `accuracy_change` (difference),
    `tokens_ratio` (mean reasoning tokens / the baseline's) and `tokens_saved` (1 − ratio),
    each with `_low`/`_high`.
    """
    if baseline not in answers:
        raise InputError(f"{baseline!r} is not one of {list(answers)}", field="baseline")
    n_bootstrap = require_int(n_bootstrap, "n_bootstrap", low=0)
    order = [a.item for a in answers[baseline]]
    if len(set(order)) != len(order) or not order:
        raise InputError("the baseline must answer each item exactly once", field="answers")

    def by_item(name: str, rows: Sequence[BudgetedAnswer]) -> dict[str, BudgetedAnswer]:
        table = {a.item: a for a in rows}
        if sorted(table) != sorted(order) or len(rows) != len(order):
            raise InputError(
                f"policy {name!r} must answer the same items as {baseline!r}, once each",
                field="answers",
            )
        return table

    aligned = {name: by_item(name, rows) for name, rows in answers.items()}
    correct = {
        name: np.array([table[i].correct for i in order], dtype=float)
        for name, table in aligned.items()
    }
    # A count the server got wrong is no measurement: left out (NaN), never counted as 0.
    reasoning = {
        name: np.array(
            [table[i].reasoning_tokens if table[i].usage_trusted else np.nan for i in order],
            dtype=float,
        )
        for name, table in aligned.items()
    }
    rng = np.random.default_rng(seed)
    resamples = rng.integers(0, len(order), size=(n_bootstrap, len(order)))
    base_acc = correct[baseline][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
    base_tok = _nanmean_rows(reasoning[baseline][resamples]) if n_bootstrap else np.empty(0)
    rows = []
    for name, table in aligned.items():
        items = [table[i] for i in order]
        hits = int(correct[name].sum())
        wilson = wilson_interval(hits, len(items), confidence)
        acc = hits / len(items)
        acc_base = float(correct[baseline].mean())
        tok = float(_nanmean_rows(reasoning[name][None, :])[0])
        tok_base = float(_nanmean_rows(reasoning[baseline][None, :])[0])
        costs = [a.cost_usd for a in items]
        row: dict[str, Any] = {
            "policy": name,
            "items": len(items),
            "correct": hits,
            "accuracy": acc,
            "accuracy_low": wilson.low,
            "accuracy_high": wilson.high,
            "reasoning_tokens": tok,
            "answer_tokens": float(np.mean([a.answer_tokens for a in items])),
            "prompt_tokens": float(np.mean([a.prompt_tokens for a in items])),
            "completion_tokens": float(np.mean([a.completion_tokens for a in items])),
            "cost_usd": math.nan if any(math.isnan(c) for c in costs) else float(sum(costs)),
            "accuracy_retained": acc / acc_base if acc_base > 0 else math.nan,
            "accuracy_change": acc - acc_base,
            "tokens_ratio": tok / tok_base if tok_base > 0 else math.nan,
        }
        row["tokens_saved"] = 1.0 - row["tokens_ratio"]
        with np.errstate(divide="ignore", invalid="ignore"):
            sample_acc = correct[name][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
            sample_tok = _nanmean_rows(reasoning[name][resamples]) if n_bootstrap else np.empty(0)
            retained = np.where(base_acc > 0, sample_acc / base_acc, np.nan)
            ratio = np.where(base_tok > 0, sample_tok / base_tok, np.nan)
        for column, draws in (
            ("accuracy_retained", retained),
            ("accuracy_change", sample_acc - base_acc),
            ("tokens_ratio", ratio),
            ("tokens_saved", 1.0 - ratio),
        ):
            row[f"{column}_low"], row[f"{column}_high"] = _percentile(draws, confidence)
        rows.append(row)
    return pd.DataFrame(rows)


@validate_params(eps=SHARE, confidence=SHARE)
def check_against_eps(
    sizes: Sequence[int],
    correct: Sequence[bool],
    eps: float,
    *,
    confidence: float = 0.95,
    caps: Mapping[int, PlanCap] | None = None,
) -> SizeChecks:
    """Each size's held-out error against the target `eps` (see `SizeCheck`).

    `sizes` and `correct` run in parallel, one entry per held-out answer under the plan;
    `caps` (optional) are the caps applied, reported beside each size. A size `meets` ε when
    the upper end of its exact interval is at most ε, `misses` it when the lower end is above,
    and is `undecided` otherwise. Sizes are judged apart because ε is promised per size: a
    pooled error can hide one size that misses."""
    if len(sizes) != len(correct):
        raise InputError(
            f"must be as long as `sizes` ({len(sizes)}), got {len(correct)}", field="correct"
        )
    target = float(eps)
    tally: dict[int, list[int]] = {}
    for n, right in zip(sizes, correct, strict=True):
        counts = tally.setdefault(int(n), [0, 0])
        counts[0] += 1
        counts[1] += 0 if right else 1
    checks = []
    for n in sorted(tally):
        items, errors = tally[n]
        interval = clopper_pearson_interval(errors, items, confidence)
        verdict: Verdict = "undecided"
        if interval.high <= target:
            verdict = "meets"
        elif interval.low > target:
            verdict = "misses"
        cap = (caps or {}).get(n)
        checks.append(
            SizeCheck(
                n=n,
                items=items,
                errors=errors,
                error=errors / items,
                low=interval.low,
                high=interval.high,
                eps=target,
                confidence=confidence,
                verdict=verdict,
                cap=None if cap is None else cap.tokens,
                certified=cap is not None and cap.certified,
            )
        )
    return SizeChecks(eps=target, confidence=confidence, sizes=tuple(checks))
