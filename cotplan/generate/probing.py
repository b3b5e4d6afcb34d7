"""Live probing: think in chunks, force an answer at each checkpoint, stop when a rule fires.

`probe_answer(backend, item, exit_rule)` drives a model whose thinking is visible:

1. The thinking runs in chunks of `every` = m tokens, each request continuing the text the
   thinking has written so far (llama.cpp and vLLM cache the shared prompt prefix, so the
   question and the thinking are not processed again).
2. At each checkpoint (m, 2m, ... thinking tokens) the thinking is closed the way the item's
   protocol forces an answer (`cotplan.generate.protocols`: `</think>` for native thinkers,
   "Answer:" for the plain protocol) and the answer is read, with its probability where the
   backend gives logprobs. This is exactly the forced answer budgeted CoT asks for at that
   budget, so a rule learned from a calibration's forced answers sees the same probes live.
3. The `StoppingRule` decides on the probes so far: when it fires, that probe's answer is the
   answer. The thinking also stops where the model ends it on its own, and at the ceiling (the
   certified fixed cap), past which it never runs: there the answer is forced as at the cap.

**Which backends.** Template mode (text completions with a known chat template: the embedded
models, vLLM, llama.cpp servers) continues the assistant turn exactly. The lab backends
continue a final assistant turn and force the answer with a second user turn, as budgeted CoT
drives them. Hidden-reasoning APIs show no thinking to close: `CapabilityError`; keep the fixed
cap there.

**Chat mode: one run an item.** A chat request cannot continue a thought, so chunks would each
think again from the start. Instead, as calibration does (`cotplan.generate.budgeted`), the
item's thinking is ONE greedy run capped at the ceiling (or a run the caller already holds,
`run=`: the item's uncapped run), the thinking at each checkpoint k is its first k tokens
(`cut_chat_run`), and each probe's answer is forced by continuing the turn after that prefix
(`chat_answer`): the other requests ask for answers only, so the thinking generated is one run
an item. The server writes that run to the ceiling (or the model's own end) whatever the rule
decides, so there `thinking_tokens` is the run's tokens and only `stop_k` says where the rule
stopped: the exit picks the answer, it saves no thinking (template mode does). A chat backend
without token strings cannot be cut: `CapabilityError`; keep the fixed cap there.

**Tokens.** `thinking_tokens` are generated thinking (`stop_k`: the thinking the answer
read); `probe_answer_tokens` the answer tokens of every probe before the one that stopped (the
last probe's answer is the answer, paid by any method); `probe_prompt_tokens` the prompts of
those probes and `resume_prompt_tokens` the prompts of the chunk requests after the first: a
backend without prefix caching bills both again, so `bill_prompt=True` counts them in
`total_tokens`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from cotplan.backends.base import Backend, Completion, Message, Prompt
from cotplan.errors import CapabilityError, InputError

# The forced answer is budgeted CoT's own; its helpers build it the same way here.
from cotplan.generate.answer_record import BudgetedAnswer, answer_probability
from cotplan.generate.budget_modes import chat_answer
from cotplan.generate.budget_setup import (
    BudgetSetup,
    Mode,
    budget_setup,
    item_messages,
    joiner,
    resolve_mode,
)
from cotplan.generate.budgeted import (
    cut_chat_run,
    shares_one_run,
    thinking_length,
    thinking_run,
)
from cotplan.generate.prompts import ChatTemplate, CoTPrompt, template_for
from cotplan.generate.protocols import resolve_protocol
from cotplan.tasks.answers import extract_answer, is_correct
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import item_size

__all__ = [
    "ExitRule",
    "Probe",
    "ProbedAnswer",
    "StoppingRule",
    "probe_answer",
    "probed_frame",
]

StoppedBy = Literal["rule", "ended", "ceiling"]


@dataclass(frozen=True)
class StoppingRule:
    """Stop when the last `agree` probes gave the same answer and (or) the latest probe's
    probability is at least `min_prob`; a rule with neither never fires (the fixed cap)."""

    agree: int | None = None
    min_prob: float | None = None

    def __post_init__(self) -> None:
        if self.agree is not None and (
            isinstance(self.agree, bool) or not isinstance(self.agree, int) or self.agree < 1
        ):
            raise InputError(f"must be an integer ≥ 1, got {self.agree!r}", field="agree")
        if self.min_prob is not None and (
            isinstance(self.min_prob, bool)
            or not isinstance(self.min_prob, int | float)
            or not 0.0 < self.min_prob <= 1.0
        ):
            raise InputError(f"must be in (0, 1], got {self.min_prob!r}", field="min_prob")

    @property
    def probes(self) -> bool:
        """Whether the rule reads probes at all (the fixed cap does not)."""
        return self.agree is not None or self.min_prob is not None

    @property
    def name(self) -> str:
        parts = []
        if self.agree is not None:
            parts.append(f"same answer at {self.agree} probes")
        if self.min_prob is not None:
            parts.append(f"p ≥ {self.min_prob:g}")
        return " and ".join(parts) or "fixed cap (no early exit)"

    def fires(self, run: NDArray[np.int_], prob: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Where the rule fires, given per probe the length of the run of equal answers ending
        there (`run`) and the answer's probability (`prob`, NaN where unknown)."""
        if not self.probes:
            return np.zeros(len(run), dtype=bool)
        out = np.ones(len(run), dtype=bool)
        if self.agree is not None:
            out &= run >= self.agree
        if self.min_prob is not None:
            # An unknown probability never counts as confident (NaN compares False).
            out &= np.nan_to_num(prob, nan=-1.0) >= self.min_prob
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"agree": self.agree, "min_prob": self.min_prob}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "rule") -> StoppingRule:
        if not isinstance(data, Mapping):
            raise InputError(f"must be an object, got {type(data).__name__}", field=where)
        unknown = sorted(set(data) - {"agree", "min_prob"})
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)}", field=where)
        try:
            return cls(agree=data.get("agree"), min_prob=data.get("min_prob"))
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], field=f"{where}.{exc.field}") from exc


