"""The requests a capped call makes and the report it ends in, for each way of applying the cap.

Shared by the plain reply (`cotplan.production.wrapper`) and the streamed one
(`cotplan.production.streaming`), so that a streamed call makes the very requests of an
unstreamed one and reports the same fields: only how the replies are read differs.

- `TwoPhase`: two-phase budget forcing (the ``template`` mode): the thinking under the cap k
  as a text completion, closed the protocol's way, then the answer.
- `OneRequest`: the provider's own cap (the ``hidden`` mode): one chat request with the budget
  rule's fields, and, when the cap left no answer, one more asking for the answer alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cotplan.backends.base import Usage
from cotplan.backends.budgets import (
    LENGTH_FINISH_REASONS,
    BudgetParams,
    budget_params,
    rule_for_model,
)
from cotplan.generate.prompts import CoTPrompt
from cotplan.production.answer_phase import (
    JSON_ANSWER_TOKENS,
    AnswerSpec,
    answer_spec,
    with_tools,
)
from cotplan.production.calls import (
    DEFAULT_ANSWER_TOKENS,
    CallArgs,
    CapReport,
    cost_of_requests,
    joiner,
    stop_list,
    with_instruction,
)

__all__ = ["OneRequest", "TwoPhase", "closing"]


def closing(words: CoTPrompt, thinking: str, *, cut: bool) -> str:
    """What closes the thinking before the marker, as `budgeted_answer` closes it."""
    if cut and words.cut_note:  # Qwen's sentence brings its own line breaks
        return words.cut_note + words.close
    if words.close and not words.break_before_close:  # a token closes it, mid-line or not
        return words.close
    return joiner(thinking) + words.close


@dataclass(frozen=True)
class TwoPhase:
    """The two text completions of one call in ``template`` mode (`budgeted_answer`'s own).

    OpenAI's meaning of the client's `max_tokens` / `max_completion_tokens` is kept: it bounds
    the whole completion, thinking and answer (`CallArgs.limit`); the cap can only lower the
    thinking. The answer gets what the thinking left (`answer_room`); none left is an answer
    missing, flagged in the report, never an empty answer passed off as one. What the answer
    must be (text, JSON under a schema, a tool call) is `spec` (`cotplan.production.answer_phase`).
    """

    call: CallArgs

    @property
    def spec(self) -> AnswerSpec:
        return answer_spec(self.call.rest)

    @property
    def rendered(self) -> str:
        """The chat written out with the protocol's instruction (and the call's tools), the
        assistant turn open."""
        template = self.call.template
        assert template is not None  # template mode is chosen only with one
        messages = with_instruction(self.call.messages, self.call.words.instruction)
        return template.render(with_tools(messages, self.spec, template.default_system))

    @property
    def common(self) -> dict[str, Any]:
        """The arguments every text completion of the call carries."""
        passed = ("seed", "extra_body", "extra_headers", "timeout", "user")
        extra = {name: self.call.rest[name] for name in passed if name in self.call.rest}
        return {"model": self.call.model, "temperature": self.call.temperature, **extra}

    @property
    def thinking_room(self) -> int:
        """The first phase's `max_tokens`: the cap, or less where the client's limit is less."""
        limit = self.call.limit
        return self.call.cap.tokens if limit is None else min(self.call.cap.tokens, limit)

    def answer_room(self, thought: int) -> int:
        """The answer's `max_tokens` after `thought` thinking tokens (0: no room left)."""
        limit = self.call.limit
        if limit is None:
            return DEFAULT_ANSWER_TOKENS if self.spec.kind == "text" else JSON_ANSWER_TOKENS
        return max(limit - thought, 0)

    def thinking_request(self) -> dict[str, Any] | None:
        """The first phase's `completions.create` arguments; None at k = 0 (no thinking)."""
        if self.thinking_room == 0:
            return None
        assert self.call.template is not None
        words = self.call.words
        # A native thinker says it has finished by closing its thinking; it may write
        # "Answer:" inside its thoughts, so only the close ends the phase.
        return {
            "prompt": self.rendered + words.lead,
            "max_tokens": self.thinking_room,
            "stop": [words.thinking_stop, self.call.template.end],
            **self.common,
        }

    def cut(self, finish_reason: str | None) -> bool:
        """Whether the cap (not a client's limit below it) stopped the thinking."""
        return finish_reason == "length" and self.thinking_room == self.call.cap.tokens

    def thought(self, finish_reason: str | None, usage: Usage | None) -> int:
        """The thinking tokens the answer's room is reckoned after: all the room where the
        phase ran out of it, else the server's count."""
        if finish_reason == "length":
            return self.thinking_room
        return usage.completion_tokens if usage is not None else 0

    def answer_request(
        self, thinking: str, *, cut: bool, thought: int = 0
    ) -> dict[str, Any] | None:
        """The second phase's arguments, after `thinking` (`cut`: the cap stopped it) of
        `thought` tokens; None when the client's limit leaves the answer no room."""
        assert self.call.template is not None
        room = self.answer_room(thought)
        if room == 0:
            return None
        words = self.call.words
        if self.call.cap.tokens == 0:
            # A native thinker at k = 0 gets an empty thinking block, as Qwen3 writes one when
            # thinking is off (the same text `budgeted_answer` writes).
            empty = words.lead + words.close if words.close else ""
            prompt = self.rendered + empty + words.marker
        else:
            close = closing(words, thinking, cut=cut)
            prompt = self.rendered + words.lead + thinking + close + words.marker
        spec = self.spec
        # A text answer is the calibration's one line; JSON and tool calls end with their
        # schema, and may span lines.
        first = ["\n"] if spec.kind == "text" else []
        stop = [*first, self.call.template.end, *stop_list(self.call.rest.get("stop"))]
        common = self.common
        fields_ = spec.fields()
        logprobs = fields_.pop("logprobs", None)
        if fields_:  # the schema's fields are not the SDK's keyword arguments
            common["extra_body"] = {**(common.get("extra_body") or {}), **fields_}
        if logprobs is not None:
            common["logprobs"] = logprobs
        return {"prompt": prompt, "max_tokens": room, "stop": stop, **common}

    def report(
        self,
        thinking: Usage | None,
        answer: Usage | None,
        *,
        cut: bool,
        answered: bool = True,
        requests: int | None = None,
    ) -> CapReport:
        """The report from each phase's usage (None: that phase was not run or not finished
        and its tokens are unknown); `answered`: the answer phase wrote something (an empty
        answer, where the caller's max_tokens left no room, is flagged, not passed off)."""
        usages = [u for u in (thinking, answer) if u is not None]
        cost, cost_note = cost_of_requests(self.call.model, usages)
        if not answered:
            cost_note = "; ".join(
                p
                for p in (cost_note, "no answer: the completion ended (max_tokens) before it")
                if p
            )
        return CapReport(
            size=self.call.cap.n,
            cap=self.call.cap.tokens,
            basis=self.call.cap.basis,
            certified=self.call.cap.certified,
            mode="template",
            protocol=self.call.protocol,
            reasoning_tokens=thinking.completion_tokens if thinking is not None else 0,
            answer_tokens=answer.completion_tokens if answer is not None else 0,
            prompt_tokens=sum(u.prompt_tokens for u in usages),
            cap_bitten=cut,
            answer_forced=cut,
            cost_usd=cost,
            requests=len(usages) if requests is None else requests,
            note="; ".join(p for p in (self.call.note, cost_note) if p),
            answer_missing=not answered,
            usage_trusted=all(u.trusted for u in usages),
        )


