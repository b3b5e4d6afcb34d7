"""What the answer phase of a two-phase call must write: text, JSON, or a tool call.

Two-phase budget forcing (`cotplan.production.phases.TwoPhase`) writes the chat out as text and
generates the thinking, then the answer, as text completions. A client's chat request may ask
for more than a line of text as its answer, and the answer phase carries it (the thinking is
the model's own, under the cap, whatever the answer's form):

- ``response_format`` ``json_object`` / ``json_schema``: the answer is generated under the
  schema (llama.cpp takes `json_schema` on its text completions and turns it into a grammar;
  vLLM takes `response_format` there; both are sent, each server reads its own) and returned
  as `content`, the JSON text unchanged.
- ``tools`` (with ``tool_choice``): the tools are described in the system turn, so the model
  thinks knowing them, and the answer is generated under a schema that admits a call of one of
  them (or, with ``tool_choice="auto"``, a text reply), in llama.cpp's generic tool-call format
  (``{"tool_call": {"name", "arguments"}}`` or ``{"response": "..."}``; llama.cpp
  common/chat.cpp, the format it uses for templates that know no tools of their own). A call
  comes back as `message.tool_calls` with ``finish_reason="tool_calls"``, as the chat API
  returns one.
- ``logprobs`` / ``top_logprobs``: the answer's token log-probabilities, in the chat shape
  (`choices[i].logprobs.content`), read from the text completion's (llama.cpp already answers
  in that shape; the OpenAI completions shape is converted).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cotplan.errors import InputError
from cotplan.messages import Message

__all__ = [
    "ANSWER_ARGS",
    "JSON_ANSWER_TOKENS",
    "AnswerSpec",
    "answer_message",
    "answer_spec",
    "chat_logprobs",
    "tool_turns",
    "with_tools",
]

#: The chat arguments the answer phase reads (`answer_spec`); they go to no request as such.
ANSWER_ARGS = frozenset(
    {"tools", "tool_choice", "parallel_tool_calls", "response_format", "logprobs", "top_logprobs"}
)

#: The answer's room for JSON and tool calls when the client sets no `max_tokens`: a schema
#: ends the text itself, this only bounds a server that ignores the schema.
JSON_ANSWER_TOKENS = 1024

AnswerKind = Literal["text", "json", "tools"]


@dataclass(frozen=True)
class AnswerSpec:
    """The answer's form (`kind`), the schema it is generated under (None: free text), the
    tools the model is told of, and how many top log-probabilities to return (None: none)."""

    kind: AnswerKind = "text"
    schema: dict[str, Any] | None = None
    tools: tuple[dict[str, Any], ...] = ()
    logprobs: int | None = None
    #: ``auto``: a tool call or a text reply; ``required``: a tool call; ``none``: text.
    tool_choice: str = "auto"
    names: tuple[str, ...] = field(default=())

    def fields(self) -> dict[str, Any]:
        """The answer request's own fields (schema and log-probabilities)."""
        out: dict[str, Any] = {}
        if self.schema is not None:
            out["json_schema"] = self.schema
            out["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": self.schema},
            }
        if self.logprobs is not None:
            out["logprobs"] = self.logprobs
        return out


def _function(tool: object, i: int) -> dict[str, Any]:
    if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
        raise InputError(f"tool {i} must be a dict of type 'function'", field="tools")
    function = tool.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise InputError(f"tool {i} must have a `function` with a `name`", field="tools")
    parameters = function.get("parameters", {"type": "object"})
    if not isinstance(parameters, Mapping):
        raise InputError(f"tool {i}'s parameters must be a JSON schema", field="tools")
    return {**function, "parameters": dict(parameters)}


