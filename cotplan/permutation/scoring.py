"""Probabilities of a few answer candidates after one prompt: from logprobs, or from samples.

Three methods, chosen once per question (`plan_candidates`) and applied to every ordering:

- ``first_token``: every candidate is one token in context and their tokens differ, so one
  request with the top alternatives (logprobs) scores them all. Probabilities are renormalized
  over the candidates; `covered_mass` is the raw probability they had together.
- ``continuation``: some candidate spans several tokens or shares its first token with another.
  Each candidate's whole continuation is scored by chaining next-token probabilities,
  P(t1 | prompt) · P(t2 | prompt + t1) · ..., one request per distinct prefix (prefixes that
  candidates share are asked once). When one candidate's tokens are a prefix of another's
  (" cat" / " cats" split as " cat" + "s"), the chain alone would count the longer answer inside
  the shorter one, so every candidate is then scored with the answer's terminator appended.
- ``sampled``: the model gives no logprobs (reasoning models, some providers). Answers are
  sampled at temperature > 0 with a distinct seed per sample, matched to the candidates, and
  smoothed: (count + α) / (matched + α·C), α = 1 (add-one) by default, 0.5 for Jeffreys.
  `covered_mass` is then the share of samples that named a candidate.

Token boundaries (what a "token" of a candidate is) come from the model's own tokenizer where
cotplan can run it: the embedded model's server (`/tokenize`, so ids are exact in context),
tiktoken for OpenAI models; otherwise from `backend.count_tokens` on prefixes (greedy: the
longest prefix that is one token), and with no tokenizer at all each candidate is taken as one
token and the endpoint is the judge. A candidate token outside the top alternatives the
endpoint returns (20 for llama.cpp and OpenAI) gets raw probability 0 and is reported missing:
its true probability is below the 20th alternative's, not zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from cotplan.backends.base import Backend, Completion
from cotplan.errors import InputError, ResponseFormatError
from cotplan.generate.budgeted import BudgetedAnswer, CoTPrompt, budgeted_answer
from cotplan.tasks.answers import extract_answer
from cotplan.tasks.item import TaskItem

__all__ = [
    "CandidatePlan",
    "FloatArray",
    "NoLogprobsError",
    "PromptScore",
    "ScoringMethod",
    "budgeted_prompt",
    "plan_candidates",
    "sample_prompt",
    "score_prompt",
    "token_pieces",
]

FloatArray = npt.NDArray[np.float64]
ScoringMethod = Literal["first_token", "continuation", "sampled", "budgeted"]
TokenizerSource = Literal["server", "tiktoken", "counts", "none"]


@dataclass(frozen=True)
class CandidatePlan:
    """How each candidate is scored after a prompt with a given ending.

    `continuations` are the exact strings scored (answer prefix + choice, plus the terminator
    when `terminated`); `pieces` their token texts in context; `tokenizer` where the token
    boundaries came from.
    """

    choices: tuple[str, ...]
    continuations: tuple[str, ...]
    pieces: tuple[tuple[str, ...], ...]
    method: ScoringMethod
    tokenizer: TokenizerSource
    terminated: bool = False

    @property
    def max_tokens(self) -> int:
        """Tokens of the longest continuation."""
        return max(len(p) for p in self.pieces)


@dataclass(frozen=True)
class PromptScore:
    """Candidate probabilities after one prompt.

    `probs` sum to one over the candidates; `raw` are the model's own probabilities of each
    whole continuation (sample shares for ``sampled``); `covered_mass` is their sum;
    `missing[i]` is True when candidate i fell outside the returned alternatives (raw 0) or,
    when sampled, was never sampled. `completions` are every call made, for usage and cost.
    `no_answers` counts samples the server sent no answer for (``content: null``): they are
    left out of the shares, neither a vote nor an unmatched answer.
    """

    probs: FloatArray
    raw: FloatArray
    covered_mass: float
    missing: tuple[bool, ...]
    completions: tuple[Completion, ...]
    unmatched: tuple[str, ...] = ()
    answers: tuple[BudgetedAnswer, ...] = ()
    no_answers: int = 0


class NoLogprobsError(ResponseFormatError):
    """The endpoint answered but sent no logprobs (`permutation_average` then samples)."""


# -- token boundaries -------------------------------------------------------------------------


def _server_tokenizer(backend: Backend) -> Callable[[str], list[int]] | None:
    """The model's own tokenizer, where the backend has one and continues text as text."""
    if backend.supports_tokenize and backend.text_completions:
        return backend.tokenize
    return None


def _tiktoken_encoding(backend: Backend) -> object | None:
    try:
        from cotplan.backends.tokens import encoding_for

        return encoding_for(backend.model)
    except InputError:
        return None


