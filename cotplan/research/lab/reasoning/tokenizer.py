"""The lab reasoning model's own tokenizer: one token per whitespace-separated word.

Every token has a surface (``"Parity:"``, ``"[3]"``, ``"17"``, ``"Answer:"``); text is the
surfaces, each preceded by one space. So the text of any token sequence splits back into
exactly those tokens (`encode(decode(ids)) == ids`), which lets a truncated reasoning trace go
back to the model as an assistant turn, and lets `budgeted_answers` cut one greedy run into
shorter budgets by its token strings.

The vocabulary is shared by all lab families: the markers ``Reasoning:``, ``Answer:`` and
``Check:`` (an over-thinker's verification pass), a header per family, position labels
``[1]`` .. ``[MAX_N]``, the numbers 0 .. `MAX_NUMBER`, cup names and swaps. Three
tokens have no surface: padding, the start of a sequence and its end.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cotplan.errors import InputError

__all__ = [
    "ANSWER",
    "BOS",
    "CHECK",
    "EOS",
    "HEADERS",
    "MAX_N",
    "MAX_NUMBER",
    "PAD",
    "REASONING",
    "LabTokenizer",
    "default_tokenizer",
]

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
REASONING, ANSWER = "Reasoning:", "Answer:"
#: Opens an over-thinking model's redundant verification pass (after the answer is settled).
CHECK = "Check:"
#: The first word of each family's question.
HEADERS = ("Parity:", "Sum:", "Cups:", "Bits:", "Majority:", "Lamp:")
#: Most positions a question may label ([1] .. [MAX_N]); room for the theorem's n ≥ 64.
MAX_N = 128
#: Largest number with a token of its own (running sums of up to 24 digits stay below it).
MAX_NUMBER = 255
CUPS = ("A", "B", "C")
SWAPS = ("AB", "AC", "BC")
_SILENT = (PAD, BOS, EOS)


def _words() -> tuple[str, ...]:
    words = [*_SILENT, REASONING, ANSWER, CHECK, *HEADERS]
    words += [f"[{i}]" for i in range(1, MAX_N + 1)]
    words += [str(i) for i in range(MAX_NUMBER + 1)]
    words += [*CUPS, *SWAPS]
    return tuple(words)


@dataclass(frozen=True)
class LabTokenizer:
    """Words <-> ids. `encode` raises on a word outside the vocabulary; `split` does not."""

    words: tuple[str, ...] = field(default_factory=_words)

    def __post_init__(self) -> None:
        if len(set(self.words)) != len(self.words):
            raise InputError("words must be unique", field="words")
        object.__setattr__(self, "_ids", {w: i for i, w in enumerate(self.words)})

    @property
    def ids(self) -> dict[str, int]:
        table: dict[str, int] = object.__getattribute__(self, "_ids")
        return table

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    @property
    def fingerprint(self) -> str:
        """A short hash of the vocabulary: weights trained on another one do not fit."""
        return hashlib.sha256("\n".join(self.words).encode()).hexdigest()[:12]

    @property
    def pad_id(self) -> int:
        return self.ids[PAD]

    @property
    def bos_id(self) -> int:
        return self.ids[BOS]

    @property
    def eos_id(self) -> int:
        return self.ids[EOS]

    @property
    def reasoning_id(self) -> int:
        return self.ids[REASONING]

    @property
    def answer_id(self) -> int:
        return self.ids[ANSWER]

    def known(self, word: str) -> bool:
        """Whether `word` is a visible token (the silent ones cannot be written)."""
        return word in self.ids and word not in _SILENT

    def unknown_words(self, text: str) -> list[str]:
        """The words of `text` that are not tokens."""
        return [w for w in text.split() if not self.known(w)]

    def encode(self, text: str | Iterable[str]) -> list[int]:
        """Ids of a text (split on whitespace) or of a list of words."""
        words = text.split() if isinstance(text, str) else list(text)
        bad = [w for w in words if not self.known(w)]
        if bad:
            shown = ", ".join(repr(w) for w in bad[:5])
            raise InputError(
                f"the lab tokenizer does not know {shown}; lab prompts are written in the "
                "lab families' own words (see cotplan.research.lab.reasoning.tasks)",
                field="prompt",
            )
        return [self.ids[w] for w in words]

    def token_text(self, token_id: int) -> str:
        """The text one token adds: its surface after a space, or nothing (silent tokens)."""
        word = self.words[token_id]
        return "" if word in _SILENT else f" {word}"

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.token_text(int(i)) for i in ids)

    def count(self, text: str) -> int:
        """Tokens in `text`: one per whitespace-separated word, known or not."""
        return len(text.split())


_DEFAULT = LabTokenizer()


def default_tokenizer() -> LabTokenizer:
    """The tokenizer every lab family and model shares."""
    return _DEFAULT
