"""Lab task families: reasoning tasks of size n whose scratchpad is known, step by step.

Four families, each a question over n inputs labelled ``[1]`` .. ``[n]`` and a reasoning trace
of n steps of exactly three tokens: the label, the input it reads, and the state after it.

- ``lab-parity``: the parity of n bits; the state is the running parity.
  ``Parity: [1] 1 [2] 0 [3] 1``  ->  ``[1] 1 1 [2] 0 1 [3] 1 0``, answer ``0``.
- ``lab-sum``: the sum of n digits; the state is the running sum.
  ``Sum: [1] 3 [2] 7``  ->  ``[1] 3 3 [2] 7 10``, answer ``10``.
- ``lab-state``: a ball under one of three cups, n swaps; the state is the ball's cup.
  ``Cups: A [1] AB [2] BC``  ->  ``[1] AB B [2] BC C``, answer ``C``.
- ``lab-bits``: the paper's setting. n exchangeable bits (p drawn uniformly, then n Bernoulli(p)
  bits); the answer is the Bayesian prediction of the next bit under that uniform prior,
  P(next = 1) = (ones + 1) / (n + 2) (Laplace's rule), in percent, rounded half up. The state
  is the running count of ones.
  ``Bits: [1] 1 [2] 1 [3] 0``  ->  ``[1] 1 1 [2] 1 2 [3] 0 2``, answer ``60``.
- ``lab-majority``: the same bits, but the answer is the most likely next bit (1 when more than
  half the bits are 1): the point prediction instead of the probability.
  ``Majority: [1] 1 [2] 1 [3] 0``  ->  the same trace, answer ``1``. Ties (even n, exactly
  n/2 ones) are not drawn: the Bayes predictor is indifferent there, so there is no exact
  answer.
- ``lab-blocks``: parity's questions and answers, reasoned through blocks of b = ceil(√n)
  inputs: one step per block (the label of its last input, its count of ones, the running
  parity), so the trace has ceil(n / b) ≈ √n steps (`block_trace` says why a transformer can
  write it and what limits it).
  ``Parity: [1] 1 [2] 0 [3] 1 [4] 1 [5] 0``  ->  ``[3] 2 0 [5] 1 1``, answer ``1``.

A full answer takes 3n + 2 tokens (3·ceil(n / ceil(√n)) + 2 for ``lab-blocks``): the trace,
``Answer:`` and the answer. A trace cut after j complete steps leaves the state after j inputs
(j blocks); the rest must be done without writing it down.
`cotplan.research.lab.reasoning.tasks.blind_error` gives the error of the best guess that uses the
written state and nothing else (the "known mechanism" reference); an optimal model that also
reads the unread inputs can only do better.

This module defines the families and reads and writes their questions; item sets and the
blind reference are in `cotplan.research.lab.reasoning.tasks`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cotplan.errors import InputError
from cotplan.research.lab.reasoning.tokenizer import CHECK, CUPS, MAX_N, SWAPS
from cotplan.tasks.item import AnswerKind

__all__ = [
    "STEP_TOKENS",
    "LabExample",
    "LabFamilyInfo",
    "block_size",
    "block_trace",
    "check_size",
    "distinct_questions",
    "get_lab_family",
    "lab_example",
    "lab_families",
    "laplace_percent",
    "solve",
]

#: Tokens per reasoning step: the label, the input it reads, the state after it.
STEP_TOKENS = 3


@dataclass(frozen=True)
class LabExample:
    """One question in words, its full reasoning trace, and the exact answer."""

    family: str
    n: int
    question: tuple[str, ...]
    trace: tuple[str, ...]
    answer: str
    #: Trace tokens after which the answer is settled (None: the whole trace). An
    #: over-thinker's trace goes on past them with redundant work.
    settled: int | None = None

    @property
    def prompt(self) -> str:
        return " ".join(self.question)

    @property
    def full_tokens(self) -> int:
        """Reasoning tokens a complete answer takes: the trace, the marker and the answer."""
        return len(self.trace) + 2

    @property
    def settling_tokens(self) -> int:
        """Trace tokens up to the step that settles the answer (the whole trace but for an
        over-thinker's check pass)."""
        return len(self.trace) if self.settled is None else self.settled

    @property
    def needed_tokens(self) -> int:
        """Reasoning tokens the answer needs: the settling steps, the marker and the answer."""
        return self.settling_tokens + 2


@dataclass(frozen=True)
class LabFamilyInfo:
    """What a lab family asks, what n means, and what a cut trace leaves to guess."""

    name: str
    short: str
    header: str
    description: str
    n_meaning: str
    answer_kind: AnswerKind
    n_min: int
    n_max: int
    choices: tuple[str, ...] | None
    truncated: str
    #: The family whose question and answer this one shares (an over-thinker's base, the
    #: blocks' parity), or None.
    base: str | None = None
    #: The trace goes on with a redundant verification pass after the answer (`Check:`).
    check_pass: bool = False
    #: One trace step per block of ceil(√n) inputs instead of one per input (`block_trace`).
    by_blocks: bool = False

    @property
    def overthinks(self) -> bool:
        """Whether the trace goes on with a redundant verification pass after the answer."""
        return self.check_pass

    def trace_steps(self, n: int) -> int:
        """Steps of the trace that settles the answer at size n: n, or ceil(n / ceil(√n))
        for a family that reasons by blocks."""
        return -(-n // block_size(n)) if self.by_blocks else n

    def trace_tokens(self, n: int) -> int:
        """Tokens of the trace that settles the answer at size n (three a step)."""
        return STEP_TOKENS * self.trace_steps(n)

    def max_trace(self, n: int) -> int:
        """The longest trace at size n (the over-thinker's check pass re-reads up to 2n inputs)."""
        return self.trace_tokens(n) + (1 + 6 * n if self.overthinks else 0)


Inputs = list[str]
_Draw = Callable[[np.random.Generator, int], Inputs]


def _draw_bits(rng: np.random.Generator, n: int) -> Inputs:
    return [str(int(b)) for b in rng.integers(0, 2, size=n)]


def _draw_digits(rng: np.random.Generator, n: int) -> Inputs:
    return [str(int(d)) for d in rng.integers(0, 10, size=n)]


def _draw_cups(rng: np.random.Generator, n: int) -> Inputs:
    start = CUPS[int(rng.integers(len(CUPS)))]
    return [start, *(SWAPS[int(i)] for i in rng.integers(len(SWAPS), size=n))]


def _draw_exchangeable(rng: np.random.Generator, n: int) -> Inputs:
    # Beta(1, 1)-Bernoulli, as in the paper.
    p = float(rng.random())
    return [str(int(b)) for b in (rng.random(n) < p).astype(int)]


def _draw_lamp(rng: np.random.Generator, n: int) -> Inputs:
    # Fair toggles; a tie (the lamp on after exactly half the steps) has no answer: draw again.
    while True:
        toggles = rng.integers(0, 2, size=n)
        if 2 * int((np.cumsum(toggles) % 2).sum()) != n:
            return [str(int(t)) for t in toggles]


def _draw_majority(rng: np.random.Generator, n: int) -> Inputs:
    # As `_draw_exchangeable`; a tie has no exact answer, so draw again.
    while True:
        p = float(rng.random())
        bits = (rng.random(n) < p).astype(int)
        if 2 * int(bits.sum()) != n:
            return [str(int(b)) for b in bits]


def _swap(cup: str, swap: str) -> str:
    if cup == swap[0]:
        return swap[1]
    if cup == swap[1]:
        return swap[0]
    return cup


def _run(family: str, inputs: Sequence[str]) -> tuple[list[str], list[str], str]:
    """(the labelled question inputs, the trace, the answer) of a family's inputs."""
    labelled: list[str] = []
    trace: list[str] = []
    if family == "lab-state":
        state: int | str = inputs[0]
        steps = list(inputs[1:])
        labelled.append(inputs[0])
    else:
        state = 0
        steps = list(inputs)
    for j, x in enumerate(steps, start=1):
        label = f"[{j}]"
        labelled += [label, x]
        if family in ("lab-parity", "lab-lamp"):
            state = (int(state) + int(x)) % 2
        elif family in ("lab-sum", "lab-bits", "lab-majority"):
            state = int(state) + int(x)
        else:
            state = _swap(str(state), x)
        trace += [label, x, str(state)]
    if family == "lab-bits":
        return labelled, trace, str(laplace_percent(int(state), len(steps)))
    if family == "lab-majority":
        # The Bayes-optimal next bit under the uniform prior (ties are never drawn).
        return labelled, trace, "1" if 2 * int(state) > len(steps) else "0"
    if family == "lab-lamp":
        on = sum(int(s) for s in trace[2::3])
        return labelled, trace, "1" if 2 * on > len(steps) else "0"
    return labelled, trace, str(state)


def laplace_percent(ones: int, n: int) -> int:
    """P(next bit = 1) after `ones` in n under a uniform prior, in percent, rounded half up."""
    return math.floor(100 * (ones + 1) / (n + 2) + 0.5)


def block_size(n: int) -> int:
    """b = ceil(√n): the inputs one step of a blocks trace reads."""
    return math.isqrt(max(int(n), 1) - 1) + 1


def block_trace(bits: Sequence[str]) -> tuple[list[str], str]:
    """(the trace, the answer) of the parity of `bits` reasoned by blocks (``lab-blocks``).

    The n bits are cut into blocks of b = ceil(√n) (the last one may be shorter); one step per
    block writes the label of its last input, its count of ones and the running parity:
    ``[1] 1 [2] 0 [3] 1 [4] 1 [5] 0`` (b = 3) -> ``[3] 2 0 [5] 1 1``, answer ``1``.

    Why the trace may be sublinear: one step aggregates b inputs. A count of ones over a span
    of positions is what one attention head does in one pass (it averages the span's bits, as
    the bits model averages all n of them without reasoning), so a transformer can write a
    step from the question and the step before it, and the trace takes 3 · ceil(n / b) ≈ 3√n
    tokens instead of parity's 3n. The block's parity is then the count's, and the running
    parity one lookup from the step before. The answer still needs the whole input: it is
    the parity of all n bits, and a trace cut before its last step leaves a coin flip.

    What limits it: each step's head must find a span of b positions (between the label of
    the step before and its own) and count up to b ones in it exactly; b grows as √n, so the
    span to attend over and the count to read off get longer with n, and a small model may
    count wrong at large n, where the trace, not the answer, fails first. b = √n balances
    the number of steps against the work of each: the same mechanism allows any block size,
    down to one step (b = n), which is the count of all n ones at once, the hardest step.
    """
    n = len(bits)
    b = block_size(n)
    trace: list[str] = []
    parity = 0
    for start in range(0, n, b):
        end = min(start + b, n)
        count = sum(int(x) for x in bits[start:end])
        parity = (parity + count) % 2
        trace += [f"[{end}]", str(count), str(parity)]
    return trace, str(parity)


@dataclass(frozen=True)
class _Family:
    info: LabFamilyInfo
    draw: _Draw


_FAMILIES: dict[str, _Family] = {
    f.info.name: f
    for f in (
        _Family(
            LabFamilyInfo(
                "lab-parity",
                "parity",
                "Parity:",
                "Parity (number of 1s modulo 2) of n bits; the trace writes the running parity.",
                "bits",
                "binary",
                1,
                24,
                None,
                "a cut trace knows the parity of a prefix; the unread bits leave a coin flip",
            ),
            _draw_bits,
        ),
        _Family(
            LabFamilyInfo(
                "lab-sum",
                "sum",
                "Sum:",
                "Sum of n digits 0-9; the trace writes the running sum.",
                "digits",
                "integer",
                1,
                24,
                None,
                "a cut trace knows a partial sum; the best blind guess of the rest hits its "
                "mode, which gets rarer as about 1/√(remaining digits)",
            ),
            _draw_digits,
        ),
        _Family(
            LabFamilyInfo(
                "lab-state",
                "state",
                "Cups:",
                "A ball under one of three cups (A, B, C) and n swaps of two cups; where is the "
                "ball? The trace writes the ball's cup after each swap.",
                "swaps",
                "choice",
                1,
                24,
                CUPS,
                "one unread random swap already makes the ball's cup uniform: a blind guess is "
                "right 1/3 of the time",
            ),
            _draw_cups,
        ),
        _Family(
            LabFamilyInfo(
                "lab-bits",
                "bits",
                "Bits:",
                "The paper's setting: predict the next of n exchangeable bits (Beta(1,1)-"
                "Bernoulli). The answer is the Bayesian prediction P(next = 1) = (ones + 1) / "
                "(n + 2) in percent, rounded; the trace counts the ones.",
                "bits seen",
                "integer",
                1,
                24,
                None,
                "a cut trace knows the count of a prefix; the rest of the count, and so the "
                "percentage, is left to a guess from the posterior predictive",
            ),
            _draw_exchangeable,
        ),
        _Family(
            LabFamilyInfo(
                "lab-majority",
                "majority",
                "Majority:",
                "The same bits; the answer is the most likely next bit (the majority), the "
                "Bayes-optimal point prediction. The trace counts the ones.",
                "bits seen",
                "binary",
                1,
                24,
                None,
                "a cut trace knows the count of a prefix; the majority is then often already "
                "decided, and otherwise the posterior predictive of the rest gives the odds",
            ),
            _draw_majority,
        ),
        _Family(
            LabFamilyInfo(
                "lab-lamp",
                "lamp",
                "Lamp:",
                "A lamp starts off; each input 1 toggles it, 0 leaves it. Was it on after more "
                "than half of the n steps? The trace writes the lamp after each step: each "
                "written state is one vote, and the answer is their majority.",
                "toggles",
                "binary",
                1,
                MAX_N,
                None,
                "a cut trace has counted the first votes; each unread state is a fair coin (an "
                "unread toggle is), so the count so far predicts the answer with an accuracy "
                "that rises gradually with every step (`mechanism_error`)",
            ),
            _draw_lamp,
        ),
        _Family(
            LabFamilyInfo(
                "lab-parity-overthink",
                "parity-overthink",
                "Parity:",
                "Parity questions answered by an over-thinker: after the running parity settles "
                "the answer, a verification pass (`Check:`) re-reads n to 2n inputs, restating "
                "the settled answer after each, before it answers.",
                "bits",
                "binary",
                1,
                24,
                None,
                "a trace cut before its last parity step leaves a coin flip; cut anywhere in the "
                "verification pass, the answer is already written",
                base="lab-parity",
                check_pass=True,
            ),
            _draw_bits,
        ),
        _Family(
            LabFamilyInfo(
                "lab-sum-overthink",
                "sum-overthink",
                "Sum:",
                "Sum questions answered by an over-thinker: after the running sum settles the "
                "answer, a verification pass (`Check:`) re-reads n to 2n inputs, restating the "
                "settled sum after each, before it answers. Unlike parity's, an answer forced "
                "before the sum is written is rarely right by chance.",
                "digits",
                "integer",
                1,
                24,
                None,
                "a trace cut before its last sum step leaves the sum of a prefix, the rest to "
                "be added unwritten; cut anywhere in the verification pass, the answer is "
                "already written",
                base="lab-sum",
                check_pass=True,
            ),
            _draw_digits,
        ),
        _Family(
            LabFamilyInfo(
                "lab-blocks",
                "blocks",
                "Parity:",
                "Parity questions reasoned by blocks of b = ceil(√n) bits: one step per block "
                "writes the label of its last input, its count of ones and the running parity, "
                "so the trace has ceil(n / b) ≈ √n steps where parity's has n.",
                "bits",
                "binary",
                1,
                MAX_N,
                None,
                "a trace cut before its last block leaves the parity of a prefix: a coin flip",
                base="lab-parity",
                by_blocks=True,
            ),
            _draw_bits,
        ),
    )
}

#: The registry: family name -> info, in display order.
lab_families: dict[str, LabFamilyInfo] = {name: f.info for name, f in _FAMILIES.items()}


def get_lab_family(name: str) -> LabFamilyInfo:
    """The lab family called `name` ("lab-parity", or its short name "parity")."""
    for info in lab_families.values():
        if name in (info.name, info.short):
            return info
    names = [*lab_families, *(i.short for i in lab_families.values())]
    close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise InputError(
        f"unknown lab family {name!r}{hint} (known: {', '.join(lab_families)})", field="family"
    )


def check_size(info: LabFamilyInfo, n: object) -> int:
    """`n` as an int, checked against the family's sizes."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise InputError(f"must be an integer, got {n!r}", field="n")
    if not info.n_min <= int(n) <= min(info.n_max, MAX_N):
        raise InputError(
            f"must be between {info.n_min} and {info.n_max} for {info.name}, got {n}", field="n"
        )
    return int(n)


def lab_example(family: str, rng: np.random.Generator, n: int) -> LabExample:
    """One random example of `family` at size `n`."""
    info = get_lab_family(family)
    n = check_size(info, n)
    inputs = _FAMILIES[info.name].draw(rng, n)
    labelled, trace, answer = _run(info.base or info.name, inputs)
    if info.by_blocks:
        trace, answer = block_trace(inputs)
    if not info.overthinks:
        return LabExample(info.name, n, (info.header, *labelled), tuple(trace), answer)
    # Redundant work of random length: re-read inputs 1, 2, .. (wrapping) and restate the
    # settled answer after each, n to 2n times: uncapped, an answer takes 2 to 3 times the
    # tokens it needs.
    settled = len(trace)
    check = [CHECK]
    for i in range(int(rng.integers(n, 2 * n + 1))):
        j = i % n
        check += [labelled[2 * j], labelled[2 * j + 1], answer]
    return LabExample(info.name, n, (info.header, *labelled), tuple(trace + check), answer, settled)


def solve(prompt: str, family: str | None = None) -> LabExample:
    """The trace and answer of a lab question (its text, as in `TaskItem.prompt`).

    Families that share a header ask the same questions; the question is read as the base
    family's unless `family` names one that reasons by blocks (``lab-blocks``), whose trace it
    then is. (An over-thinker's check pass is random: its question gives its base's trace.)
    """
    if family is not None and get_lab_family(family).by_blocks:
        blocks = get_lab_family(family)
        base = solve(prompt)
        if base.family != blocks.base:
            raise InputError(f"not a {blocks.name} question (a {base.family} one)", field="prompt")
        trace, answer = block_trace(base.question[2::2])
        return LabExample(blocks.name, base.n, base.question, tuple(trace), answer)
    words = str(prompt).split()
    # An over-thinker shares its base's header: a question is the base family's.
    info = next(
        (i for i in lab_families.values() if words and words[0] == i.header and not i.base),
        None,
    )
    if info is None:
        raise InputError(
            f"not a lab question: it must start with one of "
            f"{', '.join(i.header for i in lab_families.values())}",
            field="prompt",
        )
    body = words[1:]
    head: list[str] = []
    if info.name == "lab-state":
        if not body or body[0] not in CUPS:
            raise InputError(
                "a cups question starts with the ball's cup (A, B or C)", field="prompt"
            )
        head, body = body[:1], body[1:]
    labels, inputs = body[0::2], body[1::2]
    if len(labels) != len(inputs) or labels != [f"[{j}]" for j in range(1, len(labels) + 1)]:
        raise InputError("inputs must be labelled [1] x [2] y ... in order", field="prompt")
    allowed = set(SWAPS) if info.name == "lab-state" else {str(d) for d in range(10)}
    if info.name in ("lab-parity", "lab-bits", "lab-majority", "lab-lamp"):
        allowed = {"0", "1"}
    if any(x not in allowed for x in inputs):
        raise InputError(f"{info.name} inputs must be among {sorted(allowed)}", field="prompt")
    labelled, trace, answer = _run(info.name, [*head, *inputs])
    return LabExample(info.name, len(inputs), (info.header, *labelled), tuple(trace), answer)


def distinct_questions(family: str, n: int) -> int:
    """How many distinct questions `family` has at size `n` (ties excluded where never drawn)."""
    info = get_lab_family(family)
    n = check_size(info, n)
    name = info.base or info.name
    if name == "lab-sum":
        return int(10**n)
    if name == "lab-state":
        return int(3 ** (n + 1))
    if name == "lab-majority" and n % 2 == 0:
        return int(2**n - math.comb(n, n // 2))
    if name == "lab-lamp" and n % 2 == 0:
        # The lamp's states are a bijection of the toggles: ties are C(n, n/2) of them.
        return int(2**n - math.comb(n, n // 2))
    return int(2**n)
