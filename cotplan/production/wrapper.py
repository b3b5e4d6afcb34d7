"""A team's own OpenAI client, with a plan's reasoning cap applied to every chat completion.

    import openai, cotplan
    client = cotplan.capped(openai.OpenAI(base_url="http://127.0.0.1:8080/v1"), "plan.json")
    reply = client.chat.completions.create(model=MODEL, messages=[...], size=8)
    reply.choices[0].message.content          # the answer
    cotplan.production.report_of(reply)       # the cap, the tokens, whether it bit

`capped(client, plan)` returns an object that answers `.chat.completions.create(...)` like the
client does (the same arguments and a `ChatCompletion` back), plus `size=`: the item size n
whose cap the plan gives (`SavedPlan.cap(n)`). Everything else (`.models`, `.completions`, ...)
is the client's own. An `openai.AsyncOpenAI` client gives an `AsyncCappedClient`, whose
`create` is awaited; both run the same steps (`_Steps`), only the sending differs.

How the cap is applied depends on how the model thinks (`mode`, chosen once per call):

- ``template`` (two-phase budget forcing): a model whose thinking is written out as text, on a
  server that takes text completions (llama.cpp, vLLM, the embedded model). The chat is written
  out with the model's template (`cotplan.generate.prompts.template_for`) and the protocol's
  words (`cotplan.generate.protocols`), the thinking is generated under the cap k with
  `client.completions.create`, closed the protocol's way (a cut thought is closed before the
  answer, as `budgeted_answer` does), and the answer generated after it. These are the very
  requests `budgeted_answer` makes, so the answer is the one the calibration measured. The reply's
  `message.content` is the answer and `message.reasoning_content` the thinking, as llama.cpp's
  and DeepSeek's reasoning parsers return it.
- ``hidden``: a provider that caps hidden reasoning itself (OpenAI's o-series, Claude): one chat
  request with the budget rule's fields (`cotplan.backends.budgets.budget_params`); when the cap
  left no answer, one more request asks for the answer alone (as `budgeted_answer` does).

Every reply carries what happened in an extra top-level field `cotplan` (a dict, so it also
travels as JSON through `cotplan serve`; `report_of(reply)` reads it back as a `CapReport`);
the usual fields keep their meaning, with the reasoning tokens in
`usage.completion_tokens_details.reasoning_tokens`. Each call is appended to the call log
(`cotplan.production.log`).

The prompt. A cap is certified for the prompt the calibration used, so the protocol's
instruction (for ``plain``: "Think step by step, then give the final answer after "Answer:"")
is added to the last user message here too, and generation is greedy (temperature 0) unless the
call sets a temperature. `max_tokens` / `max_completion_tokens` cap the answer; the plan caps
the thinking.

Errors. Arguments this wrapper checks raise cotplan's `InputError` naming the field. Errors of
the upstream itself are the client's own (`openai.APIStatusError` and the like), unchanged:
code written against the client already handles them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

import openai
from openai.types.chat import ChatCompletion

from cotplan.backends.budgets import LENGTH_FINISH_REASONS, budget_params, rule_for_model
from cotplan.errors import InputError
from cotplan.generate.prompts import CoTPrompt, template_for
from cotplan.generate.protocols import resolve_protocol
from cotplan.messages import Message
from cotplan.planner import SavedPlan
from cotplan.planner.binding import check_plan_model, check_plan_protocol
from cotplan.production.calls import (
    TEMPLATE_ARGS,
    ApplyMode,
    CallArgs,
    CapReport,
    answer_room,
    cap_at,
    check_messages,
    cost_of_requests,
    joiner,
    provider_of,
    report_of,
    stop_list,
    usage_of,
    with_instruction,
)
from cotplan.production.log import CallLog, LogRecord

__all__ = [
    "AsyncCappedClient",
    "CapReport",
    "CappedClient",
    "SizeFunction",
    "capped",
    "provider_of",
    "report_of",
]

#: A function giving the item size n of a call from its messages.
SizeFunction = Callable[[Sequence[Mapping[str, Any]]], float]

#: A capped call as the requests it makes: the generator yields (endpoint, arguments) for each
#: request, is sent the client's response, and returns the reply and its report. One body of
#: logic thus serves the sync client and the async one, which differ only in how they send.
_Steps = Generator[tuple[str, dict[str, Any]], Any, tuple[ChatCompletion, CapReport]]


class _Completions:
    def __init__(self, owner: CappedClient) -> None:
        self._owner = owner

    def create(self, **kwargs: Any) -> ChatCompletion:
        """`client.chat.completions.create(...)` with the plan's cap (see the module)."""
        client = self._owner.client
        steps = self._owner._steps(kwargs)
        try:
            endpoint, arguments = next(steps)
            while True:
                if endpoint == "completions":
                    response: Any = client.completions.create(**arguments)
                else:
                    response = client.chat.completions.create(**arguments)
                endpoint, arguments = steps.send(response)
        except StopIteration as done:
            reply: ChatCompletion = done.value[0]
            return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.client.chat.completions, name)


