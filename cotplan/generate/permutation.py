"""Permutation-averaged answers: score the candidates under m orderings of the few-shot examples
and average the probabilities (paper §2: P̄_m = (1/m) Σ_i P(answer | examples ordered by π_i)).

    from cotplan.generate.permutation import permutation_average

    result = permutation_average(backend, [("I loved it", "positive"), ("dull", "negative"),
                                           ("great fun", "positive"), ("awful", "negative")],
                                 "what a great day", ["positive", "negative"], m=8)
    result.answer, result.probs, result.ci["positive"], result.to_frame()

How to read the uncertainty (all over orderings, for this one query):

- `sd` is the standard deviation of the per-ordering probability over orderings (how much one
  ordering's answer moves), `variance` its square. They describe single orderings, not the
  average. The paper's "spread falls as m^-0.48" and "4x at m = 20" refer to the standard
  deviation of the average, which `se` estimates.
- `ci` is a `confidence` interval for the averaged probability (the mean over the schedule's
  orderings, the quantity P̄ estimates), not for the truth of the answer. For ``random`` and
  ``banded`` the orderings are independent draws and the interval is Student's t over orderings.
  ``balanced`` orderings are not independent: within a Latin-square cycle they are chosen to
  cancel position effects. With at least `MIN_CYCLES_FOR_CYCLE_INTERVAL` complete cycles the
  interval is t over cycle means (cycles are exchangeable: each relabels the examples, drawn
  without replacement among the distinct cycles, so the interval is conservative);
  with fewer it is the t interval over orderings as if they were independent, which is
  conservative (too wide) when position effects are additive, and says so in `interval_method`.
- Adaptive stopping (`target_width`, `stop_when_settled`) looks at the interval repeatedly; the
  nominal level is then optimistic, as for any sequential test without a spending rule.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

import numpy as np
import pandas as pd

from cotplan.backends.base import Backend, Completion, Usage
from cotplan.errors import CapabilityError, InputError
from cotplan.generate.budgeted import DEFAULT_PROMPT, CoTPrompt, resolve_mode
from cotplan.generate.fewshot import (
    DEFAULT_TEMPLATE,
    Example,
    FewShotTemplate,
    as_examples,
    check_choices,
)
from cotplan.generate.schedules import (
    IntArray,
    Schedule,
    check_schedule,
    cycle_length,
    make_orderings,
)
from cotplan.generate.scoring import (
    CandidatePlan,
    FloatArray,
    NoLogprobsError,
    PromptScore,
    ScoringMethod,
    budgeted_prompt,
    plan_candidates,
    sample_prompt,
    score_prompt,
)
from cotplan.intervals import Interval
from cotplan.validation import require_int, require_text

__all__ = [
    "MIN_CYCLES_FOR_CYCLE_INTERVAL",
    "AnswerDistribution",
    "IntervalMethod",
    "ProbabilityInterval",
    "permutation_average",
    "summarize_orderings",
]

IntervalMethod = Literal["orderings", "cycles", "none"]

#: Complete balanced cycles needed before the interval is computed over cycle means
#: (with 2 cycles the t quantile has one degree of freedom and is 12.7 at 95%).
MIN_CYCLES_FOR_CYCLE_INTERVAL = 3


#: A probability's confidence interval: cotplan's one interval type under the name this
#: module has always exported.
ProbabilityInterval = Interval


@dataclass(frozen=True)
class OrderingSummary:
    """Mean, spread and interval of per-ordering probabilities (one column per candidate)."""

    mean: FloatArray
    sd: FloatArray
    variance: FloatArray
    se: FloatArray
    low: FloatArray
    high: FloatArray
    method: IntervalMethod
    description: str


def summarize_orderings(
    probs: FloatArray,
    *,
    cycle: int | None = None,
    confidence: float = 0.95,
    interval: Literal["auto", "orderings", "cycles"] = "auto",
) -> OrderingSummary:
    """Average per-ordering probabilities (rows) and put an interval on each column's mean.

    `cycle` is the balanced schedule's cycle length (None for independent orderings). ``auto``
    uses cycle means when there are at least `MIN_CYCLES_FOR_CYCLE_INTERVAL` complete cycles.
    ``cycles`` uses them whenever there are two; a partial last cycle counts in the mean but not
    in the interval's width.
    """
    from scipy import stats

    rows = np.asarray(probs, dtype=float)
    m = rows.shape[0]
    mean = rows.mean(axis=0)
    sd = rows.std(axis=0, ddof=1) if m >= 2 else np.full(rows.shape[1], math.nan)
    complete = m // cycle if cycle else 0
    use_cycles = cycle is not None and (
        (interval == "auto" and complete >= MIN_CYCLES_FOR_CYCLE_INTERVAL)
        or (interval == "cycles" and complete >= 2)
    )
    if use_cycles:
        assert cycle is not None
        means = rows[: complete * cycle].reshape(complete, cycle, -1).mean(axis=1)
        se = means.std(axis=0, ddof=1) / math.sqrt(complete)
        df = complete - 1
        method: IntervalMethod = "cycles"
        description = (
            f"t over {complete} complete Latin-square cycles of {cycle} orderings "
            "(cycle means are exchangeable, orderings within a cycle are not; conservative: "
            "cycles are drawn without replacement)"
        )
    elif m >= 2:
        se = sd / math.sqrt(m)
        df = m - 1
        method = "orderings"
        description = f"t over {m} orderings treated as independent"
        if cycle is not None:
            description += (
                f" (balanced, {complete} complete cycle(s): conservative when position effects "
                "are additive)"
            )
    else:
        se = np.full(rows.shape[1], math.nan)
        df = 0
        method = "none"
        description = "no interval from a single ordering"
    if df >= 1:
        quantile = float(stats.t.ppf(0.5 + confidence / 2.0, df))
        low = np.clip(mean - quantile * se, 0.0, 1.0)
        high = np.clip(mean + quantile * se, 0.0, 1.0)
    else:
        low = np.full(rows.shape[1], math.nan)
        high = np.full(rows.shape[1], math.nan)
    return OrderingSummary(mean, sd, sd**2, se, low, high, method, description)


@dataclass(frozen=True)
class AnswerDistribution:
    """The permutation-averaged answer to one query.

    Attributes
    ----------
    choices, probs, answer:
        The candidates, their probabilities averaged over the orderings used (renormalized over
        the candidates, so they sum to one), and the most probable one.
    per_ordering:
        (m, C) array: row i holds the candidates' probabilities under ordering i.
    orderings:
        (m, n) array: ``orderings[i, p]`` is the example at position p in ordering i.
    sd, variance:
        Standard deviation and variance (ddof = 1) of a single ordering's probability over the
        orderings; `variance` is `sd` squared. NaN with one ordering.
    se:
        Standard error of the averaged probability, by `interval_method`.
    ci:
        `confidence` interval for each averaged probability (see the module docstring).
    method:
        ``first_token``, ``continuation`` (chained next-token probabilities), ``sampled``
        (answer frequencies; no logprobs) or ``budgeted`` (after at most `k` reasoning tokens:
        the choices' probabilities after the answer marker, or the forced answer as a vote
        where the backend gives no logprobs there).
    covered_mass:
        Per ordering, the raw probability the model gave the candidates together (for
        ``sampled``: the share of samples that named a candidate).
    missing:
        Per choice, in how many orderings it was outside the endpoint's top alternatives (raw
        probability 0; really "below the 20th alternative") or, sampled, never drawn.
    m, m_max, stop_reason:
        Orderings used, the most allowed, and why scoring stopped.
    calls, cached_calls, usage, cost_usd:
        Requests made (including those the call cache answered), cache answers, summed token
        usage, and the exact cost in USD (None when the model has no price). They cover the
        orderings actually used: for cost projections, one query costs `m` orderings
        (`cotplan.pricing.project_costs(..., permutations=result.m)`).
    k:
        The reasoning cap of budgeted CoT, or None.
    """

    choices: tuple[str, ...]
    probs: dict[str, float]
    answer: str
    per_ordering: FloatArray
    orderings: IntArray
    sd: dict[str, float]
    variance: dict[str, float]
    se: dict[str, float]
    ci: dict[str, ProbabilityInterval]
    confidence: float
    interval_method: IntervalMethod
    interval_description: str
    method: ScoringMethod
    covered_mass: FloatArray
    missing: dict[str, int]
    schedule: Schedule
    seed: int
    m: int
    m_max: int
    stop_reason: str
    calls: int
    cached_calls: int
    usage: Usage
    cost_usd: Decimal | None
    model: str
    query: str
    notes: tuple[str, ...] = field(default=())
    k: int | None = None

    @property
    def stopped_early(self) -> bool:
        return self.m < self.m_max

    @property
    def single_order(self) -> dict[str, float]:
        """The candidates' probabilities under the first ordering alone."""
        return dict(zip(self.choices, map(float, self.per_ordering[0]), strict=True))

    @property
    def mean_covered_mass(self) -> float:
        return float(np.mean(self.covered_mass))

    def to_frame(self) -> pd.DataFrame:
        """One row per choice: averaged probability, interval, spread over orderings."""
        frame = pd.DataFrame(
            {
                "choice": list(self.choices),
                "prob": [self.probs[c] for c in self.choices],
                "ci_low": [self.ci[c].low for c in self.choices],
                "ci_high": [self.ci[c].high for c in self.choices],
                "se": [self.se[c] for c in self.choices],
                "sd_over_orderings": [self.sd[c] for c in self.choices],
                "var_over_orderings": [self.variance[c] for c in self.choices],
                "missing": [self.missing[c] for c in self.choices],
                "answer": [c == self.answer for c in self.choices],
            }
        )
        frame.attrs.update(
            query=self.query, model=self.model, m=self.m, m_max=self.m_max,
            schedule=self.schedule, seed=self.seed, method=self.method,
            interval_method=self.interval_method, confidence=self.confidence,
            stop_reason=self.stop_reason, calls=self.calls, cached_calls=self.cached_calls,
            k=self.k, prompt_tokens=self.usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens,
            cost_usd=None if self.cost_usd is None else str(self.cost_usd),
            mean_covered_mass=self.mean_covered_mass,
        )  # fmt: skip
        return frame

    def orderings_frame(self) -> pd.DataFrame:
        """Long format: one row per (ordering, choice) with the order, probability, coverage."""
        cycle = cycle_length(self.schedule, self.orderings.shape[1])
        rows: list[dict[str, Any]] = []
        for i, (order, probs) in enumerate(zip(self.orderings, self.per_ordering, strict=True)):
            for choice, prob in zip(self.choices, probs, strict=True):
                rows.append(
                    {
                        "ordering": i,
                        "cycle": i // cycle if cycle else None,
                        "order": " ".join(map(str, order)),
                        "choice": choice,
                        "prob": float(prob),
                        "covered_mass": float(self.covered_mass[i]),
                    }
                )
        frame = pd.DataFrame(rows)
        frame["cycle"] = frame["cycle"].astype("Int64")
        return frame


