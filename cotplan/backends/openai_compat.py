"""One client for every OpenAI-compatible endpoint: OpenAI, vLLM, llama.cpp, Ollama, Azure.

Built on the official `openai` SDK, which already retries 408/409/429/5xx and connection errors
with exponential backoff and honours Retry-After; we count the attempts it makes (through an
httpx event hook) so callers can report retries, and translate its exceptions into cotplan's
(`sdk_errors`).

Responses are handled as plain dicts (`model_dump()`) read by `parsing`; only answers that
pass `answer_checks` are used or recorded in the call cache.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx2 as httpx
import openai

from cotplan.backends.answer_checks import check_recorded, check_recorded_row, check_response
from cotplan.backends.async_sender import AsyncSender
from cotplan.backends.base import (
    Backend,
    CallStats,
    Completion,
    Message,
    NextTokenProbs,
    Prompt,
    validate_prompt,
)
from cotplan.backends.budgets import cap_fields, rule_for_model
from cotplan.backends.cache import CallCache, canonical_key, endpoint_namespace
from cotplan.backends.keys import find_key, scrub_secrets
from cotplan.backends.parsing import (
    REASONING_FIELDS,
    is_reasoning_model,
    parse_completion,
    parse_prompt_logprobs,
    parse_top_logprobs,
    reasoning_text,
    split_thinking,
)
from cotplan.backends.sdk_errors import translate_sdk_error
from cotplan.errors import (
    CapabilityError,
    InputError,
    MissingKeyError,
    ResponseFormatError,
)
from cotplan.validation import require_int

# Parsing and the answer checks live in `parsing` and `answer_checks`; their names stay
# importable from here, where callers and tests have always found them.
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
        (`cotplan.backends.known_models`: OpenAI's reasoning models, Claude, Gemini) keeps it.
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
        self._key = key if key != "no-key-needed" else ""
        self._wire = threading.local()
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
        # Set while a live calibration sends through one shared async client
        # (`cotplan.backends.async_sender.async_requests`).
        self.sender: AsyncSender | None = None
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
        # The sync client runs its hooks in the calling thread, so this counts one call's
        # attempts even while other threads share the client.
        self._wire.attempts = getattr(self._wire, "attempts", 0) + 1

    def count_async_attempt(self) -> None:
        """One attempt on the wire by the shared async client (`sender`)."""
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
        return parse_completion(
            raw, model=self.model, latency_s=latency, from_cache=cached, params=params
        )

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
        completion = parse_completion(raw, model=self.model, from_cache=cached, params=params)
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
                from cotplan.backends.tokens import encoding_name_for

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
        # A base URL can carry a key (``?api_key=``, ``user:password@``): never on an error line.
        return scrub_secrets(self.base_url or "api.openai.com", (self._key,))

    def _send_with_format_retries(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        # The SDK retries status codes and broken connections, but not a 200 whose body is cut
        # short (seen from overloaded gateways) or that is no usable answer (empty `choices`,
        # an `error` object); such an answer is as transient as a 503, and the caller records
        # only what passed `check_response`.
        for attempt in range(self.max_retries + 1):
            try:
                raw = self._send(operation, params)
                check_response(raw, operation=operation, params=params, where=self._where)
                return raw
            except ResponseFormatError as exc:
                if attempt == self.max_retries:
                    tries = "1 attempt" if attempt == 0 else f"{attempt + 1} attempts"
                    said = scrub_secrets(exc, (self._key,))
                    raise ResponseFormatError(f"{said} ({tries}; nothing was cached)") from exc
                time.sleep(min(0.25 * 2**attempt, 4.0))
        raise AssertionError("unreachable")

    def _client_for_this_thread(self) -> openai.OpenAI:
        """The SDK client this thread's requests go through (one per replica for the
        embedded model, `cotplan.backends.local`)."""
        return self._client

    def _send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        self._wire.attempts = 0  # this thread's attempts at this call, counted by the hook
        try:
            response: Any
            if self.sender is not None:
                attempts = [0]
                try:
                    response = self.sender.send(operation, params, attempts)
                finally:
                    self._wire.attempts = attempts[0]
            else:
                client = self._client_for_this_thread()
                if operation == "completions":
                    response = client.completions.create(**params)
                else:
                    response = client.chat.completions.create(**params)
        except openai.OpenAIError as exc:
            raise translate_sdk_error(
                exc, where=self._where, attempts=self._wire.attempts, secrets=(self._key,)
            ) from exc
        except ValueError as exc:  # json.JSONDecodeError from a truncated body
            raise ResponseFormatError(
                f"{self._where} sent a response we cannot parse: {exc}"
            ) from exc
        try:
            # What the server sent, not the SDK's defaults: a choice without its `message`
            # must stay without it (check_response refuses it), not read as `content: null`.
            dumped: dict[str, Any] = response.model_dump(exclude_unset=True)
        except Exception as exc:
            raise ResponseFormatError(
                f"{self._where} sent a response we cannot parse: {exc}"
            ) from exc
        return dumped

    def close(self) -> None:
        if self.sender is not None:
            self.sender.close()
        self._client.close()
        self._http.close()
