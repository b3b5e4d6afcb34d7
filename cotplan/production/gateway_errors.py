"""How the gateway tells a client that a call failed: always OpenAI's error object, never a
bare 500 or a traceback, and never a secret.

`failure_of(exc, secrets)` turns whatever a call raised into a `Failure` (HTTP status, OpenAI
error `type`, message, `param`); `Failure.response()` is the JSON error reply and
`Failure.event()` the server-sent event sent instead once a stream's 200 has gone (the OpenAI
SDKs raise it as an `APIError`; `Failure.responses_event()` on a Responses stream). Every
message passes through `cotplan.backends.keys.scrub_secrets` with the upstream's key among the
secrets: an upstream that echoes the request's headers in its error body must not show the key
to the gateway's clients.

| raised                                        | status              | type                  |
|-----------------------------------------------|---------------------|-----------------------|
| `InputError` (the call cotplan refuses)       | 400                 | invalid_request_error |
| the upstream's error status                   | the upstream's own  | upstream_error        |
| the upstream timed out                        | 504                 | upstream_timeout      |
| the upstream could not be reached             | 502                 | upstream_error        |
| the upstream answered what cannot be read     | 502                 | upstream_error        |
| any other error                               | 500                 | server_error          |
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import openai
from starlette.responses import JSONResponse

from cotplan.backends.keys import scrub_secrets
from cotplan.errors import BackendError, CotplanError, InputError

__all__ = ["Failure", "failure_of", "logger"]

#: The gateway's own log (one line a failure; uvicorn's loggers carry the access log).
logger = logging.getLogger("cotplan.gateway")

#: The longest message passed on: an upstream's error page can be long, and a client needs
#: its first lines.
_MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class Failure:
    """One failed call as OpenAI's error object and the HTTP status it is sent with."""

    status: int
    kind: str
    message: str
    param: str | None = None

    def body(self) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code"}}``, as OpenAI's API sends it;
        `code` is the status as text (a stream's error event has no status line)."""
        error = {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": str(self.status),
        }
        return {"error": error}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status)

    def event(self) -> str:
        """The failure as one server-sent event (after a stream's 200 has gone)."""
        return f"data: {json.dumps(self.body(), separators=(',', ':'))}\n\n"

    def responses_event(self, sequence_number: int) -> str:
        """The failure as a Responses stream's ``error`` event (`type`, `code`, `message`,
        `param`, `sequence_number`, as OpenAI sends one), with the error object beside them
        so that the OpenAI SDKs raise it as an `APIError`, as they do a chat stream's."""
        error = self.body()["error"]
        fields = {k: error[k] for k in ("code", "message", "param")}
        body = {"type": "error", **fields, "sequence_number": sequence_number, "error": error}
        return f"event: error\ndata: {json.dumps(body, separators=(',', ':'))}\n\n"


def _upstream_status(exc: openai.APIStatusError) -> int:
    # A status the client could take for the gateway's own success or redirect is not one.
    return exc.status_code if 400 <= exc.status_code <= 599 else 502


def failure_of(exc: BaseException, secrets: Iterable[str] = ()) -> Failure:
    """What `exc`, raised while answering a call, tells the client (see the module's table);
    every message scrubbed of `secrets` and of anything shaped like a key."""
    secrets = tuple(s for s in secrets if s)

    def clean(text: str) -> str:
        return scrub_secrets(text[:_MESSAGE_CHARS], secrets)

    if isinstance(exc, InputError):
        return Failure(400, "invalid_request_error", clean(str(exc)), exc.field)
    if isinstance(exc, openai.APITimeoutError):
        return Failure(504, "upstream_timeout", "upstream: timed out before it answered")
    if isinstance(exc, openai.APIConnectionError):
        return Failure(502, "upstream_error", clean(f"upstream unreachable: {exc}"))
    if isinstance(exc, openai.APIStatusError):
        return Failure(_upstream_status(exc), "upstream_error", clean(f"upstream: {exc.message}"))
    if isinstance(exc, openai.APIError):  # an error event in the stream, a body it cannot read
        return Failure(502, "upstream_error", clean(f"upstream: {exc.message}"))
    if isinstance(exc, BackendError):  # an answer that fails the response checks
        return Failure(502, "upstream_error", clean(str(exc)))
    if isinstance(exc, CotplanError):
        return Failure(500, "server_error", clean(str(exc)))
    # A fault of the gateway itself: one line in its log, the type (not the words: they may
    # quote anything) to the client.
    logger.error("a call failed: %s", clean(f"{type(exc).__name__}: {exc}"))
    return Failure(
        500,
        "server_error",
        f"the gateway failed on this call ({type(exc).__name__}); its log says more",
    )
