"""One permutation-averaged answer in progress: how each ordering is prompted and scored, which
scoring method the backend allows, and what the calls cost.

`start_job` makes an `AveragingJob` from checked inputs and settles its method (logprobs,
continuation, sampled or budgeted) with the notes that explain the choice; the averaging loop
and the result live in `cotplan.permutation.average`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from cotplan.backends.base import Backend, Completion, Usage
from cotplan.errors import CapabilityError, InputError
from cotplan.generate.budgeted import DEFAULT_PROMPT, CoTPrompt, resolve_mode
from cotplan.permutation.fewshot import Example, FewShotTemplate
from cotplan.permutation.scoring import (
    CandidatePlan,
    PromptScore,
    ScoringMethod,
    budgeted_prompt,
    plan_candidates,
    sample_prompt,
    score_prompt,
)
from cotplan.permutation.settings import AveragingSettings

__all__ = ["Accounts", "AveragingJob", "accounts", "start_job"]


@dataclass
class AveragingJob:
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
class Accounts:
    calls: int
    cached_calls: int
    usage: Usage
    cost: Decimal | None
    note: str | None


def accounts(scores: Sequence[PromptScore]) -> Accounts:
    """Calls, tokens and cost of every ordering scored (and only those)."""
    completions = [c for s in scores for c in s.completions]
    cost, note = _cost(completions)
    calls = len(completions)
    cached = sum(c.from_cache for c in completions)
    usage = sum((c.usage for c in completions), Usage())
    for answer in (a for s in scores for a in s.answers):
        calls += answer.calls
        cached += answer.calls if answer.from_cache else 0
        # An answer whose counts could not be trusted holds 0s as placeholders: the sum is
        # then unknown (`Usage.known`), never the 0s added as if measured.
        usage = usage + Usage(
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            reasoning_tokens=answer.reasoning_tokens,
            trusted=answer.usage_trusted,
        )
        if math.isnan(answer.cost_usd):
            cost, note = None, f"no cost: {answer.cost_note}"
        elif cost is not None and not answer.from_cache:
            # budgeted_answer prices replays at list price; here, as for every other call,
            # what the call cache answered cost nothing.
            cost += Decimal(repr(answer.cost_usd))
    return Accounts(calls, cached, usage, cost, note)


def start_job(
    backend: Backend,
    examples: tuple[Example, ...],
    query: str,
    choices: tuple[str, ...],
    settings: AveragingSettings,
    *,
    first: Sequence[int],
) -> AveragingJob:
    """The job for one query, its method chosen; `first` is the first ordering (any prompt of
    the job tokenizes the choices as every other does)."""
    s = settings
    text_mode = backend.text_completions
    notes: list[str] = []
    if not text_mode and s.template.answer_prefix:
        notes.append("chat backend: choices scored without the template's leading space")
    run = AveragingJob(
        backend=backend,
        examples=examples,
        query=query,
        choices=choices,
        template=s.template,
        method=None,
        plan=None,
        samples=s.samples,
        temperature=s.temperature,
        smoothing=s.smoothing,
        seed=s.seed,
        max_answer_tokens=s.max_answer_tokens,
        answer_prefix=s.template.answer_prefix if text_mode else "",
        notes=notes,
        k=s.k,
        answer_tokens=s.answer_tokens,
        cot_prompt=s.cot_prompt,
    )
    if s.k is not None:
        _plan_budgeted(run, s.k, first)
    elif s.method == "sampled":
        run.method = "sampled"
        notes.append(
            f"sampled on request: smoothed answer frequencies from {s.samples} samples per "
            f"ordering at temperature {s.temperature:g} (add-{s.smoothing:g} smoothing)"
        )
    elif not backend.supports_logprobs:
        if s.method == "logprobs":
            raise CapabilityError(f"{backend.model} returns no logprobs (method='logprobs')")
        run.switch_to_sampling(f"{backend.model} does not return them")
    else:
        _plan_logprobs(run, s.method == "logprobs", first)
    return run


def _plan_budgeted(run: AveragingJob, k: int, first: Sequence[int]) -> None:
    run.method = "budgeted"
    backend = run.backend
    if backend.supports_logprobs and resolve_mode(backend) == "template":
        # Any prompt ending in the answer marker tokenizes the choices as the real ones.
        marker = (run.cot_prompt or DEFAULT_PROMPT).marker
        run.plan = plan_candidates(
            backend,
            run.prompt(first) + "\n" + marker,
            run.choices,
            answer_prefix=" ",
            terminator=run.template.terminator,
        )
        run.notes.append(
            f"budgeted CoT: each ordering reasons for at most {k} reasoning tokens; its "
            "probabilities are the model's for the choices after the answer marker"
        )
    else:
        run.notes.append(
            f"budgeted CoT: each ordering's answer is the forced answer after at most {k} "
            f"reasoning tokens, counted as one vote (add-{run.smoothing:g} smoothing): this "
            "endpoint gives no logprobs after its reasoning"
        )


def _plan_logprobs(run: AveragingJob, required: bool, first: Sequence[int]) -> None:
    """Score by logprobs; where a chat endpoint cannot, sample instead (unless `required`)."""
    backend = run.backend
    run.plan = plan_candidates(
        backend,
        run.prompt(first),
        run.choices,
        answer_prefix=run.answer_prefix,
        terminator=run.template.terminator,
    )
    run.method = run.plan.method
    if run.plan.method == "continuation" and not backend.text_completions:
        # A chat endpoint cannot be made to continue its own reply from a given prefix, so
        # the later tokens of a multi-token choice cannot be scored there.
        why = (
            "a chat endpoint cannot score multi-token or shared-first-token choices "
            "(use single-token choices or a text-completion endpoint)"
        )
        if required:
            raise CapabilityError(f"{backend.model}: {why}")
        run.switch_to_sampling(why)
        return
    if run.plan.terminated:
        run.notes.append(
            "a choice's tokens are a prefix of another's: every choice is scored with "
            f"the terminator {run.template.terminator!r} appended"
        )
    if run.plan.tokenizer == "none":
        run.notes.append("no tokenizer for this model: each choice is taken as one token")
