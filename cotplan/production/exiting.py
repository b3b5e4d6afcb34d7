"""The certified early exit behind a capped client: `capped(client, plan, exit="certified")`.

A plan folder where `cotplan plan --exit certified` wrote an exit.json beside plan.json holds,
per size, a stopping rule certified like the fixed cap (`cotplan.planner.exit_plan`). With
``exit="certified"`` a call at such a size is answered as `cotplan run --exit certified`
answers an item (`cotplan.generate.probing.probe_answer`), through the team's own client:

1. The thinking is generated in chunks of m tokens (the rule's `every`), each a text
   completion continuing the thinking so far (llama.cpp and vLLM cache the shared prefix).
2. At each checkpoint the thinking is closed the way the protocol forces an answer and the
   answer is read ("probed"), with its probability where the rule needs it (`logprobs`).
3. When the rule fires, that probe's answer is the answer. The thinking also stops where the
   model ends it itself (its answer is then asked for after the close) and at the ceiling, the
   plan's certified cap, past which it never runs.

The reply reads as a two-phase reply does: `message.content` is the model's answer in its own
form (the marker the forcing wrote for it, ``Answer: 13``, then its words), the thinking is in
`message.reasoning_content`, and `usage` holds every request's tokens with the reasoning in
`completion_tokens_details.reasoning_tokens`.

These are `probe_answer`'s own requests (the same prompts, stops and caps), so a call gets the
answer `cotplan run --exit certified` gets for the same question. Answers are read the way the
plan's task family reads them (an integer for ``count``, ...; free text where the plan records
no built-in family), since the rule compares probed answers.

Tokens. Probing is paid for: `usage.completion_tokens_details.reasoning_tokens` holds the
thinking and the answer tokens of every probe before the one that became the answer, and
`usage.prompt_tokens` the first chunk's prompt and the answer's, plus, where the exit plan says
the backend bills them again (`bill_prompt`), the prompts probing sent again (the later chunks'
and the earlier probes'), as `cotplan run --exit certified` counts them. The `cotplan` report
says what happened (`exit_rule`, `stopped_by`, `stop_k`, `probes`, `probe_tokens`), and so does
the call log's row.

Where it applies. Only where the thinking is written out as text (the ``template`` mode): a
provider that caps hidden reasoning in one request shows no thinking to probe, and
``exit="certified"`` is refused there (`InputError` naming `exit`). A size the exit plan does
not certify, or whose ceiling is not the plan's cap there, keeps the fixed cap, and the
report's `note` says so.

Streaming. Each chunk of thinking is handed on as `delta.reasoning_content` when its request
returns (the requests themselves are not streamed: every probe is read whole), the answer as
`delta.content`, and the last chunk carries the usage and the report, as in
`cotplan.production.streaming`.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from openai.types.chat import ChatCompletion

from cotplan.backends.base import Completion, Usage
from cotplan.backends.parsing import parse_completion
from cotplan.errors import InputError
from cotplan.generate.answer_record import answer_probability
from cotplan.generate.probing import ExitRule
from cotplan.planner import SavedPlan
from cotplan.planner.exit_plan import EXIT_CHOICES, ExitPlan, exit_plan_for
from cotplan.planner.records import PlanCap
from cotplan.production.calls import (
    CallArgs,
    CapReport,
    chat_reply,
    cost_of_requests,
    joiner,
    stop_list,
)
from cotplan.production.phases import TwoPhase
from cotplan.production.streaming import Call, Chunks, Finish, Marked, StreamSteps
from cotplan.tasks.answers import extract_answer
from cotplan.tasks.families import families
from cotplan.tasks.item import AnswerKind, TaskItem
from cotplan.validation import require_choice

__all__ = [
    "answer_kind_of",
    "exit_at",
    "exit_steps",
    "exit_stream_steps",
    "load_exits",
]

#: The steps of an unstreamed call (as the wrapper's `_Steps`).
_Steps = Generator[tuple[str, dict[str, Any]], Any, tuple[ChatCompletion, CapReport]]


def load_exits(
    exit: object,
    exit_plan: ExitPlan | str | Path | None,
    plan: SavedPlan,
    plan_path: Path | None,
) -> ExitPlan | None:
    """The exit plan `capped(..., exit=..., exit_plan=...)` applies (None: the fixed cap).

    `exit_plan` is an `ExitPlan` or the path of an exit.json; by default the exit.json beside
    the plan's file (`plan_path`; None when the plan was given as an object). The exit plan must
    be for the plan's ε and model, as `cotplan run --exit certified` requires."""
    require_choice(exit, "exit", EXIT_CHOICES)
    if exit == "none":
        if exit_plan is not None:
            raise InputError("is read only with exit='certified'", field="exit_plan")
        return None
    if isinstance(exit_plan, ExitPlan):
        if not math.isclose(exit_plan.eps, plan.eps):
            raise InputError(
                f"certified for ε = {exit_plan.eps:g}, not the plan's {plan.eps:g}",
                field="exit_plan",
            )
        if exit_plan.model and plan.model and exit_plan.model != plan.model:
            raise InputError(
                f"certified for model {exit_plan.model}, not the plan's {plan.model}",
                field="exit_plan",
            )
        return exit_plan
    if exit_plan is None and plan_path is None:
        raise InputError(
            "a plan given as an object has no folder to find exit.json in: give the plan's "
            "path, or exit_plan= (the exit.json `cotplan plan --exit certified` wrote)",
            field="exit_plan",
        )
    if exit_plan is not None and not isinstance(exit_plan, str | Path):
        raise InputError(
            f"must be an ExitPlan or a path, got {type(exit_plan).__name__}", field="exit_plan"
        )
    where = None if exit_plan is None else Path(exit_plan)
    home = plan_path if plan_path is not None else Path("plan.json")
    return exit_plan_for(where, home, eps=plan.eps, model=plan.model)


