"""The backend contract: what a caller may rely on is declared on `Backend`, with defaults.

A user's own minimal subclass gets the defaults, and every path that drives a backend (budgeted
CoT, permutation averaging, candidate scoring) reads the same declaration: a chat backend is
driven as chat everywhere, a text-completion backend as text everywhere. The doubles below are
transport doubles (no model): they answer in the shape each declaration implies, so a path
that drove them the other way would fail to find its candidates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from cotplan.backends.base import (
    Backend,
    CallStats,
    Completion,
    NextTokenProbs,
    Prompt,
    TokenLogprob,
    Usage,
)
from cotplan.backends.budgets import rule_for
from cotplan.errors import CapabilityError
from cotplan.generate.budgeted import budgeted_answer, resolve_mode
from cotplan.permutation.average import permutation_average
from cotplan.permutation.evaluate import score_every_ordering
from cotplan.permutation.fewshot import as_examples
from cotplan.permutation.scoring import token_pieces
from cotplan.tasks import TaskItem

CHOICES = ["positive", "negative"]
EXAMPLES = [("good", "positive"), ("bad", "negative"), ("great", "positive")]
ITEM = TaskItem(id="q", prompt="Is 'fine' positive or negative?", answer="positive", n=1)
CHAT_NOTE = "chat backend: choices scored without the template's leading space"


class Minimal(Backend):
    """What a user writes: the two abstract methods, nothing declared."""

    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        raise NotImplementedError

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


def test_a_minimal_backend_gets_the_declared_defaults() -> None:
    backend = Minimal()
    assert backend.model == ""
    assert backend.supports_logprobs is True
    assert backend.max_top_logprobs == 20
    assert backend.default_concurrency == 4
    assert backend.text_completions is False
    assert backend.reasoning is False
    assert backend.budget_rule == "vllm"
    assert rule_for(backend).parameter == "max_tokens"
    assert backend.base_url is None
    assert backend.supports_tokenize is False
    assert backend.stats == CallStats()
    assert backend.stats.retries == 0
    with pytest.raises(CapabilityError, match="does not tokenize text"):
        backend.tokenize("abc")


def test_stats_are_per_instance_and_a_subclass_may_set_its_own() -> None:
    first, second = Minimal(), Minimal()
    first.stats.requests += 3
    assert second.stats.requests == 0

    class Counting(Minimal):
        def __init__(self) -> None:
            self.stats = CallStats(requests=2, attempts=5)

    assert Counting().stats.retries == 3


class _Recorder(Backend):
    """A model with a known chat template whose replies have the shape its declaration
    implies: a text-completion endpoint puts a space before an answer word, a chat reply
    does not. Word-level tokenizer (a word and the space before it are one token)."""

    model = "smollm2-135m-instruct"
    supports_tokenize = True

    def __init__(self) -> None:
        self.prompts: list[Prompt] = []

    @property
    def lead(self) -> str:
        return " " if self.text_completions else ""

    def tokenize(self, text: str) -> list[int]:
        return [hash(word) for word in re.findall(r"\s*\S+|\s+$", text)]

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
        self.prompts.append(prompt)
        if max_tokens == 1 and logprobs:
            top = ((self.lead + "positive", math.log(0.6)), (self.lead + "negative", math.log(0.3)))
            token = TokenLogprob(top[0][0], top[0][1], top)
            return Completion(top[0][0], "length", Usage(10, 1), self.model, (token,))
        text = self.lead + "positive" if isinstance(prompt, str) else "Answer: positive"
        return Completion(text, "stop", Usage(10, 2), self.model)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


class _TextRecorder(_Recorder):
    text_completions = True


@pytest.mark.parametrize(("cls", "text"), [(_Recorder, False), (_TextRecorder, True)])
def test_every_path_drives_a_backend_by_its_one_declaration(
    cls: type[_Recorder], text: bool
) -> None:
    # Budgeted CoT: the chat template written out for text, chat turns otherwise.
    backend = cls()
    answer = budgeted_answer(backend, ITEM, 8)
    assert answer.mode == resolve_mode(backend) == ("template" if text else "chat")
    first = backend.prompts[0]
    assert isinstance(first, str) == text
    assert answer.extracted == "positive"

    # Permutation averaging: choices scored after the template's space only for text.
    dist = permutation_average(cls(), EXAMPLES, "fine", CHOICES, m=2, schedule="random")
    assert (CHAT_NOTE in dist.notes) == (not text)
    assert dist.answer == "positive"
    assert dist.probs["positive"] == pytest.approx(2 / 3)

    # Candidate scoring: the model's own tokenizer splits text continuations only.
    pieces, source = token_pieces(cls(), "Output:", " positive")
    assert source == ("server" if text else "none")
    assert pieces == (" positive",)
    pool = score_every_ordering(cls(), as_examples(EXAMPLES[:2]), "fine", CHOICES)
    assert pool.probs[:, 0] == pytest.approx([2 / 3, 2 / 3])


def test_a_hidden_reasoner_declares_its_rule_and_is_driven_hidden() -> None:
    class Hidden(_Recorder):
        model = "my-reasoner"
        reasoning = True
        supports_logprobs = False
        budget_rule = "openai-reasoning"

    backend = Hidden()
    answer = budgeted_answer(backend, ITEM, 100, answer_tokens=16)
    assert answer.mode == "hidden"
    assert answer.calls == 1
