"""What a capped call reports, and the checks and readings the wrapper makes on each call.

`CapReport` is what the cap did to one call; a capped reply carries it as its extra `cotplan`
field (a JSON-ready dict, so that it crosses `cotplan serve` unchanged) and `report_of` reads it
back. The rest are the small pieces `cotplan.production.wrapper` uses: a call's checked
arguments (`CallArgs`), the provider behind a client's address, the messages checked, the
protocol's instruction added as `budgeted_answer` adds it, the usage and list price of the
requests made, and the chat reply a written-out (template-mode) call assembles (`chat_reply`).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from openai.types.chat import ChatCompletion

from cotplan.backends.base import Usage
from cotplan.errors import InputError
from cotplan.generate.probing import ExitRule
from cotplan.generate.prompts import ChatTemplate, CoTPrompt
from cotplan.messages import Message
from cotplan.planner import SavedPlan
from cotplan.planner.records import PlanCap
from cotplan.tasks.item import AnswerKind

__all__ = [
    "DEFAULT_ANSWER_TOKENS",
    "TEMPLATE_ARGS",
    "ApplyMode",
    "CallArgs",
    "CapReport",
    "answer_room",
    "cap_at",
    "chat_reply",
    "check_chat",
    "check_messages",
    "choices_reply",
    "completion_limit",
    "cost_of_requests",
    "joiner",
    "largest_cap",
    "provider_of",
    "report_of",
    "stop_list",
    "usage_body",
    "usage_of",
    "with_instruction",
]

#: The answer's room when the call sets no `max_tokens`: `budgeted_answer`'s default, so that
#: the answer is generated as in the calibration.
DEFAULT_ANSWER_TOKENS = 16

#: How a call is capped: two-phase budget forcing, or the provider's own cap in one request.
ApplyMode = Literal["template", "hidden", "server"]

#: Hosts of the hosted APIs whose budget rules differ from a plain output cap; any other
#: address is an OpenAI-compatible server (vLLM, llama.cpp, SGLang ...).
_HOSTS: dict[str, str] = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "google",
    "api.deepseek.com": "deepseek",
    "api.x.ai": "xai",
    "openrouter.ai": "openrouter",
}


#: Arguments of `create` that two-phase forcing honours; any other is refused there (naming
#: it), since it could not be applied to text completions as the caller meant it.
TEMPLATE_ARGS = frozenset(
    {
        "temperature",
        "seed",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "extra_body",
        "extra_headers",
        "timeout",
        "user",
        # The caller's own labels (OpenAI's stored-completion metadata): read here for a size,
        # not forwarded, since text completions take none.
        "metadata",
        "stream",
        "stream_options",
        "n",
        # What the answer must be (`cotplan.production.answer_phase`): the answer phase
        # carries it.
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "logprobs",
        "top_logprobs",
    }
)


@dataclass(frozen=True)
class CallArgs:
    """One call's arguments, checked (by `CappedClient`): what its steps need."""

    model: str
    messages: list[Message]
    cap: PlanCap
    mode: ApplyMode
    protocol: str
    words: CoTPrompt
    template: ChatTemplate | None
    answer_tokens: int
    temperature: float
    rest: dict[str, Any]
    note: str
    #: Streamed (`stream=True`), and whether the caller asked for the usage chunk at the end.
    stream: bool = False
    include_usage: bool = False
    #: The certified early exit at this size (`capped(..., exit="certified")`; None: the fixed
    #: cap), whether the backend bills probing's prompts again, and how its answers are read.
    exit_rule: ExitRule | None = None
    bill_prompt: bool = False
    answer_kind: AnswerKind = "text"
    #: The call's tags as the log keeps them (`cotplan.production.tags.encode_tags`).
    tags: str = ""
    #: The client's `max_tokens` / `max_completion_tokens` (None: none given). In two-phase
    #: mode it bounds thinking and answer together, as it bounds a whole completion.
    limit: int | None = None


