"""The backend that sends nothing: it runs the live code's requests against the answers a batch
calibration has received (`cotplan.planner.batch`, "How the requests are found").

`Collector.generate` builds the exact request the live client would send
(`OpenAICompatibleBackend`'s own request fields); one already answered (in the report folder,
or the call cache) is answered from there, parsed as a live answer is; one not yet answered is
collected for the next batch and gets a stand-in answer, so the item's other requests are
found too. A request built from a stand-in is no real request: it waits for the next round.
`drive` asks for every item's answers as `calibrate` does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from cotplan.backends.base import (
    Backend,
    Completion,
    NextTokenProbs,
    Prompt,
    Usage,
    validate_prompt,
)
from cotplan.backends.cache import canonical_key, endpoint_namespace
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.parsing import parse_completion
from cotplan.backends.responses import OpenAIResponsesBackend, parse_response
from cotplan.errors import CapabilityError, CotplanError
from cotplan.generate.budgeted import BudgetedAnswer, CoTPrompt, Mode, budgeted_answers
from cotplan.planner.auto_grid import ThinkingProfile
from cotplan.planner.batch_format import BatchRequest
from cotplan.tasks.item import TaskItem

__all__ = ["PENDING_TEXT", "BatchBackend", "Collector", "drive", "measure"]

#: The live clients whose requests a batch can carry: chat and completions, and Responses.
BatchBackend = OpenAICompatibleBackend | OpenAIResponsesBackend

PENDING_TEXT = "\u2063cotplan: answer pending in a batch\u2063"


class Collector(Backend):
    """Runs the live code's requests against answers already received (see the module
    docstring): answers what it can, collects what it cannot, stands in for the rest."""

    def __init__(self, inner: BatchBackend, answered: Mapping[str, dict[str, Any]]):
        self.inner = inner
        for name in (
            "model",
            "supports_logprobs",
            "max_top_logprobs",
            "default_concurrency",
            "text_completions",
            "reasoning",
            "budget_rule",
            "provider",
            "base_url",
            "supports_tokenize",
            "protocol",
        ):
            setattr(self, name, getattr(inner, name))
        self.supports_prompt_logprobs = False
        self.answered = answered
        self.wanted: dict[str, BatchRequest] = {}
        # By custom_id: a request several budgets share (hidden reasoning's answer asked for
        # alone) is one request in a batch, paid once, where a live run sends it each time.
        self.used: dict[str, Completion] = {}
        self.incomplete = False

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def tokenize(self, text: str) -> list[int]:
        return self.inner.tokenize(text)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise CapabilityError("a batch calibration asks for generations only")

    def _stand_in(self) -> Completion:
        self.incomplete = True
        return Completion(text=PENDING_TEXT, finish_reason="stop", model=self.model, usage=_ZERO)

    def _cache_key(self, request: BatchRequest) -> str:
        # The live client's own key (`OpenAICompatibleBackend._call`,
        # `OpenAIResponsesBackend.generate`), so each replays the other.
        if isinstance(self.inner, OpenAIResponsesBackend):
            namespace = self.inner._namespace
        else:
            namespace = endpoint_namespace(self.inner.cache_namespace)
        return canonical_key(
            {"ns": namespace, "op": request.operation, "params": dict(request.params)}
        )

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
        inner = self.inner
        operation: str
        if isinstance(inner, OpenAIResponsesBackend):
            # What the live client refuses, refused here too (the same error, the same place).
            if stop:
                raise CapabilityError("the Responses API has no `stop` sequences")
            if logprobs:
                raise CapabilityError(f"{self.model} on the Responses API returns no logprobs")
            operation = "responses"
            params = inner.request_body(
                prompt, max_tokens=max_tokens, temperature=temperature, extra=extra
            )
        else:
            operation, params = inner._request_params(
                prompt,
                max_tokens=max_tokens,
                temperature=temperature,
                stop=stop,
                seed=seed,
                logprobs=logprobs,
                extra=extra,
            )
        if PENDING_TEXT in json.dumps(params, ensure_ascii=False):
            return self._stand_in()  # built from an answer not yet received: no real request
        request = BatchRequest(operation, params)
        body = self.answered.get(request.custom_id)
        cached = False
        if body is None and inner.cache is not None:
            hit = self._replay(request)
            if hit is not None:
                body, cached = hit, True
        if body is None:
            self.wanted[request.custom_id] = request
            return self._stand_in()
        if operation == "responses":
            completion = parse_response(
                body, model=self.model, latency_s=math.nan, from_cache=cached
            )
        else:
            completion = parse_completion(
                body, model=self.model, latency_s=math.nan, from_cache=cached, params=params
            )
        self.used[request.custom_id] = completion
        return completion

    def _replay(self, request: BatchRequest) -> dict[str, Any] | None:
        """The call cache's answer to `request`, checked as the live client checks it."""
        inner, key = self.inner, self._cache_key(request)
        assert inner.cache is not None
        if isinstance(inner, OpenAIResponsesBackend):
            hit = inner.cache.get(key)
            return None if hit is None else dict(hit["response"])
        params = dict(request.params)
        found = inner._replay(inner.cache, key, request.operation, params)
        return None if found is None else dict(found["response"])

    def record(self, answers: Mapping[str, dict[str, Any]]) -> None:
        """Put fresh answers in the live client's call cache too, so a live run replays them."""
        cache = self.inner.cache
        if cache is None:
            return
        for custom_id, body in answers.items():
            request = self.wanted.get(custom_id)
            if request is not None:
                cache.put(
                    self._cache_key(request),
                    model=self.model,
                    operation=request.operation,
                    request=dict(request.params),
                    response={"response": body, "latency_s": 0.0},
                )


