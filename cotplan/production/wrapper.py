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
  `message.content` is the model's answer as it reads after its thinking (``Answer: 13``: the
  marker the forcing wrote for it, then its words) and `message.reasoning_content` the
  thinking, as llama.cpp's and DeepSeek's reasoning parsers return it. What the client asks of
  the answer, the answer phase carries (`cotplan.production.answer_phase`): a JSON schema or
  JSON mode under the server's grammar, tools as a tool call (`message.tool_calls`), logprobs
  of the answer; `n > 1` runs both phases n times.
- ``hidden``: a provider that caps hidden reasoning itself (OpenAI's o-series, Claude): one chat
  request with the budget rule's fields (`cotplan.backends.budgets.budget_params`); when the cap
  left no answer, one more request asks for the answer alone (as `budgeted_answer` does).
- ``server``: a server that ends visible thinking at a budget itself (llama.cpp's
  `thinking_budget_tokens`, vLLM's `thinking_token_budget`, SGLang's strict thinking: the
  ``*-thinking`` providers, declared or found by ``provider="detect"``): the client's own
  request, every field passed on, with the cap added; the reply is the server's, unchanged
  (`cotplan.production.server_cap`). Tools, JSON schemas, logprobs and n > 1 work here.

With ``exit="certified"`` (`capped(client, plan, exit="certified")`, where `cotplan plan --exit
certified` wrote an exit.json beside the plan) a ``template``-mode call at a size the exit plan
certifies thinks in chunks, probes the answer at each checkpoint and stops where the certified
rule fires, never past the cap: the requests `cotplan run --exit certified` makes, with probe
tokens counted as spent (`cotplan.production.exiting`). ``hidden`` mode cannot be probed and
is refused.

Every reply carries what happened in an extra top-level field `cotplan` (a dict, so it also
travels as JSON through `cotplan serve`; `report_of(reply)` reads it back as a `CapReport`);
the usual fields keep their meaning, with the reasoning tokens in
`usage.completion_tokens_details.reasoning_tokens`. Each call is appended to the call log
(`cotplan.production.log`).

The prompt. A cap is certified for the prompt the calibration used, so the protocol's
instruction (for ``plain``: "Think step by step, then give the final answer after "Answer:"")
is added to the last user message here too, and generation is greedy (temperature 0) unless the
call sets a temperature. `max_tokens` / `max_completion_tokens` bound the whole completion,
thinking and answer, as they do uncapped; the plan's cap can only lower the thinking. A
completion they end before any answer says so (``finish_reason="length"``, empty content and
the report's `answer_missing`), never an empty answer passed off as one.

Streaming. `stream=True` gives what the client gives for a stream: a `CappedStream` of
`ChatCompletionChunk` (an `AsyncCappedStream` for `AsyncOpenAI`), from the same requests, each
streamed; the thinking comes as `delta.reasoning_content`, the answer as `delta.content`, and
the last chunk carries the usage and the `cotplan` field (`cotplan.production.streaming`).

Errors. Arguments this wrapper checks raise cotplan's `InputError` naming the field. Errors of
the upstream itself are the client's own (`openai.APIStatusError` and the like), unchanged:
code written against the client already handles them.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

import openai
from openai.types.chat import ChatCompletion

from cotplan.backends.base import Usage
from cotplan.backends.budgets import rule_for_model
from cotplan.backends.known_models import family_of
from cotplan.errors import InputError
from cotplan.generate.prompts import template_for
from cotplan.generate.protocols import resolve_protocol
from cotplan.messages import Message
from cotplan.planner import SavedPlan
from cotplan.planner.binding import check_plan_model, check_plan_protocol
from cotplan.planner.exit_plan import ExitPlan
from cotplan.production.answer_phase import (
    ANSWER_ARGS,
    answer_message,
    answer_spec,
    chat_logprobs,
    tool_turns,
)
from cotplan.production.calls import (
    DEFAULT_ANSWER_TOKENS,
    METADATA_SIZE,
    SIZE_POLICIES,
    TEMPLATE_ARGS,
    ApplyMode,
    CallArgs,
    CapReport,
    answer_room,
    cap_at,
    check_chat,
    check_messages,
    choices_reply,
    completion_limit,
    provider_of,
    report_of,
    stop_list,
    usage_of,
)
from cotplan.production.detect import detect_provider
from cotplan.production.exiting import (
    answer_kind_of,
    exit_at,
    exit_steps,
    exit_stream_steps,
    load_exits,
)
from cotplan.production.log import CallLog, LogRecord
from cotplan.production.phases import OneRequest, TwoPhase
from cotplan.production.server_cap import server_capped, server_steps
from cotplan.production.streaming import AsyncCappedStream, CappedStream, StreamSteps, stream_steps
from cotplan.production.tags import call_tags, encode_tags
from cotplan.production.upstream import send, send_async, tokenize, tokenize_async
from cotplan.validation import require_choice

__all__ = [
    "AsyncCappedClient",
    "AsyncCappedStream",
    "CapReport",
    "CappedClient",
    "CappedStream",
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

    @overload
    def create(self, *, stream: Literal[True], **kwargs: Any) -> CappedStream: ...

    @overload
    def create(self, *, stream: Literal[False] | None = ..., **kwargs: Any) -> ChatCompletion: ...

    def create(self, **kwargs: Any) -> ChatCompletion | CappedStream:
        """`client.chat.completions.create(...)` with the plan's cap (see the module); with
        `stream=True`, a `CappedStream` of chunks (`cotplan.production.streaming`)."""
        client = self._owner.client
        call = self._owner._check(kwargs)
        if call.stream:
            return CappedStream(client, self._owner._stream_steps(call))
        steps = self._owner._steps(call)
        try:
            endpoint, arguments = next(steps)
            while True:
                if endpoint == "tokenize":
                    response: Any = tokenize(client, arguments)
                else:
                    create = (
                        client.completions.create
                        if endpoint == "completions"
                        else client.chat.completions.create
                    )
                    response = send(create, endpoint, arguments)
                endpoint, arguments = steps.send(response)
        except StopIteration as done:
            reply: ChatCompletion = done.value[0]
            return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.client.chat.completions, name)


class _AsyncCompletions:
    def __init__(self, owner: AsyncCappedClient) -> None:
        self._owner = owner

    @overload
    async def create(self, *, stream: Literal[True], **kwargs: Any) -> AsyncCappedStream: ...

    @overload
    async def create(
        self, *, stream: Literal[False] | None = ..., **kwargs: Any
    ) -> ChatCompletion: ...

    async def create(self, **kwargs: Any) -> ChatCompletion | AsyncCappedStream:
        """`await client.chat.completions.create(...)` with the plan's cap (see the module);
        with `stream=True`, an `AsyncCappedStream`. The call log is written in the event loop's
        thread: one short SQLite insert."""
        client = self._owner.client
        call = self._owner._check(kwargs)
        if call.stream:
            return await AsyncCappedStream.open(client, self._owner._stream_steps(call))
        steps = self._owner._steps(call)
        try:
            endpoint, arguments = next(steps)
            while True:
                if endpoint == "tokenize":
                    response: Any = await tokenize_async(client, arguments)
                else:
                    create: Any = (
                        client.completions.create
                        if endpoint == "completions"
                        else client.chat.completions.create
                    )
                    response = await send_async(create, endpoint, arguments)
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
        exits: ExitPlan | None = None,
        size_policy: str = "largest",
    ) -> None:
        self.plan = plan
        self.size_policy = size_policy
        self.size = size
        self.allow_other_model = allow_other_model
        self.protocol = protocol
        self.provider = provider or provider_of(self.client.base_url)
        self.log = log
        self.via = via
        #: The certified early exit applied where it is certified (None: the fixed cap).
        self.exits = exits
        if exits is not None and plan.model:
            try:  # refused now rather than at the first call
                self._mode(plan.model, exit_checked=True)
            except InputError as exc:
                if exc.field == "exit":
                    raise

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

    def _steps(self, call: CallArgs) -> _Steps:
        """The call as a generator of requests (see `_Steps`); logs the call at its end."""
        if call.exit_rule is not None:
            steps = exit_steps(call)
        elif call.mode == "template":
            steps = self._two_phase(call)
        elif call.mode == "server":
            steps = server_steps(call, self.provider_for(call.model))
        else:
            steps = self._one_request(call)
        reply, report = yield from steps
        self._log_call(call.model, report, str(reply.id), "complete", tags=call.tags)
        return reply, report

    def _stream_steps(self, call: CallArgs) -> StreamSteps:
        def finish(report: CapReport, call_id: str, outcome: str) -> None:
            self._log_call(call.model, report, call_id, outcome, tags=call.tags)

        if call.exit_rule is not None:
            return exit_stream_steps(call, finish)
        return stream_steps(call, provider=self.provider_for(call.model), finish=finish)

    def _log_call(
        self, model: str, report: CapReport, call_id: str, outcome: str, *, tags: str = ""
    ) -> None:
        if self.log is None:
            return
        trusted = report.usage_trusted
        self.log.append(
            LogRecord(
                time=datetime.now(UTC).isoformat(timespec="seconds"),
                model=model,
                size=report.size,
                cap=report.cap,
                basis=report.basis,
                mode=report.mode,
                # Counts no upstream measured are unknown (NULL in the log), never 0.
                reasoning_tokens=report.reasoning_tokens if trusted else None,
                answer_tokens=report.answer_tokens if trusted else None,
                prompt_tokens=report.prompt_tokens if trusted else None,
                cap_bitten=report.cap_bitten,
                answer_forced=report.answer_forced,
                cost_usd=report.cost_usd,
                via=self.via,
                call_id=call_id,
                outcome=outcome,
                exit_rule=report.exit_rule,
                stopped_by=report.stopped_by,
                stop_k=report.stop_k,
                probe_tokens=report.probe_tokens,
                tags=tags,
                usage_trusted=trusted,
            )
        )

    def checked(self, kwargs: dict[str, Any]) -> CallArgs:
        """A call's arguments checked as `create` checks them (the gateway checks a Responses
        call so, `cotplan.production.responses_cap`)."""
        return self._check(kwargs)

    def record(
        self,
        model: str,
        report: CapReport,
        call_id: str,
        *,
        tags: str = "",
        outcome: str = "complete",
    ) -> None:
        """Log a call answered outside `create` (a Responses call) as `create` logs one;
        `outcome` as a stream's (``complete``, ``stopped`` or ``error``)."""
        self._log_call(model, report, call_id, outcome, tags=tags)

    def _check(self, kwargs: dict[str, Any]) -> CallArgs:
        args = dict(kwargs)
        model = args.pop("model", None)
        if not isinstance(model, str) or not model:
            raise InputError(f"must be a model name, got {model!r}", field="model")
        mode = self._mode(model, exit_checked=self.exits is not None)
        if mode == "server":  # the client's messages go on as they came (tool turns, parts)
            messages = check_chat(args.pop("messages", None))
        elif mode == "template":  # tool turns written out as text
            messages = check_messages(tool_turns(args.pop("messages", None)))
        else:
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
        # The plan records the protocol its model was calibrated under: for that model, by
        # whatever name it is served (an in-house `acme-reasoner-v2`), that protocol applies,
        # rather than a guess from the name.
        chosen = self.protocol
        if chosen == "auto" and self.plan.protocol is not None and model == self.plan.model:
            chosen = self.plan.protocol
        protocol, words = resolve_protocol(model, chosen)
        # The cap counts thinking written one way; another protocol's thinking is not certified.
        protocol_note = check_plan_protocol(
            self.plan, protocol, allow_other_model=self.allow_other_model
        )
        size = self._size(args.pop("size", None), messages, args.get("metadata"))
        # Tags for spend by team and feature (`cotplan.production.tags`); `tags` is not sent on.
        tags = encode_tags(call_tags(args.get("metadata"), args.pop("tags", None)))
        cap = cap_at(self.plan, size, self.size_policy)
        exit_rule, exit_note = (None, "") if self.exits is None else exit_at(self.exits, cap)
        stream, include_usage = _stream_arguments(args)
        limit: int | None = None
        if mode == "server":
            # Everything passes on; the client's max_tokens bounds the whole completion.
            answer_tokens = answer_room(dict(args))
        elif args.get("n") not in (None, 1) and (mode != "template" or exit_rule is not None):
            raise InputError(f"must be 1 (one answer per call), got {args['n']!r}", field="n")
        if mode == "template":
            # OpenAI's meaning: the limit bounds thinking and answer together.
            limit = _template_args(args, exits=exit_rule is not None)
            answer_tokens = DEFAULT_ANSWER_TOKENS if limit is None else limit
        elif mode != "server":
            args.pop("n", None)
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
            note="; ".join(part for part in (note, protocol_note, cap.note, exit_note) if part),
            stream=stream,
            include_usage=include_usage,
            exit_rule=exit_rule,
            bill_prompt=self.exits.bill_prompt if self.exits is not None else False,
            answer_kind=answer_kind_of(self.plan),
            tags=tags,
            limit=limit,
        )

    def _size(self, given: object, messages: list[Message], metadata: object) -> float | None:
        """The call's size: its own `size=`, its metadata's ``cotplan_size``, the client's
        size (a number or a function of the messages), or the plan's size rule
        (`cotplan.planner.size_rule`); None when none gives one."""
        if given is None and isinstance(metadata, Mapping) and METADATA_SIZE in metadata:
            try:
                given = float(metadata[METADATA_SIZE])
            except (TypeError, ValueError):
                raise InputError(
                    f"must be a number, got {metadata[METADATA_SIZE]!r}",
                    field=f"metadata.{METADATA_SIZE}",
                ) from None
        size: object = given if given is not None else self.size
        if callable(size):
            size = size(messages)
        if size is None and self.plan.size_rule is not None:
            size = self.plan.size_rule.size(messages)  # the operator's rule, in the plan
        if size is None:
            return None
        if isinstance(size, bool) or not isinstance(size, int | float) or not size > 0:
            raise InputError(f"must be a positive number, got {size!r}", field="size")
        return float(size)

    def provider_for(self, model: str) -> str:
        """What serves `model`: the server its team declared (`cotplan.register_model`, a
        model map) or the client's provider."""
        family = family_of(model)
        return family.server if family is not None and family.server else self.provider

    def _mode(self, model: str, *, exit_checked: bool = False) -> ApplyMode:
        """How `model` is capped here; with `exit_checked`, only a mode the certified exit can
        probe (the thinking written out as text)."""
        provider = self.provider_for(model)
        rule = rule_for_model(provider, model)
        if rule.covers == "reasoning+output":
            if exit_checked:
                raise InputError(
                    f"certified cannot apply to {model!r} at {provider}: the provider "
                    "caps its hidden reasoning in one request, so there is no thinking to "
                    "probe; use exit='none' (the fixed cap)",
                    field="exit",
                )
            return "hidden"
        # The certified exit probes text completions, which such a server also takes.
        if server_capped(rule) and not (exit_checked and template_for(model) is not None):
            return "server"
        if template_for(model) is not None and (
            provider == "openai-compatible" or server_capped(rule)
        ):
            return "template"
        raise InputError(
            f"cannot cap {model!r} at {provider}: its thinking is neither capped by the "
            "provider nor written with a chat template cotplan knows (see "
            "cotplan.backends.known_models)",
            field="model",
        )

    # -- template mode: the two phases of `budgeted_answer`, through the client ---------------

    def _two_phase(self, call: CallArgs) -> _Steps:
        """The two phases for each of the call's `n` choices (one, unless it asks for more)."""
        phases = TwoPhase(call)
        spec = phases.spec
        choices: list[dict[str, Any]] = []
        thinking_usages: list[Usage] = []
        answer_usages: list[Usage] = []
        cuts: list[bool] = []
        missing = False
        for _ in range(call.rest.get("n") or 1):
            thinking, thinking_usage, finish = "", None, None
            first_request = phases.thinking_request()
            if first_request is not None:
                first = yield ("completions", first_request)
                choice = first.choices[0]
                thinking, thinking_usage = choice.text, usage_of(first.usage)
                finish = choice.finish_reason
                thinking_usages.append(thinking_usage)
            cut = phases.cut(finish)
            cuts.append(cut)
            second_request = phases.answer_request(
                thinking, cut=cut, thought=phases.thought(finish, thinking_usage)
            )
            text, finish, logprobs = "", "length", None
            if second_request is not None:
                second = yield ("completions", second_request)
                answer_choice = second.choices[0]
                answer_usages.append(usage_of(second.usage))
                text, finish = answer_choice.text or "", answer_choice.finish_reason
                if spec.logprobs is not None:
                    logprobs = chat_logprobs(answer_choice.logprobs)
            answered = bool(text.strip())
            missing = missing or not answered
            message, finish_reason = answer_message(
                text, spec, marker=call.words.marker, finish_reason=finish
            )
            if not answered:  # no answer is not an answer: no marker, the cut said
                message, finish_reason = {"role": "assistant", "content": ""}, "length"
            message["reasoning_content"] = thinking
            choices.append(
                {"message": message, "finish_reason": finish_reason, "logprobs": logprobs}
            )
        report = phases.report(
            _summed(thinking_usages),
            _summed(answer_usages),
            cut=any(cuts),
            answered=not missing,
            requests=len(thinking_usages) + len(answer_usages),
        )
        return choices_reply(call, choices, report), report

    # -- hidden mode: the provider's own cap, in one request ----------------------------------

    def _one_request(self, call: CallArgs) -> _Steps:
        one = OneRequest(call, self.provider_for(call.model))
        reply = yield ("chat", one.request())
        usages = [usage_of(reply.usage)]
        choice = reply.choices[0]
        bitten = one.bitten(choice.finish_reason, usages[0])
        forced = False
        if not (choice.message.content or "").strip():
            retry = yield ("chat", one.retry_request())
            usages.append(usage_of(retry.usage))
            reply, forced, bitten = retry, True, True
        report = one.report(usages, bitten=bitten, forced=forced)
        setattr(reply, "cotplan", report.to_dict())  # noqa: B010 (an extra field, not declared)
        return reply, report


