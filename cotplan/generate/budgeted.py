"""Budgeted chain of thought: reason for at most k tokens, then answer.

`budgeted_answer(backend, item, k)` asks the question with a "think step by step" instruction,
lets the model reason for at most `k` tokens, and then gets the final answer:

1. Reasoning phase: one request capped at `k` tokens that stops where the model writes its
   answer marker ("Answer:").
2. Answer phase: the reasoning so far, closed with the marker, and a short request (at most
   `answer_tokens`) for the answer alone. When the cap cut the reasoning, this is the forced
   answer: the model must answer with what it has.

k = 0 skips the reasoning phase: the answer marker follows the question directly.

How the answer phase continues the reasoning depends on the backend:

- ``"template"``: a text-completion endpoint (the embedded llama.cpp model, vLLM) with a known
  chat template. The template is written out and the assistant turn is continued exactly, so the
  answer phase sees the reasoning verbatim and ends in the same turn.
- ``"chat"``: chat-only APIs (OpenAI's chat models). The reasoning phase is one assistant turn;
  if the model did not answer within it, a second user turn asks for the final answer only.
- ``"hidden"``: reasoning models whose thinking is hidden (OpenAI's o-series): one request whose
  cap covers reasoning and answer (`cotplan.backends.budgets`), and the reasoning tokens come from
  the usage.

Token accounting. `reasoning_tokens` are the tokens generated under the reasoning cap (so never
more than k when the provider keeps to it: `cap_held`); `answer_tokens` those of the answer
phase; `prompt_tokens` the prompt tokens of every request (the answer phase sends the reasoning
back as prompt); `question_tokens` the prompt of the first request alone. `cost_usd` is the list
price of all requests by `cotplan.pricing` (NaN, with `cost_note`, when the model has no price),
also for answers the call cache replayed (`from_cache` says those cost nothing this time).

Several budgets from one run. With greedy decoding the first k tokens of a run capped at K > k
ARE the run capped at k, so `budgeted_answers(backend, item, budgets)` makes one reasoning
request at the largest budget and cuts it at each k by its token strings; the answer-phase
requests are then exactly the ones `budgeted_answer` would make (and share its cache entries).
The reasoning latency of each shorter budget is the long run's, pro-rated by tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import pandas as pd

from cotplan.backends.base import Backend, Completion, Message, TokenLogprob, Usage
from cotplan.backends.budgets import BudgetRule, budget_params, check_cap, rule_for
from cotplan.errors import InputError
from cotplan.generate.prompts import (
    CHAT_TEMPLATES,
    DEFAULT_PROMPT,
    ChatTemplate,
    CoTPrompt,
    template_for,
)
from cotplan.generate.protocols import protocol_for, resolve_protocol
from cotplan.tasks.answers import extract_answer, is_correct
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import item_size

__all__ = [
    "CHAT_TEMPLATES",
    "DEFAULT_PROMPT",
    "BudgetedAnswer",
    "ChatTemplate",
    "CoTPrompt",
    "Mode",
    "answers_frame",
    "budgeted_answer",
    "budgeted_answers",
    "driven_as",
    "resolve_mode",
    "template_for",
]

Mode = Literal["template", "chat", "hidden"]


@dataclass(frozen=True)
class BudgetedAnswer:
    """One item answered under a reasoning budget `k` (see the module docstring for the
    token accounting). `truncated`: the cap cut the reasoning; `forced`: the answer was asked
    for after such a cut. `answer_prob` is the probability the model gave the extracted
    answer's tokens (NaN without logprobs). `cap_held` is False when the provider generated
    more reasoning tokens than `k` (`overrun` of them)."""

    item: str
    family: str
    n: int
    k: int
    expected: str
    extracted: str | None
    correct: bool
    reasoning: str
    answer_text: str
    truncated: bool
    forced: bool
    prompt_tokens: int
    question_tokens: int
    reasoning_tokens: int
    answer_tokens: int
    cost_usd: float
    latency_s: float
    answer_prob: float
    cap_held: bool
    overrun: int
    from_cache: bool
    calls: int
    model: str
    mode: Mode
    cost_note: str = ""
    #: How the thinking was written and closed (`cotplan.generate.protocols`).
    protocol: str = "plain"
    #: The exact text the answer phase continued (template mode; "" otherwise): score any
    #: candidate answer after it to get probabilities instead of one extracted answer.
    answer_prompt: str = field(default="", repr=False, compare=False)

    @property
    def completion_tokens(self) -> int:
        """Generated tokens: reasoning plus answer."""
        return self.reasoning_tokens + self.answer_tokens

    def to_row(self) -> dict[str, Any]:
        """A flat dict (one row of `answers_frame`)."""
        row = asdict(self)
        del row["answer_prompt"]  # the whole conversation: too big for a table row
        row["completion_tokens"] = self.completion_tokens
        return row


_ROW_FIELDS = [name for name in BudgetedAnswer.__dataclass_fields__ if name != "answer_prompt"]


def answers_frame(answers: Sequence[BudgetedAnswer]) -> pd.DataFrame:
    """A tidy frame, one row per answer (columns: the `BudgetedAnswer` fields)."""
    columns = [*_ROW_FIELDS, "completion_tokens"]
    return pd.DataFrame([a.to_row() for a in answers], columns=columns)


# ------------------------------------------------------------------------------------------
# Validation and set-up


def _check_budget(k: object, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InputError(f"must be a whole number of tokens ≥ 0, got {k!r}", field=name)
    return k


def resolve_mode(backend: Backend, mode: Mode | Literal["auto"] = "auto") -> Mode:
    """The way `backend` is driven: an explicit `mode`, else hidden reasoning for reasoning
    models, the written-out template for text-completion endpoints with a known template, and
    chat turns otherwise."""
    if mode != "auto":
        if mode not in ("template", "chat", "hidden"):
            raise InputError(
                f"must be 'auto', 'template', 'chat' or 'hidden', got {mode!r}", field="mode"
            )
        if mode == "template" and template_for(backend.model) is None:
            raise InputError(
                f"no chat template known for {backend.model!r}; use mode='chat'", field="mode"
            )
        return mode
    if rule_for(backend).covers == "reasoning+output":
        return "hidden"
    if backend.text_completions and template_for(backend.model) is not None:
        return "template"
    return "chat"


def driven_as(backend: Backend) -> str:
    """How budgeted CoT drives `backend`, in words for a report line: the mode and protocol
    chosen for it (``mode template, protocol think``)."""
    return f"mode {resolve_mode(backend)}, protocol {protocol_for(backend)}"


def _messages(item: TaskItem, text: str) -> list[Message]:
    """The item's prompt with `text` added to its last user message (if any text)."""
    if not text:
        if isinstance(item.prompt, str):
            return [{"role": "user", "content": item.prompt}]
        return [dict(m) for m in item.prompt]
    if isinstance(item.prompt, str):
        return [{"role": "user", "content": f"{item.prompt}\n{text}"}]
    messages = [dict(m) for m in item.prompt]
    for message in reversed(messages):
        if message["role"] == "user":
            message["content"] = f"{message['content']}\n{text}"
            return messages
    return [*messages, {"role": "user", "content": text}]