class _AsyncCompletions:
    def __init__(self, owner: AsyncCappedClient) -> None:
        self._owner = owner

    async def create(self, **kwargs: Any) -> ChatCompletion:
        """`await client.chat.completions.create(...)` with the plan's cap (see the module).
        The call log is written in the event loop's thread: one short SQLite insert."""
        client = self._owner.client
        steps = self._owner._steps(kwargs)
        try:
            endpoint, arguments = next(steps)
            while True:
                if endpoint == "completions":
                    response: Any = await client.completions.create(**arguments)
                else:
                    response = await client.chat.completions.create(**arguments)
                endpoint, arguments = steps.send(response)
        except StopIteration as done:
            reply: ChatCompletion = done.value[0]
            return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.client.chat.completions, name)


_Kind = TypeVar("_Kind", _Completions, _AsyncCompletions)


class _Chat(Generic[_Kind]):
    def __init__(self, owner: _Capper, completions: _Kind) -> None:
        self.completions: _Kind = completions
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.client.chat, name)


class _Capper:
    """What the sync and async capped clients share: the plan, the checks, the steps."""

    client: openai.OpenAI | openai.AsyncOpenAI

    def __init__(
        self,
        plan: SavedPlan,
        *,
        size: float | SizeFunction | None,
        allow_other_model: bool,
        protocol: str,
        provider: str | None,
        log: CallLog | None,
        via: str,
    ) -> None:
        self.plan = plan
        self.size = size
        self.allow_other_model = allow_other_model
        self.protocol = protocol
        self.provider = provider or provider_of(self.client.base_url)
        self.log = log
        self.via = via

    def __repr__(self) -> str:
        url = str(self.client.base_url)
        return f"{type(self).__name__}(base_url={url!r}, eps={self.plan.eps:g})"

    def __getattr__(self, name: str) -> Any:
        # Only names not found on the capped client reach here; `client` itself missing (a
        # half-built or unpickled object) must fail plainly, not recurse.
        if name == "client":
            raise AttributeError(name)
        return getattr(self.client, name)

    # -- one call ---------------------------------------------------------------------------

    def _steps(self, kwargs: dict[str, Any]) -> _Steps:
        """The call as a generator of requests (see `_Steps`); logs the call at its end."""
        call = self._check(kwargs)
        steps = self._two_phase(call) if call.mode == "template" else self._one_request(call)
        reply, report = yield from steps
        if self.log is not None:
            self.log.append(
                LogRecord(
                    time=datetime.now(UTC).isoformat(timespec="seconds"),
                    model=call.model,
                    size=report.size,
                    cap=report.cap,
                    basis=report.basis,
                    mode=report.mode,
                    reasoning_tokens=report.reasoning_tokens,
                    answer_tokens=report.answer_tokens,
                    prompt_tokens=report.prompt_tokens,
                    cap_bitten=report.cap_bitten,
                    answer_forced=report.answer_forced,
                    cost_usd=report.cost_usd,
                    via=self.via,
                    call_id=str(reply.id),
                )
            )
        return reply, report

    def _check(self, kwargs: dict[str, Any]) -> CallArgs:
        args = dict(kwargs)
        model = args.pop("model", None)
        if not isinstance(model, str) or not model:
            raise InputError(f"must be a model name, got {model!r}", field="model")
        messages = check_messages(args.pop("messages", None))
        try:
            note = check_plan_model(self.plan, model, allow_other_model=self.allow_other_model)
        except InputError as exc:
            # The planner names the CLI's `backend`; here the call's `model` is what is wrong.
            raise InputError(
                f"the plan was made for model {self.plan.model!r}, not {model!r}: calibrate "
                "this one, or pass allow_other_model=True (`cotplan serve "
                "--allow-other-model`); its caps are not certified for another model",
                field="model",
            ) from exc
        protocol, words = resolve_protocol(model, self.protocol)
        # The cap counts thinking written one way; another protocol's thinking is not certified.
        protocol_note = check_plan_protocol(
            self.plan, protocol, allow_other_model=self.allow_other_model
        )
        size = self._size(args.pop("size", None), messages)
        cap = cap_at(self.plan, size)
        mode = self._mode(model)
        if args.get("stream"):
            raise InputError(
                "streaming is not supported by the capped client yet: call without stream",
                field="stream",
            )
        if args.get("n") not in (None, 1):
            raise InputError(f"must be 1 (one answer per call), got {args['n']!r}", field="n")
        args.pop("stream", None)
        args.pop("n", None)
        if mode == "template":
            unknown = sorted(set(args) - TEMPLATE_ARGS)
            if unknown:
                raise InputError(
                    "two-phase budget forcing writes the chat out as text and cannot apply it; "
                    "remove it or call the client itself",
                    field=unknown[0],
                )
            stop_list(args.get("stop"))  # checked before the first request, not after
        answer_tokens = answer_room(args)
        temperature = args.pop("temperature", None)
        temperature = 0.0 if temperature is None else temperature
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise InputError(f"must be a number, got {temperature!r}", field="temperature")
        return CallArgs(
            model=model,
            messages=messages,
            cap=cap,
            mode=mode,
            protocol=protocol,
            words=words,
            template=template_for(model) if mode == "template" else None,
            answer_tokens=answer_tokens,
            temperature=float(temperature),
            rest=args,
            note="; ".join(part for part in (note, protocol_note, cap.note) if part),
        )

    def _size(self, given: object, messages: list[Message]) -> float:
        size: object = given if given is not None else self.size
        if callable(size):
            size = size(messages)
        if size is None:
            raise InputError(
                "give the item size n of each call (`size=`), or a size function to `capped`",
                field="size",
            )
        if isinstance(size, bool) or not isinstance(size, int | float) or not size > 0:
            raise InputError(f"must be a positive number, got {size!r}", field="size")
        return float(size)

    def _mode(self, model: str) -> ApplyMode:
        rule = rule_for_model(self.provider, model)
        if rule.covers == "reasoning+output":
            return "hidden"
        if template_for(model) is not None and self.provider == "openai-compatible":
            return "template"
        raise InputError(
            f"cannot cap {model!r} at {self.provider}: its thinking is neither capped by the "
            "provider nor written with a chat template cotplan knows (see "
            "cotplan.model_registry)",
            field="model",
        )

    # -- template mode: the two phases of `budgeted_answer`, through the client ---------------

    def _two_phase(self, call: CallArgs) -> _Steps:
        assert call.template is not None
        words, template = call.words, call.template
        rendered = template.render(with_instruction(call.messages, words.instruction))
        k = call.cap.tokens
        passed = ("seed", "extra_body", "extra_headers", "timeout", "user")
        extra: dict[str, Any] = {name: call.rest[name] for name in passed if name in call.rest}
        common: dict[str, Any] = {"model": call.model, "temperature": call.temperature, **extra}
        requests: list[Any] = []
        thinking = ""
        cut = False
        if k == 0:
            # A native thinker at k = 0 gets an empty thinking block, as Qwen3 writes one when
            # thinking is off (the same text `budgeted_answer` writes).
            empty = words.lead + words.close if words.close else ""
            answer_prompt = rendered + empty + words.marker
        else:
            # A native thinker says it has finished by closing its thinking; it may write
            # "Answer:" inside its thoughts, so only the close ends the phase.
            stops = [words.thinking_stop]
            first = yield (
                "completions",
                {
                    "prompt": rendered + words.lead,
                    "max_tokens": k,
                    "stop": [*stops, template.end],
                    **common,
                },
            )
            requests.append(first)
            choice = first.choices[0]
            thinking = choice.text
            cut = choice.finish_reason == "length"
            closing = _closing(words, thinking, cut=cut)
            answer_prompt = rendered + words.lead + thinking + closing + words.marker
        user_stop = call.rest.get("stop")
        stop = ["\n", template.end, *stop_list(user_stop)]
        second = yield (
            "completions",
            {"prompt": answer_prompt, "max_tokens": call.answer_tokens, "stop": stop, **common},
        )
        requests.append(second)
        usage = [usage_of(r.usage) for r in requests]
        reasoning_tokens = usage[0].completion_tokens if k > 0 else 0
        answer_tokens = usage[-1].completion_tokens
        prompt_tokens = sum(u.prompt_tokens for u in usage)
        cost, cost_note = cost_of_requests(call.model, usage)
        report = CapReport(
            size=call.cap.n,
            cap=k,
            basis=call.cap.basis,
            certified=call.cap.certified,
            mode="template",
            protocol=call.protocol,
            reasoning_tokens=reasoning_tokens,
            answer_tokens=answer_tokens,
            prompt_tokens=prompt_tokens,
            cap_bitten=cut,
            answer_forced=cut,
            cost_usd=cost,
            requests=len(requests),
            note="; ".join(p for p in (call.note, cost_note) if p),
        )
        answer_choice = second.choices[0]
        reply = ChatCompletion.model_validate(
            {
                "id": f"chatcmpl-cotplan-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": call.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": answer_choice.finish_reason or "stop",
                        "message": {
                            "role": "assistant",
                            "content": answer_choice.text.strip(),
                            "reasoning_content": thinking,
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": reasoning_tokens + answer_tokens,
                    "total_tokens": prompt_tokens + reasoning_tokens + answer_tokens,
                    "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
                },
                "cotplan": report.to_dict(),
            }
        )
        return reply, report

    # -- hidden mode: the provider's own cap, in one request ----------------------------------

    def _one_request(self, call: CallArgs) -> _Steps:
        k = call.cap.tokens
        fields_ = budget_params(
            rule_for_model(self.provider, call.model),
            k,
            answer_tokens=call.answer_tokens,
            model=call.model,
        )
        # The SDK types each message by role; these were checked by `check_messages`.
        messages: list[Any] = with_instruction(call.messages, call.words.direct)
        rest = dict(call.rest)
        # The budget's fields go in the body as they are: the SDK's keyword arguments would
        # refuse a field its version does not know (Anthropic's `thinking`, for one).
        body = {**(rest.pop("extra_body", None) or {}), **fields_.params}
        if call.temperature != 0.0:
            rest["temperature"] = call.temperature  # reasoning models refuse it otherwise
        reply = yield (
            "chat",
            {"model": call.model, "messages": messages, "extra_body": body, **rest},
        )
        usages = [usage_of(reply.usage)]
        hidden = usages[0].reasoning_tokens
        choice = reply.choices[0]
        bitten = (choice.finish_reason or "") in LENGTH_FINISH_REASONS or hidden >= fields_.cap
        forced = False
        if not (choice.message.content or "").strip():
            # The cap ran out inside the hidden reasoning: the thinking is lost, so ask once
            # more for the answer alone, with only the answer's room.
            retry = yield (
                "chat",
                {
                    "model": call.model,
                    "messages": [*messages, {"role": "user", "content": call.words.force}],
                    "extra_body": {fields_.cap_parameter: call.answer_tokens},
                    **rest,
                },
            )
            usages.append(usage_of(retry.usage))
            hidden += usages[-1].reasoning_tokens
            reply, forced, bitten = retry, True, True
        cost, cost_note = cost_of_requests(call.model, usages)
        report = CapReport(
            size=call.cap.n,
            cap=k,
            basis=call.cap.basis,
            certified=call.cap.certified,
            mode="hidden",
            protocol=call.protocol,
            reasoning_tokens=hidden,
            answer_tokens=sum(u.completion_tokens - u.reasoning_tokens for u in usages),
            prompt_tokens=sum(u.prompt_tokens for u in usages),
            cap_bitten=bitten,
            answer_forced=forced,
            cost_usd=cost,
            requests=len(usages),
            note="; ".join(p for p in (call.note, *fields_.notes, cost_note) if p),
        )
        setattr(reply, "cotplan", report.to_dict())  # noqa: B010 (an extra field, not declared)
        return reply, report