_ZERO = Usage()


def drive(
    collector: Collector,
    items: Sequence[TaskItem],
    budgets_of: Callable[[TaskItem], list[int]],
    *,
    answer_tokens: int,
    mode: Mode | Literal["auto"],
    prompt: CoTPrompt | None,
    run_tokens: int | None = None,
) -> list[BudgetedAnswer] | None:
    """The live answers of every item (as `calibrate` asks for them; `run_tokens` as the auto
    grid's uncapped run), or None while some wait."""
    out: list[BudgetedAnswer] = []
    complete = True
    for item in items:
        collector.incomplete = False
        try:
            answers = budgeted_answers(
                collector,
                item,
                budgets_of(item),
                answer_tokens=answer_tokens,
                mode=mode,
                prompt=prompt,
                run_tokens=run_tokens,
            )
        except CotplanError:
            if not collector.incomplete:
                raise
            answers = []  # a stand-in the live code could not read: the real answer will do
        if collector.incomplete:
            complete = False
        else:
            out.extend(answers)
    return out if complete else None


def measure(
    collector: Collector,
    items: Sequence[TaskItem],
    size_of: Callable[[TaskItem], int],
    *,
    uncapped_tokens: int,
    pilot: int,
    answer_tokens: int,
    mode: Mode | Literal["auto"],
    prompt: CoTPrompt | None,
) -> list[ThinkingProfile] | None:
    """The auto grid's measurement (`calibrate`'s own: each size's first `pilot` items run
    uncapped), or None while those runs wait in a batch: the budget round cannot be written
    before the grid is known."""
    from cotplan.planner.calibrate import measure_items

    collector.incomplete = False
    try:
        profiles, _ = measure_items(
            collector,
            items,
            size_of,
            uncapped_tokens=uncapped_tokens,
            pilot=pilot,
            concurrency=1,  # the collector keeps one item's state at a time
            answer_tokens=answer_tokens,
            mode=mode,
            prompt=prompt,
        )
    except CotplanError:
        if not collector.incomplete:
            raise
        return None
    return None if collector.incomplete else profiles