def _joiner(reasoning: str) -> str:
    """What goes between the reasoning and the answer marker: nothing after whitespace (where
    the model itself stopped to write the marker), else a line break."""
    return "" if not reasoning or reasoning[-1].isspace() else "\n"


@dataclass(frozen=True)
class _Price:
    usd: float
    note: str


def _price(completion: Completion) -> _Price:
    """List price of a call (also when the cache answered); NaN with a note when unknown."""
    from cotplan.generate.call_cost import recorded_cost

    try:
        cost = recorded_cost(replace(completion, from_cache=False))
    except InputError as exc:  # UnknownModelError, or no price in effect today
        return _Price(math.nan, f"no price for {completion.model}: {exc}")
    return _Price(float(cost.usd), "")


def _answer_probability(
    logprobs: Sequence[TokenLogprob] | None, text: str, extracted: str | None, item: TaskItem
) -> float:
    """Probability of the tokens that spell the extracted answer in `text` (NaN if unknown)."""
    if not logprobs or extracted is None:
        return math.nan
    if "".join(t.token for t in logprobs) != text:
        return math.nan
    pattern = re.compile(re.escape(extracted), re.IGNORECASE)
    matches = list(pattern.finditer(text))
    if not matches:
        return math.nan
    # Integers are extracted as the LAST integer of the answer line; other kinds the first hit.
    line_end = text.find("\n", len(text) - len(text.lstrip()))
    in_line = [m for m in matches if line_end < 0 or m.start() < line_end] or matches
    match = in_line[-1] if item.kind in ("integer", "binary") else in_line[0]
    total, position = 0.0, 0
    for token in logprobs:
        start, position = position, position + len(token.token)
        if position > match.start() and start < match.end():
            total += token.logprob
    return math.exp(total)


