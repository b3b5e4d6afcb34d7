"""Lab reasoning families and tokenizer: traces, answers, the blind reference, round trips.

No torch needed: these are the data the lab model learns from and is scored on.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.errors import InputError
from cotplan.research.lab.reasoning.data import IGNORE, Mix, make_batch, training_sequence
from cotplan.research.lab.reasoning.tasks import (
    STEP_TOKENS,
    blind_error,
    get_lab_family,
    lab_example,
    lab_families,
    make_lab_tasks,
    solve,
)
from cotplan.research.lab.reasoning.tokenizer import ANSWER, REASONING, default_tokenizer
from cotplan.tasks import TaskItem, is_correct

FAMILIES = list(lab_families)


def test_the_families_are_registered() -> None:
    assert FAMILIES == [
        "lab-parity", "lab-sum", "lab-state", "lab-bits", "lab-majority", "lab-lamp",
        "lab-parity-overthink", "lab-sum-overthink", "lab-blocks",
    ]  # fmt: skip
    assert get_lab_family("parity").name == "lab-parity"


def test_an_unknown_family_names_the_closest() -> None:
    with pytest.raises(InputError, match="did you mean parity"):
        get_lab_family("party")


def test_parity_example_by_hand() -> None:
    example = solve("Parity: [1] 1 [2] 0 [3] 1")
    assert example.trace == ("[1]", "1", "1", "[2]", "0", "1", "[3]", "1", "0")
    assert example.answer == "0"
    assert example.full_tokens == 11


def test_sum_state_and_bits_examples_by_hand() -> None:
    assert solve("Sum: [1] 3 [2] 7").trace[-1] == "10"
    cups = solve("Cups: A [1] AB [2] BC")
    assert cups.trace == ("[1]", "AB", "B", "[2]", "BC", "C")
    assert cups.answer == "C"
    bits = solve("Bits: [1] 1 [2] 1 [3] 0")
    assert bits.trace == ("[1]", "1", "1", "[2]", "1", "2", "[3]", "0", "2")
    # Laplace's rule: (2 + 1) / (3 + 2) = 60%.
    assert bits.answer == "60"
    majority = solve("Majority: [1] 1 [2] 1 [3] 0")
    assert majority.trace == bits.trace
    assert majority.answer == "1"


@pytest.mark.parametrize(
    ("prompt", "match"),
    [
        ("Hello [1] 1", "not a lab question"),
        ("Parity: [2] 1", "labelled"),
        ("Parity: [1] 7", "inputs must be among"),
        ("Cups: [1] AB", "starts with the ball's cup"),
    ],
)
def test_solve_rejects_malformed_questions(prompt: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        solve(prompt)


@pytest.mark.parametrize("family", FAMILIES)
def test_items_are_distinct_reproducible_and_solved(family: str) -> None:
    items = make_lab_tasks(family, n=6, count=20, seed=3)
    assert items == make_lab_tasks(family, n=6, count=20, seed=3)
    assert len({it.prompt for it in items}) == 20
    for item in items:
        example = solve(str(item.prompt))
        assert example.answer == item.answer
        assert len(example.trace) == STEP_TOKENS * 6
        assert is_correct(f"Answer: {item.answer}", item)
        assert item.family == family
        assert item.n == 6


def test_held_out_items_exclude_the_calibration_set() -> None:
    calibration = make_lab_tasks("lab-parity", n=4, count=10, seed=0)
    held = make_lab_tasks("lab-parity", n=4, count=6, seed=1, exclude=calibration)
    assert not {it.prompt for it in held} & {it.prompt for it in calibration}
    with pytest.raises(InputError, match="only 6 distinct lab-parity items exist"):
        make_lab_tasks("lab-parity", n=4, count=7, seed=1, exclude=calibration)


def test_size_out_of_range_is_refused() -> None:
    with pytest.raises(InputError, match="`n`: must be between 1 and 24"):
        make_lab_tasks("lab-sum", n=25, count=1)


def test_majority_never_draws_a_tie_but_bits_do() -> None:
    rng = np.random.default_rng(0)
    majority = [int(lab_example("lab-majority", rng, 4).trace[-1]) for _ in range(200)]
    bits = [int(lab_example("lab-bits", rng, 4).trace[-1]) for _ in range(200)]
    assert 2 not in majority
    assert 2 in bits


def test_blind_error_by_family() -> None:
    parity = make_lab_tasks("lab-parity", n=5, count=1)[0]
    assert [blind_error(parity, k) for k in (0, 3, 14, 15, 40)] == [0.5, 0.5, 0.5, 0.0, 0.0]
    cups = make_lab_tasks("lab-state", n=4, count=1)[0]
    assert blind_error(cups, 9) == pytest.approx(2 / 3)
    total = make_lab_tasks("lab-sum", n=2, count=1)[0]
    # The sum of two digits is most often 9: 10 of 100 pairs.
    assert blind_error(total, 0) == pytest.approx(0.9)
    assert blind_error(total, 3) == pytest.approx(0.9)


def test_blind_majority_is_decided_once_a_majority_is_written() -> None:
    item = TaskItem("ones", "Majority: [1] 1 [2] 1 [3] 1 [4] 1 [5] 1", "1", "binary", n=5)
    errors = [blind_error(item, 3 * j) for j in range(6)]
    # All ones: after three written steps the majority cannot change.
    assert errors[3:] == [0.0, 0.0, 0.0]
    assert errors[0] == pytest.approx(0.5)
    assert errors[0] > errors[1] > errors[2] > 0


def test_blind_bits_guess_the_most_likely_count() -> None:
    item = make_lab_tasks("lab-bits", n=2, count=1)[0]
    # Under a uniform prior every count of 2 bits is equally likely: a blind guess hits 1/3.
    assert blind_error(item, 0) == pytest.approx(2 / 3)
    assert blind_error(item, 6) == 0.0


@given(st.lists(st.integers(0, 1), min_size=1, max_size=24))
def test_bits_answer_is_laplaces_rule_in_percent(bits: list[int]) -> None:
    prompt = "Bits: " + " ".join(f"[{i}] {b}" for i, b in enumerate(bits, start=1))
    answer = int(solve(prompt).answer)
    exact = 100 * (sum(bits) + 1) / (len(bits) + 2)
    assert abs(answer - exact) <= 0.5


@given(st.lists(st.integers(0, 9), min_size=1, max_size=24))
@settings(max_examples=50, deadline=None)
def test_running_sum_trace_ends_at_the_answer(digits: list[int]) -> None:
    prompt = "Sum: " + " ".join(f"[{i}] {d}" for i, d in enumerate(digits, start=1))
    example = solve(prompt)
    assert example.trace[-1] == example.answer == str(sum(digits))
    # Each step: the label, the digit it reads, the running sum.
    assert list(example.trace[1::3]) == [str(d) for d in digits]
    assert [int(s) for s in example.trace[2::3]] == list(np.cumsum(digits))


@given(st.lists(st.sampled_from(list(default_tokenizer().words[3:])), max_size=30))
def test_token_text_splits_back_into_the_same_tokens(words: list[str]) -> None:
    tokenizer = default_tokenizer()
    ids = tokenizer.encode(words)
    text = tokenizer.decode(ids)
    assert tokenizer.encode(text) == ids
    assert tokenizer.count(text) == len(ids)


def test_unknown_words_are_named() -> None:
    with pytest.raises(InputError, match="does not know 'Think'"):
        default_tokenizer().encode("Think step")


def test_training_sequences_teach_only_what_the_model_writes() -> None:
    tokenizer = default_tokenizer()
    example = solve("Parity: [1] 1 [2] 1")
    full = training_sequence(example, tokenizer, "full")
    taught = [tokenizer.words[t] for t in full.targets if t != IGNORE]
    assert taught == [*example.trace, ANSWER, "0", "<eos>"]
    cut = training_sequence(example, tokenizer, "cut", cut=2)
    taught = [tokenizer.words[t] for t in cut.targets if t != IGNORE]
    # The forced "Answer:" is the budget's, not the model's: it is not a target.
    assert taught == ["[1]", "1", "0", "<eos>"]
    direct = training_sequence(example, tokenizer, "direct")
    assert REASONING not in [tokenizer.words[i] for i in direct.ids]
    with pytest.raises(InputError, match=r"`cut`: must be in 1\.\.6"):
        training_sequence(example, tokenizer, "cut", cut=0)


def test_batches_are_padded_and_seeded() -> None:
    tokenizer = default_tokenizer()
    a = make_batch(
        "lab-sum", np.random.default_rng(1), 8, sizes=[2, 5], mix=Mix(), tokenizer=tokenizer
    )
    b = make_batch(
        "lab-sum", np.random.default_rng(1), 8, sizes=[2, 5], mix=Mix(), tokenizer=tokenizer
    )
    assert (a[0] == b[0]).all()
    assert (a[1] == b[1]).all()
    assert a[0].shape == a[1].shape
    assert a[0].shape[1] <= 1 + 1 + 2 * 5 + 1 + 3 * 5 + 2
    with pytest.raises(InputError, match="`mix`"):
        Mix(0, 0, 0)
    assert math.isclose(sum(Mix().probabilities()), 1.0)
