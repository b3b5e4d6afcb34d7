"""Anthropic's Message Batches through the official `anthropic` SDK (the optional extra
``cotplan[anthropic]``), behind the same `BatchService` as OpenAI's Batch API.

Anthropic's API reference (platform.claude.com/docs/en/api/messages/batches, read 2026-12-05):
``client.messages.batches.create(requests=[{"custom_id", "params"}])`` (``params`` are a
Messages request; up to 100,000 requests or 256 MB), ``retrieve(id)`` (``processing_status``
``in_progress`` / ``canceling`` / ``ended``; ``request_counts`` ``processing``, ``succeeded``,
``errored``, ``canceled``, ``expired``), ``list()``, and ``results(id)`` once ended: one line
per request, ``{"custom_id", "result": {"type": "succeeded", "message": {...}}}`` or
``errored`` (with ``error``), ``canceled``, ``expired``. A `custom_id` is 1 to 64 characters of
``[a-zA-Z0-9_-]``: cotplan's (``cp-`` and 32 hex digits) is one.

The rest of the batch path stays in the OpenAI batch format, so this service translates at its
edges. The batch file cotplan writes holds the chat requests the live client would send
(`OpenAICompatibleBackend` under the ``anthropic`` budget rule: `max_tokens` and `thinking`);
`create` turns each into Messages params (`messages_params`: system messages into `system`,
`stop` into `stop_sequences`, the thinking budget kept per request) and `content` turns each
result back into the OpenAI output line a live chat answer would be (`chat_body`), so results
are judged, cached and tabled exactly as OpenAI's are. Anthropic has no file upload: the input
file's id is a local one (its digest and the time it was made), and the Messages API has no
batch metadata, so a batch a killed run created but never wrote down is found by its requests
(`find`: the same number of requests, created since the file was; once ended, the same
custom_ids).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cotplan.backends.keys import scrub_secrets
from cotplan.errors import (
    APIStatusError,
    BackendError,
    CapabilityError,
    InputError,
    RateLimitError,
    ServerUnreachableError,
)
from cotplan.io import parse_json
from cotplan.planner.batch_providers import Poll

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicBatches", "chat_body", "messages_params"]

#: The chat request fields a Messages request has a place for. `seed` has none (Anthropic
#: does not take one): it is dropped, since the same request is the same batch line anyway.
_DROPPED = frozenset({"seed"})
_KNOWN = frozenset(
    {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop"}
    | {"thinking", "output_config", "top_k", "metadata", "service_tier"}
)
#: Anthropic's `stop_reason` as a chat `finish_reason` (what its OpenAI-compatible endpoint
#: says for the same stop).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
}
_ENDED = "ended"


def messages_params(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages request for one chat request of a batch file (the live request's fields)."""
    unknown = sorted(set(body) - _KNOWN - _DROPPED)
    if unknown:
        # A field with no place in a Messages request would be lost: refuse rather than send
        # something other than what the live path sends.
        raise InputError(f"a Message Batches request has no place for {unknown}", field="requests")
    cap = body.get("max_tokens", body.get("max_completion_tokens"))
    if not isinstance(cap, int):
        raise InputError("a Messages request needs max_tokens", field="max_tokens")
    params: dict[str, Any] = {"model": body["model"], "max_tokens": cap}
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(str(message.get("content", "")))
        elif role in ("user", "assistant"):
            messages.append({"role": role, "content": message.get("content", "")})
        else:
            raise InputError(f"a Messages request has no role {role!r}", field="messages")
    if system:
        params["system"] = "\n\n".join(system)
    params["messages"] = messages
    thinking = body.get("thinking")
    if thinking is not None:
        params["thinking"] = dict(thinking)
    thinks = isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")
    for name in ("temperature", "top_p", "top_k"):
        # Thinking takes no sampling changes (Anthropic's extended-thinking page): the live
        # compatible endpoint ignores them there, so the batch leaves them out.
        if name in body and not thinks:
            params[name] = body[name]
    if body.get("stop"):
        stop = body["stop"]
        params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    for name in ("output_config", "metadata", "service_tier"):
        if name in body:
            params[name] = body[name]
    return params