# ------------------------------------------------------------------------------------------
# The phases


@dataclass(frozen=True)
class _Setup:
    backend: Backend
    item: TaskItem
    mode: Mode
    protocol: str
    prompt: CoTPrompt
    template: ChatTemplate | None
    rule: BudgetRule
    answer_tokens: int
    temperature: float
    seed: int | None
    logprobs: bool
    n: int

    @property
    def reasoning_prefix(self) -> str:
        assert self.template is not None
        rendered = self.template.render(_messages(self.item, self.prompt.instruction))
        return rendered + self.prompt.lead

    @property
    def direct_prefix(self) -> str:
        assert self.template is not None
        return self.template.render(_messages(self.item, self.prompt.instruction))

    @property
    def reasoning_stop(self) -> list[str]:
        # A native thinker says it has finished by closing its thinking; it may well write
        # "Answer:" inside its thoughts, so only the close ends the phase.
        stops = [self.prompt.close.strip()] if self.prompt.close else [self.prompt.marker]
        if self.template is not None:
            stops.append(self.template.end)
        return stops

    @property
    def answer_stop(self) -> list[str]:
        stops = ["\n"]
        if self.template is not None:
            stops.append(self.template.end)
        return stops

    @property
    def top(self) -> int:
        """Alternatives asked for in the answer phase (for `answer_prob`)."""
        return 1 if self.logprobs and self.backend.supports_logprobs else 0

    @property
    def reasoning_top(self) -> int:
        """The reasoning phase always asks for token strings where it can: they let one run
        serve several budgets, and one cache entry serve `budgeted_answer` and
        `budgeted_answers` alike."""
        return 1 if self.backend.supports_logprobs else 0


def _setup(
    backend: Backend,
    item: TaskItem,
    *,
    mode: Mode | Literal["auto"],
    protocol: str,
    prompt: CoTPrompt | None,
    answer_tokens: int,
    temperature: float,
    seed: int | None,
    logprobs: bool,
) -> _Setup:
    if not isinstance(item, TaskItem):
        raise InputError(f"must be a TaskItem, got {type(item).__name__}", field="item")
    answer_tokens = _check_budget(answer_tokens, "answer_tokens")
    if answer_tokens < 1:
        raise InputError("must be at least 1", field="answer_tokens")
    chosen = resolve_mode(backend, mode)
    protocol_name, protocol_prompt = resolve_protocol(backend, protocol)
    return _Setup(
        backend=backend,
        item=item,
        mode=chosen,
        protocol=protocol_name if prompt is None else "custom",
        prompt=prompt or protocol_prompt,
        template=template_for(backend.model) if chosen == "template" else None,
        rule=rule_for(backend),
        answer_tokens=answer_tokens,
        temperature=temperature,
        seed=seed,
        logprobs=logprobs,
        n=item_size(item, counter=backend.count_tokens),
    )


