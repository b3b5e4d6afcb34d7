"""Bad input to `permutation_average` is refused, by name, before any request is made."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt
from cotplan.errors import InputError
from cotplan.permutation.average import permutation_average


class _NoCalls(Backend):
    """A double for error paths only: any request fails the test."""

    model = "no-calls"

    def generate(self, prompt: Prompt, **kwargs: Any) -> Completion:  # type: ignore[override]
        raise AssertionError("a request was made before the input was validated")

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise AssertionError("a request was made before the input was validated")


EXAMPLES = [("good", "positive"), ("bad", "negative")]
GOOD: dict[str, Any] = {"examples": EXAMPLES, "query": "fine", "choices": ["positive", "negative"]}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"examples": EXAMPLES[:1]}, r"`examples`: need at least two examples to reorder"),
        ({"choices": ["positive"]}, r"`choices`: need at least two candidates"),
        ({"choices": ["positive", "positive"]}, r"`choices`: contain 'positive' twice"),
        ({"choices": ["positive", " "]}, r"`choices`: must be non-empty strings"),
        ({"query": "  "}, r"`query`: must be a non-empty string"),
        ({"m": 0}, r"`m`: must be an integer >= 1, got 0"),
        ({"m": -3}, r"`m`: must be an integer >= 1, got -3"),
        ({"m": 2.0}, r"`m`: must be an integer >= 1"),
        ({"schedule": "latin"}, r"`schedule`: must be one of random, banded, balanced"),
        ({"seed": -1}, r"`seed`: must be an integer >= 0"),
        ({"confidence": 1.0}, r"`confidence`: must be in \(0, 1\)"),
        ({"target_width": 0.0}, r"`target_width`: must be in \(0, 1\]"),
        ({"interval": "cycles", "schedule": "random"}, r"`interval`: cycles exist only for"),
        ({"interval": "bootstrap"}, r"`interval`: must be auto, orderings or cycles"),
        ({"bands": 2}, r"`bands`: only applies to schedule='banded'"),
        ({"method": "logits"}, r"`method`: must be auto, logprobs or sampled"),
        ({"samples": 0}, r"`samples`: must be an integer >= 1"),
        ({"temperature": 0.0}, r"`temperature`: must be in \(0, 2\] for sampling"),
        ({"smoothing": -1.0}, r"`smoothing`: must be a number >= 0"),
        ({"template": "Q: {input}"}, r"`template`: must be a FewShotTemplate"),
        ({"min_m": 1, "target_width": 0.5}, r"`min_m`: must be an integer >= 2"),
        ({"check_every": 0, "target_width": 0.5}, r"`check_every`: must be an integer >= 1"),
        ({"k": -1}, r"`k`: must be an integer >= 0"),
        ({"k": 8, "method": "sampled"}, r"`method`: must be auto with budgeted reasoning"),
        ({"answer_tokens": 0}, r"`answer_tokens`: must be an integer >= 1"),
    ],
)
def test_bad_input_is_named_and_no_request_is_made(change: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        permutation_average(_NoCalls(), **{**GOOD, **change})