def answer_kind_of(plan: SavedPlan) -> AnswerKind:
    """How the probes' answers are read: as the plan's built-in family reads them, else as
    text (a choice is read as its text: the choices differ from one call to the next)."""
    info = families.get(plan.family or "")
    if info is None or info.answer_kind == "choice":
        return "text"
    return info.answer_kind


def exit_at(exits: ExitPlan, cap: PlanCap) -> tuple[ExitRule | None, str]:
    """The certified rule for a call capped at `cap`, or None and why the fixed cap stays."""
    n = cap.n
    rule = exits.sizes.get(int(n)) if float(n).is_integer() else None
    if rule is None:
        known = ", ".join(map(str, sorted(exits.sizes))) or "none"
        return None, (
            f"certified exit: none at n = {n:g} (certified sizes: {known}); fixed cap {cap.tokens}"
        )
    if rule.ceiling != cap.tokens:
        return None, (
            f"certified exit: its ceiling {rule.ceiling} at n = {n:g} is not the plan's cap "
            f"{cap.tokens}; fixed cap"
        )
    return rule, ""


@dataclass(frozen=True)
class _Probe:
    k: int
    extracted: str | None
    prob: float
    reply: Completion


def _generated(reply: Completion) -> int:
    return reply.usage.completion_tokens - reply.usage.reasoning_tokens


def _unbilled(usage: Usage) -> Usage:
    return replace(usage, prompt_tokens=0, cached_tokens=0)


