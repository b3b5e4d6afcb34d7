"""Certified early exit (issue 29): stopping rules learned from a calibration frame.

The simulation at the end checks the guarantee on synthetic items whose answer settles at a
random checkpoint, with random guesses before: over 200 seeded calibrations, the certified
(ceiling, rule) pair's true error exceeds ε in at most δ plus Monte Carlo slack, and the rule
never thinks past the ceiling nor spends more tokens than the fixed cap.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from cotplan.errors import InputError
from cotplan.planner.early_exit import (
    Family,
    ProbeSequence,
    StoppingRule,
    apply_rule,
    certify_early_exit,
    deer_rule,
    dynasor_rule,
    fixed_caps,
    probe_sequences,
    rule_chains,
    rule_family,
)
from cotplan.planner.exit_probes import (
    least_probing_tokens,
    stop_at_budgets,
    uniform_probing_tokens,
)

GRID = np.arange(0, 68, 4)  # 0, 4, ..., 64: 17 budgets, probes at 16 of them
ANSWER_TOKENS = 2
LABELS = np.array(["a", "b", "c"])  # "a" is right; guesses draw from all three


def _draw(items: int, rng: np.random.Generator) -> tuple[NDArray[np.int_], NDArray[np.float64]]:
    """Answers (label codes) and probabilities, items × budgets. The answer settles on the
    right one at a random budget index (most by index 8, a tail up to 16); before that each
    probe is a fresh guess among the labels, sometimes confident."""
    tail = rng.random(items) < 0.15
    settle = np.where(tail, rng.integers(9, 17, items), rng.integers(1, 9, items))
    index = np.arange(len(GRID))
    settled = index[None, :] >= settle[:, None]
    guesses = rng.integers(0, len(LABELS), (items, len(GRID)))
    answers = np.where(settled, 0, guesses)
    probs = np.where(
        settled, rng.uniform(0.9, 1.0, settled.shape), rng.uniform(0.3, 0.97, settled.shape)
    )
    return answers, probs


def _frame(items: int, seed: int, n: int = 8) -> pd.DataFrame:
    answers, probs = _draw(items, np.random.default_rng(seed))
    rows = []
    for i in range(items):
        for j, k in enumerate(GRID):
            rows.append(
                {
                    "item": f"s{seed}-{i}",
                    "n": n,
                    "k": int(k),
                    "extracted": str(LABELS[answers[i, j]]),
                    "correct": bool(answers[i, j] == 0),
                    "answer_prob": float(probs[i, j]),
                    "reasoning_tokens": int(k),
                    "answer_tokens": ANSWER_TOKENS,
                    "prompt_tokens": 10 + int(k),
                    "question_tokens": 5,
                }
            )
    return pd.DataFrame(rows)


def _truth(
    rule: StoppingRule | None,
    ceiling: int,
    answers: NDArray[np.int_],
    probs: NDArray[np.float64],
    every: int | None = None,
) -> tuple[float, float]:
    """A rule's true error and mean total tokens probing every `every` tokens (None: at every
    budget), by direct vectorised simulation (an implementation independent of the module's)."""
    on = (GRID % every == 0) | (ceiling == GRID) if every else np.ones(len(GRID), dtype=bool)
    cols = np.flatnonzero((GRID > 0) & (ceiling >= GRID) & on)
    a, p = answers[:, cols], probs[:, cols]
    run = np.ones(a.shape, dtype=int)
    for j in range(1, a.shape[1]):
        run[:, j] = np.where(a[:, j] == a[:, j - 1], run[:, j - 1] + 1, 1)
    fires = np.zeros(a.shape, dtype=bool)
    if rule is not None:
        fires = np.ones(a.shape, dtype=bool)
        if rule.agree is not None:
            fires &= run >= rule.agree
        if rule.min_prob is not None:
            fires &= p >= rule.min_prob
    fires[:, -1] = True
    stop = fires.argmax(axis=1)
    wrong = a[np.arange(len(a)), stop] != 0
    probes = stop + 1 if rule is not None else 1  # the cap alone makes no probes
    tokens = GRID[cols][stop] + probes * ANSWER_TOKENS
    return float(wrong.mean()), float(tokens.mean())


def _sequence(
    answers: list[str | None], probs: list[float], ceiling_tokens: int = 0
) -> ProbeSequence:
    m = len(answers)
    frame = pd.DataFrame(
        {
            "item": "x",
            "n": 4,
            "k": np.arange(1, m + 1) * 4,
            "extracted": answers,
            "correct": [a == "a" for a in answers],
            "answer_prob": probs,
            "reasoning_tokens": np.arange(1, m + 1) * 4,
            "answer_tokens": 3,
        }
    )
    if ceiling_tokens:
        frame.loc[frame.index[-1], "reasoning_tokens"] = ceiling_tokens
    (sequence,) = probe_sequences(frame, {4: 4 * m})
    return sequence


# -- rules on hand-made sequences ------------------------------------------------------------


def test_agreement_stops_at_the_rth_equal_probe_and_charges_every_probe() -> None:
    s = _sequence(["b", "a", "a", "a", "a"], [0.5] * 5)
    stops = apply_rule(StoppingRule(agree=3), [s]).iloc[0]
    assert stops["stop_k"] == 16
    assert stops["correct"]
    assert stops["probes"] == 4
    assert stops["thinking_tokens"] == 16
    assert stops["probe_tokens"] == 3 * 3  # the three probes before the stop
    assert stops["total_tokens"] == 16 + 9 + 3


def test_the_ceiling_ends_a_rule_that_never_fires() -> None:
    s = _sequence(["a", "b", "a", "b"], [0.99] * 4)
    row = apply_rule(StoppingRule(agree=2), [s]).iloc[0]
    assert (row["stop_k"], row["ceiling"], row["correct"]) == (16, 16, False)


def test_a_budget_known_in_advance_stops_at_the_first_probe_reaching_it() -> None:
    s = _sequence(["b", "a", "a", "a", "a"], [0.5] * 5)
    row = stop_at_budgets([s], {"x": 10}).iloc[0]
    # Probes at 4, 8, 12: the rule stops at 12, charged the two probes before it.
    assert (row["stop_k"], row["probes"], row["probe_tokens"]) == (12, 3, 6)
    assert row["total_tokens"] == 12 + 6 + 3
    assert stop_at_budgets([s], {"x": 99}).iloc[0]["stop_k"] == 20  # past it: the ceiling


def test_missing_answers_agree_with_nothing() -> None:
    s = _sequence([None, None, "a", "a"], [0.5] * 4)
    assert apply_rule(StoppingRule(agree=2), [s]).iloc[0]["stop_k"] == 16


def test_confidence_reads_the_probability_and_nan_never_counts() -> None:
    s = _sequence(["b", "a", "a"], [math.nan, 0.96, 0.99])
    assert apply_rule(deer_rule(), [s]).iloc[0]["stop_k"] == 8
    assert apply_rule(StoppingRule(min_prob=0.999), [s]).iloc[0]["stop_k"] == 12


def test_thinking_that_ends_on_its_own_stops_there() -> None:
    frame = pd.DataFrame(
        {
            "item": "x",
            "n": 4,
            "k": [4, 8, 12, 16],
            "extracted": ["b", "a", "a", "a"],
            "correct": [False, True, True, True],
            "reasoning_tokens": [4, 7, 7, 7],  # ended after 7 tokens
            "answer_tokens": 1,
        }
    )
    (s,) = probe_sequences(frame, {4: 16})
    assert apply_rule(StoppingRule(agree=5), [s]).iloc[0]["stop_k"] == 8


def test_a_probability_missing_after_the_thinking_ended_keeps_the_confidence_rules() -> None:
    # Item x closes its thinking after 7 tokens: from k = 8 on, its answer is the model's own,
    # with no probability (a lab model's, say). No rule reads it, so "auto" keeps "both".
    frame = _frame(150, seed=11)
    ended = pd.DataFrame(
        {
            "item": "x",
            "n": 8,
            "k": GRID,
            "extracted": ["b", "b", *["a"] * (len(GRID) - 2)],
            "correct": [False, False, *[True] * (len(GRID) - 2)],
            "answer_prob": [0.6, 0.7, *[math.nan] * (len(GRID) - 2)],
            "reasoning_tokens": np.minimum(GRID, 7),
            "answer_tokens": ANSWER_TOKENS,
            "prompt_tokens": 10,
            "question_tokens": 5,
        }
    )
    result = certify_early_exit(pd.concat([frame, ended]), 0.1, delta=0.1, ceilings={8: 64})
    assert result.table["rule"].iloc[0] == rule_family("both")[0].name
    # A probability missing where the rule must read it (a forced answer) still takes the
    # confidence rules away, and asking for them is refused, naming the field.
    forced = frame.copy()
    forced.loc[forced["k"] == 8, "answer_prob"] = math.nan
    result = certify_early_exit(forced, 0.1, delta=0.1, ceilings={8: 64})
    assert result.table["rule"].iloc[0] == rule_family("agreement")[0].name
    with pytest.raises(InputError, match=r"`family`.*answer_prob"):
        certify_early_exit(forced, 0.1, ceilings={8: 64}, family="confidence")


def test_bill_prompt_charges_each_earlier_probe_its_answer_prompt() -> None:
    frame = _frame(1, seed=3).query("k <= 12")
    (plain,) = probe_sequences(frame, {8: 12})
    (billed,) = probe_sequences(frame, {8: 12}, bill_prompt=True)
    never = StoppingRule(agree=99)  # probes at every checkpoint, never fires before 12
    a = apply_rule(never, [plain]).iloc[0]
    b = apply_rule(never, [billed]).iloc[0]
    # Probes at 4 and 8 before the ceiling 12: prompt 10 + k minus the 5 question tokens each.
    assert b["probe_tokens"] - a["probe_tokens"] == (10 + 4 - 5) + (10 + 8 - 5)


def test_every_keeps_the_multiples_and_the_ceiling() -> None:
    (s,) = probe_sequences(_frame(1, seed=0), {8: 44}, every=16)
    assert s.k.tolist() == [16, 32, 44]


def test_baselines_are_the_published_settings() -> None:
    assert dynasor_rule() == StoppingRule(agree=3)
    assert deer_rule() == StoppingRule(min_prob=0.95)


def test_families_are_ordered_cautious_first() -> None:
    assert [r.agree for r in rule_family("agreement")] == [5, 4, 3, 2]
    assert rule_family("auto", has_prob=False) == rule_family("agreement")
    assert rule_family("auto") == rule_family("both")
    probs = [r.min_prob or 0.0 for r in rule_family("confidence")]
    assert probs == sorted(probs, reverse=True)


def test_all_tests_every_chain_at_its_share_of_delta() -> None:
    assert rule_chains("all") == tuple(rule_family(f) for f in ("agreement", "confidence", "both"))
    assert rule_chains("all", has_prob=False) == (rule_family("agreement"),)
    assert rule_chains("auto") == (rule_family("both"),)
    with pytest.raises(InputError, match=r"`family`.*rule_chains"):
        rule_family("all")
    frame = _frame(100, seed=4)
    result = certify_early_exit(frame, 0.1, delta=0.09, ceilings={8: 64}, family="all")
    # Each chain starts from its most cautious rule, and every bound is at δ / 3.
    firsts = {chain[0].name for chain in rule_chains("all")}
    assert firsts <= set(result.table["rule"])
    assert result.table["delta"].tolist() == pytest.approx([0.03] * len(result.table))
    # The rule kept is the cheapest certified in any chain, or the cap where none is cheaper.
    (size,) = result.sizes
    passed = result.table[result.table["rejected"]]
    if size.rule is not None:
        assert size.total_tokens == pytest.approx(passed["total_tokens"].min())
    without = certify_early_exit(frame.drop(columns="answer_prob"), 0.1, family="all")
    assert set(without.table["rule"]) <= {r.name for r in rule_family("agreement")}


# -- input errors name the field ------------------------------------------------------------


def test_errors_name_the_field() -> None:
    frame = _frame(3, seed=1)
    with pytest.raises(InputError, match=r"`frame`.*extracted"):
        certify_early_exit(frame.drop(columns="extracted"), 0.1)
    with pytest.raises(InputError, match=r"`frame`.*repeated"):
        certify_early_exit(pd.concat([frame, frame]), 0.1)
    with pytest.raises(InputError, match=r"`ceilings`.*k = 5"):
        certify_early_exit(frame, 0.1, ceilings={8: 5})
    with pytest.raises(InputError, match=r"`family`.*answer_prob"):
        certify_early_exit(frame.drop(columns="answer_prob"), 0.1, family="confidence")
    with pytest.raises(InputError, match="`family`"):
        certify_early_exit(frame, 0.1, family="vibes")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`every`"):
        probe_sequences(frame, {8: 64}, every=0)
    with pytest.raises(InputError, match="`eps`"):
        certify_early_exit(frame, 1.5)
    with pytest.raises(InputError, match="`correct`"):
        certify_early_exit(frame.assign(correct="maybe"), 0.1)
    with pytest.raises(InputError, match="`agree`"):
        StoppingRule(agree=0)
    with pytest.raises(InputError, match="`n`"):
        certify_early_exit(frame, 0.5, ceilings={8: 64}).rule_at(3)


# -- certification --------------------------------------------------------------------------


def test_certificate_says_which_rule_its_bound_items_and_tokens() -> None:
    frame = _frame(150, seed=11)
    result = certify_early_exit(frame, 0.1, delta=0.1, ceilings={8: 64})
    row = result.to_frame().iloc[0]
    assert row["items"] == 150
    assert row["ceiling"] == 64
    assert row["error_bound"] <= 0.1
    assert row["rule"] != StoppingRule().name  # a rule beats the cap on these items
    assert row["total_tokens"] < row["cap_tokens"]
    assert set(result.table.columns) >= {"rule", "errors", "bound", "rejected", "total_tokens"}
    assert result.rule_at(8) is not None


def test_nothing_certified_keeps_the_fixed_cap_and_says_why() -> None:
    frame = _frame(20, seed=2)
    result = certify_early_exit(frame, 0.01, delta=0.05, ceilings={8: 64})
    (size,) = result.sizes
    assert size.rule is None
    assert size.total_tokens == size.cap_tokens
    assert "no rule certified" in size.note


def test_default_ceiling_is_the_certified_fixed_cap() -> None:
    frame = _frame(150, seed=4)
    caps = fixed_caps(frame, 0.1, 0.1)
    assert certify_early_exit(frame, 0.1, delta=0.1).ceilings == caps


# -- properties -----------------------------------------------------------------------------

answers_st = st.lists(st.sampled_from(["a", "b", None]), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(answers=answers_st, data=st.data())
def test_rules_never_pass_the_ceiling_and_cautious_never_stops_earlier(
    answers: list[str | None], data: st.DataObject
) -> None:
    probs = data.draw(
        st.lists(
            st.floats(0.0, 1.0) | st.just(math.nan), min_size=len(answers), max_size=len(answers)
        )
    )
    s = _sequence(answers, probs)
    for family in ("agreement", "confidence", "both"):
        stops = [int(apply_rule(rule, [s]).iloc[0]["stop_k"]) for rule in rule_family(family)]
        assert max(stops) <= 4 * len(answers)
        assert stops == sorted(stops, reverse=True), family
    cap = apply_rule(StoppingRule(), [s]).iloc[0]
    assert cap["stop_k"] == 4 * len(answers)
    assert cap["probe_tokens"] == 0  # the fixed cap makes no probes


def _probing_by_brute_force(stops: list[int], answer: float) -> float:
    """Every set of probe positions up to the last stop, tried one by one."""
    top = max(stops)
    best = math.inf
    for mask in range(1 << (top - 1)):
        probes = [p for p in range(1, top) if mask >> (p - 1) & 1] + [top]
        total = 0.0
        for stop in stops:
            j = next(i for i, p in enumerate(probes) if p >= stop)
            total += probes[j] + answer * (j + 1)
        best = min(best, total / len(stops))
    return best


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    stops=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    answer=st.sampled_from([0.0, 1.0, 2.5]),
)
def test_least_probing_is_the_best_schedule_and_no_interval_beats_it(
    stops: list[int], answer: float
) -> None:
    least = least_probing_tokens(stops, answer)
    assert least == pytest.approx(_probing_by_brute_force(stops, answer))
    assert least >= np.mean(stops) + answer - 1e-9  # it never stops before an answer settles
    for every in range(1, 12):
        assert least <= uniform_probing_tokens(stops, answer, every) + 1e-9


def test_uniform_probing_by_hand_and_bad_stops_name_the_field() -> None:
    # Stops at 5 and 12, probes every 4: at 8 (2 probes) and 12 (3 probes), 1 token each.
    assert uniform_probing_tokens([5, 12], 1.0, 4) == (8 + 2 + 12 + 3) / 2
    for bad in ([], [0], [2.5]):
        with pytest.raises(InputError, match="`stops`"):
            least_probing_tokens(bad, 1.0)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`every`"):
        uniform_probing_tokens([4], 1.0, 0)


# -- the guarantee, by simulation -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("family", ["auto", "all"])
def test_certified_early_exit_keeps_its_guarantee_by_simulation(family: Family) -> None:
    # 200 seeded calibrations of 100 items, ε = 0.1, δ = 0.1, the ceiling certified on the same
    # items. Allowed: a share of misses at most δ + 3 binomial standard errors (0.164): a
    # procedure that missed at exactly δ would exceed it with probability about 0.2%. "all"
    # keeps the cheapest rule of three chains, each tested at δ / 3.
    eps, delta, runs, items = 0.1, 0.1, 200, 100
    answers, probs = _draw(40_000, np.random.default_rng(10_000))
    # The probe interval is chosen on the same items too (every="auto", the default), so the
    # guarantee checked is that of the whole choice: interval, ceiling and rule.
    truth: dict[tuple[StoppingRule | None, int, int | None], tuple[float, float]] = {}
    misses = certified = exits = 0
    for seed in range(runs):
        result = certify_early_exit(_frame(items, seed), eps, delta=delta, family=family)
        if not result.sizes:
            continue  # no cap certified: nothing deployed, nothing to miss
        (size,) = result.sizes
        certified += 1
        every = result.every if isinstance(result.every, int) else None
        key = (size.rule, size.ceiling, every)
        if key not in truth:
            truth[key] = _truth(size.rule, size.ceiling, answers, probs, every)
        if (None, size.ceiling, None) not in truth:
            truth[None, size.ceiling, None] = _truth(None, size.ceiling, answers, probs)
        error, tokens = truth[key]
        misses += error > eps
        exits += size.rule is not None
        assert size.ceiling <= GRID[-1]
        # Never more tokens than the fixed cap (fresh items; 1% for Monte Carlo noise).
        assert tokens <= truth[None, size.ceiling, None][1] * 1.01, (seed, size)
    assert certified >= 0.9 * runs
    # The rules do fire: the test is not about the cap alone ("all" tests each chain at δ / 3,
    # so fewer of its rules pass than "auto"'s).
    assert exits >= (0.5 if family == "auto" else 0.25) * certified, exits
    slack = 3 * math.sqrt(delta * (1 - delta) / certified)
    assert misses / certified <= delta + slack, (misses, certified)