@dataclass(frozen=True)
class ExitRule:
    """What to deploy at one size: probe every `every` thinking tokens, stop when `rule`
    fires, never think past `ceiling` (the certified fixed cap)."""

    ceiling: int
    every: int
    rule: StoppingRule = StoppingRule()

    def __post_init__(self) -> None:
        for name in ("ceiling", "every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"must be a whole number ≥ 1, got {value!r}", field=name)
        if not isinstance(self.rule, StoppingRule):
            raise InputError(
                f"must be a StoppingRule, got {type(self.rule).__name__}", field="rule"
            )

    @property
    def checkpoints(self) -> tuple[int, ...]:
        """The thinking lengths probed: multiples of `every` below the ceiling, and the
        ceiling (only the ceiling when the rule never fires)."""
        if not self.rule.probes:
            return (self.ceiling,)
        return (*range(self.every, self.ceiling, self.every), self.ceiling)

    def to_dict(self) -> dict[str, Any]:
        return {"ceiling": self.ceiling, "every": self.every, "rule": self.rule.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "exit") -> ExitRule:
        if not isinstance(data, Mapping):
            raise InputError(f"must be an object, got {type(data).__name__}", field=where)
        missing = [k for k in ("ceiling", "every", "rule") if k not in data]
        if missing:
            raise InputError(f"missing key(s) {', '.join(missing)}", field=where)
        unknown = sorted(set(data) - {"ceiling", "every", "rule"})
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)}", field=where)
        rule = StoppingRule.from_dict(data["rule"], f"{where}.rule")
        try:
            return cls(ceiling=data["ceiling"], every=data["every"], rule=rule)
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], field=f"{where}.{exc.field}") from exc