def _call_schema(function: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "name": {"const": function["name"]},
            "arguments": function["parameters"],
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def _tool_schema(functions: Sequence[Mapping[str, Any]], choice: str) -> dict[str, Any]:
    call = {
        "type": "object",
        "properties": {"tool_call": {"anyOf": [_call_schema(f) for f in functions]}},
        "required": ["tool_call"],
        "additionalProperties": False,
    }
    if choice != "auto":
        return call
    reply = {
        "type": "object",
        "properties": {"response": {"type": "string"}},
        "required": ["response"],
        "additionalProperties": False,
    }
    return {"anyOf": [call, reply]}


def _response_schema(response_format: object) -> dict[str, Any] | None:
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        assert isinstance(response_format, Mapping)
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if isinstance(schema, Mapping):
            return dict(schema)
        raise InputError("json_schema must hold a `schema` object", field="response_format")
    raise InputError(
        f"must have type text, json_object or json_schema, got {response_format!r}",
        field="response_format",
    )


def _logprobs(args: Mapping[str, Any]) -> int | None:
    wanted, top = args.get("logprobs"), args.get("top_logprobs")
    if wanted in (None, False):
        if top not in (None, 0):
            raise InputError("needs logprobs=True", field="top_logprobs")
        return None
    if wanted is not True:
        raise InputError(f"must be true or false, got {wanted!r}", field="logprobs")
    if top is None:
        return 1  # the chosen token's own (a text completion's logprobs=1 carries it)
    if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= 20:
        raise InputError(f"must be a whole number from 0 to 20, got {top!r}", field="top_logprobs")
    return max(top, 1)


def answer_spec(args: Mapping[str, Any]) -> AnswerSpec:
    """The answer's form from a chat call's arguments (see the module); checked, naming the
    field, before any request is made."""
    logprobs = _logprobs(args)
    tools = args.get("tools")
    schema = _response_schema(args.get("response_format"))
    if tools:
        if not isinstance(tools, Sequence) or isinstance(tools, str):
            raise InputError("must be a list of tools", field="tools")
        functions = [_function(tool, i) for i, tool in enumerate(tools)]
        names = tuple(f["name"] for f in functions)
        choice = args.get("tool_choice", "auto")
        if isinstance(choice, Mapping):
            named = choice.get("function")
            name = named.get("name") if isinstance(named, Mapping) else None
            if name not in names:
                raise InputError(f"names no tool of the call: {choice!r}", field="tool_choice")
            functions = [f for f in functions if f["name"] == name]
            choice = "required"
        if choice not in ("auto", "required", "none"):
            raise InputError(
                f"must be auto, required, none or a named function, got {choice!r}",
                field="tool_choice",
            )
        if choice != "none":
            if schema is not None:
                raise InputError(
                    "two-phase forcing answers with a tool call or a JSON reply, not both: "
                    "drop response_format or set tool_choice='none'",
                    field="response_format",
                )
            return AnswerSpec(
                kind="tools",
                schema=_tool_schema(functions, choice),
                tools=tuple(functions),
                logprobs=logprobs,
                tool_choice=choice,
                names=names,
            )
        return AnswerSpec(
            kind="json" if schema is not None else "text",
            schema=schema,
            tools=tuple(functions),
            logprobs=logprobs,
            tool_choice="none",
            names=names,
        )
    return AnswerSpec(
        kind="json" if schema is not None else "text", schema=schema, logprobs=logprobs
    )


def tools_text(spec: AnswerSpec) -> str:
    """The tools as the system turn tells the model of them (llama.cpp's generic wording)."""
    if not spec.tools:
        return ""
    listed = json.dumps([{"type": "function", "function": f} for f in spec.tools], indent=2)
    if spec.tool_choice == "none":
        return f"These tools exist, but answer without calling them:\n{listed}"
    example = {"tool_call": {"name": spec.names[0], "arguments": {}}}
    text = (
        "You can call any of the following tools to satisfy the user's requests: "
        f"{listed}\n\nExample tool call syntax:\n\n{json.dumps(example)}"
    )
    if spec.tool_choice == "auto":
        text += '\n\nTo reply without a tool, answer {"response": "..."}.'
    return text


def with_tools(
    messages: list[Message], spec: AnswerSpec, default_system: str | None
) -> list[Message]:
    """`messages` with the tools described in the system turn (the template's default system
    text kept, since a system message of ours would replace it)."""
    text = tools_text(spec)
    if not text:
        return messages
    out: list[Message] = [dict(m) for m in messages]
    for message in out:
        if message["role"] == "system":
            message["content"] = f"{message['content']}\n\n{text}"
            return out
    head = f"{default_system}\n\n{text}" if default_system else text
    return [{"role": "system", "content": head}, *out]


def tool_turns(messages: object) -> object:
    """`messages` with earlier tool calls and results written as text, as the answer phase
    writes a call (an assistant turn's `tool_calls` as ``{"tool_call": ...}``, a ``tool``
    turn's content as it came); anything else unchanged, for `check_messages` to judge."""
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        return messages
    out: list[object] = []
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if isinstance(message, Mapping) and isinstance(calls, Sequence) and calls:
            written = []
            for call in calls:
                function = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(function, Mapping):
                    raise InputError("a tool call must have a `function`", field="messages")
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except (TypeError, ValueError):
                    arguments = function.get("arguments")
                call_text = {"name": function.get("name"), "arguments": arguments}
                written.append(json.dumps({"tool_call": call_text}))
            text = message.get("content") or ""
            out.append({"role": message["role"], "content": "\n".join([text, *written]).strip()})
        else:
            out.append(message)
    return out


def answer_message(
    text: str, spec: AnswerSpec, *, marker: str, finish_reason: str | None
) -> tuple[dict[str, Any], str]:
    """The chat message of an answer phase that wrote `text` after `marker`, and its finish
    reason: a text answer as the model wrote it (the marker is the model's ``Answer:``, which
    the forcing wrote for it), JSON unchanged, a tool call as `tool_calls`."""
    finish = finish_reason or "stop"
    if spec.kind == "text":
        return {"role": "assistant", "content": (marker + text).rstrip()}, finish
    if spec.kind == "json":
        return {"role": "assistant", "content": text.strip()}, finish
    try:
        parsed = json.loads(text)
    except ValueError:  # cut by max_tokens, or a server that ignored the schema
        return {"role": "assistant", "content": text.strip()}, finish
    call = parsed.get("tool_call") if isinstance(parsed, dict) else None
    if isinstance(call, dict) and call.get("name") in spec.names:
        tool_call = {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": json.dumps(call.get("arguments", {})),
            },
        }
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        return message, "tool_calls"
    if isinstance(parsed, dict) and isinstance(parsed.get("response"), str):
        return {"role": "assistant", "content": parsed["response"]}, finish
    return {"role": "assistant", "content": text.strip()}, finish


def chat_logprobs(raw: object) -> dict[str, Any] | None:
    """A text completion's `logprobs` in the chat shape (``{"content": [...]}``): llama.cpp's
    already is; the OpenAI completions shape (tokens, token_logprobs, top_logprobs) is
    converted."""
    if hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    if not isinstance(raw, Mapping):
        return None
    content = raw.get("content")
    if isinstance(content, list):
        return {"content": content}
    tokens, values = raw.get("tokens"), raw.get("token_logprobs")
    if not isinstance(tokens, list) or not isinstance(values, list):
        return None
    tops = raw.get("top_logprobs") or [None] * len(tokens)
    out = []
    for token, value, top in zip(tokens, values, tops, strict=False):
        alternatives = top.items() if isinstance(top, Mapping) else ()
        out.append(
            {
                "token": token,
                "logprob": value,
                "bytes": list(str(token).encode()),
                "top_logprobs": [
                    {"token": t, "logprob": v, "bytes": list(str(t).encode())}
                    for t, v in alternatives
                ],
            }
        )
    return {"content": out}