# -- validation -------------------------------------------------------------------------------


def _positive_int(value: object, name: str, low: int = 1) -> int:
    return require_int(value, name, low=low)


def _probability(value: object, name: str, *, open_low: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"must be a number in (0, 1), got {value!r}", field=name)
    number = float(value)
    if not (0.0 < number < 1.0 if open_low else 0.0 < number <= 1.0):
        interval = "(0, 1)" if open_low else "(0, 1]"
        raise InputError(f"must be in {interval}, got {value!r}", field=name)
    return number


# -- the work ---------------------------------------------------------------------------------


@dataclass
class _AveragingJob:
    """One permutation-averaged answer in progress: its checked inputs, and how each ordering is
    prompted and sampled."""

    backend: Backend
    examples: tuple[Example, ...]
    query: str
    choices: tuple[str, ...]
    template: FewShotTemplate
    method: ScoringMethod | None
    plan: CandidatePlan | None
    samples: int
    temperature: float
    smoothing: float
    seed: int
    max_answer_tokens: int | None
    answer_prefix: str
    notes: list[str]
    k: int | None = None
    answer_tokens: int = 16
    cot_prompt: CoTPrompt | None = None

    def prompt(self, order: Sequence[int]) -> str:
        return self.template.prompt([self.examples[i] for i in order], self.query)

    def sampling_seeds(self, index: int) -> list[int]:
        # Distinct, reproducible seeds per (ordering, sample): the call cache keys on the seed,
        # so the samples of one ordering are never answered by another's cached text.
        sequence = np.random.SeedSequence([self.seed, index])
        return [int(s) for s in sequence.generate_state(self.samples, dtype=np.uint32) >> 1]

    def sample(self, index: int, order: Sequence[int]) -> PromptScore:
        reasoning = self.backend.reasoning
        longest = max(len(c) for c in self.choices)
        cap = self.max_answer_tokens or (2048 if reasoning else max(8, longest + 4))
        return sample_prompt(
            self.backend,
            self.prompt(order),
            self.choices,
            seeds=self.sampling_seeds(index),
            temperature=self.temperature,
            smoothing=self.smoothing,
            max_tokens=cap,
            # Reasoning models refuse `stop`; the answer is read from the first line anyway.
            stop=None if reasoning else ("\n",),
        )

    def score(self, index: int, order: Sequence[int]) -> PromptScore:
        if self.method == "budgeted":
            assert self.k is not None
            return budgeted_prompt(
                self.backend,
                self.prompt(order),
                self.choices,
                k=self.k,
                item_id=f"ordering-{index}",
                smoothing=self.smoothing,
                answer_tokens=self.answer_tokens,
                cot_prompt=self.cot_prompt,
                plan=self.plan,
            )
        if self.method == "sampled":
            return self.sample(index, order)
        assert self.plan is not None
        return score_prompt(self.backend, self.prompt(order), self.plan)

    def switch_to_sampling(self, reason: str) -> None:
        self.method = "sampled"
        self.plan = None
        self.notes.append(
            f"no logprobs ({reason}): probabilities are smoothed answer frequencies from "
            f"{self.samples} samples per ordering at temperature {self.temperature:g} "
            f"(add-{self.smoothing:g} smoothing)"
        )