def _finish(
    s: _Setup,
    k: int,
    *,
    reasoning: Completion | None,
    answer: Completion | None,
    answer_text: str,
    answer_logprobs: Sequence[TokenLogprob] | None,
    prefilled: bool,
    reasoning_tokens: int,
    latency_s: float,
    answer_prompt: str = "",
) -> BudgetedAnswer:
    calls = [c for c in (reasoning, answer) if c is not None]
    extracted = extract_answer(answer_text, s.item, prefilled=prefilled)
    correct = is_correct(answer_text, s.item, prefilled=prefilled)
    prices = [_price(c) for c in calls]
    notes = sorted({p.note for p in prices if p.note})
    truncated = reasoning is not None and reasoning.truncated
    check = check_cap(k, reasoning_tokens, rule=s.rule)
    # Visible answer tokens: hidden reasoning in a reply is counted as reasoning, not answer.
    answer_tokens = (
        answer.usage.completion_tokens - answer.usage.reasoning_tokens if answer is not None else 0
    )
    if s.mode == "hidden" and reasoning is not None and answer is None:
        answer_tokens = reasoning.usage.completion_tokens - reasoning.usage.reasoning_tokens
    return BudgetedAnswer(
        item=s.item.id,
        family=s.item.family,
        n=s.n,
        k=k,
        expected=s.item.answer,
        extracted=extracted,
        correct=correct,
        reasoning=reasoning.text if reasoning is not None and s.mode != "hidden" else "",
        answer_text=answer_text,
        truncated=truncated,
        forced=truncated and answer is not None,
        prompt_tokens=sum(c.usage.prompt_tokens for c in calls),
        question_tokens=calls[0].usage.prompt_tokens,
        reasoning_tokens=reasoning_tokens,
        answer_tokens=answer_tokens,
        cost_usd=math.nan if notes else sum(p.usd for p in prices),
        latency_s=latency_s,
        answer_prob=_answer_probability(answer_logprobs, answer_text, extracted, s.item),
        cap_held=check.held,
        overrun=check.overrun,
        from_cache=all(c.from_cache for c in calls),
        calls=len(calls),
        model=calls[0].model,
        mode=s.mode,
        cost_note="; ".join(notes),
        protocol=s.protocol,
        answer_prompt=answer_prompt,
    )


def _answer_phase(s: _Setup, k: int, reasoning: Completion | None) -> BudgetedAnswer:
    """Close the reasoning (if any) with the marker and ask for the answer alone."""
    backend = s.backend
    if s.mode == "template":
        words = s.prompt
        if reasoning is None:
            # A native thinker at k = 0 gets an empty thinking block, as Qwen3 writes one when
            # thinking is off.
            empty = words.lead + words.close if words.close else ""
            prompt: Any = s.direct_prefix + empty + words.marker
        else:
            text = reasoning.text
            cut_note = words.cut_note if reasoning.truncated else ""
            # Qwen's sentence brings its own line breaks; otherwise a line break ends the text.
            closing = cut_note + words.close if cut_note else _joiner(text) + words.close
            prompt = s.reasoning_prefix + text + closing + words.marker
        answer = backend.generate(
            prompt,
            max_tokens=s.answer_tokens,
            temperature=s.temperature,
            stop=s.answer_stop,
            seed=s.seed,
            logprobs=s.top,
        )
        latency = answer.latency_s + (reasoning.latency_s if reasoning is not None else 0.0)
        return _finish(
            s,
            k,
            reasoning=reasoning,
            answer=answer,
            answer_text=answer.text,
            answer_logprobs=answer.logprobs,
            prefilled=True,
            reasoning_tokens=reasoning.usage.completion_tokens if reasoning is not None else 0,
            latency_s=latency,
            answer_prompt=prompt,
        )
    raise AssertionError(f"no answer phase for mode {s.mode!r}")  # pragma: no cover


