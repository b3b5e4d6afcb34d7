"""The blocks family: parity reasoned by blocks of ceil(√n) bits, a trace of about √n steps.

Its generator writes each step exactly (the label of the block's last input, the block's count
of ones, the running parity), its answer is parity's, the references step at its last block,
and the CLI knows it. No torch.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from cotplan.cli import main
from cotplan.errors import InputError
from cotplan.research.lab.reasoning.data import training_sequence
from cotplan.research.lab.reasoning.families import block_size, block_trace
from cotplan.research.lab.reasoning.logloss import answer_candidates, budget_grid
from cotplan.research.lab.reasoning.settings import settings_for
from cotplan.research.lab.reasoning.tasks import (
    blind_error,
    distinct_questions,
    get_lab_family,
    lab_example,
    make_lab_tasks,
    mechanism_error,
    solve,
)
from cotplan.research.lab.reasoning.tokenizer import MAX_N, default_tokenizer


def test_blocks_by_hand() -> None:
    # n = 5: b = 3, blocks [1-3] (two ones) and [4-5] (one one); parity 0, then 1.
    example = solve("Parity: [1] 1 [2] 0 [3] 1 [4] 1 [5] 0", "blocks")
    assert example.family == "lab-blocks"
    assert example.trace == ("[3]", "2", "0", "[5]", "1", "1")
    assert example.answer == "1"
    assert example.full_tokens == 8
    # n = 4: b = 2; n = 1: one block of one bit.
    assert solve("Parity: [1] 1 [2] 1 [3] 0 [4] 1", "blocks").trace == (
        "[2]", "2", "0", "[4]", "1", "1",
    )  # fmt: skip
    assert block_trace(["1"]) == (["[1]", "1", "1"], "1")


def test_the_block_size_is_the_ceiling_of_the_square_root() -> None:
    for n in range(1, MAX_N + 1):
        b = block_size(n)
        assert (b - 1) ** 2 < n <= b * b
        assert b == math.ceil(math.sqrt(n))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9, 10, 16, 17, 24, 25, 36, 50, 64, 100, 128])
def test_generated_traces_are_exact_and_have_about_sqrt_n_steps(n: int) -> None:
    info = get_lab_family("blocks")
    rng = np.random.default_rng(n)
    b = block_size(n)
    steps = math.ceil(n / b)
    # ceil(n / ceil(√n)) lies in (√n − 1, ceil(√n)]: about √n, where parity takes n steps.
    assert math.sqrt(n) - 1 < steps <= math.ceil(math.sqrt(n))
    assert info.trace_steps(n) == steps
    assert info.trace_tokens(n) == info.max_trace(n) == 3 * steps
    for _ in range(20):
        example = lab_example("blocks", rng, n)
        bits = [int(x) for x in example.question[2::2]]
        assert example.question[0] == "Parity:"
        assert example.question[1::2] == tuple(f"[{j}]" for j in range(1, n + 1))
        assert len(example.trace) == 3 * steps
        parity = 0
        for i in range(steps):
            label, count, state = example.trace[3 * i : 3 * i + 3]
            end = min((i + 1) * b, n)
            assert label == f"[{end}]"
            assert int(count) == sum(bits[i * b : end])
            parity = (parity + int(count)) % 2
            assert state == str(parity)
        assert example.answer == str(sum(bits) % 2)
        # The question's own solver writes the same trace.
        assert solve(example.prompt, "blocks").trace == example.trace
        # Every word is a token: the model can read and write it.
        default_tokenizer().encode([*example.question, *example.trace, example.answer])


def test_the_answer_is_parity_and_needs_every_bit() -> None:
    rng = np.random.default_rng(3)
    for n in (4, 9, 16, 25):
        for _ in range(10):
            example = lab_example("blocks", rng, n)
            # The same question and answer as lab-parity: only the trace differs.
            assert solve(example.prompt).family == "lab-parity"
            assert solve(example.prompt).answer == example.answer
            bits = list(example.question[2::2])
            for j in range(n):  # flipping any one bit flips the answer
                flipped = [*bits]
                flipped[j] = str(1 - int(bits[j]))
                assert block_trace(flipped)[1] != example.answer
    assert answer_candidates("blocks", 9) == ["0", "1"]


def test_items_ask_parity_questions_under_their_own_family() -> None:
    info = get_lab_family("blocks")
    assert (info.name, info.header, info.base) == ("lab-blocks", "Parity:", "lab-parity")
    assert info.by_blocks
    assert not info.overthinks
    items = make_lab_tasks("blocks", n=9, count=30, seed=2)
    assert items == make_lab_tasks("lab-blocks", n=9, count=30, seed=2)
    assert {it.family for it in items} == {"lab-blocks"}
    for item in items:
        assert solve(str(item.prompt), "blocks").answer == item.answer
    assert distinct_questions("blocks", 4) == 16
    with pytest.raises(InputError, match="not a lab-blocks question"):
        solve("Lamp: [1] 1 [2] 0", "blocks")


def test_the_references_step_at_the_last_block() -> None:
    # n = 16: four blocks of four, a 12-token trace: a coin flip until it is complete.
    assert [mechanism_error("blocks", 16, k) for k in (0, 3, 9, 11, 12, 40)] == [
        0.5, 0.5, 0.5, 0.5, 0.0, 0.0,
    ]  # fmt: skip
    item = make_lab_tasks("blocks", n=16, count=1, seed=0)[0]
    assert [blind_error(item, k) for k in (0, 11, 12, 48)] == [0.5, 0.5, 0.0, 0.0]
    # The same question read as parity's needs its 48-token trace.
    parity = dataclasses.replace(item, family="lab-parity")
    assert blind_error(parity, 12) == 0.5


def test_the_law_reads_budgets_to_the_blocks_trace() -> None:
    # Every budget from 0 to the full trace (3 · 5 steps at n = 25) and the answer after it.
    assert budget_grid("blocks", 25) == list(range(0, 18))
    assert budget_grid("blocks", 4) == list(range(0, 9))


def test_its_presets_and_training_sequences() -> None:
    standard = settings_for("blocks", "standard")
    assert (standard.n_min, standard.n_max, standard.bucket) == (1, 25, True)
    # <bos>, header, 50 labelled inputs, Reasoning:, a 15-token trace, Answer:, the answer.
    assert standard.max_len >= 1 + 1 + 50 + 1 + 15 + 2
    example = lab_example("blocks", np.random.default_rng(0), 25)
    tokenizer = default_tokenizer()
    sequence = training_sequence(example, tokenizer, "full")
    words = [tokenizer.words[i] for i in sequence.ids]
    assert len(sequence.ids) <= standard.max_len
    assert words[-len(example.trace) - 2 :] == [*example.trace, "Answer:", example.answer]


def test_the_cli_knows_the_family(capsys: pytest.CaptureFixture[str]) -> None:
    # Sizes are checked against the family's standard preset before any model is loaded.
    with pytest.raises(SystemExit) as exit_info:
        main(["kstar-lab", "law", "blocks", "--sizes", "4,30"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "30" in err
    assert "1..25" in err
    with pytest.raises(SystemExit):
        main(["kstar-lab", "train", "blokcs"])
    assert "did you mean blocks" in capsys.readouterr().err
