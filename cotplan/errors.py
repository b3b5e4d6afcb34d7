"""One error tree for everything cotplan raises on purpose.

Lower libraries' errors (openai, httpx, sqlite3, json, xllamacpp) are translated into the most
specific class below and chained with ``raise ... from exc`` so the cause stays visible to
developers while users read one clear message.

    CotplanError
    ├── InputError              bad user input: names the field (and the line, for files)
    │   ├── UnknownModelError   a model name we cannot price or count tokens for
    │   └── InfeasibleTargetError  a target error at or below what the model can reach
    ├── ConfigError             the environment is not set up: missing key, missing model file
    │   └── MissingKeyError     names the environment variable to set
    ├── ModelFileError          a GGUF that is missing, not a GGUF, or fails its checksum
    ├── BackendError            a model endpoint failed us
    │   ├── ServerUnreachableError   nothing answers at the address
    │   ├── RequestTimeoutError      it answered too slowly, retries included
    │   ├── RateLimitError           429 after every retry
    │   ├── APIStatusError           any other HTTP error status (carries `status_code`)
    │   ├── ResponseFormatError      it answered with something we cannot parse
    │   └── CapabilityError          the backend cannot do what was asked (e.g. logprobs)
    ├── LocalServerError        the embedded llama.cpp server failed to start or died
    ├── CacheError              the call cache cannot be opened or written
    └── NotFittedError          an estimator was used before `fit`
"""

from __future__ import annotations

__all__ = [
    "APIStatusError",
    "BackendError",
    "CacheError",
    "CapabilityError",
    "ConfigError",
    "CotplanError",
    "InfeasibleTargetError",
    "InputError",
    "LocalServerError",
    "MissingKeyError",
    "ModelFileError",
    "NotFittedError",
    "RateLimitError",
    "RequestTimeoutError",
    "ResponseFormatError",
    "ServerUnreachableError",
    "UnknownModelError",
    "describe_uncaught",
]


class CotplanError(Exception):
    """Base of every error cotplan raises on purpose."""


class InputError(CotplanError, ValueError):
    """Bad input. `field` names what was wrong; `line` is set for file input (1-based)."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        source: str | None = None,
    ) -> None:
        self.field = field
        self.line = line
        self.source = source
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"`{field}`")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class UnknownModelError(InputError, KeyError):
    """A model name cotplan has no entry for. `suggestions` holds the closest known names."""

    def __init__(self, model: str, suggestions: list[str], *, what: str = "model") -> None:
        self.model = model
        self.suggestions = suggestions
        hint = f"; closest known: {', '.join(suggestions)}" if suggestions else ""
        super().__init__(f"unknown {what} {model!r}{hint}", field="model")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class InfeasibleTargetError(InputError):
    """The requested target cannot be reached; `attainable` says what can."""

    def __init__(self, message: str, *, field: str, attainable: float | None = None) -> None:
        self.attainable = attainable
        super().__init__(message, field=field)


class ConfigError(CotplanError):
    """The environment is missing something cotplan needs."""


class MissingKeyError(ConfigError):
    """An API key is needed; the message names the environment variable to set."""

    def __init__(self, env_var: str, provider: str) -> None:
        self.env_var = env_var
        super().__init__(
            f"no API key for {provider}: set the environment variable {env_var}, or put "
            f"{env_var}=... in a private key file named by COTPLAN_KEY_FILE"
        )


class ModelFileError(CotplanError):
    """A model file is missing, is not a GGUF, or does not match its checksum."""


class BackendError(CotplanError):
    """A model endpoint failed."""


class ServerUnreachableError(BackendError):
    """Nothing answered at the endpoint's address."""


class RequestTimeoutError(BackendError):
    """The endpoint answered too slowly, after all retries."""


class RateLimitError(BackendError):
    """The endpoint kept answering 429 after all retries."""


class APIStatusError(BackendError):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, message: str, *, status_code: int) -> None:
        self.status_code = status_code
        super().__init__(message)


class ResponseFormatError(BackendError):
    """The endpoint's answer could not be parsed."""


class CapabilityError(BackendError):
    """The backend cannot do what was asked (for example, return logprobs)."""


class LocalServerError(CotplanError):
    """The embedded llama.cpp server failed to start, or died while serving."""


class CacheError(CotplanError):
    """The call cache could not be opened, read or written."""


class NotFittedError(CotplanError, AttributeError):
    """An estimator was used before `fit` was called."""


def describe_uncaught(exc: BaseException) -> str:
    """One line for an error no check caught (a file, an encoding, an overflow, memory),
    saying what kind of input to look at."""
    if isinstance(exc, MemoryError):
        return "not enough memory: an option asks for more items or draws than this machine holds"
    if isinstance(exc, UnicodeError):
        return f"a file is not UTF-8 text: {exc}"
    if isinstance(exc, OverflowError):
        return f"a number is too large to work with: {exc}"
    return (
        f"{exc.strerror or type(exc).__name__}: {exc.filename or exc}"
        if isinstance(exc, OSError)
        else str(exc)
    )
