"""The ``server`` mode: the server caps the thinking itself, in the one request the client made.

llama.cpp (`thinking_budget_tokens`), vLLM (`thinking_token_budget`), SGLang with strict
thinking (`custom_params.thinking_budget`) and NVIDIA NIM (`nvext.max_thinking_tokens`) end a
model's visible thinking at a budget inside one chat request and let it answer after the
forced close (`cotplan.backends.server_rules`, the ``*-thinking`` rules). Where the upstream can
(`detect_server_cap`, or declared with ``provider=``), a capped call is that one request: the
client's own, every field passed on as it came (tools and `tool_choice`, `response_format`,
`logprobs`, `stop`, `seed`, `n`, `user`, `metadata`, `extra_body`, any field the server
knows), with one field added, the plan's cap k. Nothing else changes:

- `max_tokens` / `max_completion_tokens` stay the client's and bound the whole completion, as
  they always did: the cap can only lower the thinking.
- The reply is the server's, unchanged (its `content`, `tool_calls`, `logprobs`, every choice),
  with `usage.completion_tokens_details.reasoning_tokens` filled in where the server leaves it
  out (llama.cpp does: the thinking is then counted by the server's own tokenizer,
  ``POST /tokenize``, which generates nothing), and the `cotplan` report.
- A completion the client's `max_tokens` ended with no answer (no content, no tool call) is
  flagged in the report (`answer_missing`, with a note), never passed off as an answer.

Streamed, the server's chunks are passed on as they come, the last one carrying the report
(`cotplan.production.streaming`); the close marker a llama.cpp server leaks into a streamed
`content` (``</think>`` after a forced close, llama.cpp #28182) is dropped, as its unstreamed
reply drops it.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from openai.types.completion_usage import CompletionTokensDetails

from cotplan.backends.base import Usage
from cotplan.backends.budgets import resolve_rule, rule_for_model
from cotplan.backends.hosted_rules import BudgetRule
from cotplan.backends.parsing import reasoning_text
from cotplan.generate.prompts import CoTPrompt
from cotplan.production.calls import (
    CallArgs,
    CapReport,
    cost_of_requests,
    usage_of,
    with_instruction,
)

__all__ = [
    "CloseFilter",
    "ServerCap",
    "nested",
    "reasoning_of",
    "server_capped",
    "server_steps",
]


def server_capped(rule: BudgetRule) -> bool:
    """Whether `rule` is a server's own cap on visible thinking (a ``*-thinking`` rule)."""
    return rule.shape == "budget" and rule.covers == "reasoning"


def nested(dotted: str, value: object) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for ``"a.b"``: how a dotted rule field goes in a body."""
    head, _, rest = dotted.partition(".")
    return {head: nested(rest, value) if rest else value}


def merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `extra` merged in, nested objects merged rather than replaced (the client's
    own `nvext` or `custom_params` keep their other fields)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class ServerCap:
    """The one chat request of a call in ``server`` mode, for `provider`'s budget rule."""

    call: CallArgs
    provider: str

    @property
    def rule(self) -> BudgetRule:
        return resolve_rule(rule_for_model(self.provider, self.call.model), self.call.model)

    def request(self) -> dict[str, Any]:
        """The client's request with the cap added (see the module)."""
        rest = dict(self.call.rest)
        given = rest.pop("extra_body", None) or {}
        body = merged(given, nested(self.rule.parameter, self.call.cap.tokens))
        messages: list[Any] = list(self.call.messages)
        if self.call.words.instruction:  # the calibration's instruction (none for `think`)
            messages = with_instruction(self.call.messages, self.call.words.instruction)
        return {
            "model": self.call.model,
            "messages": messages,
            "temperature": self.call.temperature,
            **rest,
            "extra_body": body,
        }

    def report(
        self, usage: Usage, reasoning_tokens: int, *, answered: bool, counted: bool
    ) -> CapReport:
        """The report of the call: `reasoning_tokens` as the server reported them, or as
        counted (`counted`); `answered`: some choice holds an answer or a tool call."""
        cost, cost_note = cost_of_requests(self.call.model, [usage])
        notes = [self.call.note, cost_note]
        if counted:
            notes.append("reasoning tokens counted by the server's tokenizer (not in its usage)")
        if not answered:
            notes.append("no answer: the completion ended (max_tokens) before the model answered")
        k = self.call.cap.tokens
        return CapReport(
            size=self.call.cap.n,
            cap=k,
            basis=self.call.cap.basis,
            certified=self.call.cap.certified,
            mode="server",
            protocol=self.call.protocol,
            reasoning_tokens=reasoning_tokens,
            answer_tokens=max(usage.completion_tokens - reasoning_tokens, 0),
            prompt_tokens=usage.prompt_tokens,
            cap_bitten=reasoning_tokens >= k,
            answer_forced=reasoning_tokens >= k,
            cost_usd=cost,
            requests=1,
            note="; ".join(p for p in notes if p),
            answer_missing=not answered,
            usage_trusted=usage.trusted,
        )


