"""One client for every OpenAI-compatible endpoint: OpenAI, vLLM, llama.cpp, Ollama, Azure.

Built on the official `openai` SDK, which already retries 408/409/429/5xx and connection errors
with exponential backoff and honours Retry-After; we count the attempts it makes (through an
httpx event hook) so callers can report retries, and translate its exceptions into cotplan's.

Responses are handled as plain dicts (`model_dump()`), because llama.cpp's /v1/completions
logprobs come in its own shape that the SDK's typed objects drop; the same dicts are what the
call cache records.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx2 as httpx
import openai

from cotplan.backends.base import (
    Backend,
    CallStats,
    Completion,
    Message,
    NextTokenProbs,
    Prompt,
    TokenLogprob,
    Usage,
    validate_prompt,
)
from cotplan.backends.budgets import cap_fields, rule_for_model
from cotplan.backends.cache import CallCache, RecordedCall, canonical_key, endpoint_namespace
from cotplan.backends.keys import find_key
from cotplan.errors import (
    APIStatusError,
    BackendError,
    CapabilityError,
    InputError,
    MissingKeyError,
    RateLimitError,
    RequestTimeoutError,
    ResponseFormatError,
    ServerUnreachableError,
)
from cotplan.model_registry import family_of
from cotplan.validation import require_int

__all__ = [
    "REASONING_FIELDS",
    "CallStats",
    "OpenAICompatibleBackend",
    "check_recorded",
    "check_recorded_row",
    "check_response",
    "is_reasoning_model",
    "parse_completion",
    "parse_prompt_logprobs",
    "parse_top_logprobs",
    "reasoning_text",
    "split_thinking",
]


def is_reasoning_model(model: str) -> bool:
    """Whether `model` reasons in hidden tokens (`cotplan.model_registry`): such models take
    `max_completion_tokens` and `reasoning_effort`, and refuse logprobs and temperature."""
    family = family_of(model)
    return family is not None and family.reasoning


def _usage(raw: dict[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    completion_details = raw.get("completion_tokens_details") or {}
    prompt_details = raw.get("prompt_tokens_details") or {}
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        cached_tokens=int(prompt_details.get("cached_tokens") or 0),
    )


def parse_top_logprobs(logprobs: dict[str, Any] | None) -> list[TokenLogprob]:
    """Per-token logprobs from any of the three shapes servers use.

    - chat (OpenAI, vLLM, llama.cpp): ``{"content": [{"token", "logprob", "top_logprobs": [...]}]}``
    - llama.cpp /v1/completions: the same ``content`` list (its own shape)
    - legacy /v1/completions (OpenAI, vLLM):
      ``{"tokens", "token_logprobs", "top_logprobs": [{token: logprob}]}``
    """
    if not logprobs:
        return []
    content = logprobs.get("content")
    if content:
        return [
            TokenLogprob(
                token=str(entry["token"]),
                logprob=float(entry["logprob"]),
                top=tuple(
                    (str(alt["token"]), float(alt["logprob"]))
                    for alt in entry.get("top_logprobs") or ()
                ),
            )
            for entry in content
        ]
    tokens = logprobs.get("tokens")
    if tokens:
        token_logprobs = logprobs.get("token_logprobs") or [None] * len(tokens)
        tops = logprobs.get("top_logprobs") or [None] * len(tokens)
        return [
            TokenLogprob(
                token=str(token),
                logprob=float(lp) if lp is not None else float("nan"),
                top=tuple((str(t), float(v)) for t, v in (top or {}).items()),
            )
            for token, lp, top in zip(tokens, token_logprobs, tops, strict=False)
        ]
    return []


def parse_prompt_logprobs(raw: dict[str, Any], prompt: str) -> list[tuple[str, dict[str, float]]]:
    """vLLM's ``prompt_logprobs`` answer as ``(token text, {alternative: logprob})`` per token.

    vLLM lists, per prompt position, ``{token id: {logprob, rank, decoded_token}}`` holding the
    top alternatives and the prompt's own token (None at the first position); the prompt's
    token ids come with ``return_token_ids``. The first token's text is what the prompt holds
    before the other tokens' texts (empty for a BOS token).
    """
    try:
        choice = raw["choices"][0]
        entries = choice["prompt_logprobs"]
        token_ids = choice.get("prompt_token_ids")
    except (KeyError, IndexError, TypeError) as exc:
        raise ResponseFormatError("the endpoint returned no prompt_logprobs (is it vLLM?)") from exc
    if not isinstance(entries, list) or not entries:
        raise ResponseFormatError("the endpoint returned no prompt_logprobs (is it vLLM?)")
    if not isinstance(token_ids, list) or len(token_ids) != len(entries):
        raise ResponseFormatError(
            "the endpoint returned no prompt_token_ids matching its prompt_logprobs "
            "(vLLM needs return_token_ids support)"
        )
    rows: list[tuple[str, dict[str, float]]] = []
    for position, (token_id, entry) in enumerate(zip(token_ids, entries, strict=True)):
        if entry is None:
            rows.append(("", {}))
            continue
        try:
            chosen = entry[str(token_id)]
            alternatives: dict[str, float] = {}
            for info in entry.values():
                text, logprob = str(info["decoded_token"]), float(info["logprob"])
                # Two ids can decode to the same text; the likelier one stands for it.
                alternatives[text] = max(alternatives.get(text, -math.inf), logprob)
            rows.append((str(chosen["decoded_token"]), alternatives))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResponseFormatError(
                f"prompt_logprobs at position {position} are malformed: {exc!r}"
            ) from exc
    rest = "".join(text for text, _ in rows[1:])
    if rows[0] == ("", {}) and prompt.endswith(rest):
        rows[0] = (prompt[: len(prompt) - len(rest)], {})
    return rows


#: Where servers put the thinking they split from the answer, in the order they are read:
#: vLLM `message.reasoning` (and `reasoning_content` before v0.10), llama.cpp, SGLang and the
#: DeepSeek API `reasoning_content`, Ollama `thinking`, OpenRouter `reasoning`
#: (../shared/reasoning-protocols.md lists the sources).
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")


def reasoning_text(message: dict[str, Any] | None) -> str:
    """The thinking a chat message carries apart from its content ("" when none)."""
    if not message:
        return ""
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


_THINK_BLOCK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.DOTALL)


def split_thinking(content: str) -> tuple[str, str]:
    """`(thinking, answer)` of chat content that still holds its `<think>` block: what a server
    without a reasoning parser returns (vLLM without `--reasoning-parser`, or llama.cpp with a
    chat template its parser does not recognise). Content without one is all answer."""
    match = _THINK_BLOCK.match(content)
    if match is None:
        return "", content
    return match.group(1).strip("\n"), content[match.end() :]


def parse_completion(
    raw: dict[str, Any], *, model: str, latency_s: float = 0.0, from_cache: bool = False
) -> Completion:
    """A `Completion` from a chat or text completion response dict."""
    try:
        choice = raw["choices"][0]
        message = choice.get("message")
        text = message.get("content") if message is not None else choice.get("text")
        reasoning = reasoning_text(message)
        if message is not None and not reasoning and text:
            reasoning, text = split_thinking(text)
        parsed = parse_top_logprobs(choice.get("logprobs"))
        return Completion(
            reasoning=reasoning,
            text=text or "",
            finish_reason=str(choice.get("finish_reason") or "stop"),
            usage=_usage(raw.get("usage")),
            model=model,
            logprobs=tuple(parsed) if parsed else None,
            latency_s=latency_s,
            from_cache=from_cache,
        )
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise ResponseFormatError(f"unexpected response shape from {model}: {exc!r}") from exc


# -- what an answer must be before it is used or recorded ---------------------------------------

#: Token counts a response's `usage` may carry: each a whole number >= 0 when present.
_USAGE_COUNTS = (
    ("prompt_tokens",),
    ("completion_tokens",),
    ("total_tokens",),
    ("completion_tokens_details", "reasoning_tokens"),
    ("prompt_tokens_details", "cached_tokens"),
)


#: What a key looks like in text a server echoes back (a gateway quoting our request headers).
_SECRET = re.compile(r"(?i)(bearer\s+)\S+|\b(sk-)[\w-]+")


def _scrub(detail: object) -> str:
    """A server's error text, cut short and with anything shaped like a key masked."""
    return _SECRET.sub(lambda m: f"{m.group(1) or m.group(2)}***", str(detail)[:200])


