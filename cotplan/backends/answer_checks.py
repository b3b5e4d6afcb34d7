"""What an answer must be before it is used or recorded in the call cache.

Some servers answer 200 with no usable completion: an ``{"error": ...}`` body (gateways under
load), empty `choices`, a body that is not JSON. Such an answer is as transient as a 503: the
client retries it and never records it, and a recorded row that fails the same checks is
discarded rather than replayed. Token counts that cannot be right are not a broken answer: the
answer is kept and its usage flagged (`cotplan.backends.parsing.read_usage`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cotplan.backends.cache import RecordedCall
from cotplan.backends.keys import scrub_secrets
from cotplan.backends.parsing import parse_completion, parse_prompt_logprobs, request_cap
from cotplan.errors import ResponseFormatError

__all__ = [
    "MAX_CHARS_PER_TOKEN",
    "check_recorded",
    "check_recorded_row",
    "check_response",
    "server_text",
]


def server_text(detail: object, secrets: Iterable[str] = (), *, limit: int = 300) -> str:
    """What a server said, cut short and with every secret masked, fit for an error line."""
    return scrub_secrets(str(detail)[:limit], secrets)


def check_response(
    raw: object, *, operation: str, params: Mapping[str, Any], where: str = "the endpoint"
) -> None:
    """Raise `ResponseFormatError`, naming the field, unless `raw` is an answer worth keeping.

    One that passes also parses, as `parse_completion` (or `parse_prompt_logprobs` for a
    prompt-scoring request) reads it.
    """
    if not isinstance(raw, dict):
        raise ResponseFormatError(f"{where} sent a body that is not a JSON object")
    error = raw.get("error")
    if error is not None:
        detail = error.get("message", error) if isinstance(error, dict) else error
        raise ResponseFormatError(
            f"{where} answered 200 with `error` instead of a completion: "
            f"{server_text(detail, limit=200)}"
        )
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices:
        state = "missing" if choices is None else "empty" if choices == [] else "not a list"
        raise ResponseFormatError(f"{where} sent a response whose `choices` is {state}")
    if not isinstance(choices[0], dict):
        raise ResponseFormatError(f"{where} sent `choices[0]` that is not an object")
    extra_body = params.get("extra_body") or {}
    if operation == "completions" and extra_body.get("prompt_logprobs"):
        parse_prompt_logprobs(raw, str(params.get("prompt", "")))
        return
    field = "text" if operation == "completions" else "message"
    if field not in choices[0]:
        # A choice without its answer is a broken body, not `content: null` (a paid answer
        # that says nothing, kept): read as the latter it was cached and replayed as no answer.
        raise ResponseFormatError(f"{where} sent `choices[0]` without `{field}`")
    completion = parse_completion(raw, model=str(params.get("model", "")), params=params)
    cap = request_cap(params)
    written = len(completion.text) + len(completion.reasoning)
    if cap is not None and written > cap * MAX_CHARS_PER_TOKEN + _SLACK_CHARS:
        # No model writes this under the cap: a server fault (a stuck stream, a runaway
        # buffer). Kept, it would be replayed for ever and its counts would reach the spend.
        raise ResponseFormatError(
            f"{where} sent {written:,} characters for a request capped at {cap:,} tokens, more "
            f"than {cap:,} tokens can spell: not an answer to this request"
        )


#: More characters than any one token of any tokenizer spells (the longest are runs of spaces
#: or repeated punctuation, well under this).
MAX_CHARS_PER_TOKEN = 256
#: Characters allowed beyond the cap's worth (a stop sequence, a server's framing).
_SLACK_CHARS = 1024


def check_recorded(
    entry: object, *, operation: str, params: Mapping[str, Any], where: str = "the cache"
) -> None:
    """`check_response` for a cache entry (``{"response": ..., "latency_s": ...}``)."""
    if not isinstance(entry, dict) or "response" not in entry:
        raise ResponseFormatError("the recorded entry has no `response`")
    check_response(entry["response"], operation=operation, params=params, where=where)


def check_recorded_row(row: RecordedCall) -> None:
    """`check_recorded` on a stored cache row: what `cotplan cache verify` runs on each."""
    try:
        entry = json.loads(row.response)
        params = json.loads(row.request)
    except ValueError as exc:
        raise ResponseFormatError(f"the recorded call is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise ResponseFormatError("the recorded `request` is not a JSON object")
    check_recorded(entry, operation=row.operation, params=params, where="the recorded answer")