@dataclass
class _Probing:
    """One call under the certified exit: its requests and what they gave so far."""

    call: CallArgs
    rule: ExitRule
    text: str = ""
    thinking: int = 0
    ended: bool = False
    chunks: list[Usage] = field(default_factory=list)
    probes: list[_Probe] = field(default_factory=list)
    answer: Completion | None = None
    stopped_by: str = ""
    shown: int = 0

    @property
    def _close(self) -> str:
        words = self.call.words
        return words.close.strip() or words.marker

    @property
    def _item(self) -> TaskItem:
        return TaskItem(id="call", prompt="", answer="", kind=self.call.answer_kind)

    def _parse(self, response: Any, arguments: dict[str, Any]) -> Completion:
        return parse_completion(response.model_dump(), model=self.call.model, params=arguments)

    def steps(self) -> Generator[tuple[str, dict[str, Any]], Any, None]:
        """The requests (``completions``), as `probe_answer` makes them."""
        assert self.call.template is not None
        phases = TwoPhase(self.call)
        start = phases.rendered + self.call.words.lead
        run, last = 0, None
        for k in self.rule.checkpoints:
            if not self.ended and self.thinking < k:
                think = {
                    "prompt": start + self.text,
                    "max_tokens": k - self.thinking,
                    "stop": [self._close, self.call.template.end],
                    **phases.common,
                }
                self._think(self._parse((yield ("completions", think)), think))
            if self.ended:
                self.stopped_by = "ended"
                break
            probe = self._force(start, cut=True)
            reply = self._parse((yield ("completions", probe)), probe)
            extracted = extract_answer(reply.text, self._item, prefilled=True)
            prob = answer_probability(reply.logprobs, reply.text, extracted, self._item)
            self.probes.append(_Probe(self.thinking, extracted, prob, reply))
            run = 0 if extracted is None else (run + 1 if extracted == last else 1)
            last = extracted
            fired = bool(self.rule.rule.fires(np.array([run]), np.array([prob]))[0])
            if fired or k == self.rule.ceiling:
                self.stopped_by = "rule" if fired else "ceiling"
                self.answer = reply
                return
        if self.stopped_by == "ended":
            request = self._force(start, cut=False)
            self.answer = self._parse((yield ("completions", request)), request)

    def _think(self, reply: Completion) -> None:
        self.chunks.append(reply.usage)
        self.thinking += reply.usage.completion_tokens
        self.text += reply.text
        at = self.text.find(self._close)
        if at >= 0:  # a chunk boundary split the close, which the server's stop then missed
            self.text = self.text[:at]
        self.ended = not reply.truncated or at >= 0

    def _force(self, start: str, *, cut: bool) -> dict[str, Any]:
        """The forced answer after the thinking so far, as `probe_answer` forces it."""
        assert self.call.template is not None
        words = self.call.words
        closing = words.cut_note + words.close if cut and words.cut_note else ""
        closing = closing or joiner(self.text) + words.close
        request: dict[str, Any] = {
            "prompt": start + self.text + closing + words.marker,
            "max_tokens": self.call.answer_tokens,
            "stop": ["\n", self.call.template.end, *stop_list(self.call.rest.get("stop"))],
            **TwoPhase(self.call).common,
        }
        if self.rule.rule.min_prob is not None:
            request["logprobs"] = 1
        return request

    def unshown(self) -> str:
        """The thinking not yet handed on. While it runs, a tail that may be the start of a
        close split across two chunks is held back (the close is cut from the thinking)."""
        held = 0
        if not (self.stopped_by or self.ended):
            close = self._close
            sizes = range(min(len(close) - 1, len(self.text)), 0, -1)
            held = next((size for size in sizes if self.text.endswith(close[:size])), 0)
        upto = max(self.shown, len(self.text) - held)
        piece, self.shown = self.text[self.shown : upto], upto
        return piece

    def report(self) -> CapReport:
        """What the call spent so far (all of it once the steps have ended)."""
        call, bill = self.call, self.call.bill_prompt
        answered = self.stopped_by in ("rule", "ceiling")
        paid = self.probes[:-1] if answered else self.probes
        answer = self.answer
        extra_prompts = sum(u.prompt_tokens for u in self.chunks[1:]) + sum(
            p.reply.usage.prompt_tokens for p in paid
        )
        probe_answers = sum(_generated(p.reply) for p in paid)
        first = self.chunks[0].prompt_tokens if self.chunks else 0
        usages = [
            *self.chunks[:1],
            *(u if bill else _unbilled(u) for u in self.chunks[1:]),
            *(p.reply.usage if bill else _unbilled(p.reply.usage) for p in paid),
            *([answer.usage] if answer is not None else []),
        ]
        cost, cost_note = cost_of_requests(call.model, usages)
        rule = self.rule
        stop_k = self.thinking if self.stopped_by else None
        said = (
            f"certified exit ({rule.rule.name}): stopped by {self.stopped_by} at {self.thinking}"
            f" of {rule.ceiling} thinking tokens, {len(self.probes)} probes"
            if self.stopped_by
            else ""
        )
        return CapReport(
            size=call.cap.n,
            cap=call.cap.tokens,
            basis=call.cap.basis,
            certified=call.cap.certified,
            mode="template",
            protocol=call.protocol,
            reasoning_tokens=self.thinking + probe_answers,
            answer_tokens=_generated(answer) if answer is not None else 0,
            prompt_tokens=first
            + (answer.usage.prompt_tokens if answer is not None else 0)
            + (extra_prompts if bill else 0),
            cap_bitten=self.stopped_by == "ceiling",
            answer_forced=answered,
            cost_usd=cost,
            requests=len(self.chunks) + len(self.probes) + (self.stopped_by == "ended"),
            note="; ".join(p for p in (call.note, said, cost_note) if p),
            exit_rule=rule.rule.name,
            stopped_by=self.stopped_by,
            stop_k=stop_k,
            probes=len(self.probes),
            probe_tokens=probe_answers + (extra_prompts if bill else 0),
            probe_prompt_tokens=extra_prompts,
            answer_missing=answer is not None and not answer.text.strip(),
            usage_trusted=all(u.trusted for u in usages),
        )