def _template_args(args: dict[str, Any], *, exits: bool) -> int | None:
    """Checks what two-phase forcing can apply (naming the first field it cannot) before the
    first request; the client's completion limit, popped (None: none given)."""
    unknown = sorted(set(args) - TEMPLATE_ARGS)
    if exits:  # the exit's probes read a line of text
        unknown += sorted(set(args) & ANSWER_ARGS)
    if unknown:
        raise InputError(
            "two-phase budget forcing writes the chat out as text and cannot apply it; "
            "remove it or call the client itself",
            field=unknown[0],
        )
    stop_list(args.get("stop"))
    answer_spec(args)
    n = args.get("n")
    # OpenAI's own bound: each choice is two paid requests here, so `n` unbounded let one call
    # buy thousands.
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 128):
        raise InputError(f"must be a whole number from 1 to 128, got {n!r}", field="n")
    return completion_limit(args)


def _summed(usages: list[Usage]) -> Usage | None:
    """The usages added up (None for none: that phase was never run)."""
    if not usages:
        return None
    total = usages[0]
    for usage in usages[1:]:
        total = total + usage
    return total


def _stream_arguments(args: dict[str, Any]) -> tuple[bool, bool]:
    """`stream` and whether `stream_options` asks for the usage chunk, popped from `args`."""
    stream = args.pop("stream", None)
    if stream not in (None, True, False):
        raise InputError(f"must be true or false, got {stream!r}", field="stream")
    options = args.pop("stream_options", None)
    if options is None:
        return bool(stream), False
    if not stream:
        raise InputError("is only for a streamed call (stream=True)", field="stream_options")
    if not isinstance(options, Mapping):
        raise InputError(f"must be a dict, got {options!r}", field="stream_options")
    return True, bool(options.get("include_usage"))


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
    exit: str = ...,
    exit_plan: ExitPlan | str | Path | None = ...,
    size_policy: str = ...,
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
    exit: str = ...,
    exit_plan: ExitPlan | str | Path | None = ...,
    size_policy: str = ...,
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
    exit: str = "none",
    exit_plan: ExitPlan | str | Path | None = None,
    size_policy: str = "largest",
) -> CappedClient | AsyncCappedClient:
    """`client` with `plan`'s reasoning cap applied to each chat completion (see the module).

    `plan` is a `SavedPlan` or the path of a plan.json. `size` is the item size n of every call,
    or a function of a call's messages giving it; a call's own `size=` wins. A call for a model
    the plan was not made for is refused unless `allow_other_model`. `protocol` overrides the
    model registry's reasoning protocol (`cotplan.generate.protocols`); `provider` the one read
    from the client's `base_url` (`provider_of`): a `PROVIDER_RULES` name, or ``"detect"`` to
    ask the server once what it can cap (`cotplan.production.detect`). `log` is the call log
    (a `CallLog` or a path; None: the default file, `cotplan.production.log.default_log_path`;
    False: no log).
    An `openai.AsyncOpenAI` client gives an `AsyncCappedClient`, whose `create` is awaited.

    A call with no size (none given, no ``metadata["cotplan_size"]``, no `size` here, none
    from the plan's size rule) gets the plan's pooled cap where it holds one, else its largest
    certified cap, and one beyond the plan's reach the largest certified cap, each with a note
    in its report (`size_policy="largest"`); `size_policy="refuse"` refuses them instead
    (`InputError` naming `size`).

    `exit="certified"` answers under the certified early exit where the exit plan certifies
    one (`cotplan.production.exiting`): `exit_plan` is an `ExitPlan` or the path of an
    exit.json, by default the one beside `plan`'s file (`cotplan plan --exit certified` writes
    it). Refused (`InputError` naming `exit_plan` or `exit`) without an exit plan for this
    plan's ε and model, or where the provider caps hidden reasoning itself.
    """
    if not isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
        raise InputError(
            f"must be an openai.OpenAI or AsyncOpenAI client, got {type(client).__name__}",
            field="client",
        )
    plan_path = Path(plan) if isinstance(plan, str | Path) else None
    if plan_path is not None:
        plan = SavedPlan.load(plan_path)
    if not isinstance(plan, SavedPlan):
        raise InputError(f"must be a SavedPlan or a path, got {type(plan).__name__}", field="plan")
    exits = load_exits(exit, exit_plan, plan, plan_path)
    if (
        size is not None
        and not callable(size)
        and (isinstance(size, bool) or not isinstance(size, int | float) or not size > 0)
    ):
        raise InputError(f"must be a positive number or a function, got {size!r}", field="size")
    resolve_protocol("", protocol)  # an unknown name fails here, not at the first call
    if provider == "detect":
        # Asked once, here (`cotplan.production.detect`); an async client is asked through a
        # plain one at the same address, since this function is not awaited.
        asker = (
            client
            if isinstance(client, openai.OpenAI)
            else openai.OpenAI(base_url=client.base_url, api_key=client.api_key)
        )
        provider = detect_provider(asker).provider
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
        "exits": exits,
        "size_policy": require_choice(size_policy, "size_policy", SIZE_POLICIES),
    }
    if isinstance(client, openai.AsyncOpenAI):
        return AsyncCappedClient(client, plan, **options)
    return CappedClient(client, plan, **options)
