"""The Responses API (``POST /v1/responses``) through the gateway, capped where the upstream can.

A Responses call is checked as a chat completion is (the plan for its model, its size from the
body's ``size``, the ``X-Cotplan-Size`` header, ``metadata["cotplan_size"]`` or the plan's size
rule, the protocol the plan was calibrated with), then:

- where the upstream caps the thinking itself in one request and takes that cap on a Responses
  body (`RESPONSES_CAP_FIELDS`), the client's own body goes on with one field added, the plan's
  cap k, as that server reads it there, and the calibration's instruction added to the last
  user input as on a chat call. `max_output_tokens` stays the client's and bounds the whole
  output. The reply is the server's, unchanged, with
  `usage.output_tokens_details.reasoning_tokens` filled in where the server leaves it out (the
  reasoning items' text counted by the server's tokenizer) and the ``cotplan`` report; the call
  is logged and counted in the metrics as a chat call is. The thinking close llama.cpp leaks
  into the answer after a forced close is dropped, as on a chat reply.
- anywhere else (two-phase forcing, a provider's hidden reasoning, a server whose Responses
  endpoint is not known to take the cap) the call is refused with an OpenAI error object that
  says so and how to get the cap (send a chat completion), unless the operator started the
  gateway to pass such calls on uncapped (`responses="uncapped"`, `cotplan serve
  --responses-uncapped`): then it goes on as it came, and the reply carries the header
  ``X-Cotplan-Capped: false``. A streamed call is refused there either way (naming
  ``stream``); where the cap holds, it is streamed (`cotplan.production.responses_stream`).

Which servers take the cap on a Responses body. llama.cpp's ``/v1/responses`` copies the
request body into the chat completion it runs (ggml-org/llama.cpp tools/server
server-common.cpp, `convert_responses_to_chatcmpl`: ``chatcmpl_body = response_body``), so
`thinking_budget_tokens` reaches its chat path unchanged. vLLM, SGLang and NIM document their
thinking caps on chat completions only (vllm docs/features/reasoning_outputs.md, docs.sglang.io
thinking_budget, NVIDIA NIM for LLMs docs; read 2026-12-05); a field their Responses endpoint
might drop silently would leave the call uncapped while the report said capped, so they are
refused until a source confirms it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cotplan.backends.base import Usage
from cotplan.errors import InputError
from cotplan.messages import Message
from cotplan.production.calls import CallArgs, CapReport
from cotplan.production.server_cap import (
    ServerCap,
    counted_reasoning,
    merged,
    nested,
    without_close,
)

__all__ = [
    "CAPPED_HEADER",
    "RESPONSES_CAP_FIELDS",
    "RESPONSES_POLICIES",
    "ResponsesCall",
    "chat_view",
    "not_capped_message",
    "responses_check_args",
]

#: The body field, dotted, in which each server kind takes its thinking cap on a Responses
#: call (see the module for the sources); a kind not here cannot cap a Responses call.
RESPONSES_CAP_FIELDS: dict[str, str] = {"llama.cpp-thinking": "thinking_budget_tokens"}

#: What the gateway does with a Responses call it cannot cap: refuse it (the default) or pass
#: it on uncapped, saying so in `CAPPED_HEADER`.
RESPONSES_POLICIES = ("refuse", "uncapped")

#: Set to ``false`` on a Responses reply the gateway passed on without the cap.
CAPPED_HEADER = "x-cotplan-capped"


def _text_of(content: object) -> str:
    """The text of a Responses content (a string, or parts with `text`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def chat_view(body: Mapping[str, Any]) -> list[Message]:
    """The Responses call's `instructions` and `input` as chat messages, for what the checks
    read (the plan's size rule counts them); the body itself is sent as it came."""
    messages: list[Message] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    given = body.get("input")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list):
        for item in given:
            if isinstance(item, Mapping) and isinstance(item.get("role"), str):
                messages.append({"role": item["role"], "content": _text_of(item.get("content"))})
    else:
        raise InputError("must be a string or a list of input items", field="input")
    if not any(m["role"] == "user" for m in messages):
        raise InputError("must hold a user message", field="input")
    return messages


def responses_check_args(body: dict[str, Any]) -> dict[str, Any]:
    """The arguments the capped client checks a Responses call with (its model, its input as
    chat messages, its size, metadata and tags), `size` and `tags` popped from `body` (they
    are the gateway's, never sent on)."""
    return {
        "model": body.get("model"),
        "messages": chat_view(body),
        "size": body.pop("size", None),
        "tags": body.pop("tags", None),
        "metadata": body.get("metadata"),
    }