def _closing(words: CoTPrompt, thinking: str, *, cut: bool) -> str:
    """What closes the thinking before the marker, as `budgeted_answer` closes it."""
    if cut and words.cut_note:  # Qwen's sentence brings its own line breaks
        return words.cut_note + words.close
    if words.close and not words.break_before_close:  # a token closes it, mid-line or not
        return words.close
    return joiner(thinking) + words.close


class CappedClient(_Capper):
    """An `openai.OpenAI` client whose chat completions keep to a plan's reasoning cap (built
    by `capped`; see the module docstring). Attributes other than `chat` are the client's."""

    client: openai.OpenAI

    def __init__(self, client: openai.OpenAI, plan: SavedPlan, **options: Any) -> None:
        self.client = client
        super().__init__(plan, **options)
        self.chat = _Chat(self, _Completions(self))


class AsyncCappedClient(_Capper):
    """The same for an `openai.AsyncOpenAI` client: `await client.chat.completions.create(...)`."""

    client: openai.AsyncOpenAI

    def __init__(self, client: openai.AsyncOpenAI, plan: SavedPlan, **options: Any) -> None:
        self.client = client
        super().__init__(plan, **options)
        self.chat = _Chat(self, _AsyncCompletions(self))


@overload
def capped(
    client: openai.OpenAI,
    plan: SavedPlan | str | Path,
    *,
    size: float | SizeFunction | None = ...,
    allow_other_model: bool = ...,
    protocol: str = ...,
    provider: str | None = ...,
    log: CallLog | str | Path | Literal[False] | None = ...,
    via: str = ...,
) -> CappedClient: ...


