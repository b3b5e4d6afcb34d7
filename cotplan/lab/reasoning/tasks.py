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

A full answer takes 3n + 2 tokens: the trace, ``Answer:`` and the answer. A trace cut after
j complete steps leaves the state after j inputs; the rest must be done without writing it down.
`blind_error` gives the error of the best guess that uses the written state and nothing else
(the "known mechanism" reference); an optimal model that also reads the unread inputs can
only do better.
"""

from __future__ import annotations

import difflib
import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from cotplan.errors import InputError
from cotplan.lab.reasoning.tokenizer import CHECK, CUPS, MAX_N, SWAPS
from cotplan.tasks.item import AnswerKind, TaskItem
from cotplan.validation import require_int

__all__ = [
    "LAB_DEMO_SIZES",
    "STEP_TOKENS",
    "LabExample",
    "LabFamilyInfo",
    "blind_error",
    "distinct_questions",
    "get_lab_family",
    "lab_demo_items",
    "lab_example",
    "lab_families",
    "make_lab_tasks",
    "mechanism_error",
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
    #: The family whose question and answer this one shares (an over-thinker's base), or None.
    base: str | None = None

    @property
    def overthinks(self) -> bool:
        """Whether the trace goes on with a redundant verification pass after the answer."""
        return self.base is not None

    def max_trace(self, n: int) -> int:
        """The longest trace at size n (the over-thinker's check pass re-reads up to 2n inputs)."""
        return 3 * n + (1 + 6 * n if self.overthinks else 0)


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


def _check_n(info: LabFamilyInfo, n: object) -> int:
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
    n = _check_n(info, n)
    inputs = _FAMILIES[info.name].draw(rng, n)
    labelled, trace, answer = _run(info.base or info.name, inputs)
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


def solve(prompt: str) -> LabExample:
    """The trace and answer of a lab question (its text, as in `TaskItem.prompt`)."""
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
    n = _check_n(info, n)
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


def make_lab_tasks(
    family: str, *, n: int, count: int, seed: int = 0, exclude: Iterable[TaskItem] = ()
) -> list[TaskItem]:
    """`count` distinct items of a lab family at size `n`, reproducible from `seed`.

    Like `cotplan.tasks.make_tasks`: `exclude` keeps held-out items apart from a calibration
    set, and asking for more distinct items than exist is an `InputError`.
    """
    info = get_lab_family(family)
    n = _check_n(info, n)
    count = require_int(count, "count", low=1, high=100_000)
    seed = require_int(seed, "seed", low=0)
    rng = np.random.default_rng(np.random.SeedSequence([seed, n, zlib.crc32(info.name.encode())]))
    seen = {str(item.prompt) for item in exclude}
    excluded = bool(seen)
    items: list[TaskItem] = []
    for _ in range(max(2_000, 50 * count)):
        if len(items) == count:
            break
        example = lab_example(info.name, rng, n)
        if example.prompt in seen:
            continue
        seen.add(example.prompt)
        items.append(
            TaskItem(
                id=f"{info.name}-n{n}-s{seed}-{len(items):04d}",
                prompt=example.prompt,
                answer=example.answer,
                kind=info.answer_kind,
                choices=info.choices,
                n=n,
                family=info.name,
            )
        )
    if len(items) < count:
        raise InputError(
            f"only {len(items)} distinct {info.name} items exist at n = {n}"
            f"{' beyond the excluded ones' if excluded else ''}, asked for {count}; "
            "lower `count` or raise `n`",
            field="count",
        )
    return items


# ------------------------------------------------------------------------------------------
# The blind reference: the best guess from the written state alone


def _sum_mode_probability(m: int) -> float:
    """P(the sum of m uniform digits equals its most likely value)."""
    if m == 0:
        return 1.0
    dist = np.ones(10) / 10
    for _ in range(m - 1):
        dist = np.convolve(dist, np.ones(10) / 10)
    return float(dist.max())


def _rest_of_count(ones: int, seen: int, n: int) -> np.ndarray:
    """P(r more ones among the n − seen unread bits), r = 0 .. n − seen: Beta-binomial under
    the posterior Beta(1 + ones, 1 + seen − ones)."""
    m = n - seen
    rest = np.arange(m + 1)
    a, b = 1 + ones, 1 + seen - ones
    log_pmf = (
        special.gammaln(m + 1)
        - special.gammaln(rest + 1)
        - special.gammaln(m - rest + 1)
        + special.betaln(rest + a, m - rest + b)
        - special.betaln(a, b)
    )
    pmf: np.ndarray = np.exp(log_pmf)
    return pmf


def _majority_blind(ones: int, seen: int, n: int) -> float:
    """Error of the best majority guess from `ones` in the first `seen` of n bits; ties are
    never drawn, so the odds are taken among the outcomes that are not ties."""
    pmf = _rest_of_count(ones, seen, n)
    total = ones + np.arange(len(pmf))
    p_one = float(pmf[2 * total > n].sum())
    p_zero = float(pmf[2 * total < n].sum())
    if p_one + p_zero <= 0:  # pragma: no cover - only ties left, which are never drawn
        return 0.5
    return 1.0 - max(p_one, p_zero) / (p_one + p_zero)


def blind_error(item: TaskItem, k: int) -> float:
    """Error of the best guess that knows only what a trace cut at `k` tokens wrote.

    After j = k // 3 complete steps (a cut inside a step adds nothing: its first two tokens
    repeat the question) the state after j inputs is known; the unread inputs are guessed from
    their distribution. k ≥ 3n (a complete trace) gives 0. This is the reference mechanism:
    an optimal model that also reads the unread inputs without writing can only do better (a
    trained one may do worse where it guesses badly).
    """
    if not isinstance(item.prompt, str):
        raise InputError("must be a lab item (a text prompt)", field="item")
    example = solve(item.prompt)
    n = example.n
    k = require_int(k, "k", low=0)
    j = min(int(k) // 3, n)
    m = n - j
    if m == 0:
        return 0.0
    if example.family == "lab-parity":
        return 0.5
    if example.family == "lab-state":
        return 2.0 / 3.0
    if example.family == "lab-sum":
        return 1.0 - _sum_mode_probability(m)
    if example.family == "lab-lamp":
        on = sum(int(s) for s in example.trace[2 : 3 * j : 3])
        p_one, p_zero = _lamp_odds(on, j, n)
        return 1.0 - max(p_one, p_zero) / (p_one + p_zero)
    ones = int(example.trace[3 * j - 1]) if j else 0
    if example.family == "lab-majority":
        return _majority_blind(ones, j, n)
    # Distinct counts give distinct percentages (steps of 100 / (n + 2) > 1 for n ≤ 24): the
    # best guess is the most likely count.
    return 1.0 - float(_rest_of_count(ones, j, n).max())


def _lamp_odds(on: int, seen: int, n: int) -> tuple[float, float]:
    """(P(answer 1), P(answer 0)) from `on` of the first `seen` lamp states, ties excluded:
    each unread state is a fair coin, so the rest of the count is Binomial(n − seen, 1/2)."""
    m = n - seen
    rest = np.arange(m + 1)
    pmf = (
        np.exp(special.gammaln(m + 1) - special.gammaln(rest + 1) - special.gammaln(m - rest + 1))
        / 2.0**m
    )
    total = on + rest
    return float(pmf[2 * total > n].sum()), float(pmf[2 * total < n].sum())


def _binomial_half(j: int) -> np.ndarray:
    c = np.arange(j + 1)
    pmf: np.ndarray = (
        np.exp(special.gammaln(j + 1) - special.gammaln(c + 1) - special.gammaln(j - c + 1))
        / 2.0**j
    )
    return pmf


def mechanism_error(family: str, n: int, k: int) -> float:
    """The exact expected `blind_error` at budget `k` over random questions of size `n`.

    The error-versus-k reference curve of the mechanism: the best guess from what a trace cut
    at k tokens wrote, averaged over the family's own question distribution (ties excluded
    where the family never draws them). For ``lab-lamp`` it falls gradually with every step;
    for parity, cups and the over-thinker it is a step at the last input.
    """
    info = get_lab_family(family)
    n = _check_n(info, n)
    k = require_int(k, "k", low=0)
    name = info.base or info.name
    j = min(int(k) // 3, n)
    m = n - j
    if m == 0:
        return 0.0
    if name == "lab-parity":
        return 0.5
    if name == "lab-state":
        return 2.0 / 3.0
    if name == "lab-sum":
        return 1.0 - _sum_mode_probability(m)
    if name == "lab-bits":
        # The count of the first j exchangeable bits is uniform on 0..j.
        return 1.0 - float(np.mean([_rest_of_count(c, j, n).max() for c in range(j + 1)]))
    # Majority and lamp: P(count so far), then the odds of each answer, ties excluded.
    wrong = right = 0.0
    for c in range(j + 1):
        if name == "lab-lamp":
            weight = float(_binomial_half(j)[c])
            p_one, p_zero = _lamp_odds(c, j, n)
        else:
            weight = 1.0 / (j + 1)
            pmf = _rest_of_count(c, j, n)
            total = c + np.arange(len(pmf))
            p_one, p_zero = float(pmf[2 * total > n].sum()), float(pmf[2 * total < n].sum())
        wrong += weight * min(p_one, p_zero)
        right += weight * max(p_one, p_zero)
    return wrong / (wrong + right)


#: Sizes `cotplan demo` uses on a lab model: a minute on 2 cores.
LAB_DEMO_SIZES = (4, 8)


def lab_demo_items(
    backend: str, *, count: int, held_out: int, seed: int = 0
) -> tuple[LabFamilyInfo, tuple[int, ...], list[TaskItem], list[TaskItem], tuple[int, ...]] | None:
    """For ``cotplan demo --backend lab:FAMILY``: the family, its sizes, calibration items,
    held-out items (disjoint; at most half of a size's distinct questions calibrate) and the
    budgets to calibrate (every second one up to past the longest trace that settles an
    answer, and every one around each size's settling point 3n, where a lab model's error
    drops); None for a backend that is not a lab model."""
    if not str(backend).startswith("lab:"):
        return None
    info = get_lab_family(str(backend).partition(":")[2])
    items: list[TaskItem] = []
    held: list[TaskItem] = []
    for n in LAB_DEMO_SIZES:
        available = distinct_questions(info.name, n)
        first = min(count, max(1, available // 2))
        mine = make_lab_tasks(info.name, n=n, count=first, seed=seed)
        items += mine
        second = min(held_out, available - first)
        if second > 0:
            held += make_lab_tasks(info.name, n=n, count=second, seed=seed + 1, exclude=mine)
    top = STEP_TOKENS * max(LAB_DEMO_SIZES) + 4
    budgets = {*range(0, top, 2), top}
    for n in LAB_DEMO_SIZES:
        budgets |= set(range(STEP_TOKENS * n - 1, STEP_TOKENS * n + 3))
    return info, LAB_DEMO_SIZES, items, held, tuple(sorted(budgets))
