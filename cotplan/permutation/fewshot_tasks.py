"""Built-in few-shot classification questions with exact answers, for permutation averaging.

Each item is a handful of labelled examples, a query and its true label; the labels are words
that the embedded SmolLM2 model (and GPT tokenizers) read as one token after a space, so they
are scored by next-token probabilities. Examples are split evenly between the labels, so the
label counts in the prompt never give the answer away; only their order varies.

- ``sentiment``: "The concert was dreadful." -> positive / negative
- ``parity``: a two-digit number -> even / odd
- ``mammal``: an animal -> yes / no (is it a mammal?)

`make_fewshot_tasks("parity", n_examples=4, count=10, seed=0)` always returns the same items.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cotplan.errors import InputError
from cotplan.permutation.fewshot import Example, FewShotTemplate
from cotplan.validation import require_int

__all__ = ["FEWSHOT_FAMILIES", "FewShotItem", "make_fewshot_tasks"]

_POSITIVE = (
    "wonderful",
    "excellent",
    "delightful",
    "brilliant",
    "lovely",
    "fantastic",
    "superb",
    "charming",
    "pleasant",
    "amazing",
    "great",
    "marvelous",
)
_NEGATIVE = (
    "terrible",
    "awful",
    "dreadful",
    "horrible",
    "boring",
    "disgusting",
    "miserable",
    "painful",
    "annoying",
    "poor",
    "ugly",
    "nasty",
)
_THINGS = ("movie", "meal", "trip", "concert", "book", "hotel", "game", "show", "party", "class")
_MAMMALS = (
    "dog",
    "cat",
    "horse",
    "whale",
    "bat",
    "cow",
    "mouse",
    "lion",
    "rabbit",
    "elephant",
    "goat",
    "tiger",
    "dolphin",
    "bear",
    "monkey",
    "sheep",
)
_OTHERS = (
    "eagle",
    "shark",
    "frog",
    "snake",
    "lizard",
    "salmon",
    "crow",
    "turtle",
    "bee",
    "spider",
    "owl",
    "crocodile",
    "ant",
    "trout",
    "parrot",
    "octopus",
)

#: Built-in families, with their labels in the order they are offered as choices.
FEWSHOT_FAMILIES: dict[str, tuple[str, ...]] = {
    "sentiment": ("positive", "negative"),
    "parity": ("even", "odd"),
    "mammal": ("yes", "no"),
}

_HEADERS = {
    "sentiment": "Classify the sentiment of each sentence.\n\n",
    "parity": "Say whether each number is even or odd.\n\n",
    "mammal": "Is the animal a mammal?\n\n",
}


@dataclass(frozen=True)
class FewShotItem:
    """One few-shot question: examples, query, the exact answer and the candidate labels."""

    id: str
    family: str
    examples: tuple[Example, ...]
    query: str
    answer: str
    choices: tuple[str, ...]
    header: str = ""

    @property
    def template(self) -> FewShotTemplate:
        return FewShotTemplate(header=self.header)


Draw = Callable[[np.random.Generator, int], tuple[str, int]]


def _sentiment(rng: np.random.Generator, label: int) -> tuple[str, int]:
    words = _POSITIVE if label == 0 else _NEGATIVE
    thing = _THINGS[int(rng.integers(len(_THINGS)))]
    return f"The {thing} was {words[int(rng.integers(len(words)))]}.", label


def _parity(rng: np.random.Generator, label: int) -> tuple[str, int]:
    number = 2 * int(rng.integers(5, 50)) + label
    return str(number), label


def _mammal(rng: np.random.Generator, label: int) -> tuple[str, int]:
    pool = _MAMMALS if label == 0 else _OTHERS
    return pool[int(rng.integers(len(pool)))], label


_DRAW: dict[str, Draw] = {"sentiment": _sentiment, "parity": _parity, "mammal": _mammal}


def make_fewshot_tasks(
    family: str, *, n_examples: int = 4, count: int = 10, seed: int = 0
) -> list[FewShotItem]:
    """`count` items of `family`, each with `n_examples` distinct examples (half per label)."""
    if family not in FEWSHOT_FAMILIES:
        raise InputError(
            f"unknown few-shot family {family!r} (known: {', '.join(FEWSHOT_FAMILIES)})",
            field="family",
        )
    for name, value, low, high in (
        ("n_examples", n_examples, 2, 12),
        ("count", count, 1, 10_000),
        ("seed", seed, 0, 2**63 - 1),
    ):
        require_int(value, name, low=low, high=high)
    labels = FEWSHOT_FAMILIES[family]
    draw = _DRAW[family]
    rng = np.random.default_rng(
        np.random.SeedSequence([seed, n_examples, zlib.crc32(family.encode())])
    )
    items = []
    for index in range(count):
        wanted = [i % 2 for i in range(n_examples)]
        seen: set[str] = set()
        examples: list[Example] = []
        for label in wanted:
            text, _ = draw(rng, label)
            while text in seen:
                text, _ = draw(rng, label)
            seen.add(text)
            examples.append(Example(text, labels[label]))
        order = rng.permutation(n_examples)
        query_label = int(rng.integers(2))
        query, _ = draw(rng, query_label)
        while query in seen:
            query, _ = draw(rng, query_label)
        items.append(
            FewShotItem(
                id=f"{family}-e{n_examples}-s{seed}-{index:04d}",
                family=family,
                examples=tuple(examples[int(i)] for i in order),
                query=query,
                answer=labels[query_label],
                choices=labels,
                header=_HEADERS[family],
            )
        )
    return items