def _check_usage(usage: object, where: str) -> None:
    if usage is None:
        return  # no usage at all is a cost question, not a broken answer
    if not isinstance(usage, dict):
        raise ResponseFormatError(f"{where} sent `usage` that is not an object: {usage!r:.80}")
    for path in _USAGE_COUNTS:
        value: object = usage
        for depth, name in enumerate(path):
            if value is None:
                break  # servers leave out the details objects they do not fill
            if not isinstance(value, dict):
                parent = ".".join(path[:depth])
                raise ResponseFormatError(
                    f"{where} sent `usage.{parent}` that is not an object: {value!r:.80}"
                )
            value = value.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ResponseFormatError(
                f"{where} sent `usage.{'.'.join(path)}` = {value!r:.40}, not a whole number >= 0"
            )


def check_response(
    raw: object, *, operation: str, params: Mapping[str, Any], where: str = "the endpoint"
) -> None:
    """Raise `ResponseFormatError`, naming the field, unless `raw` is an answer worth keeping.

    Some servers answer 200 with no usable completion: an ``{"error": ...}`` body (gateways
    under load), empty `choices`, negative or non-integer token counts. Such an answer is
    treated as transient (retried) and never recorded; one that passes also parses, as
    `parse_completion` (or `parse_prompt_logprobs` for a prompt-scoring request) reads it.
    """
    if not isinstance(raw, dict):
        raise ResponseFormatError(f"{where} sent a body that is not a JSON object")
    error = raw.get("error")
    if error is not None:
        detail = error.get("message", error) if isinstance(error, dict) else error
        raise ResponseFormatError(
            f"{where} answered 200 with `error` instead of a completion: {_scrub(detail)}"
        )
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices:
        state = "missing" if choices is None else "empty" if choices == [] else "not a list"
        raise ResponseFormatError(f"{where} sent a response whose `choices` is {state}")
    if not isinstance(choices[0], dict):
        raise ResponseFormatError(f"{where} sent `choices[0]` that is not an object")
    _check_usage(raw.get("usage"), where)
    extra_body = params.get("extra_body") or {}
    if operation == "completions" and extra_body.get("prompt_logprobs"):
        parse_prompt_logprobs(raw, str(params.get("prompt", "")))
    else:
        parse_completion(raw, model=str(params.get("model", "")))


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