class CloseFilter:
    """Drops a thinking close (``</think>``) and the whitespace after it from the start of a
    streamed `content`, where llama.cpp leaks it after a forced close; any other text passes
    unchanged (held back only while it could still be the start of the close)."""

    def __init__(self, close: str = "</think>") -> None:
        self.close = close
        self.held = ""
        self.closed = False  # the close was seen and dropped
        self.done = False  # the answer's text has begun: the rest passes as it comes

    def __call__(self, text: str) -> str:
        if self.done:
            return text
        self.held += text
        stripped = self.held.lstrip()
        if not self.closed:
            if len(stripped) < len(self.close) and self.close.startswith(stripped):
                return ""  # maybe the close, not yet whole
            if not stripped.startswith(self.close):
                self.done = True
                out, self.held = self.held, ""
                return out
            self.closed = True
            stripped = stripped.removeprefix(self.close).lstrip()
        self.held = ""
        if stripped:
            self.done = True
        return stripped

    def flush(self) -> str:
        """What is still held at the end of the stream (text that was not the close)."""
        out, self.held = ("" if self.closed else self.held), ""
        return out


def reported_reasoning(usage: object) -> int | None:
    """`usage.completion_tokens_details.reasoning_tokens` where the server reports it."""
    details = getattr(usage, "completion_tokens_details", None)
    value = getattr(details, "reasoning_tokens", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def reasoning_of(message: object) -> str:
    """The thinking a reply's message or a chunk's delta carries, wherever the server put it."""
    if message is None:
        return ""
    raw = message.model_dump(warnings=False) if hasattr(message, "model_dump") else message
    return reasoning_text(raw) if isinstance(raw, dict) else ""


def counted_reasoning(tokens: object, thinking: str, choices: int) -> int:
    """The reasoning tokens of `thinking` as the server's tokenizer counted them (`tokens`),
    plus the line break after each choice's open marker, which llama.cpp counts against the
    budget and leaves out of `reasoning_content`; from the length where it counted none."""
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        return tokens + choices
    return estimated_tokens(thinking)


def without_close(content: str, words: CoTPrompt) -> str:
    """`content` without a thinking close the server leaked before the answer (llama.cpp
    #28182, after a forced close): the rest is the model's answer, unchanged."""
    if not words.close:
        return content
    closer = CloseFilter(words.close.strip())
    return closer(content) + closer.flush()


def is_answer(content: str | None, words: CoTPrompt) -> bool:
    """Whether `content` holds an answer: not empty, and not only the start of a thinking
    marker the server had no room to finish (``<`` at max_tokens=1)."""
    text = (content or "").strip()
    if not text:
        return False
    markers = [m.strip() for m in (words.lead, words.close) if m.strip()]
    return not any(m.startswith(text) for m in markers)


def estimated_tokens(text: str) -> int:
    """A token count from the length alone (about 4 characters a token), where the server
    counts none: never 0 for text that is there."""
    return -(-len(text) // 4)


def server_steps(call: CallArgs, provider: str) -> Generator[tuple[str, dict[str, Any]], Any, Any]:
    """The unstreamed call in ``server`` mode as the wrapper's steps (`_Steps`): the one chat
    request, then, where the usage counts no reasoning, the thinking counted by the server's
    tokenizer."""
    one = ServerCap(call, provider)
    reply = yield ("chat", one.request())
    usage = usage_of(reply.usage)
    thinking = "".join(reasoning_of(choice.message) for choice in reply.choices)
    reasoning = reported_reasoning(reply.usage)
    counted = reasoning is None
    if reasoning is None:
        reasoning = 0
        if thinking:
            tokens = yield ("tokenize", {"content": thinking, "model": call.model})
            reasoning = counted_reasoning(tokens, thinking, len(reply.choices))
        if reply.usage is not None:
            details = CompletionTokensDetails(reasoning_tokens=reasoning)
            reply.usage.completion_tokens_details = details
    answered = False
    for choice in reply.choices:
        if choice.message.content:
            choice.message.content = without_close(choice.message.content, call.words)
        answered = answered or is_answer(choice.message.content, call.words)
        answered = answered or bool(choice.message.tool_calls)
    report = one.report(usage, reasoning, answered=answered, counted=counted and bool(thinking))
    setattr(reply, "cotplan", report.to_dict())  # noqa: B010 (an extra field, not declared)
    return reply, report