@dataclass(frozen=True)
class CapReport:
    """What the cap did to one call (the reply's `cotplan` field; see `report_of`).

    `cap` is the reasoning cap k applied for `size` and `basis` what backs it (`PlanCap`);
    `mode` is ``template`` (two-phase) or ``hidden`` (one request); `reasoning_tokens`,
    `answer_tokens` and `prompt_tokens` come from the usage of every request made (`requests`);
    `cap_bitten`: the cap stopped the reasoning; `answer_forced`: the answer was asked for
    after such a cut; `cost_usd`: list price (NaN, with `note`, when the model has no price
    or the counts are unknown); `usage_trusted`: False when any request's counts are unknown.

    Under the certified early exit (`capped(..., exit="certified")`) `exit_rule` names the rule
    ("" for a call under the fixed cap), `stopped_by` says what stopped the thinking ("rule",
    "ended": the model closed it, "ceiling": the cap), `stop_k` at how many thinking tokens,
    and `probes` how many answers were probed. `probe_tokens` is what probing added to the
    counts above: the answer tokens of every probe before the one that became the answer (in
    `reasoning_tokens`) and, where the exit plan bills them (`bill_prompt`), the prompts it
    sent again (in `prompt_tokens`); `probe_prompt_tokens` are those prompts, billed or not.
    """

    size: float
    cap: int
    basis: str
    certified: bool
    mode: str
    protocol: str
    reasoning_tokens: int
    answer_tokens: int
    prompt_tokens: int
    cap_bitten: bool
    answer_forced: bool
    cost_usd: float
    requests: int
    note: str = ""
    exit_rule: str = ""
    stopped_by: str = ""
    stop_k: int | None = None
    probes: int = 0
    probe_tokens: int = 0
    probe_prompt_tokens: int = 0
    #: The completion ended (the client's `max_tokens`) before any answer: the reply's empty
    #: content is not an answer.
    answer_missing: bool = False
    #: False when a request's token counts are no measurement (the upstream sent no usage,
    #: or counts that cannot be right: `cotplan.backends.parsing.read_usage`): the three
    #: counts above are then placeholders, unknown, and the call log stores them as NULL.
    usage_trusted: bool = True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (null for a missing cost). Every field is a plain value, so no
        deep copy (`asdict`'s) is needed: this runs for every reply."""
        out = {name: getattr(self, name) for name in _REPORT_FIELDS}
        out["cost_usd"] = None if math.isnan(self.cost_usd) else self.cost_usd
        return out


_REPORT_FIELDS = tuple(f.name for f in fields(CapReport))


def report_of(reply: Any) -> CapReport:
    """The `CapReport` of a reply from a capped client or from `cotplan serve`."""
    extra = getattr(reply, "model_extra", None) or {}
    raw = extra.get("cotplan") if isinstance(extra, dict) else None
    if not isinstance(raw, Mapping):
        raise InputError("carries no `cotplan` field: not a capped reply", field="reply")
    names = {f.name for f in fields(CapReport)}
    values = {k: v for k, v in raw.items() if k in names}
    if values.get("cost_usd") is None:
        values["cost_usd"] = math.nan
    try:
        return CapReport(**values)
    except TypeError as exc:
        raise InputError(f"holds an incomplete `cotplan` field: {exc}", field="reply") from exc


def usage_body(report: CapReport) -> dict[str, Any]:
    """A capped reply's `usage` (every request's tokens, the reasoning among the completion's)."""
    completion = report.reasoning_tokens + report.answer_tokens
    return {
        "prompt_tokens": report.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": report.prompt_tokens + completion,
        "completion_tokens_details": {"reasoning_tokens": report.reasoning_tokens},
    }


def chat_reply(
    call: CallArgs, *, content: str, reasoning: str, finish_reason: str | None, report: CapReport
) -> ChatCompletion:
    """The chat completion a written-out call answers with: the answer as `content`, the
    thinking as `reasoning_content` (as llama.cpp's and DeepSeek's parsers return it), the usage
    of every request and the `cotplan` report."""
    return ChatCompletion.model_validate(
        {
            "id": f"chatcmpl-cotplan-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": call.model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish_reason or "stop",
                    "message": {
                        "role": "assistant",
                        "content": content.strip(),
                        "reasoning_content": reasoning,
                    },
                }
            ],
            "usage": usage_body(report),
            "cotplan": report.to_dict(),
        }
    )


