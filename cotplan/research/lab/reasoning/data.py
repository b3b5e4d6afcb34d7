"""Training sequences for the lab reasoning model: full traces, cut traces, direct answers.

Three kinds of sequence, mixed in fixed shares (`Mix`):

- ``full``: ``<bos> question Reasoning: trace Answer: answer <eos>``. The model learns to write
  the trace, to close it with ``Answer:`` and to answer.
- ``cut``: the same with the trace cut after j tokens (j uniform in 1 .. len(trace)) and
  ``Answer:`` forced there: what a budget does. The model learns to answer from what it wrote,
  and to guess about the rest. ``Answer:`` is not a target here (the budget wrote it, not the
  model): a model that learned to stop early would spend less than its trace needs.
- ``direct``: ``<bos> question Answer: answer <eos>``, the answer with no reasoning (k = 0).

The question is never a target: it is random, and predicting it teaches nothing about the task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cotplan.errors import InputError
from cotplan.research.lab.reasoning.tasks import LabExample, lab_example
from cotplan.research.lab.reasoning.tokenizer import ANSWER, BOS, EOS, REASONING, LabTokenizer

__all__ = ["IGNORE", "Mix", "TrainingSequence", "make_batch", "training_sequence"]

#: Target id that the loss skips (torch's cross-entropy default).
IGNORE = -100


@dataclass(frozen=True)
class Mix:
    """Shares of full, cut and direct sequences in training (they need not sum to one)."""

    full: float = 0.5
    cut: float = 0.4
    direct: float = 0.1

    def __post_init__(self) -> None:
        values = (self.full, self.cut, self.direct)
        if any(v < 0 for v in values) or sum(values) <= 0:
            raise InputError(f"shares must be ≥ 0 and not all 0, got {values}", field="mix")

    def probabilities(self) -> list[float]:
        total = self.full + self.cut + self.direct
        return [self.full / total, self.cut / total, self.direct / total]


@dataclass(frozen=True)
class TrainingSequence:
    """Token ids and, per position, the id the model should predict next (or `IGNORE`)."""

    ids: list[int]
    targets: list[int]


def training_sequence(
    example: LabExample, tokenizer: LabTokenizer, kind: str, cut: int | None = None
) -> TrainingSequence:
    """One training sequence of `kind` ("full", "cut" with `cut` trace tokens, "direct")."""
    question = [BOS, *example.question]
    if kind == "full":
        trace = list(example.trace)
        supervised_marker = True
    elif kind == "cut":
        if cut is None or not 1 <= cut <= len(example.trace):
            raise InputError(f"must be in 1..{len(example.trace)}, got {cut!r}", field="cut")
        trace = list(example.trace[:cut])
        supervised_marker = False
    elif kind == "direct":
        trace = []
        supervised_marker = False
    else:
        raise InputError(f"must be 'full', 'cut' or 'direct', got {kind!r}", field="kind")
    words = [*question]
    supervised = [False] * len(question)
    if kind != "direct":
        words.append(REASONING)
        supervised.append(False)
        words += trace
        supervised += [True] * len(trace)
    words += [ANSWER, example.answer, EOS]
    supervised += [supervised_marker, True, True]
    ids = [tokenizer.ids[w] for w in words]
    # Position t predicts token t + 1: the target of t is ids[t + 1] where that token is taught.
    targets = [ids[t + 1] if supervised[t + 1] else IGNORE for t in range(len(ids) - 1)]
    return TrainingSequence(ids[:-1], targets)


def make_batch(
    family: str,
    rng: np.random.Generator,
    size: int,
    *,
    sizes: Sequence[int],
    mix: Mix,
    tokenizer: LabTokenizer,
    one_size: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """A padded batch: ids (size, T) and targets (size, T), T the longest sequence.

    With `one_size` every row has the same size n (drawn once), so the batch carries no padding
    beyond the spread of trace lengths.
    """
    kinds = rng.choice(3, size=size, p=mix.probabilities())
    if one_size:
        ns = np.full(size, rng.choice(np.asarray(sizes)))
    else:
        ns = rng.choice(np.asarray(sizes), size=size)
    rows: list[TrainingSequence] = []
    for kind, n in zip(kinds, ns, strict=True):
        example = lab_example(family, rng, int(n))
        if kind == 0:
            rows.append(training_sequence(example, tokenizer, "full"))
        elif kind == 1:
            cut = int(rng.integers(1, len(example.trace) + 1))
            rows.append(training_sequence(example, tokenizer, "cut", cut))
        else:
            rows.append(training_sequence(example, tokenizer, "direct"))
    length = max(len(r.ids) for r in rows)
    ids = np.full((size, length), tokenizer.pad_id, dtype=np.int64)
    targets = np.full((size, length), IGNORE, dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row.ids)] = row.ids
        targets[i, : len(row.targets)] = row.targets
    return ids, targets
