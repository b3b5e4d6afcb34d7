"""Gemini's Batch Mode through the official `google-genai` SDK (the optional extra
``cotplan[gemini]``), behind the same `BatchService` as OpenAI's Batch API.

Gemini API docs, Batch Mode (ai.google.dev/gemini-api/docs/batch-mode, read 2026-12-05):
requests go in as inline ``GenerateContentRequest`` objects (a batch under 20 MB) or a JSONL
file, at 50% of the interactive price, with a 24-hour target turnaround.
``client.batches.create(model=..., src=[{"contents", "config", "metadata"}, ...],
config={"display_name": ...})`` creates one (the REST call ``models/{model}:batchGenerateContent``);
``client.batches.get(name=...)`` returns its ``state`` (``JOB_STATE_PENDING``, ``_RUNNING``,
``_SUCCEEDED``, ``_FAILED``, ``_CANCELLED``, ``_EXPIRED``) and, once done,
``dest.inlined_responses``: one per request, in order, each a ``GenerateContentResponse``
(``response``) or an ``error``, with the request's ``metadata`` echoed; ``client.batches.list()``
lists them.

The rest of the batch path stays in the OpenAI batch format, so this service translates at its
edges, as `AnthropicBatches` does. The batch file holds the chat requests the live client sends
to Gemini's OpenAI-compatible endpoint (``thinking_config`` with a ``thinking_budget`` or a
``thinking_level``, ``max_tokens``); `create` turns each into an inline request
(`generate_request`: system messages into ``system_instruction``, ``assistant`` into the
``model`` role, the thinking config and the cap kept per request, the line's `custom_id` as
``metadata``), and `content` turns each response back into the chat answer a live call gets
(`chat_body`): the non-thought parts as the answer, ``MAX_TOKENS`` as a cut, and usage in chat
terms (completion = candidates + thoughts, the thoughts as ``reasoning_tokens`` inside it, as
cotplan reads every chat answer). Requests go inline only: a batch file over the 20 MB inline
limit is refused (`MAX_REQUESTS` keeps calibration files far below it). Gemini has no upload
for inline requests: the input file's id is a local one (its digest and the time), written as
the batch's display name, so a batch a killed run created but never wrote down is found by it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping
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
    from google import genai

__all__ = ["MAX_INLINE_BYTES", "MAX_REQUESTS", "GeminiBatches", "chat_body", "generate_request"]

#: Gemini's limit on a batch's inline requests (the Batch Mode page: "under 20 MB").
MAX_INLINE_BYTES = 20_000_000
#: Requests in one Gemini batch: a calibration request is under 1 kB, so 10,000 stay well under
#: the inline limit.
MAX_REQUESTS = 10_000
#: Chat fields with a place in a GenerateContent request (`seed` too: Gemini takes one).
_KNOWN = frozenset(
    {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop"}
    | {"seed", "thinking_config", "google"}
)
#: Gemini's `finishReason` as a chat `finish_reason`.
_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
}
#: A job's state as the batch path's status words (OpenAI's).
_STATUS = {
    "JOB_STATE_SUCCEEDED": "completed",
    # Vertex's name for a batch some of whose requests failed: the results say which.
    "JOB_STATE_PARTIALLY_SUCCEEDED": "completed",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_CANCELLED": "cancelled",
    "JOB_STATE_EXPIRED": "expired",
}
_CUSTOM_ID = "custom_id"


def generate_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The inline request (the SDK's `InlinedRequest` fields) for one chat request of a batch
    file: the live request's fields, each in its GenerateContent place."""
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        # A field with no place in a GenerateContent request would be lost: refuse rather
        # than send something other than what the live path sends.
        raise InputError(f"a Gemini batch request has no place for {unknown}", field="requests")
    config: dict[str, Any] = {}
    cap = body.get("max_tokens", body.get("max_completion_tokens"))
    if cap is not None:
        config["max_output_tokens"] = cap
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        role = message.get("role")
        text = str(message.get("content", ""))
        if role in ("system", "developer"):
            system.append(text)
        elif role in ("user", "assistant"):
            role = "model" if role == "assistant" else "user"
            contents.append({"role": role, "parts": [{"text": text}]})
        else:
            raise InputError(f"a Gemini request has no role {role!r}", field="messages")
    if system:
        config["system_instruction"] = "\n\n".join(system)
    for name in ("temperature", "top_p", "seed"):
        if name in body:
            config[name] = body[name]
    if body.get("stop"):
        stop = body["stop"]
        config["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    # The OpenAI-compatible endpoint takes the thinking config at the top level or under
    # `google` (its `extra_body` form); a batch request has one place for it.
    google = body.get("google")
    thinking = body.get("thinking_config")
    if isinstance(google, Mapping):
        thinking = google.get("thinking_config", thinking)
    if thinking is not None:
        config["thinking_config"] = dict(thinking)
    return {"model": body["model"], "contents": contents, "config": config}


def chat_body(response: Mapping[str, Any]) -> dict[str, Any]:
    """A GenerateContentResponse (the SDK's, dumped to JSON with its field names) as the chat
    completion body the live client parses. Missing usage stays missing: it is judged
    (untrusted) as a live answer's is."""
    candidates = response.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else {}
    first = first if isinstance(first, Mapping) else {}
    content = first.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    parts = parts if isinstance(parts, list) else []
    texts = [str(p.get("text") or "") for p in parts if isinstance(p, Mapping)]
    thought = [bool(p.get("thought")) for p in parts if isinstance(p, Mapping)]
    answer = [t for t, is_thought in zip(texts, thought, strict=True) if not is_thought]
    thinking = [t for t, is_thought in zip(texts, thought, strict=True) if is_thought]
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(answer) if answer else None}
    if thinking:
        reply["reasoning_content"] = "".join(thinking)
    finish = first.get("finish_reason")
    body: dict[str, Any] = {
        "id": response.get("response_id"),
        "object": "chat.completion",
        "model": response.get("model_version"),
        "choices": [
            {"index": 0, "message": reply, "finish_reason": _FINISH.get(str(finish), finish)}
        ],
    }
    usage = response.get("usage_metadata")
    if isinstance(usage, Mapping):
        prompt = usage.get("prompt_token_count")
        candidates_tokens = usage.get("candidates_token_count") or 0
        thoughts = int(usage.get("thoughts_token_count") or 0)
        # Gemini counts thoughts apart from the candidates; a chat answer counts reasoning
        # inside completion (`cotplan.backends.parsing.read_usage` checks it).
        completion = candidates_tokens + thoughts if isinstance(candidates_tokens, int) else None
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": usage.get("total_token_count"),
            "completion_tokens_details": {"reasoning_tokens": thoughts},
            "prompt_tokens_details": {
                "cached_tokens": int(usage.get("cached_content_token_count") or 0)
            },
        }
    return body