def exit_steps(call: CallArgs) -> _Steps:
    """An unstreamed call under the certified exit, as the wrapper's steps (`_Steps`)."""
    assert call.exit_rule is not None
    probing = _Probing(call, call.exit_rule)
    yield from probing.steps()
    assert probing.answer is not None
    report = probing.report()
    # The model's own form, as a two-phase reply reads: the marker the forcing wrote for it
    # (``Answer:``), then its words; no answer is no marker (the report flags it).
    content, finish_reason = answered_content(call, probing.answer)
    reply = chat_reply(
        call,
        content=content,
        reasoning=probing.text,
        finish_reason=finish_reason,
        report=report,
    )
    return reply, report


def answered_content(call: CallArgs, answer: Completion) -> tuple[str, str]:
    """The reply's `content` and finish reason for the probe that became the answer."""
    if not answer.text.strip():
        return "", "length"
    return (call.words.marker + answer.text).rstrip(), answer.finish_reason or "stop"


def exit_stream_steps(call: CallArgs, finish: Finish) -> StreamSteps:
    """A streamed call under the certified exit (see the module docstring); `finish` is told
    the report when the stream ends, also when it ends early."""
    assert call.exit_rule is not None
    probing = _Probing(call, call.exit_rule)
    chunks = Chunks(f"chatcmpl-cotplan-{uuid.uuid4().hex}", int(time.time()), call.model)
    outcome = "stopped"
    try:
        yield chunks.delta(role="assistant", content="")
        requests = probing.steps()
        request = next(requests, None)
        while request is not None:
            response = yield Call(*request)
            try:
                request = requests.send(response)
            except StopIteration:
                request = None
            if piece := probing.unshown():
                yield chunks.delta(reasoning_content=piece)
        assert probing.answer is not None
        # As `exit_steps` answers: the marker before the model's words, as `Marked` streams
        # a two-phase answer.
        _, finish_reason = answered_content(call, probing.answer)
        marked = Marked(call.words.marker)
        if answer := marked(probing.answer.text):
            yield chunks.delta(content=answer)
        yield from chunks.last(finish_reason, probing.report(), include_usage=call.include_usage)
        outcome = "complete"
    except GeneratorExit:
        raise
    except Exception:
        outcome = "error"
        raise
    finally:
        if probing.chunks:
            finish(probing.report(), chunks.id, outcome)