class OpenAICompatibleBackend(Backend):
    """A Backend for any endpoint that speaks the OpenAI API.

    Parameters
    ----------
    model:
        The model name the endpoint expects (e.g. ``gpt-4o-mini``).
    base_url:
        None for OpenAI itself; otherwise the endpoint's ``.../v1`` URL.
    api_key:
        The key; by default the environment variable `api_key_env`, else that name in the key
        file `api_key_file` (or the file named by ``COTPLAN_KEY_FILE``; see
        `cotplan.backends.keys`). Required for OpenAI itself; a custom `base_url` may need none.
    cache:
        A `CallCache`, or None for no caching.
    cache_namespace:
        What identifies the endpoint in cache keys (default: the base URL). The embedded model
        uses its weights' checksum, so the cache survives a new port.
    text_completions:
        Whether plain-text prompts go to /v1/completions (llama.cpp, vLLM, Ollama) rather than
        being wrapped as one user message for /v1/chat/completions (OpenAI's chat models).
    tokenizer:
        A function counting tokens in a string, when the model's tokenizer is known.
    prompt_logprobs:
        The endpoint scores every position of a prompt in one request (vLLM's
        ``prompt_logprobs``); enables `prompt_logprobs()`, which the experiments use to read a
        whole sequence's predictions at once.
    provider:
        The API behind `base_url`, for its budget rule (`cotplan.backends.budgets`):
        ``"vllm"``, ``"llama.cpp"``, ``"ollama"``, ... Default: ``"openai"`` without a
        `base_url`, else ``"openai-compatible"``. A model family with a rule of its own
        (`cotplan.model_registry`: OpenAI's reasoning models, Claude, Gemini) keeps it.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        max_retries: int = 4,
        cache: CallCache | None = None,
        cache_namespace: str | None = None,
        text_completions: bool | None = None,
        tokenizer: Callable[[str], int] | None = None,
        max_top_logprobs: int = 20,
        concurrency: int = 4,
        extra_body: dict[str, Any] | None = None,
        prompt_logprobs: bool = False,
        api_key_file: str | os.PathLike[str] | None = None,
        provider: str | None = None,
    ) -> None:
        if not model:
            raise InputError("must be a non-empty model name", field="model")
        key = api_key or find_key(api_key_env, api_key_file)
        if not key:
            if base_url is None:
                raise MissingKeyError(api_key_env, "OpenAI")
            key = "no-key-needed"
        self.model = model
        self.base_url = base_url
        self.provider = provider or ("openai" if base_url is None else "openai-compatible")
        self.reasoning = is_reasoning_model(model)
        self.budget_rule = rule_for_model(self.provider, model).name
        self.supports_logprobs = not self.reasoning
        self.max_top_logprobs = max_top_logprobs
        self.default_concurrency = concurrency
        self.text_completions = (
            base_url is not None if text_completions is None else text_completions
        )
        self.cache = cache
        self.max_retries = max_retries
        self.cache_namespace = cache_namespace or (base_url or "https://api.openai.com/v1")
        self.extra_body = dict(extra_body or {})
        self.supports_prompt_logprobs = bool(prompt_logprobs)
        self._tokenizer = tokenizer
        self._candidate_tokens: dict[str, int] = {}
        self.stats = CallStats()
        self._stats_lock = threading.Lock()
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=max(8, concurrency * 2)),
            event_hooks={"request": [self._count_attempt]},
        )
        self._client = openai.OpenAI(
            api_key=key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            http_client=self._http,
        )

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatibleBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _count_attempt(self, request: httpx.Request) -> None:
        with self._stats_lock:
            self.stats.attempts += 1

    # -- the two operations -------------------------------------------------------------------

    def generate(
        self,
        prompt: Prompt,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        logprobs: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        validate_prompt(prompt)
        if extra is not None and not isinstance(extra, Mapping):
            raise InputError(f"must be a mapping of request fields, got {extra!r}", field="extra")
        require_int(max_tokens, "max_tokens", low=1)
        if not 0.0 <= temperature <= 2.0:
            raise InputError(f"must be in [0, 2], got {temperature!r}", field="temperature")
        if logprobs < 0 or logprobs > self.max_top_logprobs:
            raise InputError(
                f"must be in 0..{self.max_top_logprobs}, got {logprobs!r}", field="logprobs"
            )
        if logprobs and not self.supports_logprobs:
            raise CapabilityError(f"{self.model} does not return logprobs")
        operation, params = self._request_params(
            prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            seed=seed,
            logprobs=logprobs,
            extra=extra,
        )
        raw, latency, cached = self._call(operation, params)
        return parse_completion(raw, model=self.model, latency_s=latency, from_cache=cached)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        validate_prompt(prompt)
        self._check_candidates(candidates)
        if not self.supports_logprobs:
            raise CapabilityError(
                f"{self.model} returns no logprobs; sample answers instead "
                "(permutation_average falls back to answer frequencies)"
            )
        operation, params = self._request_params(
            prompt,
            max_tokens=1,
            temperature=0.0,
            stop=None,
            seed=None,
            logprobs=self.max_top_logprobs,
        )
        raw, _, cached = self._call(operation, params)
        completion = parse_completion(raw, model=self.model, from_cache=cached)
        if not completion.logprobs:
            raise ResponseFormatError(f"{self.model} returned no logprobs for a 1-token request")
        first = completion.logprobs[0]
        top = first.top or ((first.token, first.logprob),)
        return NextTokenProbs.from_logprobs(
            top, candidates, usage=completion.usage, from_cache=cached
        )

    def prompt_logprobs(
        self, prompt: str, *, top_logprobs: int
    ) -> list[tuple[str, dict[str, float]]]:
        """Every prompt token with the top alternatives at its position, in one request.

        Returns ``(token text, {alternative text: logprob})`` per prompt token; the first
        token has no context and no alternatives. Needs an endpoint with vLLM's
        ``prompt_logprobs`` (construct with ``prompt_logprobs=True``).
        """
        if not self.supports_prompt_logprobs:
            raise CapabilityError(
                f"{self.base_url or 'this endpoint'} was not declared to score prompts "
                "(vLLM's prompt_logprobs); pass prompt_logprobs=True if it does"
            )
        validate_prompt(prompt)
        if not isinstance(prompt, str):
            raise InputError("must be text for prompt scoring", field="prompt")
        if not 1 <= top_logprobs <= self.max_top_logprobs:
            raise InputError(
                f"must be in 1..{self.max_top_logprobs}, got {top_logprobs!r}",
                field="top_logprobs",
            )
        params: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
            "extra_body": {
                **self.extra_body,
                "prompt_logprobs": top_logprobs,
                "return_token_ids": True,
            },
        }
        raw, _, _ = self._call("completions", params)
        return parse_prompt_logprobs(raw, prompt)

    def count_tokens(self, text: str) -> int:
        if self._tokenizer is not None:
            return self._tokenizer(text)
        return super().count_tokens(text)

    # -- plumbing -------------------------------------------------------------------------------

    def _check_candidates(self, candidates: Sequence[str]) -> None:
        if isinstance(candidates, str) or len(candidates) < 1:
            raise InputError("must be a non-empty list of strings", field="candidates")
        if len(set(candidates)) != len(candidates):
            raise InputError(f"contain duplicates: {list(candidates)!r}", field="candidates")
        for candidate in candidates:
            if not isinstance(candidate, str) or candidate == "":
                raise InputError(
                    f"must be non-empty strings, got {candidate!r}", field="candidates"
                )
        counter = self._tokenizer
        if counter is None:
            try:
                from cotplan.tokens import encoding_name_for

                encoding_name_for(self.model)
                counter = super().count_tokens
            except InputError:
                return  # tokenizer unknown for this model: the server is the judge
        for candidate in candidates:
            # The same few candidates are checked on every call; asking the tokenizer (an HTTP
            # request for the embedded model) each time would double the cost of a call.
            n_tokens = self._candidate_tokens.get(candidate)
            if n_tokens is None:
                n_tokens = self._candidate_tokens[candidate] = counter(candidate)
            if n_tokens != 1:
                raise InputError(
                    f"{candidate!r} is {n_tokens} tokens for {self.model}; next-token scoring "
                    "needs single-token candidates (score longer answers by continuation)",
                    field="candidates",
                )

    def _request_params(
        self,
        prompt: Prompt,
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
        seed: int | None,
        logprobs: int,
        extra: Mapping[str, Any] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"model": self.model}
        if isinstance(prompt, str) and self.text_completions:
            operation = "completions"
            params["prompt"] = prompt
            params.update(cap_fields(self.budget_rule, max_tokens, operation=operation))
            if logprobs:
                params["logprobs"] = logprobs
        else:
            operation = "chat"
            messages: list[Message] = (
                [{"role": "user", "content": prompt}]
                if isinstance(prompt, str)
                else [dict(m) for m in prompt]
            )
            params["messages"] = messages
            params.update(cap_fields(self.budget_rule, max_tokens, operation=operation))
            if logprobs:
                params["logprobs"] = True
                params["top_logprobs"] = logprobs
        if not self.reasoning:
            params["temperature"] = temperature
        if stop:
            params["stop"] = list(stop)
        if seed is not None:
            params["seed"] = seed
        # Provider fields go in the body as they are: the SDK's keyword arguments would refuse
        # any field its version does not know.
        body = {**self.extra_body, **(extra or {})}
        if body:
            params["extra_body"] = body
        return operation, params

    def _call(self, operation: str, params: dict[str, Any]) -> tuple[dict[str, Any], float, bool]:
        key = ""
        if self.cache is not None:
            namespace = endpoint_namespace(self.cache_namespace)
            key = canonical_key({"ns": namespace, "op": operation, "params": params})
            hit = self._replay(self.cache, key, operation, params)
            if hit is not None:
                with self._stats_lock:
                    self.stats.cache_hits += 1
                return hit["response"], float(hit.get("latency_s", 0.0)), True
        with self._stats_lock:
            self.stats.requests += 1
        started = time.perf_counter()
        raw = self._send_with_format_retries(operation, params)  # checked: only good answers
        latency = time.perf_counter() - started
        if self.cache is not None:
            self.cache.put(
                key,
                model=self.model,
                operation=operation,
                request=params,
                response={"response": raw, "latency_s": latency},
            )
        return raw, latency, False

    def _replay(
        self, cache: CallCache, key: str, operation: str, params: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The recorded answer for `key` if it passes the checks a fresh one must pass.

        The cache itself drops rows that fail their checksum; this also drops rows recorded
        before answers were checked (by an older cotplan), so no bad answer is replayed.
        """
        hit = cache.get(key)
        if hit is None:
            return None
        try:
            check_recorded(hit, operation=operation, params=params, where=self._where)
        except ResponseFormatError as exc:
            cache.discard(key, str(exc), model=self.model, operation=operation)
            return None
        return hit

    @property
    def _where(self) -> str:
        return self.base_url or "api.openai.com"

    def _send_with_format_retries(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        # The SDK retries status codes and broken connections, but not a 200 whose body is cut
        # short (seen from overloaded gateways) or that is no usable answer (empty `choices`,
        # an `error` object, impossible usage); such an answer is as transient as a 503, and
        # the caller records only what passed `check_response`.
        for attempt in range(self.max_retries + 1):
            try:
                raw = self._send(operation, params)
                check_response(raw, operation=operation, params=params, where=self._where)
                return raw
            except ResponseFormatError as exc:
                if attempt == self.max_retries:
                    tries = "1 attempt" if attempt == 0 else f"{attempt + 1} attempts"
                    raise ResponseFormatError(f"{exc} ({tries}; nothing was cached)") from exc
                time.sleep(min(0.25 * 2**attempt, 4.0))
        raise AssertionError("unreachable")

    def _send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        where = self.base_url or "api.openai.com"
        try:
            if operation == "completions":
                response: Any = self._client.completions.create(**params)
            else:
                response = self._client.chat.completions.create(**params)
        except openai.APITimeoutError as exc:
            raise RequestTimeoutError(f"{where} did not answer in time (after retries)") from exc
        except openai.APIConnectionError as exc:
            raise ServerUnreachableError(f"cannot reach {where}: {exc.__cause__ or exc}") from exc
        except openai.RateLimitError as exc:
            raise RateLimitError(
                f"{where} kept answering 429 (rate limited) after retries"
            ) from exc
        except openai.AuthenticationError as exc:
            raise APIStatusError(
                f"{where} rejected the API key (401); check the key's environment variable",
                status_code=401,
            ) from exc
        except openai.APIStatusError as exc:
            detail = _error_detail(exc)
            raise APIStatusError(
                f"{where} answered {exc.status_code}: {detail}", status_code=exc.status_code
            ) from exc
        except (openai.APIResponseValidationError, ValueError) as exc:
            # ValueError covers json.JSONDecodeError from a truncated body.
            raise ResponseFormatError(f"{where} sent a response we cannot parse: {exc}") from exc
        except openai.OpenAIError as exc:  # any other SDK failure
            raise BackendError(f"{where}: {exc}") from exc
        try:
            dumped: dict[str, Any] = response.model_dump()
        except Exception as exc:
            raise ResponseFormatError(f"{where} sent a response we cannot parse: {exc}") from exc
        return dumped

    def close(self) -> None:
        self._client.close()
        self._http.close()


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])[:300]
    return str(exc.message)[:300]
