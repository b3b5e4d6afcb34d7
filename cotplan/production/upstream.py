"""What a capped call makes of each upstream answer before it uses it.

The CLI path checks every answer (`cotplan.backends.answer_checks.check_response`) before it
reads it; the wrapper and the gateway read the same answers through the openai SDK, which
accepts a 200 with missing or empty `choices`, an ``{"error": ...}`` body or non-text content
without a word, and raises a bare `json.JSONDecodeError` for a body or a server-sent event that
is not JSON. Here each of those becomes a `ResponseFormatError` naming what was wrong (the
gateway answers it as a 502, `cotplan.production.gateway_errors`), checked by the same rules as
the CLI path:

- `send` / `send_async`: make one unstreamed request and check its answer (`checked`).
- `stream_failure`: what an exception raised while reading a stream means (a bad SSE line).
- `check_stream_end`: a streamed request that ended without a finish (a JSON body or lines
  that are not server-sent events, which the SDK reads as an empty stream) is an error, never
  an empty answer reported as success.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai
from openai import not_given
from openai._base_client import make_request_options
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from cotplan.backends.answer_checks import check_response, server_text
from cotplan.errors import ResponseFormatError

__all__ = [
    "check_stream_end",
    "checked",
    "root_of",
    "send",
    "send_async",
    "stream_failure",
    "text_of",
    "tokenize",
    "tokenize_async",
]

#: How error lines name the server the gateway or wrapper forwards to.
WHERE = "the upstream"


def _raw(response: object) -> object:
    """The answer as the dict the SDK read (a body that is not a JSON object stays itself)."""
    if isinstance(response, BaseModel):
        # The SDK builds its models without validation: a field of the wrong type is kept as it
        # came, and serializing it warns; the checks below name it instead.
        return response.model_dump(mode="json", warnings=False, exclude_unset=True)
    return response


def checked(endpoint: str, arguments: dict[str, Any], response: Any) -> Any:
    """`response` if it is an answer worth reading, else `ResponseFormatError` naming why
    (`endpoint`: ``completions`` or ``chat``; `arguments`: the request made)."""
    operation = "completions" if endpoint == "completions" else "chat"
    check_response(_raw(response), operation=operation, params=arguments, where=WHERE)
    return response


def _not_json(exc: json.JSONDecodeError) -> ResponseFormatError:
    return ResponseFormatError(
        f"{WHERE} answered 200 with a body that is not JSON ({exc.msg} at character {exc.pos})"
    )


def send(create: Callable[..., Any], endpoint: str, arguments: dict[str, Any]) -> Any:
    """`create(**arguments)` (an unstreamed request), its answer checked."""
    try:
        response = create(**arguments)
    except json.JSONDecodeError as exc:
        raise _not_json(exc) from exc
    return checked(endpoint, arguments, response)


async def send_async(
    create: Callable[..., Awaitable[Any]], endpoint: str, arguments: dict[str, Any]
) -> Any:
    """`await create(**arguments)`, its answer checked (the async client's `send`)."""
    try:
        if (fast := plain_chat(create, arguments)) is not None:
            response = await fast
        else:
            response = await create(**arguments)
    except json.JSONDecodeError as exc:
        raise _not_json(exc) from exc
    return checked(endpoint, arguments, response)


#: The arguments of `create` that are request options rather than body fields.
_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


#: Numbers the gateway's plain requests (see `plain_chat`).
_REQUESTS = itertools.count(1)


def _is_plain(value: object, depth: int = 0) -> bool:
    """Whether `value` is JSON as parsed (str, numbers, bools, None, lists, str-keyed dicts)."""
    if value is None or isinstance(value, str | int | float):
        return True
    if depth > 64:
        return False
    if isinstance(value, list):
        return all(_is_plain(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v, depth + 1) for k, v in value.items())
    return False


def plain_chat(
    create: Callable[..., Awaitable[Any]], arguments: dict[str, Any]
) -> Awaitable[Any] | None:
    """An unstreamed chat completion whose arguments are plain JSON (a gateway call's are: they
    came as a request body) posted as they are, the SDK's own way (its `_post`: the same
    headers, retries, timeouts, errors and reply), without the SDK's pass over the arguments
    against its parameter types, which only rewrites what is not plain JSON and cost a fifth
    of the gateway's CPU per call. None for anything else: `create` then does it all."""
    resource = getattr(create, "__self__", None)
    if not isinstance(resource, AsyncCompletions) or getattr(create, "__name__", "") != "create":
        return None
    if arguments.get("stream") or not _is_plain(arguments.get("extra_body")):
        return None
    body = {k: v for k, v in arguments.items() if k not in _OPTIONS}
    if not _is_plain(body) or not isinstance(arguments.get("timeout", 0), int | float):
        return None
    options = make_request_options(
        extra_headers=arguments.get("extra_headers"),
        extra_query=arguments.get("extra_query"),
        extra_body=arguments.get("extra_body"),
        timeout=arguments.get("timeout", not_given),
        security={"bearer_auth": True},
        # The SDK makes one (a uuid4, a system call for its randomness) for every request it
        # sends and sends it to no OpenAI server (the client has no idempotency header); a
        # counter is as unique within the process and costs nothing.
        idempotency_key=f"cotplan-{next(_REQUESTS)}",
    )
    return resource._post(
        "/chat/completions", body=body, options=options, cast_to=ChatCompletion, stream=False
    )


def _tokens(answer: object) -> int | None:
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    return len(tokens) if isinstance(tokens, list) else None


def _tokenize_body(arguments: dict[str, Any]) -> dict[str, Any]:
    # llama.cpp reads `content`, vLLM `prompt` and `model`; neither minds the other's.
    text = arguments["content"]
    return {"content": text, "prompt": text, "model": arguments.get("model", "")}


def tokenize(client: openai.OpenAI, arguments: dict[str, Any]) -> int | None:
    """How many tokens the server's own tokenizer makes of ``arguments["content"]``
    (``POST /tokenize`` at the server's root: llama.cpp and vLLM serve it; it generates
    nothing); None where the server has no such endpoint or answers something else."""
    url = root_of(client.base_url) + "/tokenize"
    try:
        return _tokens(client.post(url, body=_tokenize_body(arguments), cast_to=object))
    except (openai.APIError, ValueError):
        return None


async def tokenize_async(client: openai.AsyncOpenAI, arguments: dict[str, Any]) -> int | None:
    """`tokenize` for the async client."""
    url = root_of(client.base_url) + "/tokenize"
    try:
        answer = await client.post(url, body=_tokenize_body(arguments), cast_to=object)
    except (openai.APIError, ValueError):
        return None
    return _tokens(answer)


def root_of(base_url: object) -> str:
    """The server's root for a `/v1` base URL (where llama.cpp and vLLM serve `/tokenize`)."""
    parts = urlsplit(str(base_url).rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, parts.path.removesuffix("/v1"), "", ""))