@overload
def capped(
    client: openai.AsyncOpenAI,
    plan: SavedPlan | str | Path,
    *,
    size: float | SizeFunction | None = ...,
    allow_other_model: bool = ...,
    protocol: str = ...,
    provider: str | None = ...,
    log: CallLog | str | Path | Literal[False] | None = ...,
    via: str = ...,
) -> AsyncCappedClient: ...


def capped(
    client: openai.OpenAI | openai.AsyncOpenAI,
    plan: SavedPlan | str | Path,
    *,
    size: float | SizeFunction | None = None,
    allow_other_model: bool = False,
    protocol: str = "auto",
    provider: str | None = None,
    log: CallLog | str | Path | Literal[False] | None = None,
    via: str = "wrapper",
) -> CappedClient | AsyncCappedClient:
    """`client` with `plan`'s reasoning cap applied to each chat completion (see the module).

    `plan` is a `SavedPlan` or the path of a plan.json. `size` is the item size n of every call,
    or a function of a call's messages giving it; a call's own `size=` wins. A call for a model
    the plan was not made for is refused unless `allow_other_model`. `protocol` overrides the
    model registry's reasoning protocol (`cotplan.generate.protocols`); `provider` the one read
    from the client's `base_url` (`provider_of`). `log` is the call log (a `CallLog` or a path;
    None: the default file, `cotplan.production.log.default_log_path`; False: no log).
    An `openai.AsyncOpenAI` client gives an `AsyncCappedClient`, whose `create` is awaited.
    """
    if not isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
        raise InputError(
            f"must be an openai.OpenAI or AsyncOpenAI client, got {type(client).__name__}",
            field="client",
        )
    if isinstance(plan, str | Path):
        plan = SavedPlan.load(Path(plan))
    if not isinstance(plan, SavedPlan):
        raise InputError(f"must be a SavedPlan or a path, got {type(plan).__name__}", field="plan")
    if (
        size is not None
        and not callable(size)
        and (isinstance(size, bool) or not isinstance(size, int | float) or not size > 0)
    ):
        raise InputError(f"must be a positive number or a function, got {size!r}", field="size")
    resolve_protocol("", protocol)  # an unknown name fails here, not at the first call
    if provider is not None:
        rule_for_model(provider, "")  # likewise
    call_log: CallLog | None
    if log is False:
        call_log = None
    elif log is None or isinstance(log, str | Path):
        call_log = CallLog(log)
    elif isinstance(log, CallLog):
        call_log = log
    else:
        raise InputError(f"must be a CallLog, a path, None or False, got {log!r}", field="log")
    options: dict[str, Any] = {
        "size": size,
        "allow_other_model": allow_other_model,
        "protocol": protocol,
        "provider": provider,
        "log": call_log,
        "via": via,
    }
    if isinstance(client, openai.AsyncOpenAI):
        return AsyncCappedClient(client, plan, **options)
    return CappedClient(client, plan, **options)