@dataclass(frozen=True)
class Probe:
    """One checkpoint: the thinking tokens so far (`k`), the forced answer read there and its
    probability, and the tokens of that answer request."""

    k: int
    extracted: str | None
    prob: float
    answer_tokens: int
    prompt_tokens: int


@dataclass(frozen=True)
class ProbedAnswer:
    """One item answered with live probing (see the module docstring for the tokens).

    `stopped_by` says why the thinking stopped ("rule": the rule fired; "ended": the model
    closed its thinking itself; "ceiling": the cap), `checkpoint` at which probe (1-based; 0
    when the model ended it), `stop_k` the thinking tokens there.
    """

    item: str
    family: str
    n: int
    expected: str
    extracted: str | None
    correct: bool
    answer_text: str
    answer_prob: float
    thinking_tokens: int
    probe_answer_tokens: int
    probe_prompt_tokens: int
    resume_prompt_tokens: int
    answer_tokens: int
    probes: int
    checkpoint: int
    stop_k: int
    stopped_by: StoppedBy
    ceiling: int
    every: int
    rule: str
    bill_prompt: bool
    calls: int
    mode: str
    protocol: str
    model: str
    trace: tuple[Probe, ...] = ()

    @property
    def overhead_tokens(self) -> int:
        """What probing cost beyond the thinking and the answer."""
        billed = self.probe_prompt_tokens + self.resume_prompt_tokens if self.bill_prompt else 0
        return self.probe_answer_tokens + billed

    @property
    def total_tokens(self) -> int:
        return self.thinking_tokens + self.overhead_tokens + self.answer_tokens

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        del row["trace"]
        row["overhead_tokens"] = self.overhead_tokens
        row["total_tokens"] = self.total_tokens
        return row

    def to_frame(self) -> pd.DataFrame:
        """One row per probe (the trace), with the item's id."""
        return pd.DataFrame([{"item": self.item, **asdict(p)} for p in self.trace])


def probed_frame(answers: list[ProbedAnswer]) -> pd.DataFrame:
    """One row per answer."""
    return pd.DataFrame([a.to_row() for a in answers])


# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Driver:
    """How one backend continues a thought and forces an answer."""

    backend: Backend
    item: TaskItem
    mode: str
    words: CoTPrompt
    template: ChatTemplate | None
    answer_tokens: int
    top: int

    @property
    def messages(self) -> list[Message]:
        return item_messages(self.item, self.words.instruction)

    def thinking_prompt(self, text: str) -> Prompt:
        if self.template is not None:
            return self.written(text)
        return self.turns(text)

    def written(self, text: str) -> str:
        """The template written out, the assistant turn open and the thinking so far in it."""
        assert self.template is not None
        return self.template.render(self.messages) + self.words.lead + text

    def turns(self, text: str) -> list[Message]:
        """The question, and the thinking so far as the assistant's turn to continue."""
        if not text:
            return self.messages
        return [*self.messages, {"role": "assistant", "content": text}]

    @property
    def thinking_stop(self) -> list[str] | None:
        if self.template is None:
            return None  # the lab model answers within its turn; the answer is read from it
        close = self.words.close.strip()
        return [close or self.words.marker, self.template.end]

    def end_of_thinking(self, text: str) -> int:
        """Where the model's own end of thinking begins in `text` (-1: not there). A chunk
        boundary can split the close, which the server's stop check then misses."""
        if self.template is None:
            return text.find(self.words.marker)
        return text.find(self.words.close.strip() or self.words.marker)

    def force(self, text: str, *, cut: bool) -> Completion:
        if self.template is not None:
            words = self.words
            closing = words.cut_note + words.close if cut and words.cut_note else ""
            closing = closing or joiner(text) + words.close
            prompt: Prompt = self.written(text) + closing + words.marker
            stop = ["\n", self.template.end]
        else:
            prompt = [*self.turns(text), {"role": "user", "content": self.words.force}]
            stop = None
        return self.backend.generate(
            prompt, max_tokens=self.answer_tokens, temperature=0.0, stop=stop, logprobs=self.top
        )