def chat_body(message: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages answer as the chat completion body the live client parses: the text blocks
    as `content` (None when there is none), the thinking blocks as `reasoning_content`, the
    stop as `finish_reason`, and usage in chat terms (prompt = input + cache reads and writes;
    completion = output, thinking included, as Anthropic counts it). Missing usage stays
    missing: it is judged (untrusted) as a live answer's is."""
    blocks = message.get("content")
    blocks = blocks if isinstance(blocks, list) else []
    texts = [
        str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    ]
    thoughts = [
        str(b.get("thinking", ""))
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "thinking"
    ]
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if thoughts:
        reply["reasoning_content"] = "".join(thoughts)
    stop = message.get("stop_reason")
    body: dict[str, Any] = {
        "id": message.get("id"),
        "object": "chat.completion",
        "model": message.get("model"),
        "choices": [{"index": 0, "message": reply, "finish_reason": _FINISH.get(str(stop), stop)}],
    }
    usage = message.get("usage")
    if isinstance(usage, dict):
        prompt = sum(
            int(usage.get(name) or 0)
            for name in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        completion = usage.get("output_tokens")
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion if isinstance(completion, int) else None,
            "prompt_tokens_details": {
                "cached_tokens": int(usage.get("cache_read_input_tokens") or 0)
            },
        }
    return body


def output_line(result: Mapping[str, Any]) -> dict[str, Any]:
    """One Message Batches result as an OpenAI batch output line (`read_output` judges it)."""
    custom_id = result.get("custom_id")
    outcome = result.get("result")
    kind = outcome.get("type") if isinstance(outcome, dict) else None
    if kind == "succeeded" and isinstance(outcome, dict):
        message = outcome.get("message")
        body = chat_body(message if isinstance(message, dict) else {})
        return {
            "custom_id": custom_id,
            "response": {"status_code": 200, "body": body},
            "error": None,
        }
    if kind == "errored" and isinstance(outcome, dict):
        error = outcome.get("error")
        inner = error.get("error", error) if isinstance(error, dict) else error
        detail = inner.get("message", inner) if isinstance(inner, dict) else inner
        return {"custom_id": custom_id, "response": None, "error": {"message": str(detail)}}
    return {
        "custom_id": custom_id,
        "response": None,
        "error": {"message": f"the request ended {kind or 'without a result'}"},
    }


def _file_lines(text: str, source: str) -> Iterator[dict[str, Any]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            line = parse_json(raw, source=source)
            if not isinstance(line, dict):
                raise InputError("is not a batch request line", line=number, source=source)
            yield line


class AnthropicBatches:
    """Anthropic's Message Batches (or any server that speaks them) through the `anthropic`
    SDK. `client` is an `anthropic.Anthropic`; `base_url`/`api_key` build one when it is not
    given (the key from ``ANTHROPIC_API_KEY``)."""

    kind = "anthropic"

    def __init__(
        self,
        client: anthropic.Anthropic | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:  # the optional extra
            raise CapabilityError(
                "Anthropic's Message Batches need the `anthropic` package: "
                "pip install 'cotplan[anthropic]'"
            ) from exc
        self._sdk_module = anthropic
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY") or "no-key-needed"
            # The SDK's base URL is the host: the OpenAI-compatible one ends in /v1.
            root = base_url.rstrip("/").removesuffix("/v1") if base_url else None
            client = anthropic.Anthropic(
                api_key=key, base_url=root, max_retries=max_retries, timeout=timeout
            )
        self.client = client
        self.where = scrub_secrets(str(client.base_url), (client.api_key or "",))

    def _sdk(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        sdk = self._sdk_module
        try:
            return call(*args, **kwargs)
        except sdk.RateLimitError as exc:
            raise RateLimitError(f"{self.where} answered 429 (rate limited)") from exc
        except sdk.APIStatusError as exc:
            raise APIStatusError(
                f"{self.where} answered {exc.status_code}: "
                f"{scrub_secrets(str(exc.message), (self.client.api_key or '',))}",
                status_code=exc.status_code,
            ) from exc
        except sdk.APIConnectionError as exc:
            raise ServerUnreachableError(f"cannot reach {self.where}") from exc
        except sdk.AnthropicError as exc:
            raise BackendError(f"{self.where}: {scrub_secrets(str(exc))}") from exc

    def upload(self, name: str, text: str) -> str:
        """No upload (the requests go in the batch itself): a local id, the file's digest and
        the time, which `find` uses to recognise the batch made from it."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        return f"local-{digest}-{int(time.time())}"

    def create(self, input_file_id: str, endpoint: str, token: str, *, text: str) -> str:
        if endpoint != "/v1/chat/completions":
            raise CapabilityError(f"Message Batches take Messages requests, not {endpoint}")
        requests = [
            {"custom_id": line["custom_id"], "params": messages_params(line.get("body") or {})}
            for line in _file_lines(text, input_file_id)
        ]
        batch = self._sdk(self.client.messages.batches.create, requests=requests)
        return str(batch.id)

    def find(self, input_file_id: str, *, text: str) -> str | None:
        ids = {line["custom_id"] for line in _file_lines(text, input_file_id)}
        since = int(input_file_id.rsplit("-", 1)[-1]) - 5
        for batch in self._sdk(self.client.messages.batches.list, limit=100):
            created = batch.created_at
            if isinstance(created, datetime) and created.timestamp() < since:
                continue
            if sum(_counts(batch).values()) != len(ids):
                continue
            if batch.processing_status == _ENDED:
                got = {r["custom_id"] for r in self._results(str(batch.id))}
                if got != ids:
                    continue
            return str(batch.id)
        return None

    def poll(self, batch_id: str) -> Poll:
        batch = self._sdk(self.client.messages.batches.retrieve, batch_id)
        counts = _counts(batch)
        ended = batch.processing_status == _ENDED
        return Poll(
            # The batch path's words (OpenAI's): "completed" once it ended, whatever each
            # request's fate; failed requests are read from the results.
            status="completed" if ended else "in_progress",
            completed=counts["succeeded"],
            failed=counts["errored"] + counts["canceled"] + counts["expired"],
            total=sum(counts.values()),
            output_file_id=batch_id if ended else None,
            error_file_id=None,
        )

    def _results(self, batch_id: str) -> list[dict[str, Any]]:
        decoder = self._sdk(self.client.messages.batches.results, batch_id)
        return [r.model_dump(mode="json") if hasattr(r, "model_dump") else r for r in decoder]

    def content(self, file_id: str) -> bytes:
        """The batch's results (`file_id` is the batch id) as OpenAI batch output lines."""
        lines = [output_line(result) for result in self._results(file_id)]
        return "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")


def _counts(batch: Any) -> dict[str, int]:
    counts = getattr(batch, "request_counts", None)
    names = ("processing", "succeeded", "errored", "canceled", "expired")
    return {name: int(getattr(counts, name, 0) or 0) for name in names}