def server_pieces(
    tokenize: Callable[[str], list[int]], prompt: str, continuation: str, choice: str
) -> tuple[str, ...]:
    base = tokenize(prompt)
    full = tokenize(prompt + continuation)
    if full[: len(base)] != base:
        raise InputError(
            f"{choice!r} merges with the end of the prompt into one token, so the model cannot "
            "score it as a continuation; end the template's answer line with a space or a "
            "punctuation mark",
            field="choices",
        )
    tail = full[len(base) :]
    if not tail:
        raise InputError(f"{choice!r} adds no tokens after the prompt", field="choices")
    pieces: list[str] = []
    start = 0
    for i in range(1, len(tail)):
        target = base + tail[:i]
        for end in range(start + 1, len(continuation)):
            if tokenize(prompt + continuation[:end]) == target:
                pieces.append(continuation[start:end])
                start = end
                break
        else:
            raise InputError(
                f"cannot split {choice!r} into whole-character tokens for this model "
                "(a token ends inside a character)",
                field="choices",
            )
    pieces.append(continuation[start:])
    return tuple(pieces)


def _tiktoken_pieces(encoding: object, continuation: str, choice: str) -> tuple[str, ...]:
    ids = encoding.encode(continuation)  # type: ignore[attr-defined]
    pieces = []
    for token in ids:
        raw: bytes = encoding.decode_single_token_bytes(token)  # type: ignore[attr-defined]
        try:
            pieces.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(
                f"cannot split {choice!r} into whole-character tokens for this model",
                field="choices",
            ) from None
    return tuple(pieces)


def count_pieces(count: Callable[[str], int], continuation: str) -> tuple[str, ...]:
    pieces = []
    start = 0
    while start < len(continuation):
        end = start + 1
        for stop in range(len(continuation), start, -1):
            if count(continuation[start:stop]) == 1:
                end = stop
                break
        pieces.append(continuation[start:end])
        start = end
    return tuple(pieces)


def token_pieces(
    backend: Backend, prompt: str, continuation: str, *, choice: str | None = None
) -> tuple[tuple[str, ...], TokenizerSource]:
    """The token texts of `continuation` right after `prompt`, and where they came from."""
    label = choice if choice is not None else continuation
    tokenize = _server_tokenizer(backend)
    if tokenize is not None:
        return server_pieces(tokenize, prompt, continuation, label), "server"
    encoding = _tiktoken_encoding(backend)
    if encoding is not None:
        return _tiktoken_pieces(encoding, continuation, label), "tiktoken"
    try:
        backend.count_tokens("a")
    except InputError:
        return (continuation,), "none"
    return count_pieces(backend.count_tokens, continuation), "counts"


def _is_proper_prefix(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    return len(short) < len(long) and long[: len(short)] == short


def plan_candidates(
    backend: Backend,
    prompt: str,
    choices: Sequence[str],
    *,
    answer_prefix: str = " ",
    terminator: str = "\n",
) -> CandidatePlan:
    """Decide how to score `choices` after `prompt` (any prompt with the same ending works).

    `answer_prefix` goes before each choice (the template's space after "Output:");
    `terminator` is appended only when one candidate's tokens are a prefix of another's.
    """
    choices = tuple(choices)

    def build(suffix: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...], TokenizerSource]:
        conts = tuple(answer_prefix + c + suffix for c in choices)
        found = [
            token_pieces(backend, prompt, cont, choice=c)
            for c, cont in zip(choices, conts, strict=True)
        ]
        return conts, tuple(p for p, _ in found), found[0][1]

    continuations, pieces, source = build("")
    terminated = any(_is_proper_prefix(a, b) for a in pieces for b in pieces if a is not b)
    if terminated:
        if not terminator:
            raise InputError(
                "one candidate's tokens are a prefix of another's and the template has no "
                "terminator to tell them apart",
                field="choices",
            )
        continuations, pieces, source = build(terminator)
    same = [c for c, p in zip(choices, pieces, strict=True) if sum(q == p for q in pieces) > 1]
    if same:
        raise InputError(f"{same} are the same tokens to the model", field="choices")
    first = [p[0] for p in pieces]
    single = all(len(p) == 1 for p in pieces) and len(set(first)) == len(first)
    method: ScoringMethod = "first_token" if single else "continuation"
    return CandidatePlan(choices, continuations, pieces, method, source, terminated)


# -- scoring with logprobs --------------------------------------------------------------------


def _top(completion: Completion, model: str) -> dict[str, float]:
    if not completion.logprobs:
        raise NoLogprobsError(f"{model} returned no logprobs for a 1-token request")
    first = completion.logprobs[0]
    best: dict[str, float] = {}
    for token, logprob in first.top or ((first.token, first.logprob),):
        # A server may list one string twice (distinct token ids): keep the likelier, as
        # `NextTokenProbs.from_logprobs` does.
        if token not in best or logprob > best[token]:
            best[token] = logprob
    return best


