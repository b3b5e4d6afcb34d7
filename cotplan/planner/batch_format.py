"""The OpenAI batch file format: request lines written, output and error lines read back.

One request is one JSONL line ``{"custom_id", "method": "POST", "url", "body"}`` (chat
completions, completions, or the Responses API's ``/v1/responses``, whose answers carry the
hidden reasoning in ``usage.output_tokens_details.reasoning_tokens``), the format of OpenAI's
Batch API (platform.openai.com/docs/guides/batch, read 2026-12-05) that vLLM's
``run-batch`` reads and writes offline too. An output line is ``{"id", "custom_id",
"response": {"status_code", "request_id", "body"}, "error"}``; the error file has the same
shape with `error` set (or a non-200 `status_code`).

`custom_id` is a digest of the request itself (operation and every field), so the same request
built again in another process (a rerun after a kill) has the same id: what was submitted or
answered once is known by its id and never sent again.

Every output line is read as untrusted input: a line that is not JSON, has no `custom_id`, or
whose answer fails the checks a live answer must pass (`check_response`: an `error` object, no
`choices`) is a failure of that request, to be retried, never an answer; usage that cannot be
right or a missing `content` stay in the answer and are judged as a live answer's are
(`cotplan.backends.parsing`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cotplan.backends.answer_checks import check_response, server_text
from cotplan.backends.cache import canonical_key
from cotplan.backends.responses import parse_response
from cotplan.errors import BackendError, InputError, ResponseFormatError
from cotplan.io import parse_json

__all__ = [
    "ENDPOINTS",
    "MAX_REQUESTS_PER_FILE",
    "BatchOutput",
    "BatchRequest",
    "read_output",
    "request_lines",
]

#: The batch endpoint of each operation: `OpenAICompatibleBackend`'s chat and completions,
#: `OpenAIResponsesBackend`'s Responses (its body is the request as the live client sends it).
ENDPOINTS = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "responses": "/v1/responses",
}
#: OpenAI's limit on one batch file (platform.openai.com/docs/guides/batch, read 2026-12-05).
MAX_REQUESTS_PER_FILE = 50_000
#: One output line: a reasoning model's answer is a few hundred kB at most.
_MAX_LINE_BYTES = 8_000_000


@dataclass(frozen=True)
class BatchRequest:
    """One request of a batch: what the live client would send (`operation`, `params`, the
    SDK's keyword arguments) and its batch line (`body`: the same fields, `extra_body` merged
    in, as they go over the wire)."""

    operation: str
    params: Mapping[str, Any] = field(repr=False)

    @property
    def custom_id(self) -> str:
        return "cp-" + canonical_key({"op": self.operation, "params": dict(self.params)})[:32]

    @property
    def url(self) -> str:
        return ENDPOINTS[self.operation]

    @property
    def body(self) -> dict[str, Any]:
        body = {k: v for k, v in self.params.items() if k != "extra_body"}
        body.update(self.params.get("extra_body") or {})
        return body

    def line(self) -> dict[str, Any]:
        return {"custom_id": self.custom_id, "method": "POST", "url": self.url, "body": self.body}


def request_lines(requests: list[BatchRequest]) -> str:
    """The JSONL text of a batch input file."""
    if len(requests) > MAX_REQUESTS_PER_FILE:
        raise InputError(
            f"{len(requests):,} requests is more than the {MAX_REQUESTS_PER_FILE:,} one batch "
            "file may hold",
            field="requests",
        )
    return "".join(json.dumps(r.line(), ensure_ascii=False) + "\n" for r in requests)


@dataclass(frozen=True)
class BatchOutput:
    """What an output (or error) file said: answers by custom_id (the response body, checked),
    failures by custom_id (why), and lines that named no request we know of."""

    answers: dict[str, dict[str, Any]]
    failures: dict[str, str]
    unknown: int = 0


def read_output(
    text: str | bytes,
    requests: Mapping[str, BatchRequest],
    *,
    source: str,
) -> BatchOutput:
    """Read an output or error file against the requests it answers (by custom_id).

    A line whose custom_id is not in `requests` is counted in `unknown` and left out (an
    executor that answered something else is no answer to ours); a line that cannot be read at
    all names its line in an `InputError`, since the rest of such a file cannot be trusted.
    """
    data = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    answers: dict[str, dict[str, Any]] = {}
    failures: dict[str, str] = {}
    unknown = 0
    for number, raw_line in enumerate(data.splitlines(), start=1):
        if not raw_line.strip():
            continue
        try:
            line = parse_json(raw_line, source=source, max_bytes=_MAX_LINE_BYTES)
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], line=number, source=source) from None
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            raise InputError("is not an output line with a `custom_id`", line=number, source=source)
        custom_id = line["custom_id"]
        request = requests.get(custom_id)
        if request is None:
            unknown += 1
            continue
        verdict = _judge(line, request)
        if isinstance(verdict, str):
            # A failure never hides an answer the same file gave for that request elsewhere.
            if custom_id not in answers:
                failures[custom_id] = verdict
        else:
            answers[custom_id] = verdict
            failures.pop(custom_id, None)
    return BatchOutput(answers, failures, unknown)


def _judge(line: Mapping[str, Any], request: BatchRequest) -> dict[str, Any] | str:
    """The answer's body if it passes the live checks, else why it failed."""
    error = line.get("error")
    if error:
        detail = error.get("message", error) if isinstance(error, dict) else error
        return f"the batch reported an error: {server_text(detail, limit=200)}"
    response = line.get("response")
    if not isinstance(response, dict):
        return "the line has no `response` object"
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        detail = body.get("error", body) if isinstance(body, dict) else body
        return f"status {status!r}: {server_text(detail, limit=200)}"
    try:
        if request.operation == "responses":
            # A Responses body is read as the live client reads it: `error`, a failed status or
            # an unreadable usage is a failure; a cut (`incomplete`) is an answer.
            if not isinstance(body, dict):
                raise ResponseFormatError("the batch sent a body that is not a JSON object")
            parse_response(body, model=str(request.params.get("model", "")))
            if body.get("status") == "failed":
                raise ResponseFormatError("the batch sent a response whose status is failed")
        else:
            check_response(
                body, operation=request.operation, params=request.params, where="the batch"
            )
    except (ResponseFormatError, BackendError) as exc:
        return str(exc)
    assert isinstance(body, dict)  # check_response refuses anything else
    return body
