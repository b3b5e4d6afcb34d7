"""The probe interval chosen from a calibration's settle points and answer lengths, on
constructed traces: each item's forced answer is a fresh guess at every budget before its
settle point and the right answer from there on."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cotplan.errors import InputError
from cotplan.planner.early_exit import StoppingRule, apply_rule, certify_early_exit
from cotplan.planner.exit_probes import probe_sequences
from cotplan.planner.probe_interval import analytic_interval, choose_interval, settle_points

STEP = 4


def _frame(
    settles: list[int],
    *,
    top: int = 800,
    answer_tokens: int = 8,
    ends: dict[int, int] | None = None,
    grid: list[int] | None = None,
) -> pd.DataFrame:
    """One item per settle point, answered at every STEP tokens up to `top` (or `grid`); an
    item in `ends` ended its thinking there on its own."""
    budgets = grid if grid is not None else list(range(0, top + 1, STEP))
    rows = []
    for i, settle in enumerate(settles):
        end = (ends or {}).get(i)
        for k in budgets:
            thought = k if end is None else min(k, end)
            right = thought >= settle
            rows.append(
                {
                    "item": f"i{i}",
                    "n": 40,
                    "k": k,
                    "extracted": "7" if right else f"guess{k}",  # never agrees before settling
                    "correct": right,
                    "answer_prob": 0.99 if right else 0.5,
                    "reasoning_tokens": thought,
                    "answer_tokens": answer_tokens,
                }
            )
    return pd.DataFrame(rows)


SPREAD = list(range(200, 601, 8))  # answers settling from 200 to 600 tokens


def test_the_interval_is_near_the_analysis_optimum_and_cheaper_than_its_neighbours() -> None:
    chosen = choose_interval(_frame(SPREAD), {40: 800}, confirm=0)
    # m = √(2cS) at c = 8 and a mean settle point of 400: 80.
    assert chosen.analytic == pytest.approx(math.sqrt(2 * 8 * 400))
    assert chosen.every is not None
    assert 0.6 * chosen.analytic <= chosen.every <= 1.6 * chosen.analytic
    table = chosen.table.set_index("every")
    assert chosen.tokens == table["tokens"].min()
    assert table.loc[STEP, "tokens"] > chosen.tokens  # probing at every budget pays answers
    assert table.loc[400, "tokens"] > chosen.tokens  # probing rarely overshoots the settle
    # About 1 + √(2c/S) of the stable oracle (settle plus the answer) on these items.
    oracle = float(np.mean(SPREAD)) + 8
    assert chosen.tokens / oracle <= 1 + math.sqrt(2 * 8 / 400) + 0.05


def test_longer_answers_and_more_confirming_probes_move_the_interval_as_the_analysis_says() -> None:
    base = choose_interval(_frame(SPREAD), {40: 800}, confirm=0).every
    dear = choose_interval(_frame(SPREAD, answer_tokens=32), {40: 800}, confirm=0).every
    eager = choose_interval(_frame(SPREAD), {40: 800}, confirm=2).every
    assert base is not None
    assert dear is not None
    assert eager is not None
    assert dear > base  # dearer probes: fewer of them
    assert eager < base  # each stop pays r − 1 more intervals: shorter ones
    assert analytic_interval(400, 8, confirm=2) < analytic_interval(400, 8, confirm=0)


def test_the_expected_tokens_are_what_the_rule_is_charged_on_these_items() -> None:
    """On traces whose answer agrees with itself only once settled, "2 probes agree" stops one
    probe after the settle point: exactly the cost the interval was chosen by (confirm = 1)."""
    frame = _frame(SPREAD, ends={0: 300, 5: 150})
    chosen = choose_interval(frame, {40: 800}, confirm=1)
    table = chosen.table.dropna().set_index("every")["tokens"]
    for every in (STEP, 40, chosen.every, 400):
        tokens = table[every]
        stops = apply_rule(
            StoppingRule(agree=2), probe_sequences(frame, {40: 800}, every=int(every))
        )
        assert float(stops["total_tokens"].mean()) == pytest.approx(tokens)


def test_settle_points_read_stability_and_the_models_own_end() -> None:
    frame = _frame([40, 120], ends={1: 60})
    points = settle_points(frame, {40: 200}).set_index("item")
    assert points.loc["i0", "settle"] == 40
    assert math.isinf(points.loc["i0", "end"])
    assert points.loc["i1", "end"] == 60
    # An item that never settles below its ceiling settles at the ceiling.
    assert settle_points(_frame([500]), {40: 200}).loc[0, "settle"] == 200


def test_a_grid_with_no_uniform_interval_probes_every_budget() -> None:
    geometric = [0, 12, 19, 30, 48, 76, 120, 190, 300, 480, 760]
    chosen = choose_interval(_frame(SPREAD, grid=geometric), {40: 760})
    assert chosen.every is None
    assert "every calibrated budget" in chosen.note


def test_certify_early_exit_chooses_the_interval_unless_told() -> None:
    frame = _frame(SPREAD)
    auto = certify_early_exit(frame, 0.1, delta=0.1, ceilings={40: 800})
    assert auto.interval is not None
    assert auto.every == auto.interval.every
    assert auto.every not in (None, STEP)
    told = certify_early_exit(frame, 0.1, delta=0.1, ceilings={40: 800}, every=16)
    assert (told.every, told.interval) == (16, None)
    # Fewer probes at the chosen interval: the certified exit spends less than at every budget.
    every_budget = certify_early_exit(frame, 0.1, delta=0.1, ceilings={40: 800}, every=None)
    assert auto.sizes[0].total_tokens < every_budget.sizes[0].total_tokens


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(InputError, match="`confirm`"):
        choose_interval(_frame(SPREAD), {40: 800}, confirm=-1)
    with pytest.raises(InputError, match="`frame`"):
        choose_interval(_frame(SPREAD), {3: 800})
