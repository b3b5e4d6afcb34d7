"""Lab task sets and the known-mechanism reference.

`make_lab_tasks` draws distinct items of a lab family (`cotplan.research.lab.reasoning.families`
defines the families and their traces); `blind_error` and `mechanism_error` are the error of
the best guess that uses only what a trace cut at k tokens wrote; `lab_demo_items` sets up
``cotplan demo`` on a lab model. The families' names are re-exported here.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np
from scipy import special

from cotplan.errors import InputError
from cotplan.research.lab.reasoning.families import (
    STEP_TOKENS,
    LabExample,
    LabFamilyInfo,
    check_size,
    distinct_questions,
    get_lab_family,
    lab_example,
    lab_families,
    solve,
)
from cotplan.research.lab.reasoning.families import laplace_percent as laplace_percent
from cotplan.tasks.item import TaskItem
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


def make_lab_tasks(
    family: str, *, n: int, count: int, seed: int = 0, exclude: Iterable[TaskItem] = ()
) -> list[TaskItem]:
    """`count` distinct items of a lab family at size `n`, reproducible from `seed`.

    Like `cotplan.tasks.make_tasks`: `exclude` keeps held-out items apart from a calibration
    set, and asking for more distinct items than exist is an `InputError`.
    """
    info = get_lab_family(family)
    n = check_size(info, n)
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
    repeat the question) the state after j inputs (j blocks for ``lab-blocks``) is known; the
    unread inputs are guessed from their distribution. A complete trace (k ≥ 3n; k ≥ the
    blocks trace) gives 0. This is the reference mechanism:
    an optimal model that also reads the unread inputs without writing can only do better (a
    trained one may do worse where it guesses badly).
    """
    if not isinstance(item.prompt, str):
        raise InputError("must be a lab item (a text prompt)", field="item")
    k = require_int(k, "k", low=0)
    if str(item.family) in lab_families and lab_families[str(item.family)].by_blocks:
        # A blocks trace cut before its last step leaves the parity of a prefix.
        blocks = solve(item.prompt, str(item.family))
        return 0.0 if int(k) >= len(blocks.trace) else 0.5
    example = solve(item.prompt)
    n = example.n
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
    for parity, cups and the over-thinker it is a step at the last input, for ``lab-blocks``
    at the last block.
    """
    info = get_lab_family(family)
    n = check_size(info, n)
    k = require_int(k, "k", low=0)
    name = info.base or info.name
    j = min(int(k) // 3, info.trace_steps(n))
    m = info.trace_steps(n) - j
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
