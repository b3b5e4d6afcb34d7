"""The lab reasoning model behind cotplan's `Backend` interface, in-process.

`LabBackend(model)` (or ``cotplan.connect("lab:parity")``) lets `budgeted_answer`, `calibrate`,
`BudgetPlanner`, `run_plan` and the benchmarks run on a lab model unchanged. Its model name
(``lab-parity@<key>``) matches no chat template, so `budgeted_answer` drives it in ``chat``
mode: the reasoning phase is one assistant turn capped at k tokens, and when the cap cut it, a
second user turn asks for the final answer alone.

The prompt protocol
-------------------
A lab model reads only its own words (`cotplan.research.lab.reasoning.tokenizer`), so the backend
turns a prompt (text, or chat messages) into one transcript ``<bos> question Reasoning: trace
Answer: answer``:

- system messages are ignored (the model has none);
- in a user message, a line made only of lab words is transcript: a line starting with a family
  header (``Parity:``, ``Sum:``, ``Cups:``, ``Bits:``) starts the question; any other line is
  an instruction. An instruction that asks for the answer alone ("only the final answer",
  "stop reasoning", "no explanation", "answer now") makes the model answer: ``Answer:`` follows
  (after the trace so far, cut at any ``Answer:`` already in it). Any other instruction, or
  none, makes it reason: ``Reasoning:`` follows the question. So `budgeted_answer`'s
  instruction, direct prompt and forced-answer turn all work, and so does a TALE-style "use
  less than B tokens" (the model cannot read the number: it reasons as usual);
- an assistant message (the reasoning so far) is transcript, word for word.

The model then continues the transcript: it writes its trace, ``Answer:``, the answer, and its
end token (which has no text). A completion's text is the tokens' surfaces, each after a space
(``" [1] 1 1 [2] 0 1 Answer: 1"``); usage counts the lab tokenizer's tokens, and
`count_tokens` counts one token per word.

Decoding is greedy by default (temperature > 0 samples, seeded by `seed`). Greedy runs are
remembered per prompt, so the run capped at k for one prompt is cut from the longest run
already made (identical by construction): a calibration costs about one run per item and
budget grid, and the answers say `from_cache` when nothing new was computed. One lock
serialises the model, so `Backend.map` may call it from threads.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cotplan.backends.base import (
    Backend,
    CallStats,
    Completion,
    NextTokenProbs,
    Prompt,
    TokenLogprob,
    Usage,
    validate_prompt,
)
from cotplan.errors import InputError
from cotplan.research.lab.reasoning.tokenizer import ANSWER, HEADERS, REASONING, LabTokenizer
from cotplan.research.lab.reasoning.train import LabReasoningModel, TrainSettings, load_or_train
from cotplan.validation import require_int

__all__ = ["ANSWER_NOW", "LabBackend", "LabStats", "encode_prompt", "lab_backend"]

#: An instruction matching this asks for the answer alone (see the module docstring).
ANSWER_NOW = re.compile(
    r"\bonly\b.*\banswer\b|\bstop reasoning\b|\bno explanation\b|\bwithout reasoning\b"
    r"|\banswer (?:now|directly|immediately)\b",
    re.IGNORECASE,
)


@dataclass
class LabStats(CallStats):
    """Calls made (`requests`) and calls answered entirely from remembered runs (an
    in-process model makes no retries: `attempts` stays 0)."""


def encode_prompt(prompt: Prompt, tokenizer: LabTokenizer) -> list[int]:
    """The transcript ids of a prompt under the protocol of the module docstring."""
    validate_prompt(prompt)
    messages: list[Mapping[str, str]] = (
        [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    )
    words: list[str] = []
    started = False
    for index, message in enumerate(messages):
        role, content = message["role"], str(message["content"])
        if role in ("system", "developer"):
            continue
        if role == "assistant":
            if not started:
                raise InputError(
                    "an assistant turn before any lab question", field=f"prompt[{index}]"
                )
            bad = tokenizer.unknown_words(content)
            if bad:
                shown = ", ".join(repr(w) for w in bad[:5])
                raise InputError(
                    f"the lab model cannot read its own turn: unknown words {shown}",
                    field=f"prompt[{index}].content",
                )
            words += content.split()
            continue
        answer_now = False
        for line in content.splitlines():
            if not line.strip():
                continue
            if tokenizer.unknown_words(line):
                answer_now = answer_now or bool(ANSWER_NOW.search(line))
                continue
            line_words = line.split()
            if line_words[0] in HEADERS:
                words = line_words
                started = True
            elif started:
                words += line_words
        if not started:
            raise InputError(
                "no lab question in the prompt: a lab model reads a line such as "
                f"'Parity: [1] 1 [2] 0' (headers: {', '.join(HEADERS)})",
                field="prompt",
            )
        words = _close_turn(words, answer_now)
    if not started:
        raise InputError("no lab question in the prompt", field="prompt")
    return [tokenizer.bos_id, *tokenizer.encode(words)]


def _close_turn(words: list[str], answer_now: bool) -> list[str]:
    """The transcript after a user turn: `Reasoning:` or `Answer:` where one is due."""
    if REASONING not in words and ANSWER not in words:
        return [*words, ANSWER if answer_now else REASONING]
    if answer_now:
        if ANSWER in words:
            return words[: words.index(ANSWER) + 1]
        return [*words, ANSWER]
    return words


@dataclass
class _GreedyContinuation:
    """The greedy continuation of one prompt as far as it was generated: its tokens, their
    log-probabilities and next-token distributions, and whether it reached the end token; a
    longer request for the same prompt extends it instead of starting over."""

    tokens: list[int] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    dists: list[np.ndarray] = field(default_factory=list)
    ended: bool = False


class LabBackend(Backend):
    """A trained `LabReasoningModel` as a cotplan `Backend` (see the module docstring)."""

    supports_logprobs = True
    max_top_logprobs = 20
    default_concurrency = 1
    #: A hard `max_tokens` cap on reasoning written out as text, as for vLLM.
    budget_rule = "vllm"
    #: A text prompt is read as one user turn (see the prompt protocol above).
    text_completions = False

    def __init__(self, model: LabReasoningModel, *, remember: int = 50_000) -> None:
        if not isinstance(model, LabReasoningModel):
            raise InputError(
                f"must be a LabReasoningModel, got {type(model).__name__}", field="model"
            )
        self.lab = model
        self.tokenizer = model.tokenizer
        self.model = f"{model.family}@{model.key[:12]}"
        self.stats = LabStats()
        self._remember = max(0, int(remember))
        self._runs: OrderedDict[tuple[int, ...], _GreedyContinuation] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def for_family(
        cls,
        family: str,
        preset: str | TrainSettings = "standard",
        *,
        seed: int | None = None,
        retrain: bool = False,
    ) -> LabBackend:
        """The backend of `family`'s model trained with `preset` and training `seed` (None:
        the preset's, 0) (loaded, or trained now). Its model name carries the store key, so
        another seed's model has another name."""
        return cls(load_or_train(family, preset, seed=seed, retrain=retrain))

    # -- Backend ------------------------------------------------------------------------------

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
        if extra:
            raise InputError(
                f"a lab model takes no provider request fields, got {sorted(extra)}",
                field="extra",
            )
        max_tokens = require_int(max_tokens, "max_tokens", low=0)
        if not (temperature >= 0):
            raise InputError(f"must be ≥ 0, got {temperature!r}", field="temperature")
        ids = encode_prompt(prompt, self.tokenizer)
        started = time.perf_counter()
        with self._lock:
            self.stats.requests += 1
            if temperature == 0:
                run, fresh = self._greedy(ids, max_tokens)
            else:
                rng = np.random.default_rng(seed)
                tokens, logps, dists, ended = self.lab.continuation(
                    ids, max_tokens, temperature=temperature, rng=rng
                )
                run, fresh = _GreedyContinuation(tokens, logps, dists, ended), True
            if not fresh:
                self.stats.cache_hits += 1
        tokens, logps, dists = run.tokens[:max_tokens], run.logps, run.dists
        ended = run.ended and len(run.tokens) <= max_tokens
        text, kept, stopped = self._apply_stop(tokens, stop)
        finish = "stop" if ended or stopped else "length"
        top = None
        if logprobs > 0:
            count = min(int(logprobs), self.max_top_logprobs)
            top = tuple(
                TokenLogprob(self.tokenizer.token_text(t), logps[i], self._top(dists[i], count))
                for i, t in enumerate(tokens[:kept])
            )
        return Completion(
            text=text,
            finish_reason=finish,
            usage=Usage(prompt_tokens=len(ids), completion_tokens=kept),
            model=self.model,
            logprobs=top,
            latency_s=time.perf_counter() - started,
            from_cache=not fresh,
        )

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        if isinstance(candidates, str) or len(candidates) < 1:
            raise InputError("must be a non-empty list of strings", field="candidates")
        ids = encode_prompt(prompt, self.tokenizer)
        token_ids = []
        for candidate in candidates:
            word = str(candidate).strip()
            if not self.tokenizer.known(word) or len(str(candidate).split()) != 1:
                raise InputError(f"{candidate!r} is not one lab token", field="candidates")
            token_ids.append(self.tokenizer.ids[word])
        with self._lock:
            self.stats.requests += 1
            logits = self.lab.logits(ids)
        logp = logits - np.logaddexp.reduce(logits)
        pairs = [(c, float(logp[t])) for c, t in zip(candidates, token_ids, strict=True)]
        usage = Usage(prompt_tokens=len(ids), completion_tokens=1)
        return NextTokenProbs.from_logprobs(pairs, list(candidates), usage=usage)

    def count_tokens(self, text: str) -> int:
        return self.tokenizer.count(text)

    # -- plumbing -----------------------------------------------------------------------------

    def _greedy(self, ids: list[int], max_tokens: int) -> tuple[_GreedyContinuation, bool]:
        """The greedy run after `ids`, at least `max_tokens` long unless it ended; whether it
        had to be computed (False: remembered)."""
        key = tuple(ids)
        run = self._runs.get(key)
        if run is None:
            run = _GreedyContinuation()
        if run.ended or len(run.tokens) >= max_tokens:
            self._runs.move_to_end(key)
            return run, False
        tokens, logps, dists, ended = self.lab.continuation(
            [*ids, *run.tokens], max_tokens - len(run.tokens)
        )
        run = _GreedyContinuation(run.tokens + tokens, run.logps + logps, run.dists + dists, ended)
        if self._remember:
            self._runs[key] = run
            self._runs.move_to_end(key)
            while len(self._runs) > self._remember:
                self._runs.popitem(last=False)
        return run, True

    def _apply_stop(
        self, tokens: Sequence[int], stop: Sequence[str] | None
    ) -> tuple[str, int, bool]:
        """(text, tokens kept, stopped): the text ends before the first stop string; the
        token that completed it is counted, as providers do."""
        text = ""
        for i, token in enumerate(tokens):
            text += self.tokenizer.token_text(token)
            for s in stop or ():
                at = text.find(s) if s else -1
                if at >= 0:
                    return text[:at], i + 1, True
        return text, len(tokens), False

    def _top(self, dist: np.ndarray, count: int) -> tuple[tuple[str, float], ...]:
        order = np.argsort(-dist)[:count]
        return tuple(
            (self.tokenizer.token_text(int(t)), float(dist[t])) for t in order if dist[t] > -np.inf
        )

    def forget(self) -> None:
        """Drop the remembered greedy runs."""
        with self._lock:
            self._runs.clear()


def lab_backend(
    family: str,
    *,
    preset: str | TrainSettings = "standard",
    seed: int | None = None,
    retrain: bool = False,
    **options: Any,
) -> LabBackend:
    """`cotplan.connect("lab:FAMILY")`: the backend of a lab family's model (`seed`: its
    training seed)."""
    if options:
        raise InputError(
            f"unknown option(s) {', '.join(sorted(options))} for a lab backend "
            "(known: preset, seed, retrain)",
            field="options",
        )
    if not family:
        raise InputError("name the lab family: 'lab:parity', 'lab:sum', ...", field="backend")
    return LabBackend.for_family(family, preset, seed=seed, retrain=retrain)