@dataclass(frozen=True)
class OneRequest:
    """The chat request(s) of one call in ``hidden`` mode, for `provider`'s budget rule."""

    call: CallArgs
    provider: str

    @property
    def fields(self) -> BudgetParams:
        return budget_params(
            rule_for_model(self.provider, self.call.model),
            self.call.cap.tokens,
            answer_tokens=self.call.answer_tokens,
            model=self.call.model,
        )

    @property
    def _messages(self) -> list[Any]:  # the SDK types each message by role
        return with_instruction(self.call.messages, self.call.words.direct)

    @property
    def _rest(self) -> dict[str, Any]:
        rest = dict(self.call.rest)
        rest.pop("extra_body", None)
        if self.call.temperature != 0.0:
            rest["temperature"] = self.call.temperature  # reasoning models refuse it otherwise
        return rest

    def request(self) -> dict[str, Any]:
        """The `chat.completions.create` arguments of the capped request."""
        # The budget's fields go in the body as they are: the SDK's keyword arguments would
        # refuse a field its version does not know (Anthropic's `thinking`, for one).
        body = {**(self.call.rest.get("extra_body") or {}), **self.fields.params}
        return {
            "model": self.call.model,
            "messages": self._messages,
            "extra_body": body,
            **self._rest,
        }

    def retry_request(self) -> dict[str, Any]:
        """When the cap ran out inside the hidden reasoning, the thinking is lost: ask once
        more for the answer alone, with only the answer's room."""
        force = {"role": "user", "content": self.call.words.force}
        return {
            "model": self.call.model,
            "messages": [*self._messages, force],
            "extra_body": {self.fields.cap_parameter: self.call.answer_tokens},
            **self._rest,
        }

    def bitten(self, finish_reason: str | None, usage: Usage) -> bool:
        """Whether the cap stopped the first request's reasoning."""
        return (finish_reason or "") in LENGTH_FINISH_REASONS or (
            usage.reasoning_tokens >= self.fields.cap
        )

    def report(self, usages: Sequence[Usage], *, bitten: bool, forced: bool) -> CapReport:
        """The report from the usage of each request made."""
        fields_ = self.fields
        cost, cost_note = cost_of_requests(self.call.model, usages)
        return CapReport(
            size=self.call.cap.n,
            cap=self.call.cap.tokens,
            basis=self.call.cap.basis,
            certified=self.call.cap.certified,
            mode="hidden",
            protocol=self.call.protocol,
            reasoning_tokens=sum(u.reasoning_tokens for u in usages),
            answer_tokens=sum(u.completion_tokens - u.reasoning_tokens for u in usages),
            prompt_tokens=sum(u.prompt_tokens for u in usages),
            cap_bitten=bitten,
            answer_forced=forced,
            cost_usd=cost,
            requests=len(usages),
            note="; ".join(p for p in (self.call.note, *fields_.notes, cost_note) if p),
            usage_trusted=all(u.trusted for u in usages),
        )
