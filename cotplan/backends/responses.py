"""A backend for OpenAI's Responses API (`POST /v1/responses`).

Reached as ``connect("openai-responses:MODEL")`` or ``connect("openai:MODEL",
api="responses")``. What differs from chat completions (openai-python's `Response` types and
OpenAI's reasoning guide, platform.openai.com/docs/guides/reasoning, read 2026-12-01):

- the cap is `max_output_tokens`, over hidden reasoning and the visible answer together;
- the reasoning level is `reasoning.effort`, a level, not a token count: a budget k becomes the
  level `cotplan.backends.budgets` picks for it, and only `max_output_tokens` holds k hard;
- a cut shows as ``status: "incomplete"`` with ``incomplete_details.reason ==
  "max_output_tokens"`` (read here as ``finish_reason == "length"``), possibly with no answer;
- usage is `input_tokens` / `output_tokens`, the hidden reasoning in
  `output_tokens_details.reasoning_tokens` (inside `output_tokens`), cached prompt tokens in
  `input_tokens_details.cached_tokens`;
- the answer is the `output_text` parts of the `message` items of `output`; `reasoning` items
  carry at most a summary of the thinking (the thinking itself is never returned).

There is no `stop`, `seed` or logprobs here: `stop` and logprobs are refused, `seed` is not
sent. Requests go with ``store: false`` (a calibration need not be kept on OpenAI's side).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2 as httpx
import openai

from cotplan.backends.base import Backend, CallStats, Completion, NextTokenProbs, Prompt, Usage
from cotplan.backends.budgets import cap_fields, rule_for_model
from cotplan.backends.cache import CallCache, canonical_key, endpoint_namespace
from cotplan.backends.keys import find_key
from cotplan.backends.known_models import family_of
from cotplan.backends.sdk_errors import translate_sdk_error
from cotplan.errors import (
    BackendError,
    CapabilityError,
    InputError,
    MissingKeyError,
    ResponseFormatError,
)
from cotplan.messages import validate_prompt

__all__ = ["OpenAIResponsesBackend", "parse_response"]


def _int(value: object, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ResponseFormatError(f"`{where}` must be a whole number ≥ 0, got {value!r}")
    return value


def _usage(raw: object) -> Usage:
    usage = raw if isinstance(raw, Mapping) else {}
    output = usage.get("output_tokens_details") or {}
    cached = usage.get("input_tokens_details") or {}
    return Usage(
        prompt_tokens=_int(usage.get("input_tokens"), "usage.input_tokens"),
        completion_tokens=_int(usage.get("output_tokens"), "usage.output_tokens"),
        reasoning_tokens=_int(
            output.get("reasoning_tokens"), "usage.output_tokens_details.reasoning_tokens"
        ),
        cached_tokens=_int(cached.get("cached_tokens"), "usage.input_tokens_details.cached_tokens"),
    )


def parse_response(
    raw: Mapping[str, Any], *, model: str, latency_s: float = 0.0, from_cache: bool = False
) -> Completion:
    """A Responses API body as a `Completion`: the answer text, the reasoning summary (if the
    request asked for one), ``finish_reason`` ``"length"`` where `max_output_tokens` cut it."""
    if not isinstance(raw, Mapping) or raw.get("object", "response") != "response":
        raise ResponseFormatError(f"not a Responses API body: {str(raw)[:200]}")
    error = raw.get("error")
    if error:
        message = error.get("message") if isinstance(error, Mapping) else error
        raise BackendError(f"the response failed: {str(message)[:300]}")
    texts: list[str] = []
    summaries: list[str] = []
    for item in raw.get("output") or []:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "message":
            texts.extend(
                str(part.get("text", ""))
                for part in item.get("content") or []
                if isinstance(part, Mapping) and part.get("type") == "output_text"
            )
        elif kind == "reasoning":
            summaries.extend(
                str(part.get("text", ""))
                for part in item.get("summary") or []
                if isinstance(part, Mapping)
            )
    status = raw.get("status") or "completed"
    reason = (raw.get("incomplete_details") or {}).get("reason")
    if reason == "max_output_tokens":
        finish = "length"
    elif status == "completed":
        finish = "stop"
    else:
        finish = str(reason or status)
    return Completion(
        text="".join(texts),
        finish_reason=finish,
        usage=_usage(raw.get("usage")),
        model=model,
        latency_s=latency_s,
        from_cache=from_cache,
        reasoning="\n\n".join(summaries),
    )


class OpenAIResponsesBackend(Backend):
    """OpenAI's Responses API (or a server that speaks it: vLLM serves `/v1/responses` too).

    `model`, `base_url`, `api_key` / `api_key_env`, `cache`, `timeout`, `max_retries` and
    `extra_body` mean what they mean for `OpenAICompatibleBackend`.
    """

    supports_logprobs = False
    supports_prompt_logprobs = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 300.0,
        max_retries: int = 3,
        cache: CallCache | None = None,
        extra_body: Mapping[str, Any] | None = None,
        concurrency: int = 4,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InputError("must be a non-empty model name", field="model")
        key = api_key or find_key(api_key_env)
        if not key:
            if base_url is None:
                raise MissingKeyError(api_key_env, "OpenAI")
            key = "no-key-needed"
        self.model = model
        self.base_url = base_url
        family = family_of(model)
        self.reasoning = family is not None and family.reasoning
        # Effort levels and one cap for reasoning models, a plain output cap otherwise.
        self.budget_rule = rule_for_model("openai-responses", model).name
        self.default_concurrency = concurrency
        self.cache = cache
        self.extra_body = dict(extra_body or {})
        self.stats = CallStats()
        self._lock = threading.Lock()
        self._namespace = endpoint_namespace(base_url or "https://api.openai.com/v1")
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=5.0),
            event_hooks={"request": [self._count_attempt]},
        )
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, max_retries=max_retries, http_client=self._http
        )
        self._key = key

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIResponsesBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _count_attempt(self, request: httpx.Request) -> None:
        with self._lock:
            self.stats.attempts += 1

    def request_body(
        self,
        prompt: Prompt,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON body `generate` sends (the SDK's keyword fields and `extra_body` merged)."""
        validate_prompt(prompt)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InputError(f"must be a whole number ≥ 1, got {max_tokens!r}", field="max_tokens")
        if extra is not None and not isinstance(extra, Mapping):
            raise InputError(f"must be a mapping of request fields, got {extra!r}", field="extra")
        body: dict[str, Any] = {
            "model": self.model,
            "input": prompt if isinstance(prompt, str) else [dict(m) for m in prompt],
            "store": False,
            **cap_fields(self.budget_rule, max_tokens),
        }
        if not self.reasoning:  # reasoning models refuse `temperature`
            body["temperature"] = temperature
        return {**body, **self.extra_body, **(extra or {})}

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
        if stop:
            raise CapabilityError("the Responses API has no `stop` sequences")
        if logprobs:
            raise CapabilityError(f"{self.model} on the Responses API returns no logprobs here")
        body = self.request_body(
            prompt, max_tokens=max_tokens, temperature=temperature, extra=extra
        )
        key = canonical_key({"ns": self._namespace, "op": "responses", "params": body})
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                with self._lock:
                    self.stats.cache_hits += 1
                return parse_response(
                    hit["response"],
                    model=self.model,
                    latency_s=float(hit.get("latency_s", 0.0)),
                    from_cache=True,
                )
        with self._lock:
            self.stats.requests += 1
            before = self.stats.attempts
        started = time.perf_counter()
        raw = self._send(body, before)
        latency = time.perf_counter() - started
        completion = parse_response(raw, model=self.model, latency_s=latency)
        if self.cache is not None:  # recorded only once it parsed
            self.cache.put(
                key,
                model=self.model,
                operation="responses",
                request=body,
                response={"response": raw, "latency_s": latency},
            )
        return completion

    def _send(self, body: dict[str, Any], before: int) -> dict[str, Any]:
        where = self.base_url or "api.openai.com"
        # Every field goes in the body as it is: the SDK's keyword arguments would refuse any
        # field its version does not know.
        fields = {name: value for name, value in body.items() if name != "model"}
        try:
            response: Any = self._client.responses.create(model=self.model, extra_body=fields)
        except openai.OpenAIError as exc:
            with self._lock:
                attempts = self.stats.attempts - before
            raise translate_sdk_error(
                exc, where=where, attempts=attempts, secrets=(self._key,)
            ) from exc
        try:
            dumped: dict[str, Any] = response.model_dump()
        except Exception as exc:
            raise ResponseFormatError(f"{where} sent a response we cannot parse: {exc}") from exc
        return dumped

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise CapabilityError(f"{self.model} on the Responses API returns no logprobs")

    def close(self) -> None:
        self._client.close()
        self._http.close()