def with_input_instruction(given: object, text: str) -> object:
    """`input` with `text` added to its last user message (as `with_instruction` adds it to a
    chat's), in the form the client wrote it."""
    if not text:
        return given
    if isinstance(given, str):
        return f"{given}\n{text}"
    given = given if isinstance(given, list) else []
    items = [dict(item) if isinstance(item, Mapping) else item for item in given]
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            item["content"] = f"{content}\n{text}"
        else:
            parts = list(content) if isinstance(content, list) else []
            item["content"] = [*parts, {"type": "input_text", "text": f"\n{text}"}]
        return items
    return [*items, {"role": "user", "content": text}]


def not_capped_message(model: str, provider: str) -> str:
    """Why a Responses call is refused (see the module), with the two ways on."""
    return (
        f"the Responses API cannot be capped for {model!r} at {provider}: the upstream takes "
        "no thinking cap on /v1/responses that cotplan can send, so the plan's cap would not "
        "hold. Send the call as a chat completion (/v1/chat/completions), which the gateway "
        "caps, or start the gateway with --responses-uncapped to pass Responses calls on "
        "uncapped (their replies then carry `x-cotplan-capped: false`)"
    )


def _reasoning_text(output: object) -> str:
    """The thinking in a Responses `output`: its reasoning items' content (or summary)."""
    pieces = []
    for item in output if isinstance(output, list) else []:
        if isinstance(item, Mapping) and item.get("type") == "reasoning":
            pieces.append(_text_of(item.get("content")) or _text_of(item.get("summary")))
    return "".join(pieces)


def _answered(output: object) -> bool:
    """Whether a Responses `output` holds an answer: output text, or a function call."""
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "function_call":
            return True
        if item.get("type") == "message" and _text_of(item.get("content")).strip():
            return True
    return False


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class ResponsesCall:
    """One Responses call in server mode: `call` as checked, `body` as the client sent it,
    `provider` the upstream's kind (a key of `RESPONSES_CAP_FIELDS`)."""

    call: CallArgs
    body: Mapping[str, Any]
    provider: str

    def request(self) -> dict[str, Any]:
        """The client's body with the cap added (and the calibration's instruction)."""
        body = dict(self.body)
        body.pop("extra_body", None)  # a Python SDK's extra fields travel in the body itself
        extra = self.body.get("extra_body")
        if isinstance(extra, Mapping):
            body = merged(body, extra)
        cap = nested(RESPONSES_CAP_FIELDS[self.provider], self.call.cap.tokens)
        body = merged(body, cap)
        body["input"] = with_input_instruction(body.get("input"), self.call.words.instruction)
        return body

    def reasoning_text(self, reply: Mapping[str, Any]) -> str | None:
        """The thinking to count where the reply's usage leaves its reasoning tokens out
        (None: the usage has them)."""
        details = (reply.get("usage") or {}).get("output_tokens_details") or {}
        if isinstance(details.get("reasoning_tokens"), int):
            return None
        return _reasoning_text(reply.get("output"))

    def _drop_leaked_close(self, output: object) -> None:
        """The thinking close a llama.cpp server leaks before the answer after a forced close
        (llama.cpp #28182) dropped from each output text, as a chat reply's `content` drops
        it (`server_cap.without_close`); the rest is the model's, unchanged."""
        for item in output if isinstance(output, list) else []:
            if not isinstance(item, dict) or item.get("type") != "message":
                continue
            for part in item.get("content") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    part["text"] = without_close(part["text"], self.call.words)

    def finish(self, reply: dict[str, Any], counted: int | None) -> CapReport:
        """The reply with its reasoning tokens filled in (`counted`: the server's tokenizer's
        count of `reasoning_text`, None when the usage had them) and the report added."""
        usage = reply.get("usage")
        if not isinstance(usage, dict):
            usage = reply["usage"] = {}
        details = usage.get("output_tokens_details")
        if not isinstance(details, dict):
            details = usage["output_tokens_details"] = {}
        self._drop_leaked_close(reply.get("output"))
        thinking = _reasoning_text(reply.get("output"))
        if counted is not None or not isinstance(details.get("reasoning_tokens"), int):
            details["reasoning_tokens"] = counted_reasoning(counted, thinking, 1) if thinking else 0
        reasoning = _count(details["reasoning_tokens"])
        spent = Usage(
            prompt_tokens=_count(usage.get("input_tokens")),
            completion_tokens=_count(usage.get("output_tokens")),
            reasoning_tokens=reasoning,
        )
        report = ServerCap(self.call, self.provider).report(
            spent,
            reasoning,
            answered=_answered(reply.get("output")),
            counted=counted is not None and bool(thinking),
        )
        reply["cotplan"] = report.to_dict()
        return report