def stream_failure(exc: Exception) -> Exception:
    """What an exception raised by a stream's request or its reading is to the caller: an
    event that is not JSON becomes a `ResponseFormatError`; the rest are kept."""
    if isinstance(exc, json.JSONDecodeError):
        return ResponseFormatError(
            f"{WHERE} sent a server-sent event that is not JSON: {server_text(exc.doc, limit=80)}"
        )
    return exc


def text_of(piece: object) -> str:
    """A streamed piece of text, or `ResponseFormatError` when the event holds something else
    (the SDK does not validate events)."""
    if not isinstance(piece, str):
        raise ResponseFormatError(
            f"{WHERE} sent an event whose text is {type(piece).__name__}, not text"
        )
    return piece


def check_stream_end(finish_reason: str | None, chunks: int) -> None:
    """Raise `ResponseFormatError` when a streamed request ended without its finish: after
    `chunks` events, none of which carried a `finish_reason`."""
    if finish_reason is not None:
        return
    if chunks == 0:
        raise ResponseFormatError(
            f"{WHERE} answered a streamed request with no server-sent events (a JSON body or "
            "lines that are not `data:` events)"
        )
    raise ResponseFormatError(
        f"{WHERE}'s stream ended after {chunks} events without a `finish_reason` (cut short)"
    )
