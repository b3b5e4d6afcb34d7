"""Apply a plan on held-out items and compare it with uncapped reasoning.

`run_plan(backend, planner, items, eps)` answers each held-out item twice: with its planned
budget k*(n, ε) and "uncapped" (a cap high enough that the model stops on its own, 512 tokens
by default). Both use `budgeted_answers`, so with greedy decoding one reasoning run per item
serves both, and the planned answer is exactly what a call capped at k* returns. The result,
`PlanRun`, judges each size's held-out error against ε (`check_against_eps`) beside the paired
comparison with uncapped (`compare_answers`), and `save(folder)` writes its tables.

With `exit_plan` (`cotplan.planner.exit_plan`, `cotplan run --exit certified`) the planned
policy answers with the certified early exit under the same caps instead, and the fixed cap
joins the comparison as its own policy; the probes' answer tokens count as reasoning spent (and
their prompts as prompt tokens where the exit plan bills them). Where an item cannot be probed
(a backend without visible thinking, a size the exit plan does not cover, a ceiling that is not
the cap run) the planned policy keeps the fixed cap, and `exit_notes` says where and why.

The plan file is `cotplan.planner.saved_plan`, its binding to a model and protocol
`cotplan.planner.binding`, the comparisons `cotplan.planner.compare`; their public names are
importable from here too, where they lived before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

import pandas as pd

from cotplan.backends.base import Backend
from cotplan.errors import CapabilityError, InputError, NotFittedError
from cotplan.generate.budgeted import BudgetedAnswer, CoTPrompt, Mode, answers_frame
from cotplan.generate.probing import ProbedAnswer, probed_frame
from cotplan.io import write_csv
from cotplan.io.reports import save_chart
from cotplan.planner.binding import backend_model, check_plan_model, check_plan_protocol
from cotplan.planner.calibrate import answer_items, check_items, stat
from cotplan.planner.compare import check_against_eps, compare_answers, wilson_interval
from cotplan.planner.exit_plan import ExitPlan, answer_with_exit
from cotplan.planner.fit import Budget, BudgetPlanner
from cotplan.planner.records import PlanCap, SizeChecks
from cotplan.planner.saved_plan import (
    DEFAULT_REACH,
    NO_BENEFIT_STATUSES,
    SCHEMA_VERSION,
    SavedPlan,
    cap_of_budget,
)
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import item_size
from cotplan.validation import (
    CAP,
    SHARE,
    require_unit,
    validate_params,
)

__all__ = [
    "DEFAULT_REACH",
    "NO_BENEFIT_STATUSES",
    "SCHEMA_VERSION",
    "PlanRun",
    "SavedPlan",
    "backend_model",
    "check_against_eps",
    "check_plan_model",
    "check_plan_protocol",
    "compare_answers",
    "plan_budgets",
    "relative_target",
    "run_plan",
    "wilson_interval",
]

#: Draws a result's chart (`cotplan.charts.chart`); the planner itself imports no charts.
Drawer = Callable[[Any], Any]


def relative_target(planner: BudgetPlanner, remaining: float = 0.25) -> float:
    """An absolute target error from the paper's relative one: ε = e0 + remaining · (e_base −
    e0), i.e. `remaining` of the improvement reasoning can buy is left unclaimed (rounded up to
    a hundredth so it stays attainable). Where reasoning is not credited (`NO_BENEFIT_STATUSES`)
    it is the flat error itself."""
    require_unit(remaining, "remaining")
    try:
        status = planner.status_
    except NotFittedError:
        raise InputError("fit the planner first", field="planner") from None
    if status == "too_few":
        raise InputError(f"cannot plan from this calibration: {planner.verdict_}", field="planner")
    if status in NO_BENEFIT_STATUSES:
        return min(0.99, math.ceil(max(planner.e0_, 0.01) * 100) / 100)
    e0, e_base = planner.e0_, planner.e_base_
    law = planner.state_.law
    if planner.law_ in ("logistic", "step") and law is not None:
        # The planning law's own floor and base error (the paper law's may not fit the curve).
        e0, e_base = (float(v) for v in law.params[:2])
    eps = e0 + remaining * (e_base - e0)
    return min(0.99, math.ceil(eps * 100 - 1e-9) / 100)


def plan_budgets(
    planner: BudgetPlanner | SavedPlan, sizes: Iterable[int], eps: float
) -> dict[int, Budget | None]:
    """k*(n, ε) for each size; None where the planner credits reasoning with no effect
    (`NO_BENEFIT_STATUSES`: the plan is then k* = 0). Raises `InfeasibleTargetError` when ε
    cannot be reached at some size."""
    status = planner.status_
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
    `verdict` are the planner's. `by_size` judges each size's held-out error under the plan
    against ε (`check_against_eps`); the `conclusion` leads with it.
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
    by_size: SizeChecks | None = None
    #: One row per item answered with the certified exit (`probed_frame`), when asked for one.
    exit: pd.DataFrame | None = None
    exit_notes: tuple[str, ...] = ()

    @property
    def exit_summary(self) -> str:
        """The certified exit's spend in words ("" when the run did not ask for one)."""
        if self.exit is None:
            return ""
        items = len(self.frame[self.frame["policy"] == "planned"])
        if self.exit.empty:
            return f"certified exit: none of {items} items probed (fixed cap throughout)"
        e = self.exit
        stops = e["stopped_by"].value_counts()
        how = ", ".join(f"{stops.get(w, 0)} by {w}" for w in ("rule", "ended", "ceiling"))
        return (
            f"certified exit on {len(e)} of {items} items: mean thinking "
            f"{e['thinking_tokens'].mean():.1f} tokens, probe tokens "
            f"{e['overhead_tokens'].mean():.1f} (counted as spent), total "
            f"{e['total_tokens'].mean():.1f}; stopped {how}"
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
        """What the held-out items say about the plan, in words: against ε per size (when
        judged), then against uncapped reasoning."""
        if self.by_size is None:
            return self._against_uncapped()
        return f"{self.by_size}; against uncapped: {self._against_uncapped()}"

    def _against_uncapped(self) -> str:
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

    def tables(self) -> list[tuple[str, pd.DataFrame]]:
        """The run's tables by file name: each answer, the comparison, the caps applied, and
        each size against ε (when judged)."""
        out = [("run.csv", self.frame), ("comparison.csv", self.comparison)]
        out.append(("run_plan.csv", self.plan))
        if self.by_size is not None:
            out.append(("run_eps.csv", self.by_size.to_frame()))
        if self.exit is not None:
            out.append(("run_exit.csv", self.exit))
        return out

    def save(self, folder: str | Path, *, draw: Drawer | None = None) -> list[Path]:
        """Write the run's tables into `folder` and, with `draw` (`cotplan.charts.chart`), its
        chart as comparison.png; returns the files written (a chart that does not render is
        left out). `cotplan run` writes this; `cotplan.charts.save(run, folder)` too."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        written = [write_csv(frame, out / name) for name, frame in self.tables()]
        if draw is not None:
            chart = save_chart(draw(self), out / "comparison.png")
            written += [chart] if chart is not None else []
        return written


@validate_params(eps=SHARE, uncapped=CAP, answer_tokens=CAP, confidence=SHARE)
def run_plan(
    backend: Backend,
    planner: BudgetPlanner | SavedPlan,
    items: Iterable[TaskItem],
    eps: float | None = None,
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
    exit_plan: ExitPlan | None = None,
) -> PlanRun:
    """Answer held-out `items` at the planned k*(n, ε) and uncapped; compare (see module doc).

    `eps` is the target the plan is made for (a saved plan's own by default; a fitted planner
    needs one). Planned budgets above `uncapped` are capped
    there (at calibrated sizes the cap is the certified budget where one exists).
    Raises `InfeasibleTargetError` when ε is below what the model reaches at some size.
    `exit_plan`: answer the planned policy with this certified early exit (see module doc).
    """
    chosen = check_items(items)
    if exit_plan is not None and not isinstance(exit_plan, ExitPlan):
        raise InputError(f"must be an ExitPlan, got {type(exit_plan).__name__}", field="exit_plan")
    if eps is not None:
        target = float(eps)
    elif isinstance(planner, SavedPlan):
        target = planner.eps
    else:
        raise InputError("a fitted planner needs the target error to plan for", field="eps")
    sizes = {item.id: item_size(item, counter=backend.count_tokens) for item in chosen}
    plan_caps = _plan_caps(planner, sizes.values(), target)
    caps = {n: min(c.tokens, uncapped) for n, c in plan_caps.items()}
    requests0 = stat(backend, "requests")
    hits0 = stat(backend, "cache_hits")
    answers = answer_items(
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
    exit_frame: pd.DataFrame | None = None
    exit_notes: tuple[str, ...] = ()
    if exit_plan is not None:
        exited, probed, exit_notes = _exit_answers(
            backend, chosen, planned, exit_plan, caps=caps, sizes=sizes
        )
        exit_frame = probed_frame(probed) if probed else pd.DataFrame()
        by_policy = {"planned": exited, "fixed cap": tuple(planned), "uncapped": tuple(free)}
        planned = list(exited)
    comparison = compare_answers(
        by_policy, baseline="uncapped", confidence=confidence, n_bootstrap=n_bootstrap, seed=seed
    )
    frame = pd.concat(
        [answers_frame(rows).assign(policy=name) for name, rows in by_policy.items()],
        ignore_index=True,
    )
    plan_rows = []
    for n, applied in plan_caps.items():
        budget = applied.budget
        plan_rows.append(
            {
                "n": n,
                "items": sum(1 for s in sizes.values() if s == n),
                "k_star": budget.k_star if budget is not None else 0.0,
                "low": budget.low if budget is not None else 0.0,
                "high": budget.high if budget is not None else 0.0,
                "tokens": caps[n],
                "certified": applied.certified,
                "basis": applied.basis,
                "note": applied.note,
            }
        )
    by_size = check_against_eps(
        [sizes[a.item] for a in planned],
        [a.correct for a in planned],
        target,
        confidence=confidence,
        caps={n: c.cap for n, c in plan_caps.items()},
    )
    return PlanRun(
        comparison=comparison,
        frame=frame,
        plan=pd.DataFrame(plan_rows),
        eps=target,
        uncapped=uncapped,
        model=answers[0].model if answers else backend.model,
        status=str(planner.status_),
        verdict=str(planner.verdict_),
        requests=stat(backend, "requests") - requests0,
        cache_hits=stat(backend, "cache_hits") - hits0,
        answers=by_policy,
        by_size=by_size,
        exit=exit_frame,
        exit_notes=exit_notes,
    )


def _exit_answers(
    backend: Backend,
    items: Sequence[TaskItem],
    fixed: Sequence[BudgetedAnswer],
    plan: ExitPlan,
    *,
    caps: Mapping[int, int],
    sizes: Mapping[str, int],
) -> tuple[tuple[BudgetedAnswer, ...], list[ProbedAnswer], tuple[str, ...]]:
    """Each item answered with the certified exit where it applies, else its fixed-cap answer
    (`fixed`, in the order of `items`); the probed answers; the notes on where it did not."""
    notes: dict[int, str] = {}
    probed: list[ProbedAnswer] = []
    out: list[BudgetedAnswer] = []
    unprobeable = ""
    for item, capped in zip(items, fixed, strict=True):
        n = sizes[item.id]
        rule = plan.sizes.get(n)
        if unprobeable or rule is None or rule.ceiling != caps[n]:
            if not unprobeable and n not in notes:
                notes[n] = (
                    f"n = {n}: the exit plan does not cover this size; fixed cap {caps[n]}"
                    if rule is None
                    else f"n = {n}: the exit plan's ceiling {rule.ceiling} is not the cap run "
                    f"({caps[n]}); fixed cap"
                )
            out.append(capped)
            continue
        try:
            answer = answer_with_exit(backend, item, plan, n=n)
        except CapabilityError as exc:
            # Hidden or chat-only reasoning: no item of this backend can be probed.
            unprobeable = f"{exc}; every item keeps the fixed cap"
            out.append(capped)
            continue
        probed.append(answer)
        out.append(_as_budgeted(answer, capped))
    found = ([unprobeable] if unprobeable else []) + [notes[n] for n in sorted(notes)]
    return tuple(out), probed, tuple(found)


def _as_budgeted(answer: ProbedAnswer, capped: BudgetedAnswer) -> BudgetedAnswer:
    """A probed answer as a record the comparison reads: the probes' answer tokens count as
    reasoning spent (they are what probing adds to the thinking), their prompts as prompt
    tokens where the exit plan bills them; the rest is the item's fixed-cap record."""
    billed = answer.overhead_tokens - answer.probe_answer_tokens
    return replace(
        capped,
        k=answer.ceiling,
        extracted=answer.extracted,
        correct=answer.correct,
        reasoning="",
        answer_text=answer.answer_text,
        truncated=answer.stopped_by == "ceiling",
        forced=answer.stopped_by != "ended",
        prompt_tokens=capped.prompt_tokens + billed,
        reasoning_tokens=answer.thinking_tokens + answer.probe_answer_tokens,
        answer_tokens=answer.answer_tokens,
        cost_usd=math.nan,
        cost_note="answered with probing, which is not priced",
        answer_prob=answer.answer_prob,
        cap_held=answer.thinking_tokens <= answer.ceiling,
        overrun=max(0, answer.thinking_tokens - answer.ceiling),
        from_cache=False,
        calls=answer.calls,
        budget_note=f"certified exit ({answer.rule}): stopped by {answer.stopped_by} at "
        f"{answer.stop_k} thinking tokens",
        answer_prompt="",
    )


@dataclass(frozen=True)
class _AppliedCap:
    """The cap `run_plan` applies at one size, with the planner's budget where there is one."""

    cap: PlanCap
    budget: Budget | None

    @property
    def tokens(self) -> int:
        return self.cap.tokens

    @property
    def certified(self) -> bool:
        return self.cap.certified

    @property
    def basis(self) -> str:
        return self.cap.basis

    @property
    def note(self) -> str:
        return self.cap.note


def _plan_caps(
    planner: BudgetPlanner | SavedPlan, sizes: Iterable[int], eps: float
) -> dict[int, _AppliedCap]:
    """The caps to run: a saved plan's `cap(n)` (what would be deployed, any size in reach),
    or a fitted planner's budget (at the sizes it can plan)."""
    if isinstance(planner, SavedPlan):
        if not math.isclose(eps, planner.eps):
            raise InputError(
                f"the plan was made for ε = {planner.eps:g}, not {eps:g}: plan again with "
                f"`cotplan plan --eps {eps:g}`",
                field="eps",
            )
        out: dict[int, _AppliedCap] = {}
        for n in sorted(set(sizes)):
            stored = next((b for b in planner.budgets if b.n == n), None)
            out[n] = _AppliedCap(planner.cap(n), stored)
        return out
    budgets = plan_budgets(planner, sizes, eps)
    certificates = planner.certified_
    nothing = certificates is None or not any(
        certificates.at(n, eps).certified for n in certificates.sizes
    )
    return {n: _AppliedCap(cap_of_budget(n, eps, b, nothing), b) for n, b in budgets.items()}