def _check(backend: Backend, item: TaskItem, answer_tokens: int, mode: str) -> str:
    """The mode the item is probed in, after the checks every mode shares."""
    if not isinstance(item, TaskItem):
        raise InputError(f"must be a TaskItem, got {type(item).__name__}", field="item")
    if isinstance(answer_tokens, bool) or not isinstance(answer_tokens, int) or answer_tokens < 1:
        raise InputError(
            f"must be a whole number ≥ 1, got {answer_tokens!r}", field="answer_tokens"
        )
    chosen = resolve_mode(backend, mode)  # type: ignore[arg-type]
    if chosen == "hidden":
        raise CapabilityError(
            f"{backend.model} reasons in hidden tokens: there is no thinking to close and "
            "probe; keep the certified fixed cap"
        )
    return chosen


def _driver(
    backend: Backend,
    item: TaskItem,
    *,
    mode: str,
    protocol: str,
    answer_tokens: int,
    logprobs: bool,
) -> _Driver:
    _, words = resolve_protocol(backend, protocol)
    return _Driver(
        backend=backend,
        item=item,
        mode=mode,
        words=words,
        template=template_for(backend.model) if mode == "template" else None,
        answer_tokens=answer_tokens,
        top=1 if logprobs and backend.supports_logprobs else 0,
    )


@dataclass
class _State:
    text: str = ""
    thinking: int = 0
    resume_prompt: int = 0
    calls: int = 0
    ended: bool = False

    def think(self, d: _Driver, upto: int) -> None:
        """Continue the thinking to `upto` tokens or until the model ends it."""
        if self.ended or self.thinking >= upto:
            return
        reply = d.backend.generate(
            d.thinking_prompt(self.text),
            max_tokens=upto - self.thinking,
            temperature=0.0,
            stop=d.thinking_stop,
            logprobs=0,
        )
        if self.calls:
            self.resume_prompt += reply.usage.prompt_tokens
        self.calls += 1
        self.thinking += reply.usage.completion_tokens
        self.text += reply.text
        at = d.end_of_thinking(self.text)
        closed = d.template is not None and at >= 0
        if closed:
            self.text = self.text[:at]
        self.ended = not reply.truncated or closed


def _read(d: _Driver, reply: Completion) -> tuple[str | None, float]:
    extracted = extract_answer(reply.text, d.item, prefilled=d.template is not None)
    return extracted, answer_probability(reply.logprobs, reply.text, extracted, d.item)


