"""Thinking traces in the shape reasoning models write them, for the built-in task families.

The embedded thinking model is SmolLM2-135M-Instruct with a LoRA adapter trained on these
traces. A trace is what an R1 distill or Qwen3 writes in its assistant turn:

    <think>
    I count "cat" in the list.        <- the work, one step a line
    dog - no, 0
    cat - yes, 1
    So "cat" appears 1 time.          <- the answer has settled here
    Wait, let me check that again.    <- over-thinking: a second look of random length
    dog - no, 0
    ...
    </think>

    Answer: 1

The work is written so that each line carries the running state (the count so far, the partial
sum, the coin's side), which is what an answer forced mid-thought can fall back on: the
`truncated` traces teach the model to answer from the state it has reached when its thinking is
closed early, so that error falls with the budget the way it does for real reasoning models.

Every trace is built from the item's question text (not from the generator's internals), so
items read from task files work as well as generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cotplan.errors import InputError
from cotplan.tasks.item import TaskItem

__all__ = [
    "ANSWER_MARKER",
    "THINK_CLOSE",
    "THINK_OPEN",
    "TRACE_FAMILIES",
    "Trace",
    "make_trace",
    "work_lines",
]

#: What opens the assistant turn, closes the thinking, and introduces the answer.
THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n\n"
ANSWER_MARKER = "Answer:"

_RECHECKS = (
    "Wait, let me check that again.",
    "Hmm, let me go through it once more to be sure.",
    "Let me double-check.",
    "Wait, did I miss one? Let me look again.",
)
_CONFIRM = ("Yes, {answer}.", "That agrees: {answer}.", "Same result, {answer}.")


@dataclass(frozen=True)
class Work:
    """The steps that solve an item: a heading, one line per step with the state after it (and
    the state before the first step), and the sentence that settles the answer."""

    heading: str
    steps: tuple[str, ...]
    states: tuple[str, ...]  # len(steps) + 1: states[j] is the answer after j steps
    conclusion: str


@dataclass(frozen=True)
class Trace:
    """One assistant turn: `thinking` (between the tags), the `answer` it ends with, and how
    many characters of `thinking` settle the answer (`settled_chars`)."""

    thinking: str
    answer: str
    settled_chars: int

    @property
    def text(self) -> str:
        """The assistant turn as the model writes it."""
        return f"{THINK_OPEN}{self.thinking}{THINK_CLOSE}{ANSWER_MARKER} {self.answer}"


def _count(question: str) -> Work:
    match = re.search(r'the word "([^"]+)" appear in this list: (.*)\?$', question)
    if match is None:
        raise ValueError("not a count question")
    target, words = match.group(1), [w.strip() for w in match.group(2).split(",")]
    count, steps, states = 0, [], ["0"]
    for word in words:
        hit = word == target
        count += hit
        steps.append(f"{word} - {'yes' if hit else 'no'}, {count}")
        states.append(str(count))
    times = "time" if count == 1 else "times"
    return Work(
        f'I count "{target}" in the list.',
        tuple(steps),
        tuple(states),
        f'So "{target}" appears {count} {times}.',
    )


def _find(question: str) -> Work:
    match = re.search(
        r'the word "([^"]+)" appear in this list: (.*)\? Answer yes or no\.$', question
    )
    if match is None:
        raise ValueError("not a find question")
    target, words = match.group(1), [w.strip() for w in match.group(2).split(",")]
    steps, states = [], ["no"]
    # The search stops where the word is found, as a person's would: the thinking an item
    # needs is where its word stands, not the list's length.
    for word in words:
        hit = word == target
        steps.append(f"{word} - {'yes' if hit else 'no'}")
        states.append("yes" if hit else "no")
        if hit:
            break
    found = states[-1] == "yes"
    return Work(
        f'I look for "{target}" in the list.',
        tuple(steps),
        tuple(states),
        f'So "{target}" is in the list: yes.' if found else f'So "{target}" is not there: no.',
    )


def _addition(question: str) -> Work:
    match = re.fullmatch(r"What is ([\d +]+)\?", question)
    if match is None:
        raise ValueError("not an addition question")
    terms = [int(t) for t in match.group(1).split("+")]
    total, steps, states = terms[0], [f"Start with {terms[0]}."], ["0", str(terms[0])]
    for term in terms[1:]:
        steps.append(f"{total} + {term} = {total + term}")
        total += term
        states.append(str(total))
    return Work(
        "I add the numbers one at a time.", tuple(steps), tuple(states), f"So the sum is {total}."
    )


def _arithmetic(question: str) -> Work:
    match = re.fullmatch(r"Start with (\d+)\. (.*)\. What is the result\?", question)
    if match is None:
        raise ValueError("not an arithmetic question")
    value = int(match.group(1))
    steps, states = [], [str(value)]
    for op in match.group(2).split(", then "):
        verb, operand = op.lower().split()
        value = value + int(operand) if verb == "add" else value - int(operand)
        steps.append(f"{verb} {operand}: {value}")
        states.append(str(value))
    return Work(
        f"Start: {match.group(1)}.", tuple(steps), tuple(states), f"So the result is {value}."
    )


def _coin_flip(question: str) -> Work:
    sentences = re.findall(r"(\w+) (flips|does not flip) the coin\.", question)
    if not sentences or not question.startswith("A coin is heads up."):
        raise ValueError("not a coin question")
    heads, steps, states = True, [], ["yes"]
    for name, verb in sentences:
        if verb == "flips":
            heads = not heads
        steps.append(
            f"{name} {'flips' if verb == 'flips' else 'does not flip'}: "
            f"{'heads' if heads else 'tails'}"
        )
        states.append("yes" if heads else "no")
    side = "heads" if heads else "tails"
    return Work(
        "The coin starts heads up.",
        tuple(steps),
        tuple(states),
        f"So the coin is {side} up: {'yes' if heads else 'no'}.",
    )


def _parity(question: str) -> Work:
    match = re.match(r"What is the parity of the bits ([01 ]+) \(", question)
    if match is None:
        raise ValueError("not a parity question")
    parity, steps, states = 0, [], ["0"]
    for bit in match.group(1).split():
        parity ^= int(bit)
        steps.append(f"{bit}: parity {parity}")
        states.append(str(parity))
    return Work(
        "I keep the parity bit by bit.", tuple(steps), tuple(states), f"So the parity is {parity}."
    )


def _last_letter(question: str) -> Work:
    match = re.match(r'Take the last letter of each word in "([a-z ]+)"', question)
    if match is None:
        raise ValueError("not a last-letter question")
    joined, steps, states = "", [], [""]
    for word in match.group(1).split():
        joined += word[-1]
        steps.append(f"{word}: {word[-1]}, so far {joined}")
        states.append(joined)
    return Work(
        "I take each last letter in turn.",
        tuple(steps),
        tuple(states),
        f"So the result is {joined}.",
    )


#: The families a trace can be written for, by family name.
TRACE_FAMILIES: dict[str, Callable[[str], Work]] = {
    "count": _count,
    "find": _find,
    "addition": _addition,
    "arithmetic": _arithmetic,
    "coin_flip": _coin_flip,
    "parity": _parity,
    "last_letter": _last_letter,
}


def _question(item: TaskItem) -> str:
    if isinstance(item.prompt, str):
        return item.prompt
    users = [m["content"] for m in item.prompt if m["role"] == "user"]
    return users[-1] if users else ""


def work_lines(item: TaskItem) -> Work:
    """The solving steps of `item` (InputError when its family has no trace or the question
    does not read as that family's)."""
    build = TRACE_FAMILIES.get(item.family)
    if build is None:
        known = ", ".join(TRACE_FAMILIES)
        raise InputError(
            f"no thinking trace for family {item.family!r} (known: {known})", field="family"
        )
    try:
        return build(_question(item))
    except ValueError as error:
        raise InputError(f"item {item.id!r}: {error}", field="prompt") from None


def _settled_step(work: Work) -> int:
    """The fewest steps after which the state is the final answer and stays so."""
    final = work.states[-1]
    step = len(work.states) - 1
    while step > 0 and work.states[step - 1] == final:
        step -= 1
    return step


def make_trace(
    item: TaskItem,
    rng: np.random.Generator,
    *,
    truncate: bool = False,
    rechecks: tuple[int, int] = (1, 3),
    recheck_to_settled: bool = False,
) -> Trace:
    """A thinking trace for `item`, with over-thinking of random length after the answer settles.

    With `truncate`, the thinking stops part-way through the work (at a random step, sometimes
    mid-line) and the answer is the state the work had reached: what an answer forced at a
    budget can honestly give. `rechecks` bounds how many re-checks follow the settled answer
    (inclusive). With `recheck_to_settled`, every re-check reads at least up to the step after
    which the answer no longer changes (the long thinker's traces: a re-check that stops
    before the found word, or the last one counted, confirms nothing).
    """
    work = work_lines(item)
    settled = "\n".join([work.heading, *work.steps, work.conclusion])
    if truncate:
        done = int(rng.integers(0, len(work.steps)))
        head = "\n".join([work.heading, *work.steps[:done]])
        if done < len(work.steps) and rng.random() < 0.5:
            partial = work.steps[done]
            head += "\n" + partial[: int(rng.integers(1, len(partial)))]
        return Trace(head, work.states[done], len(head))
    lines = [settled]
    answer = work.states[-1]
    # Uncapped, reasoning models spend two to four times the thinking the answer needs: one to
    # three re-checks, each re-reading a random share of the steps.
    for _ in range(int(rng.integers(rechecks[0], rechecks[1] + 1))):
        lines.append(_RECHECKS[int(rng.integers(len(_RECHECKS)))])
        least = max(1, len(work.steps) // 2)
        if recheck_to_settled:
            least = max(1, _settled_step(work))
        seen = int(rng.integers(least, len(work.steps) + 1))
        lines.extend(work.steps[:seen])
        lines.append(_CONFIRM[int(rng.integers(len(_CONFIRM)))].format(answer=answer))
    return Trace("\n".join(lines), answer, len(settled))