def output_line(result: Mapping[str, Any], custom_id: str) -> dict[str, Any]:
    """One inline response (the SDK's, dumped) as an OpenAI batch output line."""
    response = result.get("response")
    if isinstance(response, Mapping) and not result.get("error"):
        body = chat_body(response)
        return {"custom_id": custom_id, "response": {"status_code": 200, "body": body}}
    error = result.get("error")
    detail = error.get("message", error) if isinstance(error, Mapping) else error
    return {
        "custom_id": custom_id,
        "response": None,
        "error": {"message": str(detail or "the request ended without a response")},
    }


def _file_lines(text: str, source: str) -> Iterator[dict[str, Any]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            line = parse_json(raw, source=source)
            if not isinstance(line, dict):
                raise InputError("is not a batch request line", line=number, source=source)
            yield line


def _state(job: Any) -> str:
    state = getattr(job, "state", None)
    return str(getattr(state, "value", state) or "")


class GeminiBatches:
    """Gemini's Batch Mode (or any server that speaks it) through the `google-genai` SDK.

    `client` is a `google.genai.Client`; `base_url` (the host, or the OpenAI-compatible
    endpoint's URL, whose ``/v1beta/openai`` is dropped) and `api_key` build one when it is
    not given (the key from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``).
    """

    kind = "gemini"
    max_requests = MAX_REQUESTS

    def __init__(
        self,
        client: genai.Client | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
    ) -> None:
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError as exc:  # the optional extra
            raise CapabilityError(
                "Gemini's Batch Mode needs the `google-genai` package: "
                "pip install 'cotplan[gemini]'"
            ) from exc
        self._errors = errors
        self._key = (
            api_key
            or os.environ.get("GEMINI_API_KEY")
            or os.environ.get("GOOGLE_API_KEY")
            or "no-key-needed"
        )
        if client is None:
            root = None
            if base_url:
                root = base_url.rstrip("/").removesuffix("/openai").removesuffix("/v1beta")
            options = types.HttpOptions(
                base_url=root,
                api_version="v1beta",
                timeout=int(timeout * 1000),
                retry_options=types.HttpRetryOptions(attempts=max_retries + 1),
            )
            client = genai.Client(vertexai=False, api_key=self._key, http_options=options)
        self.client = client
        self.where = scrub_secrets(base_url or "generativelanguage.googleapis.com", (self._key,))

    def _sdk(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        import httpx

        try:
            return call(*args, **kwargs)
        except self._errors.APIError as exc:
            message = scrub_secrets(str(exc.message or exc), (self._key,))
            if exc.code == 429:
                raise RateLimitError(f"{self.where} answered 429 (rate limited)") from exc
            raise APIStatusError(
                f"{self.where} answered {exc.code}: {message}", status_code=int(exc.code)
            ) from exc
        except httpx.TransportError as exc:
            raise ServerUnreachableError(f"cannot reach {self.where}") from exc
        except ValueError as exc:  # the SDK's own checks of what it sends and reads
            raise BackendError(f"{self.where}: {scrub_secrets(str(exc), (self._key,))}") from exc

    def upload(self, name: str, text: str) -> str:
        """No upload (the requests go in the batch itself): a local id, the file's digest and
        the time, which becomes the batch's display name (`find` looks for it)."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        return f"local-{digest}-{int(time.time())}"

    def create(self, input_file_id: str, endpoint: str, token: str, *, text: str) -> str:
        if endpoint != "/v1/chat/completions":
            raise CapabilityError(f"Gemini batches take GenerateContent requests, not {endpoint}")
        if len(text.encode("utf-8")) > MAX_INLINE_BYTES:
            raise CapabilityError(
                f"a Gemini batch of inline requests is limited to {MAX_INLINE_BYTES:,} bytes"
            )
        requests: list[dict[str, Any]] = []
        models: set[str] = set()
        for line in _file_lines(text, input_file_id):
            request = generate_request(line.get("body") or {})
            models.add(str(request.pop("model")))
            request["metadata"] = {_CUSTOM_ID: str(line["custom_id"])}
            requests.append(request)
        if len(models) != 1:
            raise InputError(f"a Gemini batch holds one model's requests, got {sorted(models)}")
        job = self._sdk(
            self.client.batches.create,
            model=models.pop(),
            src=requests,
            config={"display_name": _display_name(input_file_id)},
        )
        return str(job.name)

    def find(self, input_file_id: str, *, text: str) -> str | None:
        wanted = _display_name(input_file_id)
        for seen, job in enumerate(self._sdk(self.client.batches.list, config={"page_size": 100})):
            if job.display_name == wanted:
                return str(job.name)
            if seen >= 1000:  # batches are listed newest first: the one sought is recent
                break
        return None

    def poll(self, batch_id: str) -> Poll:
        job = self._sdk(self.client.batches.get, name=batch_id)
        status = _STATUS.get(_state(job), "in_progress")
        done = status != "in_progress"
        results = _inlined(job) if done else []
        failed = sum(1 for r in results if r.get("error") or not r.get("response"))
        return Poll(
            status=status,
            completed=len(results) - failed,
            failed=failed,
            total=len(results),
            output_file_id=batch_id if done else None,
            error_file_id=None,
        )

    def content(self, file_id: str) -> bytes:
        """The batch's responses (`file_id` is the batch's name) as OpenAI batch output lines;
        a response whose metadata lost its custom_id is left out (the batch path counts its
        request as failed)."""
        job = self._sdk(self.client.batches.get, name=file_id)
        lines = []
        for result in _inlined(job):
            metadata = result.get("metadata")
            custom_id = metadata.get(_CUSTOM_ID) if isinstance(metadata, Mapping) else None
            if isinstance(custom_id, str):
                lines.append(output_line(result, custom_id))
        return "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")


def _display_name(input_file_id: str) -> str:
    return f"cotplan-{input_file_id}"


def _inlined(job: Any) -> list[dict[str, Any]]:
    dest = getattr(job, "dest", None)
    responses = getattr(dest, "inlined_responses", None) or []
    return [r.model_dump(mode="json", exclude_none=True) for r in responses]