def _cost(completions: Iterable[Completion]) -> tuple[Decimal | None, str | None]:
    from cotplan.generate.call_cost import recorded_cost

    total = Decimal(0)
    for completion in completions:
        try:
            with warnings.catch_warnings():
                # A stale price is still the best figure; the CLI shows staleness elsewhere.
                warnings.simplefilter("ignore")
                total += recorded_cost(completion).usd
        except InputError as exc:  # unknown model, or a name several providers sell
            return None, f"no cost: {exc}"
    return total, None


@dataclass(frozen=True)
class _Accounts:
    calls: int
    cached_calls: int
    usage: Usage
    cost: Decimal | None
    note: str | None


def _accounts(scores: Sequence[PromptScore]) -> _Accounts:
    """Calls, tokens and cost of every ordering scored (and only those)."""
    completions = [c for s in scores for c in s.completions]
    cost, note = _cost(completions)
    calls = len(completions)
    cached = sum(c.from_cache for c in completions)
    usage = sum((c.usage for c in completions), Usage())
    for answer in (a for s in scores for a in s.answers):
        calls += answer.calls
        cached += answer.calls if answer.from_cache else 0
        usage = usage + Usage(
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            reasoning_tokens=answer.reasoning_tokens,
        )
        if math.isnan(answer.cost_usd):
            cost, note = None, f"no cost: {answer.cost_note}"
        elif cost is not None and not answer.from_cache:
            # budgeted_answer prices replays at list price; here, as for every other call,
            # what the call cache answered cost nothing.
            cost += Decimal(repr(answer.cost_usd))
    return _Accounts(calls, cached, usage, cost, note)