def _chat_answer(s: _Setup, k: int) -> BudgetedAnswer:
    backend = s.backend
    if k == 0:
        messages = _messages(s.item, s.prompt.direct)
        answer = backend.generate(
            messages,
            max_tokens=s.answer_tokens,
            temperature=s.temperature,
            seed=s.seed,
            logprobs=s.top,
        )
        return _finish(
            s,
            k,
            reasoning=None,
            answer=answer,
            answer_text=answer.text,
            answer_logprobs=answer.logprobs,
            prefilled=False,
            reasoning_tokens=0,
            latency_s=answer.latency_s,
        )
    messages = _messages(s.item, s.prompt.instruction)
    reasoning = backend.generate(
        messages, max_tokens=k, temperature=s.temperature, seed=s.seed, logprobs=s.top
    )
    marker = re.search(re.escape(s.prompt.marker), reasoning.text, re.IGNORECASE)
    if not reasoning.truncated and marker is not None:
        # The model answered inside its budget: no second request.
        return _finish(
            s,
            k,
            reasoning=reasoning,
            answer=None,
            answer_text=reasoning.text[marker.start() :],
            answer_logprobs=None,
            prefilled=False,
            reasoning_tokens=reasoning.usage.completion_tokens,
            latency_s=reasoning.latency_s,
        )
    follow_up = [
        *messages,
        {"role": "assistant", "content": reasoning.text},
        {"role": "user", "content": s.prompt.force},
    ]
    answer = backend.generate(
        follow_up,
        max_tokens=s.answer_tokens,
        temperature=s.temperature,
        seed=s.seed,
        logprobs=s.top,
    )
    return _finish(
        s,
        k,
        reasoning=reasoning,
        answer=answer,
        answer_text=answer.text,
        answer_logprobs=answer.logprobs,
        prefilled=False,
        reasoning_tokens=reasoning.usage.completion_tokens,
        latency_s=reasoning.latency_s + answer.latency_s,
    )


def _hidden_answer(s: _Setup, k: int) -> BudgetedAnswer:
    backend = s.backend
    messages = _messages(s.item, s.prompt.direct)
    # The request fields come from the budget rule whole: the cap that hidden reasoning and the
    # visible answer share (the backend sends it under the rule's own field name), and the
    # rest (the `reasoning_effort` level), so the model also aims low, not only stops early.
    request = budget_params(s.rule, k, answer_tokens=s.answer_tokens, model=s.backend.model)
    assert request.max_tokens is not None  # a reasoning+output rule always sets its cap
    reply = backend.generate(
        messages,
        max_tokens=request.max_tokens,
        temperature=s.temperature,
        seed=s.seed,
        extra=request.extra or None,
    )
    hidden = reply.usage.reasoning_tokens
    if reply.text.strip():
        return _finish(
            s,
            k,
            reasoning=reply,
            answer=None,
            answer_text=reply.text,
            answer_logprobs=None,
            prefilled=False,
            reasoning_tokens=hidden,
            latency_s=reply.latency_s,
        )
    # The cap ran out inside the hidden reasoning: the thinking is lost, so ask once more for
    # the answer alone, with the smallest cap that leaves room for it.
    retry = backend.generate(
        [*messages, {"role": "user", "content": s.prompt.force}],
        max_tokens=s.answer_tokens,
        temperature=s.temperature,
        seed=s.seed,
    )
    return _finish(
        s,
        k,
        reasoning=reply,
        answer=retry,
        answer_text=retry.text,
        answer_logprobs=None,
        prefilled=False,
        reasoning_tokens=hidden + retry.usage.reasoning_tokens,
        latency_s=reply.latency_s + retry.latency_s,
    )


