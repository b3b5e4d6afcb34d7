"""Permutation-averaged answers: score the candidates under m orderings of the few-shot examples
and average the probabilities (paper §2: P̄_m = (1/m) Σ_i P(answer | examples ordered by π_i)).

    from cotplan.permutation.average import permutation_average

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

The work runs in phases: the settings are checked once into an `AveragingSettings` record
(`cotplan.permutation.settings`; `average_orderings` takes the record itself), the job
settles how the backend can score (`cotplan.permutation.job.start_job`), the orderings
are scored until `m` or settled, and the result is summarised.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

import numpy as np
import pandas as pd

from cotplan.backends.base import Backend, Usage
from cotplan.errors import CapabilityError, InputError
from cotplan.generate.budgeted import CoTPrompt
from cotplan.intervals import Interval
from cotplan.permutation.fewshot import (
    DEFAULT_TEMPLATE,
    Example,
    FewShotTemplate,
    as_examples,
    check_choices,
)
from cotplan.permutation.job import AveragingJob, accounts, start_job
from cotplan.permutation.schedules import (
    IntArray,
    Schedule,
    cycle_length,
    make_orderings,
)
from cotplan.permutation.scoring import (
    FloatArray,
    NoLogprobsError,
    PromptScore,
    ScoringMethod,
)
from cotplan.permutation.settings import AveragingSettings
from cotplan.validation import require_text

__all__ = [
    "MIN_CYCLES_FOR_CYCLE_INTERVAL",
    "AnswerDistribution",
    "AveragingSettings",
    "IntervalMethod",
    "average_orderings",
    "permutation_average",
    "summarize_orderings",
]

IntervalMethod = Literal["orderings", "cycles", "none"]

#: Complete balanced cycles needed before the interval is computed over cycle means
#: (with 2 cycles the t quantile has one degree of freedom and is 12.7 at 95%).
MIN_CYCLES_FOR_CYCLE_INTERVAL = 3


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
    ci: dict[str, Interval]
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
            query=self.query,
            model=self.model,
            m=self.m,
            m_max=self.m_max,
            schedule=self.schedule,
            seed=self.seed,
            method=self.method,
            interval_method=self.interval_method,
            confidence=self.confidence,
            stop_reason=self.stop_reason,
            calls=self.calls,
            cached_calls=self.cached_calls,
            k=self.k,
            # Unknown (empty) when any call's counts could not be trusted, never a partial sum.
            prompt_tokens=self.usage.known("prompt_tokens"),
            completion_tokens=self.usage.known("completion_tokens"),
            cost_usd=None if self.cost_usd is None else str(self.cost_usd),
            mean_covered_mass=self.mean_covered_mass,
        )
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


def permutation_average(
    backend: Backend,
    examples: Sequence[Example | tuple[str, str] | dict[str, str]],
    query: str,
    choices: Sequence[str],
    *,
    m: int = 20,
    schedule: Schedule = "balanced",
    seed: int = 0,
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
        Which orderings (``random``, ``banded``, ``balanced``; see `cotplan.permutation.schedules`),
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
    settings = AveragingSettings(
        m=m,
        schedule=schedule,
        seed=seed,
        bands=bands if bands is None or isinstance(bands, int) else tuple(bands),
        template=DEFAULT_TEMPLATE if template is None else template,
        method=method,
        samples=samples,
        temperature=temperature,
        smoothing=smoothing,
        max_answer_tokens=max_answer_tokens,
        target_width=target_width,
        stop_when_settled=stop_when_settled,
        min_m=min_m,
        check_every=check_every,
        confidence=confidence,
        interval=interval,
        concurrency=concurrency,
        k=k,
        answer_tokens=answer_tokens,
        cot_prompt=cot_prompt,
    )
    return _average(backend, examples_, query, choices_, settings)


def average_orderings(
    backend: Backend,
    examples: Sequence[Example | tuple[str, str] | dict[str, str]],
    query: str,
    choices: Sequence[str],
    settings: AveragingSettings | None = None,
) -> AnswerDistribution:
    """`permutation_average` with its settings as one record (`AveragingSettings`), for a caller
    that averages many queries the same way."""
    examples_ = as_examples(examples)
    require_text(query, "query")
    choices_ = check_choices(choices)
    if settings is None:
        settings = AveragingSettings()
    elif not isinstance(settings, AveragingSettings):
        raise InputError(f"must be AveragingSettings, got {settings!r}", field="settings")
    return _average(backend, examples_, query, choices_, settings)


def _average(
    backend: Backend,
    examples: tuple[Example, ...],
    query: str,
    choices: tuple[str, ...],
    settings: AveragingSettings,
) -> AnswerDistribution:
    """The phases: the orderings, the job and its method, the scoring loop, the result."""
    cycle = cycle_length(settings.schedule, len(examples))
    if settings.interval == "cycles" and cycle is None:
        raise InputError(
            f"cycles exist only for schedule='balanced', not {settings.schedule!r}",
            field="interval",
        )
    orderings = make_orderings(
        len(examples), settings.m, settings.schedule, seed=settings.seed, bands=settings.bands
    )
    run = start_job(backend, examples, query, choices, settings, first=orderings[0])
    scores, stop_reason = _score_orderings(run, orderings, settings, cycle)
    return _distribution(
        run, settings, scores=scores, orderings=orderings, cycle=cycle, stop_reason=stop_reason
    )


def _score_orderings(
    run: AveragingJob, orderings: IntArray, settings: AveragingSettings, cycle: int | None
) -> tuple[list[PromptScore], str]:
    """Score orderings in turn, `check_every` at a time when adaptive, until `m` or settled."""
    s = settings
    m = s.m
    step = s.check_every if s.check_every is not None else (cycle or 4)
    floor = (
        s.min_m if s.min_m is not None else (MIN_CYCLES_FOR_CYCLE_INTERVAL * cycle if cycle else 8)
    )
    scores: list[PromptScore] = []
    stop_reason = f"reached m = {m}"
    while len(scores) < m:
        start = len(scores)
        end = min(m, start + step) if s.adaptive else m
        batch = list(range(start, end))
        try:
            scores.extend(
                run.backend.map(
                    lambda i: run.score(i, orderings[i]),
                    batch,
                    concurrency=s.concurrency,
                )
            )
        except (CapabilityError, NoLogprobsError) as exc:
            if s.method != "auto" or run.method in ("sampled", "budgeted") or scores:
                raise
            run.switch_to_sampling(str(exc))
            continue
        if s.adaptive and len(scores) >= floor and len(scores) < m:
            summary = summarize_orderings(
                np.array([score.probs for score in scores]),
                cycle=cycle,
                confidence=s.confidence,
                interval=s.interval,
            )
            reason = _stop_reason(summary, s.target_width, bool(s.stop_when_settled))
            if reason is not None:
                stop_reason = reason
                break
    return scores, stop_reason


def _result_notes(
    run: AveragingJob, scores: Sequence[PromptScore], mean: FloatArray, missing: IntArray
) -> None:
    """What the reader of the result should know about how it was scored (into `run.notes`)."""
    notes, choices = run.notes, run.choices
    answers = [a for s in scores for a in s.answers]
    if answers:
        forced = sum(a.forced for a in answers)
        mean_reasoning = float(np.mean([a.reasoning_tokens for a in answers]))
        notes.append(
            f"budgeted CoT, k = {run.k}: {forced} of {len(answers)} orderings hit the cap and "
            f"were forced to answer; {mean_reasoning:.1f} reasoning tokens per ordering on average"
        )
    if run.method in ("first_token", "continuation") and missing.any():
        names = ", ".join(f"{c!r} in {int(k)}" for c, k in zip(choices, missing, strict=True) if k)
        notes.append(
            f"outside the top {run.backend.max_top_logprobs} alternatives (raw probability taken "
            f"as 0) in some orderings: {names}"
        )
    unmatched = sum(len(s.unmatched) for s in scores)
    if unmatched:
        notes.append(f"{unmatched} answers named none of the choices")
    leader = int(np.argmax(mean))
    tied = [
        c
        for c, p in zip(choices, mean, strict=True)
        if math.isclose(p, mean[leader], rel_tol=1e-12)
    ]
    if len(tied) > 1:
        notes.append(f"{tied} tie; the answer is the first of them")


def _distribution(
    run: AveragingJob,
    settings: AveragingSettings,
    *,
    scores: list[PromptScore],
    orderings: IntArray,
    cycle: int | None,
    stop_reason: str,
) -> AnswerDistribution:
    choices = run.choices
    probs = np.array([s.probs for s in scores])
    summary = summarize_orderings(
        probs, cycle=cycle, confidence=settings.confidence, interval=settings.interval
    )
    totals = accounts(scores)
    if totals.note:
        run.notes.append(totals.note)
    missing = np.array([s.missing for s in scores]).sum(axis=0)
    _result_notes(run, scores, summary.mean, missing)
    assert run.method is not None

    def per_choice(values: FloatArray) -> dict[str, float]:
        return {c: float(v) for c, v in zip(choices, values, strict=True)}

    return AnswerDistribution(
        choices=choices,
        probs=per_choice(summary.mean),
        answer=choices[int(np.argmax(summary.mean))],
        per_ordering=probs,
        orderings=orderings[: len(scores)].copy(),
        sd=per_choice(summary.sd),
        variance=per_choice(summary.variance),
        se=per_choice(summary.se),
        ci={
            c: Interval(float(lo), float(hi), settings.confidence)
            for c, lo, hi in zip(choices, summary.low, summary.high, strict=True)
        },
        confidence=settings.confidence,
        interval_method=summary.method,
        interval_description=summary.description,
        method=run.method,
        covered_mass=np.array([s.covered_mass for s in scores]),
        missing={c: int(k) for c, k in zip(choices, missing, strict=True)},
        schedule=settings.schedule,
        seed=settings.seed,
        m=len(scores),
        m_max=settings.m,
        stop_reason=stop_reason,
        calls=totals.calls,
        cached_calls=totals.cached_calls,
        usage=totals.usage,
        cost_usd=totals.cost,
        model=run.backend.model,
        query=run.query,
        notes=tuple(run.notes),
        k=settings.k,
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
