"""The openai SDK's exceptions, translated into cotplan's, with messages that tell the truth.

The SDK retries 408/409/429/5xx, timeouts and dropped connections, but not when the server's
`Retry-After` asks for a longer wait than it will make (`MAX_RETRY_WAIT_S`): it then gives up
after one attempt. A message here says how many attempts were really made (counted on the
wire by the client), and never quotes a secret: every text a server sent passes through
`cotplan.backends.keys.scrub_secrets`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import openai

from cotplan.backends.answer_checks import server_text
from cotplan.errors import (
    APIStatusError,
    BackendError,
    CotplanError,
    RateLimitError,
    RequestTimeoutError,
    ResponseFormatError,
    ServerUnreachableError,
)

__all__ = ["MAX_RETRY_WAIT_S", "retry_after_s", "translate_sdk_error"]

#: The longest `Retry-After` the SDK waits for before a retry (openai's MAX_RETRY_AFTER_DELAY):
#: a server asking for more is not retried at all.
MAX_RETRY_WAIT_S = 120.0


#: How `Retry-After` may spell infinity or not-a-number: the SDK ignores such a wait and backs
#: off on its own, so it is no wait that stops a retry.
_NOT_A_WAIT = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}


def retry_after_s(exc: openai.APIStatusError) -> float | None:
    """The wait in seconds the server asked for (`Retry-After` or `retry-after-ms`), read as
    the SDK reads it: the first header present decides; ``nan`` or ``inf`` is no wait (None:
    the SDK retries with its own backoff), while a number too large for a float (``1e400``) is
    an endless one (inf: the SDK does not retry)."""
    headers = exc.response.headers
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue  # an HTTP date: the SDK reads it, and it is rare enough to leave unsaid
        if value.strip().lower() in _NOT_A_WAIT or math.isnan(seconds):
            return None
        return seconds if math.isfinite(seconds) else math.inf
    return None


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"


def _why_not_retried(exc: openai.APIStatusError, attempts: int) -> str:
    """How many attempts a failed status took, and why there were no more."""
    wait = retry_after_s(exc)
    # Only a call that went out once was stopped by the wait it was asked for: one retried
    # was not, whatever its last answer asked.
    if wait is not None and wait > MAX_RETRY_WAIT_S and attempts <= 1:
        shown = "forever" if math.isinf(wait) else f"{wait:g} s"
        return (
            f"it asked to wait {shown} (Retry-After), longer than the {MAX_RETRY_WAIT_S:g} s "
            f"cotplan waits, so it was not retried ({_attempts(attempts)}); try again later"
        )
    if attempts <= 1:
        return "not retried (1 attempt)"
    return f"after {_attempts(attempts)}"


def translate_sdk_error(
    exc: openai.OpenAIError, *, where: str, attempts: int, secrets: Iterable[str] = ()
) -> CotplanError:
    """The cotplan error for an SDK failure of one call that went over the wire `attempts`
    times; the caller raises it ``from exc``."""
    secrets = tuple(secrets)
    tries = _attempts(max(1, attempts))
    if isinstance(exc, openai.APITimeoutError):
        return RequestTimeoutError(f"{where} did not answer in time ({tries})")
    if isinstance(exc, openai.APIConnectionError):
        cause = server_text(exc.__cause__ or exc, secrets)
        return ServerUnreachableError(f"cannot reach {where} ({tries}): {cause}")
    if isinstance(exc, openai.RateLimitError):
        return RateLimitError(
            f"{where} answered 429 (rate limited); {_why_not_retried(exc, attempts)}"
        )
    if isinstance(exc, openai.AuthenticationError):
        return APIStatusError(
            f"{where} rejected the API key (401); check the key's environment variable",
            status_code=401,
        )
    if isinstance(exc, openai.APIStatusError):
        detail = server_text(_error_detail(exc), secrets)
        status = exc.status_code
        retried = status in (408, 409) or status >= 500  # what the SDK retries
        tail = f" ({_why_not_retried(exc, attempts)})" if retried else ""
        return APIStatusError(f"{where} answered {status}: {detail}{tail}", status_code=status)
    if isinstance(exc, openai.APIResponseValidationError):
        return ResponseFormatError(
            f"{where} sent a response we cannot parse: {server_text(exc, secrets)}"
        )
    return BackendError(f"{where}: {server_text(exc, secrets)}")


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
    return str(exc.message)