def score_prompt(backend: Backend, prompt: str, plan: CandidatePlan) -> PromptScore:
    """Score every candidate of `plan` after `prompt` (methods ``first_token``/``continuation``)."""
    calls: dict[str, dict[str, float]] = {}
    completions: list[Completion] = []

    def top_after(prefix: str) -> dict[str, float]:
        if prefix not in calls:
            completion = backend.generate(
                prefix, max_tokens=1, temperature=0.0, logprobs=backend.max_top_logprobs
            )
            completions.append(completion)
            calls[prefix] = _top(completion, backend.model)
        return calls[prefix]

    raw = np.zeros(len(plan.choices))
    missing = []
    for i, pieces in enumerate(plan.pieces):
        logprob = 0.0
        found = True
        context = prompt
        for piece in pieces:
            top = top_after(context)
            if piece not in top:
                found = False
                break
            logprob += top[piece]
            context += piece
        raw[i] = math.exp(logprob) if found else 0.0
        missing.append(not found)
    covered = float(raw.sum())
    if covered <= 0.0:
        best = sorted(calls[prompt].items(), key=lambda kv: -kv[1])[:5]
        shown = ", ".join(f"{t!r} ({math.exp(lp):.2f})" for t, lp in best)
        raise InputError(
            f"the model gave none of {list(plan.choices)!r} any probability among its top "
            f"{backend.max_top_logprobs} next tokens (it preferred {shown}); check the template "
            "and that the choices are answers the examples show",
            field="choices",
        )
    if covered > 1.0 + 1e-4:
        raise ResponseFormatError(
            f"{backend.model}'s probabilities for {list(plan.choices)!r} add up to "
            f"{covered:.4f} > 1"
        )
    return PromptScore(raw / covered, raw, covered, tuple(missing), tuple(completions))


# -- scoring from budgeted reasoning ------------------------------------------------------------


def _smoothed(counts: FloatArray, smoothing: float) -> FloatArray:
    denominator = float(counts.sum()) + smoothing * len(counts)
    if denominator <= 0.0:
        return np.full(len(counts), 1.0 / len(counts))
    out: FloatArray = (counts + smoothing) / denominator
    return out


def budgeted_prompt(
    backend: Backend,
    prompt: str,
    choices: Sequence[str],
    *,
    k: int,
    item_id: str = "query",
    smoothing: float = 1.0,
    answer_tokens: int = 16,
    cot_prompt: CoTPrompt | None = None,
    plan: CandidatePlan | None = None,
) -> PromptScore:
    """The forced answer after at most `k` reasoning tokens (`budgeted_answer`, greedy).

    With a `plan` (a logprob backend in template mode), the choices are scored after the
    answer marker that closed the reasoning: the ordering gets the model's probabilities, as
    without reasoning. Otherwise the extracted answer is one vote, smoothed like one sample:
    (1[c = answer] + α) / (1 + α·C), uniform when it names no choice. Every call and its cost
    are in `answers` and `completions`.
    """
    choices = tuple(choices)
    item = TaskItem(
        id=item_id,
        prompt=prompt,
        answer=choices[0],
        kind="choice",
        choices=choices,
        family="permutation",
    )
    answer = budgeted_answer(backend, item, k, answer_tokens=answer_tokens, prompt=cot_prompt)
    if plan is not None and answer.answer_prompt:
        scored = score_prompt(backend, answer.answer_prompt, plan)
        return replace(scored, answers=(answer,))
    counts = np.zeros(len(choices))
    if answer.extracted is not None:
        counts[choices.index(answer.extracted)] = 1.0
    return PromptScore(
        _smoothed(counts, smoothing),
        counts,
        float(counts.sum()),
        tuple(bool(c == 0) for c in counts),
        (),
        () if answer.extracted is not None else (answer.answer_text,),
        (answer,),
    )


# -- scoring from samples ---------------------------------------------------------------------


def sample_prompt(
    backend: Backend,
    prompt: str,
    choices: Sequence[str],
    *,
    seeds: Sequence[int],
    temperature: float = 1.0,
    smoothing: float = 1.0,
    max_tokens: int = 16,
    stop: Sequence[str] | None = ("\n",),
) -> PromptScore:
    """Answer frequencies of `len(seeds)` samples after `prompt`, smoothed (method ``sampled``).

    Each sample's first non-empty line is matched to the choices (whole words, case-insensitive,
    the earliest match wins); samples naming none are kept in `unmatched`. A sample the server
    sent no answer for (`Completion.no_answer`) is counted in `no_answers` and left out of the
    shares: it says nothing about which choice the model prefers.
    """
    choices = tuple(choices)
    item = TaskItem(id="query", prompt=prompt, answer=choices[0], kind="choice", choices=choices)
    counts = np.zeros(len(choices))
    completions = []
    unmatched = []
    for seed in seeds:
        completion = backend.generate(
            prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=int(seed),
            stop=list(stop) if stop else None,
        )
        completions.append(completion)
        if completion.no_answer:
            continue
        answer = extract_answer(completion.text, item, prefilled=True)
        if answer is None:
            unmatched.append(completion.text)
        else:
            counts[choices.index(answer)] += 1
    matched = float(counts.sum())
    no_answers = sum(1 for c in completions if c.no_answer)
    n = max(1, len(seeds) - no_answers)
    return PromptScore(
        _smoothed(counts, smoothing),
        counts / n,
        matched / n,
        tuple(bool(c == 0) for c in counts),
        tuple(completions),
        tuple(unmatched),
        no_answers=no_answers,
    )