def probe_answer(
    backend: Backend,
    item: TaskItem,
    exit_rule: ExitRule,
    *,
    protocol: str = "auto",
    answer_tokens: int = 16,
    bill_prompt: bool = False,
    logprobs: bool = True,
    mode: Mode | Literal["auto"] = "auto",
    run: Completion | None = None,
) -> ProbedAnswer:
    """Answer `item` probing at every checkpoint of `exit_rule`, greedily (see the module
    docstring): in template mode (and on the lab models) thinking in chunks, in chat mode
    cutting one run. `protocol` and `mode` as in `budgeted_answer`; `bill_prompt` counts the
    prompts probing sends again in `total_tokens`; `run` (chat mode): the item's greedy run
    already in hand (its uncapped run), so no thinking is generated at all."""
    if not isinstance(exit_rule, ExitRule):
        raise InputError(f"must be an ExitRule, got {type(exit_rule).__name__}", field="exit_rule")
    chosen = _check(backend, item, answer_tokens, mode)
    if chosen == "chat" and not backend.model.startswith("lab-"):
        # Only the lab backends continue a final assistant turn's thinking among chat-mode
        # backends; elsewhere the probes are cut from one run.
        return _probe_one_run(
            backend,
            item,
            exit_rule,
            protocol=protocol,
            answer_tokens=answer_tokens,
            bill_prompt=bill_prompt,
            logprobs=logprobs,
            run=run,
        )
    if run is not None:
        raise InputError("is read in chat mode only (template mode thinks in chunks)", field="run")
    d = _driver(
        backend,
        item,
        mode=chosen,
        protocol=protocol,
        answer_tokens=answer_tokens,
        logprobs=logprobs,
    )
    state = _State()
    trace: list[Probe] = []
    streak = 0
    last: str | None = None
    final: Completion | None = None
    stopped_by: StoppedBy = "ceiling"
    for k in exit_rule.checkpoints:
        state.think(d, k)
        if state.ended:
            stopped_by = "ended"
            break
        reply = d.force(state.text, cut=True)
        state.calls += 1
        extracted, prob = _read(d, reply)
        trace.append(
            Probe(state.thinking, extracted, prob, _generated(reply), reply.usage.prompt_tokens)
        )
        streak = 0 if extracted is None else (streak + 1 if extracted == last else 1)
        last = extracted
        final = reply
        fired = exit_rule.rule.fires(np.array([streak]), np.array([prob]))[0]
        if fired or k == exit_rule.ceiling:
            stopped_by = "rule" if fired else "ceiling"
            break
    answer_text, answer_tokens_spent, prob_final = "", 0, math.nan
    if stopped_by == "ended":
        final, answer_text = _answer_after_end(d, state)
        if final is not None:
            state.calls += 1
            answer_tokens_spent = _generated(final)
            prob_final = _read(d, final)[1]
    else:
        assert final is not None
        answer_text, answer_tokens_spent, prob_final = final.text, _generated(final), trace[-1].prob
    paid = trace if stopped_by == "ended" else trace[:-1]  # the stopping probe is the answer
    prefilled = d.template is not None  # the marker is written before the answer request
    extracted = extract_answer(answer_text, item, prefilled=prefilled)
    return ProbedAnswer(
        item=item.id,
        family=item.family,
        n=item_size(item, counter=backend.count_tokens),
        expected=item.answer,
        extracted=extracted,
        correct=is_correct(answer_text, item, prefilled=prefilled),
        answer_text=answer_text,
        answer_prob=prob_final,
        thinking_tokens=state.thinking,
        probe_answer_tokens=sum(p.answer_tokens for p in paid),
        probe_prompt_tokens=sum(p.prompt_tokens for p in paid),
        resume_prompt_tokens=state.resume_prompt,
        answer_tokens=answer_tokens_spent,
        probes=len(trace),
        checkpoint=len(trace) if stopped_by != "ended" else 0,
        stop_k=state.thinking,
        stopped_by=stopped_by,
        ceiling=exit_rule.ceiling,
        every=exit_rule.every,
        rule=exit_rule.rule.name,
        bill_prompt=bill_prompt,
        calls=state.calls,
        mode=d.mode,
        protocol=resolve_protocol(backend, protocol)[0],
        model=backend.model,
        trace=tuple(trace),
    )


def _generated(reply: Completion) -> int:
    return reply.usage.completion_tokens - reply.usage.reasoning_tokens


def _answer_after_end(d: _Driver, state: _State) -> tuple[Completion | None, str]:
    """The answer after thinking the model ended itself: asked for after the close (template
    mode), or read from the turn where the lab model wrote it (None: no request made)."""
    if d.template is not None:
        return (reply := d.force(state.text, cut=False)), reply.text
    at = state.text.find(d.words.marker)
    if at >= 0:
        return None, state.text[at:]
    reply = d.force(state.text, cut=False)
    return reply, reply.text


# -- chat mode: every probe cut from one run ------------------------------------------------------


