"""The over-thinker, the smooth-gain lamp, the mechanism's exact error curve, and the
arithmetic of the law on the paper's terms (relative ε, the theorem's domain). No torch."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cotplan.errors import InputError
from cotplan.research.lab.reasoning.data import training_sequence
from cotplan.research.lab.reasoning.logloss import (
    answer_candidates,
    budget_grid,
    eps_form_of_law,
    eps_form_word,
    in_domain,
    logloss_curve_rows,
    n_form,
    relative_budgets,
)
from cotplan.research.lab.reasoning.tasks import (
    blind_error,
    get_lab_family,
    lab_example,
    make_lab_tasks,
    mechanism_error,
    solve,
)
from cotplan.research.lab.reasoning.tokenizer import CHECK, default_tokenizer
from cotplan.research.lab.reasoning.train import settings_for
from cotplan.tasks import TaskItem


def test_lamp_by_hand() -> None:
    # Off; toggle -> on, stay on, toggle -> off, toggle -> on: on after 3 of 4 steps.
    lamp = solve("Lamp: [1] 1 [2] 0 [3] 1 [4] 1")
    assert lamp.trace == ("[1]", "1", "1", "[2]", "0", "1", "[3]", "1", "0", "[4]", "1", "1")
    assert lamp.answer == "1"
    assert solve("Lamp: [1] 0 [2] 0 [3] 1").answer == "0"


def test_lamp_never_draws_a_tie() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        example = lab_example("lamp", rng, 6)
        assert sum(int(s) for s in example.trace[2::3]) != 3


@pytest.mark.parametrize("family", ["parity-overthink", "sum-overthink"])
def test_the_over_thinker_checks_after_the_answer_is_settled(family: str) -> None:
    rng = np.random.default_rng(1)
    lengths = []
    for _ in range(200):
        n = int(rng.integers(1, 17))
        example = lab_example(family, rng, n)
        base = solve(example.prompt)
        assert base.family == get_lab_family(family).base
        assert example.settled == 3 * n
        assert example.trace[: 3 * n] == base.trace
        assert example.answer == base.answer
        check = example.trace[3 * n :]
        assert check[0] == CHECK
        steps = [check[i : i + 3] for i in range(1, len(check), 3)]
        assert n <= len(steps) <= 2 * n
        for i, (label, value, restated) in enumerate(steps):
            assert label == f"[{i % n + 1}]"
            assert value == example.question[2 * (i % n) + 2]
            assert restated == example.answer
        lengths.append(example.full_tokens / example.needed_tokens)
    # Uncapped, an answer takes 2 to 3 times the tokens it needs (the "2-4x" of the issue).
    assert min(lengths) > 1.6
    assert max(lengths) < 3.1
    assert np.mean(lengths) > 2.0


def test_the_over_thinker_asks_the_same_questions_as_parity() -> None:
    info = get_lab_family("parity-overthink")
    assert (info.name, info.header, info.base) == ("lab-parity-overthink", "Parity:", "lab-parity")
    item = make_lab_tasks("parity-overthink", n=5, count=1)[0]
    assert item.family == "lab-parity-overthink"
    assert solve(str(item.prompt)).family == "lab-parity"
    # Its model reads sequences long enough for the longest check pass.
    assert settings_for("parity-overthink", "standard").max_len >= 2 * 16 + 3 + 9 * 16 + 3


def test_cut_sequences_of_the_over_thinker_answer_inside_the_check_pass() -> None:
    example = lab_example("parity-overthink", np.random.default_rng(2), 4)
    sequence = training_sequence(example, default_tokenizer(), "cut", 3 * 4 + 5)
    words = [default_tokenizer().words[i] for i in sequence.ids]
    assert CHECK in words
    assert words[-2:] == ["Answer:", example.answer]


def _items(family: str, n: int, count: int, seed: int) -> list[TaskItem]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        e = lab_example(family, rng, n)
        out.append(TaskItem(id=str(i), prompt=e.prompt, answer=e.answer, n=n, family=family))
    return out


@pytest.mark.parametrize(("family", "n"), [("lamp", 12), ("lamp", 9), ("majority", 10)])
def test_the_mechanisms_curve_is_the_mean_blind_error(family: str, n: int) -> None:
    # 1,000 random questions: a per-question blind error lies in [0, 1/2], so the standard
    # error of their mean is under 0.016 and a tolerance of 0.03 is about two of them at the
    # very worst; seeded, so the check is reproducible (it agrees to 0.01 with this seed).
    items = _items(family, n, 1000, seed=4)
    for k in (0, 3, 9, 15, 3 * n - 3):
        mean = float(np.mean([blind_error(it, k) for it in items]))
        assert mean == pytest.approx(mechanism_error(family, n, k), abs=0.03), k


def test_the_lamps_error_falls_gradually_and_the_parity_one_is_a_step() -> None:
    n = 16
    lamp = [mechanism_error("lamp", n, k) for k in range(0, 3 * n + 1, 3)]
    assert lamp[0] == pytest.approx(0.5)
    assert lamp[-1] == 0.0
    steps = np.diff(lamp)
    # No written state hurts, every second one helps (a count can only flip the majority
    # every other vote), and none settles it: no drop bigger than 0.15.
    assert (steps <= 1e-12).all()
    assert (np.diff(lamp[::2]) < 0).all()
    assert steps.min() > -0.15
    parity = [mechanism_error("parity-overthink", n, k) for k in range(0, 3 * n + 1, 3)]
    assert parity[:-1] == [0.5] * n
    assert parity[-1] == 0.0


def test_mechanism_error_checks_its_inputs() -> None:
    with pytest.raises(InputError, match="`k`: must be an integer >= 0"):
        mechanism_error("lamp", 4, -1)
    with pytest.raises(InputError, match="between"):
        mechanism_error("parity", 99, 3)


def test_the_theorems_domain() -> None:
    vocab = default_tokenizer().vocab_size
    # [max(n^-1/4, 1/V), 1/2]: empty below n = 16, the point 1/2 at 16, [0.354, 0.5] at 64.
    assert not any(in_domain(8, e, vocab) for e in (0.5, 0.4, 0.3))
    assert in_domain(16, 0.5, vocab)
    assert not in_domain(16, 0.4, vocab)
    assert in_domain(64, 0.4, vocab)
    assert not in_domain(64, 0.3, vocab)
    assert not in_domain(64, 0.6, vocab)


def test_relative_budgets_read_the_gap_left_to_the_optimum() -> None:
    ks = [0, 3, 6, 9, 12]
    loss = np.array([1.0, 0.8, 0.4, 0.25, 0.2])  # gap: 1, 0.75, 0.25, 0.0625, 0
    assert relative_budgets(ks, loss, [0.5, 0.1, 0.01]) == [6.0, 9.0, 12.0]
    # A curve that does not fall has no relative gap.
    assert all(math.isnan(k) for k in relative_budgets(ks, np.ones(5), [0.5]))


def test_a_sqrt_n_log_law_reads_as_one_inside_the_domain_and_out() -> None:
    # Every item's log-loss falls as exp(−k / (2√n)): k*(n, ε) ≈ 2√n · ln(1/ε) exactly the
    # paper's form, so the measured exponent is 1/2 and the ε-ratio is log(1/ε)'s.
    rows = []
    for n in (4, 16, 64):
        scale = 2 * math.sqrt(n)
        for item in range(12):
            for k in range(0, 241):
                loss = math.exp(-k / scale) + 0.01 * (item % 3) * math.exp(-k / scale)
                rows.append({"family": "lab-lamp", "item": f"{n}-{item}", "n": n, "k": k,
                             "p_correct": math.exp(-loss), "loss": loss, "wrong": 0.0})  # fmt: skip
    frame = pd.DataFrame(rows)
    vocab = default_tokenizer().vocab_size
    _, _, exponents, eps_form, _ = logloss_curve_rows(frame, (0.5, 0.4, 0.1), 40, 0, vocab)
    for eps in (0.5, 0.4, 0.1):
        row = exponents[(exponents["measure"] == "B") & (exponents["eps"] == eps)].iloc[0]
        assert row["beta"] == pytest.approx(0.5, abs=0.05)
    at_half = exponents[(exponents["measure"] == "B") & (exponents["eps"] == 0.5)].iloc[0]
    assert at_half["sizes_in_domain"] == 2  # n = 16 and 64; n = 4's domain is empty
    assert at_half["beta_domain"] == pytest.approx(0.5, abs=0.05)
    at_04 = exponents[(exponents["measure"] == "B") & (exponents["eps"] == 0.4)].iloc[0]
    assert at_04["sizes_in_domain"] == 1
    assert math.isnan(at_04["beta_domain"])
    b = eps_form[eps_form["measure"] == "B"]
    grid_pair = b[(b["n"] == 64) & ~b["in_domain"]].iloc[0]
    assert grid_pair["ratio"] == pytest.approx(grid_pair["predicted"], rel=0.1)
    domain_pair = b[(b["n"] == 64) & b["in_domain"]].iloc[0]
    assert (domain_pair["eps_small"], domain_pair["eps_large"]) == (0.4, 0.5)
    assert not b[(b["n"] == 4) & b["in_domain"]].shape[0]


def test_a_target_never_reached_gives_no_ratio() -> None:
    inf = math.inf
    point = {("B", 0.1): [inf], ("B", 0.5): [10.0], ("error", 0.1): [20.0], ("error", 0.5): [inf]}
    draws = {
        ("B", 0.1): [[inf] * 20],
        ("B", 0.5): [[10.0] * 20],
        ("error", 0.1): [[20.0] * 10 + [inf] * 10],
        ("error", 0.5): [[inf] * 20],
    }
    form = eps_form_of_law([8], (0.5, 0.1), point, draws, default_tokenizer().vocab_size)
    assert form["ratio"].isna().all()
    assert form["low"].isna().all()


def test_the_verdict_words_read_the_interval() -> None:
    assert n_form(0.3, 0.7) == "√n; linear excluded"
    assert n_form(0.8, 1.2) == "linear; √n excluded"
    assert n_form(0.2, 1.3) == "cannot tell √n from linear"
    assert n_form(1.2, 1.5) == "neither √n nor linear"
    assert n_form(math.nan, 1.0) == "no interval"
    # k* = 3n − 1 from n = 4 to 16 has slope 1.05 with no spread: linear, within the token
    # grid's resolution.
    slope = math.log(47 / 11) / math.log(4)
    assert n_form(slope, slope) == "linear; √n excluded"
    assert n_form(0.35, 0.45) == "√n; linear excluded"
    assert n_form(0.65, 0.8) == "neither √n nor linear"

    class Row:
        def __init__(self, low: float, high: float) -> None:
            self.low, self.high, self.predicted = low, high, 4.32

    assert eps_form_word(Row(3.0, 5.0)) == "consistent with log(1/ε)"
    assert eps_form_word(Row(1.0, 1.2)).endswith("more slowly")
    assert eps_form_word(Row(5.0, 6.0)).endswith("faster")


def test_the_budget_grid_reaches_into_the_over_thinkers_check_pass() -> None:
    # Parity stops at 3n + 2: the grid ends there, every budget at n = 8.
    assert budget_grid("parity", 8) == list(range(0, 27))
    # The over-thinker's pass runs to its longest trace (3n + 1 + 6n); every one of its first
    # budgets is measured, where a cap cuts it.
    grid = budget_grid("parity-overthink", 8)
    assert grid[-1] == 3 * 8 + 1 + 6 * 8
    assert set(range(24, 31)) <= set(grid)
    # Large sizes are thinned to about max_points, keeping 3n - 1 and 3n.
    wide = budget_grid("lamp", 64)
    assert len(wide) <= 60 + 3
    assert {191, 192, 194} <= set(wide)


def test_answer_candidates_cover_every_answer() -> None:
    families = ("parity", "lamp", "state", "sum", "bits", "majority", "parity-overthink")
    for family in (*families, "sum-overthink"):
        for item in make_lab_tasks(family, n=5, count=30, seed=1):
            assert str(item.answer) in answer_candidates(family, 5)