def permutation_average(
    backend: Backend,
    examples: Sequence[Example | tuple[str, str] | dict[str, str]],
    query: str,
    choices: Sequence[str],
    m: int = 20,
    schedule: Schedule = "balanced",
    seed: int = 0,
    *,
    bands: int | Sequence[int] | None = None,
    template: FewShotTemplate | None = None,
    method: Literal["auto", "logprobs", "sampled"] = "auto",
    samples: int = 8,
    temperature: float = 1.0,
    smoothing: float = 1.0,
    max_answer_tokens: int | None = None,
    target_width: float | None = None,
    stop_when_settled: bool = False,
    min_m: int | None = None,
    check_every: int | None = None,
    confidence: float = 0.95,
    interval: Literal["auto", "orderings", "cycles"] = "auto",
    concurrency: int | None = None,
    k: int | None = None,
    answer_tokens: int = 16,
    cot_prompt: CoTPrompt | None = None,
) -> AnswerDistribution:
    """Score `choices` for `query` under up to `m` orderings of `examples` and average.

    Parameters
    ----------
    backend:
        Any cotplan `Backend`. Text-completion backends (the embedded model, vLLM) get the plain
        few-shot text; chat backends get it as one user message and the answer is scored
        without the template's leading space.
    examples:
        At least two `Example`s, (input, output) pairs or ``{"input", "output"}`` dicts.
    query, choices:
        The input to answer, and at least two distinct answer candidates.
    m:
        The number of orderings, or the most allowed when stopping adaptively.
    schedule, seed, bands:
        Which orderings (``random``, ``banded``, ``balanced``; see `cotplan.generate.schedules`),
        seeded; `bands` for ``banded`` only.
    template:
        How examples and the query are formatted (default ``Input: ...\\nOutput: ...``).
    method:
        ``auto`` uses logprobs when the backend has them and falls back to sampling when it
        does not (`notes` says so); ``logprobs`` refuses to fall back; ``sampled`` always samples.
    samples, temperature, smoothing, max_answer_tokens:
        For sampling: answers per ordering, their temperature, the pseudo-count α (1 = add-one,
        0.5 = Jeffreys) and the token cap per answer (default: 2048 for reasoning models, else
        a few tokens more than the longest choice has characters).
    target_width, stop_when_settled, min_m, check_every:
        Adaptive m: after every `check_every` orderings (default: one balanced cycle, or 4),
        once `min_m` are scored (default: 3 cycles, or 8), stop when the leading answer's
        interval is narrower than `target_width`, or (with `stop_when_settled`) when it no
        longer overlaps any other choice's interval. Never more than `m`.
    confidence, interval:
        The interval's level, and ``auto``/``orderings``/``cycles`` (see the module docstring).
    concurrency:
        Orderings scored at once (default: the backend's own).
    k, answer_tokens, cot_prompt:
        Budgeted chain of thought: with `k` set, each ordering's answer is the forced answer of
        `cotplan.generate.budgeted.budgeted_answer` after at most `k` reasoning tokens (greedy),
        capped at `answer_tokens`, with `cot_prompt`'s wording. The per-ordering probabilities
        are the model's probabilities of the choices after the answer marker where the backend
        gives logprobs in template mode (the embedded model, vLLM), else that answer as one vote,
        add-`smoothing` smoothed (``method="budgeted"`` either way); calls, tokens and cost add
        up the reasoning, answer and scoring requests of every ordering used.
    """
    examples_ = as_examples(examples)
    require_text(query, "query")
    choices_ = check_choices(choices)
    m = _positive_int(m, "m")
    schedule = check_schedule(schedule)
    seed = require_int(seed, "seed", low=0)
    template = DEFAULT_TEMPLATE if template is None else template
    if not isinstance(template, FewShotTemplate):
        raise InputError(f"must be a FewShotTemplate, got {template!r}", field="template")
    if method not in ("auto", "logprobs", "sampled"):
        raise InputError(f"must be auto, logprobs or sampled, got {method!r}", field="method")
    samples = _positive_int(samples, "samples")
    if not isinstance(temperature, int | float) or not 0.0 < temperature <= 2.0:
        raise InputError(
            f"must be in (0, 2] for sampling, got {temperature!r}", field="temperature"
        )
    if not isinstance(smoothing, int | float) or not 0.0 <= smoothing < math.inf:
        raise InputError(f"must be a number >= 0, got {smoothing!r}", field="smoothing")
    if max_answer_tokens is not None:
        max_answer_tokens = _positive_int(max_answer_tokens, "max_answer_tokens")
    confidence = _probability(confidence, "confidence")
    if target_width is not None:
        target_width = _probability(target_width, "target_width", open_low=False)
    if interval not in ("auto", "orderings", "cycles"):
        raise InputError(f"must be auto, orderings or cycles, got {interval!r}", field="interval")
    if k is not None:
        k = _positive_int(k, "k", 0)
        if method != "auto":
            raise InputError(
                f"must be auto with budgeted reasoning (k = {k}): the backend decides how the "
                f"answer after the reasoning is scored, not {method}",
                field="method",
            )
    answer_tokens = _positive_int(answer_tokens, "answer_tokens")
    n = len(examples_)
    cycle = cycle_length(schedule, n)
    if interval == "cycles" and cycle is None:
        raise InputError(
            f"cycles exist only for schedule='balanced', not {schedule!r}", field="interval"
        )
    adaptive = target_width is not None or bool(stop_when_settled)
    step = _positive_int(check_every, "check_every") if check_every is not None else (cycle or 4)
    floor = (
        _positive_int(min_m, "min_m", 2)
        if min_m is not None
        else (MIN_CYCLES_FOR_CYCLE_INTERVAL * cycle if cycle else 8)
    )
    orderings = make_orderings(n, m, schedule, seed=int(seed), bands=bands)

    text_mode = backend.text_completions
    notes: list[str] = []
    if not text_mode and template.answer_prefix:
        notes.append("chat backend: choices scored without the template's leading space")
    run = _AveragingJob(
        backend=backend,
        examples=examples_,
        query=query,
        choices=choices_,
        template=template,
        method=None,
        plan=None,
        samples=samples,
        temperature=float(temperature),
        smoothing=float(smoothing),
        seed=int(seed),
        max_answer_tokens=max_answer_tokens,
        answer_prefix=template.answer_prefix if text_mode else "",
        notes=notes,
        k=k,
        answer_tokens=answer_tokens,
        cot_prompt=cot_prompt,
    )
    if k is not None:
        run.method = "budgeted"
        if backend.supports_logprobs and resolve_mode(backend) == "template":
            # Any prompt ending in the answer marker tokenizes the choices as the real ones.
            marker = (cot_prompt or DEFAULT_PROMPT).marker
            run.plan = plan_candidates(
                backend,
                run.prompt(orderings[0]) + "\n" + marker,
                choices_,
                answer_prefix=" ",
                terminator=template.terminator,
            )
            notes.append(
                f"budgeted CoT: each ordering reasons for at most {k} reasoning tokens; its "
                "probabilities are the model's for the choices after the answer marker"
            )
        else:
            notes.append(
                f"budgeted CoT: each ordering's answer is the forced answer after at most {k} "
                f"reasoning tokens, counted as one vote (add-{smoothing:g} smoothing): this "
                "endpoint gives no logprobs after its reasoning"
            )
    elif method == "sampled":
        run.method = "sampled"
        notes.append(
            f"sampled on request: smoothed answer frequencies from {samples} samples per "
            f"ordering at temperature {temperature:g} (add-{smoothing:g} smoothing)"
        )
    elif not backend.supports_logprobs:
        if method == "logprobs":
            raise CapabilityError(f"{backend.model} returns no logprobs (method='logprobs')")
        run.switch_to_sampling(f"{backend.model} does not return them")
    else:
        run.plan = plan_candidates(
            backend,
            run.prompt(orderings[0]),
            choices_,
            answer_prefix=run.answer_prefix,
            terminator=template.terminator,
        )
        run.method = run.plan.method
        if run.plan.method == "continuation" and not text_mode:
            # A chat endpoint cannot be made to continue its own reply from a given prefix, so
            # the later tokens of a multi-token choice cannot be scored there.
            why = (
                "a chat endpoint cannot score multi-token or shared-first-token choices "
                "(use single-token choices or a text-completion endpoint)"
            )
            if method == "logprobs":
                raise CapabilityError(f"{backend.model}: {why}")
            run.switch_to_sampling(why)
        else:
            if run.plan.terminated:
                notes.append(
                    "a choice's tokens are a prefix of another's: every choice is scored with "
                    f"the terminator {template.terminator!r} appended"
                )
            if run.plan.tokenizer == "none":
                notes.append("no tokenizer for this model: each choice is taken as one token")

    scores: list[PromptScore] = []
    stop_reason = f"reached m = {m}"
    while len(scores) < m:
        start = len(scores)
        end = min(m, start + step) if adaptive else m
        batch = list(range(start, end))
        try:
            scores.extend(
                backend.map(
                    lambda i: run.score(i, orderings[i]),
                    batch,
                    concurrency=concurrency,
                )
            )
        except (CapabilityError, NoLogprobsError) as exc:
            if method != "auto" or run.method in ("sampled", "budgeted") or scores:
                raise
            run.switch_to_sampling(str(exc))
            continue
        if adaptive and len(scores) >= floor and len(scores) < m:
            summary = summarize_orderings(
                np.array([s.probs for s in scores]),
                cycle=cycle,
                confidence=confidence,
                interval=interval,
            )
            reason = _stop_reason(summary, target_width, bool(stop_when_settled))
            if reason is not None:
                stop_reason = reason
                break

    probs = np.array([s.probs for s in scores])
    summary = summarize_orderings(probs, cycle=cycle, confidence=confidence, interval=interval)
    accounts = _accounts(scores)
    if accounts.note:
        notes.append(accounts.note)
    missing = np.array([s.missing for s in scores]).sum(axis=0)
    answers = [a for s in scores for a in s.answers]
    if answers:
        forced = sum(a.forced for a in answers)
        mean_reasoning = float(np.mean([a.reasoning_tokens for a in answers]))
        notes.append(
            f"budgeted CoT, k = {k}: {forced} of {len(answers)} orderings hit the cap and were "
            f"forced to answer; {mean_reasoning:.1f} reasoning tokens per ordering on average"
        )
    if run.method in ("first_token", "continuation") and missing.any():
        names = ", ".join(f"{c!r} in {int(k)}" for c, k in zip(choices_, missing, strict=True) if k)
        notes.append(
            f"outside the top {backend.max_top_logprobs} alternatives (raw probability taken "
            f"as 0) in some orderings: {names}"
        )
    unmatched = sum(len(s.unmatched) for s in scores)
    if unmatched:
        notes.append(f"{unmatched} answers named none of the choices")
    leader = int(np.argmax(summary.mean))
    tied = [c for c, p in zip(choices_, summary.mean, strict=True)
            if math.isclose(p, summary.mean[leader], rel_tol=1e-12)]  # fmt: skip
    if len(tied) > 1:
        notes.append(f"{tied} tie; the answer is the first of them")
    assert run.method is not None

    def per_choice(values: FloatArray) -> dict[str, float]:
        return {c: float(v) for c, v in zip(choices_, values, strict=True)}

    return AnswerDistribution(
        choices=choices_,
        probs=per_choice(summary.mean),
        answer=choices_[leader],
        per_ordering=probs,
        orderings=orderings[: len(scores)].copy(),
        sd=per_choice(summary.sd),
        variance=per_choice(summary.variance),
        se=per_choice(summary.se),
        ci={
            c: ProbabilityInterval(float(lo), float(hi), confidence)
            for c, lo, hi in zip(choices_, summary.low, summary.high, strict=True)
        },
        confidence=confidence,
        interval_method=summary.method,
        interval_description=summary.description,
        method=run.method,
        covered_mass=np.array([s.covered_mass for s in scores]),
        missing={c: int(k) for c, k in zip(choices_, missing, strict=True)},
        schedule=schedule,
        seed=int(seed),
        m=len(scores),
        m_max=m,
        stop_reason=stop_reason,
        calls=accounts.calls,
        cached_calls=accounts.cached_calls,
        usage=accounts.usage,
        cost_usd=accounts.cost,
        model=backend.model,
        query=query,
        notes=tuple(notes),
        k=k,
    )


def _stop_reason(summary: OrderingSummary, target_width: float | None, settle: bool) -> str | None:
    leader = int(np.argmax(summary.mean))
    low, high = summary.low[leader], summary.high[leader]
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    if target_width is not None and high - low <= target_width:
        return f"the leader's interval ({high - low:.3f} wide) is within target_width"
    others = np.delete(summary.high, leader)
    if settle and np.all(others < low):
        return "the leader is settled: its interval clears every other choice's"
    return None