def choices_reply(
    call: CallArgs, choices: Sequence[Mapping[str, Any]], report: CapReport
) -> ChatCompletion:
    """The chat completion of a two-phase call from its `choices` (each a chat choice's
    fields: `message`, `finish_reason`, `logprobs`), with the usage and the report."""
    return ChatCompletion.model_validate(
        {
            "id": f"chatcmpl-cotplan-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": call.model,
            "choices": [{"index": i, **choice} for i, choice in enumerate(choices)],
            "usage": usage_body(report),
            "cotplan": report.to_dict(),
        }
    )


def provider_of(base_url: object) -> str:
    """The provider behind a client's `base_url`, for its budget rule: a hosted API by its host
    (`_HOSTS`), else ``openai-compatible``."""
    host = urlsplit(str(base_url)).hostname or ""
    return _HOSTS.get(host.lower(), "openai-compatible")


# -- arguments and usage --------------------------------------------------------------------


def check_messages(messages: object) -> list[Message]:
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise InputError("must be a non-empty list of chat messages", field="messages")
    out: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise InputError(f"message {i} must be a dict with a `role`", field="messages")
        content = message.get("content")
        if not isinstance(content, str):
            # Parts (images, audio) cannot be written out as template text.
            raise InputError(
                f"message {i} must have text `content`, got {type(content).__name__}",
                field="messages",
            )
        out.append({"role": message["role"], "content": content})
    return out


def check_chat(messages: object) -> list[Message]:
    """`messages` as the client sent them, checked only for what the server mode reads (a
    non-empty list of dicts with a `role`): tool turns and content parts pass unchanged."""
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise InputError("must be a non-empty list of chat messages", field="messages")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise InputError(f"message {i} must be a dict with a `role`", field="messages")
    return [dict(message) for message in messages]


def with_instruction(messages: list[Message], text: str) -> list[Message]:
    """`messages` with `text` added to the last user message, as `budgeted_answer` writes its
    item's prompt (nothing added when `text` is empty)."""
    out: list[Message] = [dict(m) for m in messages]
    if not text:
        return out
    for message in reversed(out):
        if message["role"] == "user":
            message["content"] = f"{message['content']}\n{text}"
            return out
    return [*out, {"role": "user", "content": text}]


def joiner(text: str) -> str:
    """Nothing after whitespace (where the model itself stopped), else a line break."""
    return "" if not text or text[-1].isspace() else "\n"


def stop_list(stop: object) -> list[str]:
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, Sequence) and all(isinstance(s, str) for s in stop):
        return list(stop)
    raise InputError(f"must be a string or a list of strings, got {stop!r}", field="stop")


def completion_limit(args: dict[str, Any]) -> int | None:
    """The client's `max_tokens` / `max_completion_tokens`, popped from `args` and checked;
    None where it sets neither."""
    names = ("max_tokens", "max_completion_tokens")
    popped = {name: args.pop(name) for name in names if name in args}
    given = {name: value for name, value in popped.items() if value is not None}
    if not given:
        return None
    name, value = next(iter(given.items()))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"must be a whole number ≥ 1, got {value!r}", field=name)
    return value


def answer_room(args: dict[str, Any]) -> int:
    """`completion_limit`, or `DEFAULT_ANSWER_TOKENS` where the client sets none."""
    limit = completion_limit(args)
    return DEFAULT_ANSWER_TOKENS if limit is None else limit