def _probe_one_run(
    backend: Backend,
    item: TaskItem,
    exit_rule: ExitRule,
    *,
    protocol: str,
    answer_tokens: int,
    bill_prompt: bool,
    logprobs: bool,
    run: Completion | None,
) -> ProbedAnswer:
    """Chat mode (module docstring): the probe at k is the answer budgeted CoT forces after the
    first k tokens of one run, exactly as a calibration records it, so a rule certified on a
    calibration stops here where its replay (`cotplan.planner.exit_probes`) stops."""
    s = budget_setup(
        backend,
        item,
        mode="chat",
        protocol=protocol,
        prompt=None,
        answer_tokens=answer_tokens,
        temperature=0.0,
        seed=None,
        logprobs=logprobs,
    )
    if not shares_one_run(s):
        raise CapabilityError(
            f"{backend.model} is driven by chat turns, which cannot continue a thought, and its "
            "replies carry no token strings to cut one run by (or its server caps the thinking "
            "itself); live probing needs a text-completion endpoint with a known chat template, "
            "or chat logprobs; keep the certified fixed cap"
        )
    calls = 0
    if run is None:
        run = thinking_run(s, exit_rule.ceiling)
        calls = 1
    trace: list[Probe] = []
    streak, last = 0, None
    stopped_by: StoppedBy = "ceiling"
    final: BudgetedAnswer | None = None
    for k in exit_rule.checkpoints:
        answer = _answer_at(s, run, k)
        calls += answer.calls - 1  # the run itself is counted once
        final = answer
        if answer.reasoning_tokens < k:  # the model ended its thinking before k: its answer
            stopped_by = "ended"
            break
        trace.append(
            Probe(
                k,
                answer.extracted,
                answer.answer_prob,
                answer.answer_tokens,
                answer.prompt_tokens - answer.question_tokens,
            )
        )
        streak = 0 if answer.extracted is None else (streak + 1 if answer.extracted == last else 1)
        last = answer.extracted
        fired = bool(exit_rule.rule.fires(np.array([streak]), np.array([answer.answer_prob]))[0])
        if fired or k == exit_rule.ceiling:
            stopped_by = "rule" if fired else "ceiling"
            break
    assert final is not None
    paid = trace if stopped_by == "ended" else trace[:-1]
    stop_k = final.reasoning_tokens if stopped_by == "ended" else final.k
    # The server wrote the whole run (to the ceiling or the model's end) whatever the rule
    # decided: all of it is paid as thinking, but the run's own answer where it is the answer.
    written, answer_spent = run.usage.completion_tokens, final.answer_tokens
    if stopped_by == "ended" and final.calls == 1:
        answer_spent = written - thinking_length(run, s)
        written -= answer_spent
    return ProbedAnswer(
        item=item.id,
        family=item.family,
        n=item_size(item, counter=backend.count_tokens),
        expected=item.answer,
        extracted=final.extracted,
        correct=final.correct,
        answer_text=final.answer_text,
        answer_prob=final.answer_prob,
        thinking_tokens=written,
        probe_answer_tokens=sum(p.answer_tokens for p in paid),
        probe_prompt_tokens=sum(p.prompt_tokens for p in paid),
        resume_prompt_tokens=0,
        answer_tokens=answer_spent,
        probes=len(trace),
        checkpoint=len(trace) if stopped_by != "ended" else 0,
        stop_k=stop_k,
        stopped_by=stopped_by,
        ceiling=exit_rule.ceiling,
        every=exit_rule.every,
        rule=exit_rule.rule.name,
        bill_prompt=bill_prompt,
        calls=calls,
        mode="chat",
        protocol=s.protocol,
        model=backend.model,
        trace=tuple(trace),
    )


def _answer_at(s: BudgetSetup, run: Completion, k: int) -> BudgetedAnswer:
    """The answer at budget k from the run: its first k tokens, the answer forced after them
    (no request where the run ended inside k: its own answer)."""
    piece = run if k >= run.usage.completion_tokens else cut_chat_run(run, k, s)
    if piece is None:
        raise CapabilityError(
            f"{s.backend.model}'s token strings do not spell the reply it returned, so its run "
            "cannot be cut at a probe; keep the certified fixed cap"
        )
    return chat_answer(s, k, piece)
