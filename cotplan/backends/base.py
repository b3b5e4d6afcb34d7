"""The one interface every model sits behind, and the records it returns.

A backend does two things the rest of cotplan needs: generate text under a token cap, and give the
probabilities of a few candidate next tokens. Everything else (budgeted reasoning, permutation
averaging, the experiments) is built from those two.
"""

from __future__ import annotations

import abc
import functools
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from cotplan.backends.tokens import count_tokens
from cotplan.errors import CapabilityError, InputError, ResponseFormatError
from cotplan.messages import Message, Prompt, validate_prompt

__all__ = [
    "Backend",
    "CallStats",
    "Completion",
    "Message",
    "NextTokenProbs",
    "Prompt",
    "TokenLogprob",
    "Usage",
    "UsageCount",
    "validate_prompt",
]

T = TypeVar("T")
R = TypeVar("R")


#: The counts a `Usage` holds.
UsageCount = Literal["prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens"]


@dataclass(frozen=True)
class Usage:
    """Token counts of one call, in the provider's own accounting.

    `reasoning_tokens` and `cached_tokens` are reported the OpenAI way: reasoning tokens are
    already inside `completion_tokens`, cached tokens already inside `prompt_tokens`.

    `trusted` is False when the server's counts cannot be right (missing, negative, not whole
    numbers, absurd; `cotplan.backends.parsing.read_usage` says which): the counts are then
    unknown; the fields hold 0 only as a placeholder, and `known(count)` gives None, which is
    what cost and savings sums and budget sharing read, so such a call is left out, not counted
    as free. A sum is trusted only when every part is.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    trusted: bool = True

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cached_tokens + other.cached_tokens,
            self.trusted and other.trusted,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def known(self, count: UsageCount) -> int | None:
        """The count named, or None when the server's counts cannot be trusted: unknown, never
        0. Anything that acts on a count (cutting a run at a budget, adding up a spend) reads
        it here, so an untrusted 0 cannot pass for a measurement."""
        value: int = getattr(self, count)
        return value if self.trusted else None


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability, and the top alternatives at that position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Completion:
    """What one `generate` call returned.

    `from_cache` is True when the call cache answered and no request was made (so no cost).
    `reasoning` is the thinking a server returned apart from the answer (a reasoning parser's
    `reasoning_content`, `reasoning` or `thinking` field); empty when it returned none.
    `no_answer` is True when the server sent no answer at all (``content: null``): an outcome
    of its own, not a wrong answer. `notes` say what about the call cannot be trusted (its
    usage, a missing answer); empty for a clean call.
    """

    text: str
    finish_reason: str
    usage: Usage
    model: str
    logprobs: tuple[TokenLogprob, ...] | None = None
    latency_s: float = 0.0
    from_cache: bool = False
    reasoning: str = ""
    no_answer: bool = False
    notes: tuple[str, ...] = ()

    @property
    def usage_trusted(self) -> bool:
        """False when the token counts are no measurement: leave the call out of costs."""
        return self.usage.trusted

    @property
    def truncated(self) -> bool:
        """True when the token cap, not the model, ended the text."""
        return self.finish_reason == "length"


@dataclass(frozen=True)
class NextTokenProbs:
    """Probabilities of candidate next tokens.

    `probs` are renormalized over the candidates so they sum to one. `covered_mass` is the raw
    probability the model gave the candidates together: a small value means the model wanted to
    say something else, and the renormalized numbers deserve less trust. `raw` keeps the
    unnormalized probabilities; a candidate outside the top alternatives the endpoint returned
    has raw probability 0 and is listed in `missing`.
    """

    probs: dict[str, float]
    covered_mass: float
    raw: dict[str, float]
    missing: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    from_cache: bool = False

    @classmethod
    def from_logprobs(
        cls,
        top: Iterable[tuple[str, float]],
        candidates: Sequence[str],
        *,
        usage: Usage | None = None,
        from_cache: bool = False,
    ) -> NextTokenProbs:
        """Build from (token, logprob) pairs; raises when no candidate got any mass."""
        best: dict[str, float] = {}
        for token, logprob in top:
            # Keep the highest if a server lists one string twice (distinct token ids).
            if token not in best or logprob > best[token]:
                best[token] = logprob
        raw = {c: math.exp(best[c]) if c in best else 0.0 for c in candidates}
        covered = sum(raw.values())
        missing = tuple(c for c in candidates if c not in best)
        if covered <= 0.0:
            shown = ", ".join(repr(t) for t, _ in sorted(best.items(), key=lambda kv: -kv[1])[:5])
            raise InputError(
                f"the model gave none of the candidates {list(candidates)!r} any probability "
                f"among its top alternatives (it preferred {shown})",
                field="candidates",
            )
        if covered > 1.0 + 1e-4:
            raise ResponseFormatError(
                f"the endpoint's probabilities for {list(candidates)!r} add up to {covered:.4f} > 1"
            )
        probs = {c: p / covered for c, p in raw.items()}
        return cls(probs, covered, raw, missing, usage or Usage(), from_cache)


@dataclass
class CallStats:
    """Counts of one backend's traffic: `attempts - requests` is the retries it made.

    `requests` are calls that reached the model, `cache_hits` calls answered without it,
    `attempts` what went over the wire (an HTTP client counts its retries here).
    """

    requests: int = 0
    attempts: int = 0
    cache_hits: int = 0

    @property
    def retries(self) -> int:
        return max(0, self.attempts - self.requests)


class Backend(abc.ABC):
    """A model cotplan can call. Subclasses implement `generate` and `next_token_probs`.

    The capabilities below are the whole contract between a backend and the code that drives
    it: callers read them, never probe for other attributes. Each has the default a minimal
    subclass gets; a backend that differs says so with a class attribute (or sets it per
    instance in `__init__`).
    """

    #: A name that identifies the model's weights (used in cache keys and cost lookups).
    model: str = ""
    #: `next_token_probs` works and `generate(logprobs=n)` returns token logprobs.
    supports_logprobs: bool = True
    #: How many alternatives one request can return per position.
    max_top_logprobs: int = 20
    #: How many requests this backend serves well at once (used by `map`).
    default_concurrency: int = 4
    #: A plain-text prompt is continued as text (a /v1/completions endpoint, a raw language
    #: model) rather than read as one user message. Decides how budgeted CoT writes out a chat
    #: template and whether scored choices keep their leading space.
    text_completions: bool = False
    #: The model reasons in hidden tokens before its visible answer (OpenAI's o-series and
    #: gpt-5/gpt-6); such models refuse logprobs, `temperature` and `stop`, and a budget caps
    #: reasoning and answer together.
    reasoning: bool = False
    #: The name of the rule in `cotplan.backends.budgets.BUDGET_RULES` by which this backend
    #: takes a token budget; the default is a plain `max_tokens` cap on written-out text.
    budget_rule: str = "vllm"
    #: Who serves the model, as a key of `cotplan.backends.budgets.PROVIDER_RULES` ("openai",
    #: "vllm", "llama.cpp", ...); None for an in-process model. A plan records it, so that the
    #: request fields it gives later are the ones this server takes.
    provider: str | None = None
    #: The endpoint requests go to; None for an in-process model or a provider's own default.
    base_url: str | None = None
    #: `tokenize(text)` returns the model's own token ids (the embedded model's server does).
    supports_tokenize: bool = False
    #: Where the backend also has a `prompt_logprobs` method (vLLM's scoring of every prompt
    #: position in one request), callers may use it. OpenAI-compatible clients set this from
    #: the server they were told about, since the method exists whether or not the server
    #: answers it.
    supports_prompt_logprobs: bool = True
    #: How the model writes and closes its thinking, by name (`cotplan.generate.protocols`):
    #: None leaves it to the model registry's entry for `model`; `connect(..., protocol=)` sets
    #: it for a model the registry does not know by that name.
    protocol: str | None = None

    @functools.cached_property
    def stats(self) -> CallStats:
        """This backend's traffic so far (zero counts for a backend that keeps none)."""
        return CallStats()

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` by the model's own tokenizer (no BOS), where
        `supports_tokenize`; a `CapabilityError` otherwise."""
        raise CapabilityError(f"{self.model or type(self).__name__} does not tokenize text")

    @abc.abstractmethod
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
        """Generate at most `max_tokens` tokens after `prompt` (text or chat messages).

        `extra` holds provider request fields sent as they are (for example
        ``{"reasoning_effort": "low"}``); they are part of the request, so of its cache key.
        """

    @abc.abstractmethod
    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        """Probabilities of each single-token candidate as the very next token."""

    def count_tokens(self, text: str) -> int:
        """Tokens in `text` by this model's tokenizer (default: the model's tiktoken encoding)."""
        return count_tokens(text, self.model)

    def map(
        self,
        fn: Callable[[T], R],
        items: Iterable[T],
        *,
        concurrency: int | None = None,
    ) -> list[R]:
        """Apply `fn` to every item with bounded concurrency; results keep the input order.

        `fn` usually calls this backend's `generate` or `next_token_probs`. The first error
        raised by any call ends the map: no further item starts, the calls already running
        finish, and the error of the earliest failed item is re-raised. A KeyboardInterrupt
        (Ctrl-C) returns at once: no further item starts and running calls are not waited for
        (their client's own timeout bounds them; what finished is in the call cache).
        """
        workers = max(1, concurrency or self.default_concurrency)
        items = list(items)
        if workers == 1 or len(items) <= 1:
            return [fn(item) for item in items]
        return _map_in_threads(fn, items, min(workers, len(items)))

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections; the backend must not be used afterwards."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _map_in_threads(fn: Callable[[T], R], items: list[T], workers: int) -> list[R]:
    """`Backend.map` on `workers` daemon threads that take items one at a time.

    Not a ThreadPoolExecutor: its threads are joined when the interpreter exits, so after
    Ctrl-C the process would live on until every running request (and the SDK's retries of
    it) gave up. Daemon threads end with the process; a stop flag keeps pending items from
    starting.
    """
    results: dict[int, R] = {}
    errors: dict[int, BaseException] = {}
    lock = threading.Lock()
    indices = iter(range(len(items)))
    stop = threading.Event()
    finished = threading.Event()
    running = [workers]

    def work() -> None:
        try:
            while not stop.is_set():
                with lock:
                    index = next(indices, None)
                if index is None:
                    return
                try:
                    value = fn(items[index])
                except BaseException as exc:  # handed to the caller's thread, not lost here
                    with lock:
                        errors[index] = exc
                    stop.set()
                    return
                with lock:
                    results[index] = value
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    finished.set()

    for number in range(workers):
        threading.Thread(target=work, name=f"cotplan-{number}", daemon=True).start()
    try:
        # A bounded wait, so the main thread sees a signal (Ctrl-C) promptly on every platform.
        while not finished.wait(0.1):
            pass
    except BaseException:
        stop.set()  # pending items never start; running ones are left to end with the process
        raise
    if errors:
        raise errors[min(errors)]
    return [results[index] for index in range(len(items))]