def usage_of(raw: Any) -> Usage:
    """The reply's usage read with the backends' rules: missing or impossible counts make it
    untrusted (costed as unknown, never as free)."""
    from cotplan.backends.parsing import read_usage

    if raw is not None and hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    usage, _ = read_usage(raw)
    return usage


def cost_of_requests(model: str, usages: Sequence[Usage]) -> tuple[float, str]:
    """List price of the requests (NaN and a note when the model has no price, or a request's
    usage cannot be trusted)."""
    # What `cotplan.generate.call_cost.recorded_cost` prices, with the model's row looked up
    # once a day rather than on every call (`call_prices`).
    from cotplan.pricing.cost import unit_price
    from cotplan.production.call_prices import price_row

    total = 0.0
    for usage in usages:
        if not usage.trusted:
            return (
                math.nan,
                "usage not trusted: the server's token counts are missing or impossible",
            )
        try:
            cost = unit_price(
                price_row(model),
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                cached_tokens=usage.cached_tokens,
                cache_write_tokens=0,
                batch=False,
                reasoning_in_completion=True,
            )
        except InputError as exc:  # unknown model, or no price in effect today
            return math.nan, f"no price for {model}: {exc}"
        total += float(cost.usd)
    return total, ""


#: What a call without a size, or with one beyond the plan's reach, gets: the plan's largest
#: certified cap (``largest``: the hardest size's, so never less thinking than any calibrated
#: size was certified with) or a refusal (``refuse``).
SizePolicy = Literal["largest", "refuse"]
SIZE_POLICIES: tuple[str, ...] = ("largest", "refuse")

#: Where a call's metadata may carry its size (OpenAI metadata values are strings).
METADATA_SIZE = "cotplan_size"


def largest_cap(plan: SavedPlan, why: str) -> PlanCap:
    """The plan's largest cap over its calibrated sizes, certified ones first, with a note
    saying `why` it applies."""
    caps: list[PlanCap] = []
    # A file with no law lists its sizes only in its budgets.
    for n in plan.calibrated_sizes or sorted({budget.n for budget in plan.budgets}):
        try:
            caps.append(plan.cap(n))
        except InputError:
            continue
    if not caps:
        raise InputError(f"{why}, and the plan has no size to fall back on", field="size")
    chosen = max([c for c in caps if c.certified] or caps, key=lambda c: c.tokens)
    kind = "certified cap" if chosen.certified else "cap"
    note = f"{why}: the plan's largest {kind} (n = {chosen.n:g}) applies"
    return replace(chosen, note="; ".join(p for p in (note, chosen.note) if p))


def cap_at(plan: SavedPlan, size: float | None, policy: str = "refuse") -> PlanCap:
    """`plan.cap(size)`, its refusals naming the call's `size` rather than the plan's `n`;
    with `policy` ``largest``, a call without a size gets the plan's pooled cap (certified on
    every size's items pooled, `SavedPlan.pooled_cap`; its `n` is 0) where the plan holds one,
    and a call without one, or beyond the plan's reach, the largest certified cap
    (`largest_cap`), each with a note."""
    if size is None:
        pooled = plan.pooled_cap() if policy == "largest" else None
        if pooled is not None:  # certified for the calibration's mix of sizes
            return replace(pooled, note=f"no size given: {pooled.note}")
        if policy == "largest":
            return largest_cap(plan, "no size given")
        raise InputError(
            "give the item size n of each call (`size=`), or a size function to `capped`",
            field="size",
        )
    try:
        return plan.cap(size)
    except InputError as exc:
        if exc.field != "n":  # ε unattainable at this size: the plan's own field
            raise
        if policy == "largest":
            return largest_cap(plan, f"the plan has no cap for size {size:g} (beyond its reach)")
        raise InputError(str(exc).removeprefix("`n`: "), field="size") from exc