def budgeted_answer(
    backend: Backend,
    item: TaskItem,
    k: int,
    *,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    protocol: str = "auto",
    prompt: CoTPrompt | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    logprobs: bool = True,
) -> BudgetedAnswer:
    """Answer `item` after at most `k` reasoning tokens (see the module docstring).

    `answer_tokens` caps the answer phase. `mode` is "auto" (chosen by `resolve_mode`),
    "template", "chat" or "hidden". `protocol` is how the thinking is opened and closed
    (`cotplan.generate.protocols`; "auto": the model registry's for the model); an explicit
    `prompt` replaces the protocol's words. `logprobs` asks for token probabilities where the
    backend has them (used for `answer_prob`).
    """
    k = _check_budget(k)
    s = _setup(
        backend,
        item,
        mode=mode,
        protocol=protocol,
        prompt=prompt,
        answer_tokens=answer_tokens,
        temperature=temperature,
        seed=seed,
        logprobs=logprobs,
    )
    if s.mode == "chat":
        return _chat_answer(s, k)
    if s.mode == "hidden":
        return _hidden_answer(s, k)
    if k == 0:
        return _answer_phase(s, 0, None)
    reasoning = backend.generate(
        s.reasoning_prefix,
        max_tokens=k,
        temperature=temperature,
        stop=s.reasoning_stop,
        seed=seed,
        logprobs=s.reasoning_top,
    )
    return _answer_phase(s, k, reasoning)


def _cut(run: Completion, k: int) -> Completion | None:
    """The run capped at `k` tokens, from a greedy run capped higher (None: cannot tell)."""
    used = run.usage.completion_tokens
    if k >= used:
        return run
    tokens = run.logprobs
    if tokens is None or len(tokens) < k or "".join(t.token for t in tokens) != run.text:
        return None
    fraction = k / used if used else 0.0
    return Completion(
        text="".join(t.token for t in tokens[:k]),
        finish_reason="length",
        usage=Usage(
            prompt_tokens=run.usage.prompt_tokens,
            completion_tokens=k,
            cached_tokens=run.usage.cached_tokens,
        ),
        model=run.model,
        logprobs=tuple(tokens[:k]),
        latency_s=run.latency_s * fraction,
        from_cache=run.from_cache,
    )


def budgeted_answers(
    backend: Backend,
    item: TaskItem,
    budgets: Sequence[int],
    *,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    protocol: str = "auto",
    prompt: CoTPrompt | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    logprobs: bool = True,
) -> list[BudgetedAnswer]:
    """`budgeted_answer` at every budget, in the order given.

    In template mode with greedy decoding (temperature 0) and token strings available, one
    reasoning request at the largest budget serves every budget (see the module docstring);
    otherwise each budget is answered on its own.
    """
    ks = [_check_budget(k, "budgets") for k in budgets]
    if not ks:
        raise InputError("must hold at least one budget", field="budgets")
    s = _setup(
        backend,
        item,
        mode=mode,
        protocol=protocol,
        prompt=prompt,
        answer_tokens=answer_tokens,
        temperature=temperature,
        seed=seed,
        logprobs=logprobs,
    )
    shared = s.mode == "template" and temperature == 0.0 and s.reasoning_top > 0 and max(ks) > 0
    if not shared:
        return [
            budgeted_answer(
                backend,
                item,
                k,
                answer_tokens=answer_tokens,
                mode=s.mode,
                protocol=protocol,
                prompt=prompt,
                temperature=temperature,
                seed=seed,
                logprobs=logprobs,
            )
            for k in ks
        ]
    run = backend.generate(
        s.reasoning_prefix,
        max_tokens=max(ks),
        temperature=temperature,
        stop=s.reasoning_stop,
        seed=seed,
        logprobs=s.reasoning_top,
    )
    out: list[BudgetedAnswer] = []
    for k in ks:
        if k == 0:
            out.append(_answer_phase(s, 0, None))
            continue
        cut = _cut(run, k)
        if cut is None:  # token strings do not spell the text: make the capped call itself
            out.append(
                budgeted_answer(
                    backend,
                    item,
                    k,
                    answer_tokens=answer_tokens,
                    mode="template",
                    protocol=protocol,
                    prompt=prompt,
                    temperature=temperature,
                    seed=seed,
                    logprobs=logprobs,
                )
            )
            continue
        out.append(_answer_phase(s, k, cut))
    return out
