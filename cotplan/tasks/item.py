"""One labelled calibration item, the unit every task family and file loader produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cotplan.messages import Message

__all__ = ["AnswerKind", "TaskItem"]

#: How an answer is extracted from text and compared: an integer, one of `choices`,
#: a single binary digit, or free text compared after normalisation.
AnswerKind = Literal["integer", "choice", "binary", "text"]


@dataclass(frozen=True)
class TaskItem:
    """A question with its exact answer.

    `prompt` is the question alone (text or chat messages); budgeted generation adds the
    reasoning and answer instructions. `n` is the item's size (items to track, examples in
    context, ...); None means "use the prompt's token count". `choices` is set for
    multiple-choice items.
    """

    id: str
    prompt: str | tuple[Message, ...]
    answer: str
    kind: AnswerKind = "text"
    choices: tuple[str, ...] | None = None
    n: int | None = None
    family: str = "custom"
