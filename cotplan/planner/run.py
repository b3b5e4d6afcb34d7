"""Apply a plan on held-out items and compare it with uncapped reasoning.

`run_plan(backend, planner, items, eps)` answers each held-out item twice: with its planned
budget k*(n, ε) and "uncapped" (a cap high enough that the model stops on its own, 512 tokens
by default). Both use `budgeted_answers`, so with greedy decoding one reasoning run per item
serves both, and the planned answer is exactly what a call capped at k* returns.

`compare_answers` puts any set of policies answered on the same items side by side against a
baseline: accuracy with Wilson intervals, mean tokens and cost, and, paired over items by a
seeded bootstrap, the accuracy retained, the accuracy change and the share of reasoning tokens
saved, each with its interval. The savings benchmark (`benchmarks/planner_savings.py`) uses it
for its fixed caps and prompt-stated budgets too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from scipy import stats

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.budgeted import BudgetedAnswer, CoTPrompt, Mode, answers_frame
from cotplan.intervals import percentile_interval
from cotplan.planner.calibrate import _answer_items, _check_items, _stat
from cotplan.planner.fit import Budget, BudgetPlanner, ConfidenceInterval
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import item_size
from cotplan.validation import require_int

__all__ = [
    "NO_BENEFIT_STATUSES",
    "PlanRun",
    "SavedPlan",
    "compare_answers",
    "plan_budgets",
    "relative_target",
    "run_plan",
    "wilson_interval",
]

#: Planner verdicts under which reasoning is not credited with any effect: the plan is k* = 0.
NO_BENEFIT_STATUSES = frozenset({"no_benefit", "hurts", "all_correct", "all_wrong"})


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> ConfidenceInterval:
    """Wilson score interval of a binomial proportion (NaN ends when n = 0)."""
    if n <= 0:
        return ConfidenceInterval(math.nan, math.nan, confidence)
    if not 0 <= successes <= n:
        raise InputError(f"must be between 0 and n = {n}, got {successes}", field="successes")
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return ConfidenceInterval(max(0.0, centre - half), min(1.0, centre + half), confidence)


def _percentile(values: np.ndarray[Any, Any], confidence: float) -> tuple[float, float]:
    interval = percentile_interval(values, confidence)
    return interval.low, interval.high


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
    reasoning = {
        name: np.array([table[i].reasoning_tokens for i in order], dtype=float)
        for name, table in aligned.items()
    }
    rng = np.random.default_rng(seed)
    resamples = rng.integers(0, len(order), size=(n_bootstrap, len(order)))
    base_acc = correct[baseline][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
    base_tok = reasoning[baseline][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
    rows = []
    for name, table in aligned.items():
        items = [table[i] for i in order]
        hits = int(correct[name].sum())
        wilson = wilson_interval(hits, len(items), confidence)
        acc = hits / len(items)
        acc_base = float(correct[baseline].mean())
        tok = float(reasoning[name].mean())
        tok_base = float(reasoning[baseline].mean())
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
            sample_tok = reasoning[name][resamples].mean(axis=1) if n_bootstrap else np.empty(0)
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


def relative_target(planner: BudgetPlanner, remaining: float = 0.25) -> float:
    """An absolute target error from the paper's relative one: ε = e0 + remaining · (e_base −
    e0), i.e. `remaining` of the improvement reasoning can buy is left unclaimed (rounded up to
    a hundredth so it stays attainable). Where reasoning is not credited (`NO_BENEFIT_STATUSES`)
    it is the flat error itself."""
    if not 0.0 < remaining < 1.0:
        raise InputError(f"must be in (0, 1), got {remaining!r}", field="remaining")
    status = getattr(planner, "status_", None)
    if status is None:
        raise InputError("fit the planner first", field="planner")
    if status == "too_few":
        raise InputError(f"cannot plan from this calibration: {planner.verdict_}", field="planner")
    if status in NO_BENEFIT_STATUSES:
        return min(0.99, math.ceil(max(planner.e0_, 0.01) * 100) / 100)
    e0, e_base = planner.e0_, planner.e_base_
    if getattr(planner, "law_", None) in ("logistic", "step"):
        # The planning law's own floor and base error (the paper law's may not fit the curve).
        e0, e_base = (float(v) for v in planner._law_params[:2])
    eps = e0 + remaining * (e_base - e0)
    return min(0.99, math.ceil(eps * 100 - 1e-9) / 100)


@dataclass(frozen=True)
class SavedPlan:
    """A plan as `cotplan plan` writes it (plan.json): the budgets per size for one ε.

    It answers `budget(n, eps)` like the planner it came from, for the sizes and the ε it was
    made for, so `run_plan` (and `cotplan run`) apply exactly the caps that were printed,
    without fitting again. `calibration` is the calibration file it was fitted on."""

    eps: float
    delta: float
    law: str | None
    status_: str
    verdict_: str
    calibration: str
    budgets: tuple[Budget, ...]

    @property
    def sizes_(self) -> tuple[int, ...]:
        return tuple(int(b.n) for b in self.budgets)

    @classmethod
    def from_planner(
        cls, planner: BudgetPlanner, budgets: Sequence[Budget], eps: float, calibration: str
    ) -> SavedPlan:
        return cls(
            eps=eps,
            delta=float(planner.delta),
            law=planner.law_,
            status_=planner.status_,
            verdict_=planner.verdict_,
            calibration=calibration,
            budgets=tuple(budgets),
        )

    def budget(self, n: float, eps: float) -> Budget:
        if not math.isclose(eps, self.eps):
            raise InputError(
                f"the plan was made for ε = {self.eps:g}, not {eps:g}: plan again with "
                f"`cotplan plan --eps {eps:g}`",
                field="eps",
            )
        for budget in self.budgets:
            if budget.n == n:
                return budget
        raise InputError(
            f"the plan has no budget for n = {n:g} (it has n = "
            f"{', '.join(str(s) for s in self.sizes_)}): plan it with `cotplan plan --n {n:g}`",
            field="n",
        )

    def save(self, path: Path) -> Path:
        record = asdict(self)
        record["budgets"] = [{**asdict(b), "baselines": dict(b.baselines)} for b in self.budgets]
        path.write_text(json.dumps(record, indent=2, ensure_ascii=False))
        return path

    @classmethod
    def load(cls, path: Path) -> SavedPlan:
        if not path.is_file():
            raise InputError(
                f"no such file: {path} (write one with `cotplan plan`)",
                field="plan",
                source=str(path),
            )
        try:
            record = json.loads(path.read_text())
            budgets = tuple(Budget(**b) for b in record.pop("budgets"))
            return cls(**record, budgets=budgets)
        except (ValueError, TypeError, KeyError) as exc:
            raise InputError(
                f"not a plan written by `cotplan plan`: {exc}", field="plan", source=str(path)
            ) from exc


def plan_budgets(
    planner: BudgetPlanner | SavedPlan, sizes: Iterable[int], eps: float
) -> dict[int, Budget | None]:
    """k*(n, ε) for each size; None where the planner credits reasoning with no effect
    (`NO_BENEFIT_STATUSES`: the plan is then k* = 0). Raises `InfeasibleTargetError` when ε
    cannot be reached at some size."""
    status = getattr(planner, "status_", None)
    out: dict[int, Budget | None] = {}
    for n in sorted(set(sizes)):
        out[n] = None if status in NO_BENEFIT_STATUSES else planner.budget(n, eps)
    return out


@dataclass(frozen=True)
class PlanRun:
    """A plan applied to held-out items next to uncapped reasoning.

    `comparison` is `compare_answers` for the policies "planned" and "uncapped" (baseline).
    `frame` has one row per answer (the `BudgetedAnswer` fields plus `policy`). `plan` has one
    row per size: k* (real), the cap used (`tokens`), its interval and notes. `status` and
    `verdict` are the planner's.
    """

    comparison: pd.DataFrame
    frame: pd.DataFrame
    plan: pd.DataFrame
    eps: float
    uncapped: int
    model: str
    status: str
    verdict: str
    requests: int = 0
    cache_hits: int = 0
    answers: Mapping[str, tuple[BudgetedAnswer, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def to_frame(self) -> pd.DataFrame:
        """The comparison table (a copy)."""
        return self.comparison.copy()

    def row(self, policy: str) -> pd.Series:
        """The comparison row of `policy` ("planned" or "uncapped")."""
        table = self.comparison.set_index("policy")
        if policy not in table.index:
            raise InputError(f"must be one of {list(table.index)}, got {policy!r}", field="policy")
        return cast(pd.Series, table.loc[policy])

    @property
    def tokens_saved(self) -> float:
        """Share of the uncapped reasoning tokens the plan did not spend."""
        return float(self.row("planned")["tokens_saved"])

    @property
    def accuracy_change(self) -> float:
        """Planned accuracy minus uncapped accuracy."""
        return float(self.row("planned")["accuracy_change"])

    @property
    def conclusion(self) -> str:
        """What the held-out comparison says about the plan, in words."""
        row = self.row("planned")
        low, high = float(row["accuracy_change_low"]), float(row["accuracy_change_high"])
        saved = float(row["tokens_saved"])
        if high < 0:
            return (
                f"the plan LOST accuracy on held-out items ({row['accuracy_change']:+.2f}, "
                f"interval {low:+.2f} to {high:+.2f}) while saving {saved:.0%} of reasoning "
                "tokens: the calibration missed a benefit; calibrate with more items or finer "
                "budgets before using this plan"
            )
        if low > 0:
            return (
                f"the plan was MORE accurate than uncapped ({row['accuracy_change']:+.2f}, "
                f"interval {low:+.2f} to {high:+.2f}) and saved {saved:.0%} of reasoning tokens"
            )
        if math.isnan(low):
            return f"the plan saved {saved:.0%} of reasoning tokens (no interval computed)"
        return (
            f"the plan saved {saved:.0%} of reasoning tokens; its accuracy change "
            f"({row['accuracy_change']:+.2f}, interval {low:+.2f} to {high:+.2f}) is not "
            f"distinguishable from 0 on {int(row['items'])} items"
        )

    def chart(self) -> Any:
        """Accuracy (with Wilson intervals) against mean reasoning tokens, one point per
        policy."""
        return comparison_chart(self.comparison, title=f"Plan (ε = {self.eps:g}) vs uncapped")


def comparison_chart(comparison: pd.DataFrame, *, title: str = "Policies") -> Any:
    """Accuracy with its interval against mean reasoning tokens per item, one point per policy
    (a `compare_answers` frame)."""
    import altair as alt

    x = alt.X("reasoning_tokens:Q", title="mean reasoning tokens per item")
    y_title = "accuracy (95% Wilson interval)"
    base = alt.Chart(comparison)
    bars = base.mark_rule().encode(
        x=x, y=alt.Y("accuracy_low:Q", title=y_title), y2="accuracy_high:Q", color="policy:N"
    )
    points = base.mark_point(filled=True, size=90).encode(
        x=x,
        y=alt.Y("accuracy:Q", title=y_title, scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("policy:N", title="policy"),
        tooltip=[
            "policy:N",
            alt.Tooltip("accuracy:Q", format=".2f"),
            alt.Tooltip("reasoning_tokens:Q", format=".1f"),
        ],
    )
    return alt.layer(bars, points).properties(title=title, width=480, height=300)


def run_plan(
    backend: Backend,
    planner: BudgetPlanner | SavedPlan,
    items: Iterable[TaskItem],
    eps: float,
    *,
    uncapped: int = 512,
    concurrency: int | None = None,
    progress: bool = True,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    prompt: CoTPrompt | None = None,
    confidence: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 0,
) -> PlanRun:
    """Answer held-out `items` at the planned k*(n, ε) and uncapped; compare (see module doc).

    `eps` is the target the plan is made for. Planned budgets above `uncapped` are capped
    there (at calibrated sizes the cap is the certified budget where one exists).
    Raises `InfeasibleTargetError` when ε is below what the model reaches at some size.
    """
    chosen = _check_items(items)
    uncapped = require_int(uncapped, "uncapped", low=1)
    target = float(eps)
    sizes = {item.id: item_size(item, counter=backend.count_tokens) for item in chosen}
    budgets = plan_budgets(planner, sizes.values(), target)
    caps = {n: min(b.tokens, uncapped) if b is not None else 0 for n, b in budgets.items()}
    requests0 = _stat(backend, "requests")
    hits0 = _stat(backend, "cache_hits")
    answers = _answer_items(
        backend,
        chosen,
        lambda item: sorted({caps[sizes[item.id]], uncapped}),
        description="running the plan",
        concurrency=concurrency,
        progress=progress,
        answer_tokens=answer_tokens,
        mode=mode,
        prompt=prompt,
    )
    planned: list[BudgetedAnswer] = []
    free: list[BudgetedAnswer] = []
    for item in chosen:
        mine = [a for a in answers if a.item == item.id]
        cap = caps[sizes[item.id]]
        planned.append(next(a for a in mine if a.k == cap))
        free.append(next(a for a in mine if a.k == uncapped))
    by_policy = {"planned": tuple(planned), "uncapped": tuple(free)}
    comparison = compare_answers(
        by_policy, baseline="uncapped", confidence=confidence, n_bootstrap=n_bootstrap, seed=seed
    )
    frame = pd.concat(
        [answers_frame(rows).assign(policy=name) for name, rows in by_policy.items()],
        ignore_index=True,
    )
    plan_rows = []
    for n, budget in budgets.items():
        plan_rows.append(
            {
                "n": n,
                "items": sum(1 for s in sizes.values() if s == n),
                "k_star": budget.k_star if budget is not None else 0.0,
                "low": budget.low if budget is not None else 0.0,
                "high": budget.high if budget is not None else 0.0,
                "tokens": caps[n],
                "note": (budget.note if budget is not None else "reasoning not credited: k* = 0"),
            }
        )
    return PlanRun(
        comparison=comparison,
        frame=frame,
        plan=pd.DataFrame(plan_rows),
        eps=target,
        uncapped=uncapped,
        model=answers[0].model if answers else backend.model,
        status=str(getattr(planner, "status_", "")),
        verdict=str(getattr(planner, "verdict_", "")),
        requests=_stat(backend, "requests") - requests0,
        cache_hits=_stat(backend, "cache_hits") - hits0,
        answers=by_policy,
    )
