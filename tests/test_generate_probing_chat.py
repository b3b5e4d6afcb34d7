"""Live probing in chat mode: every probe is cut from the item's one run, as calibration cuts
its budgets, so the server thinks once an item and the probes ask for answers only. Checked
against the loopback reasoning server (thinking of hundreds of tokens an item), counting what
it generated through a proxy in front of it."""

from __future__ import annotations

import pandas as pd
import pytest

from cotplan.backends import connect
from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.budget_setup import budget_setup
from cotplan.generate.budgeted import budgeted_answers, thinking_run
from cotplan.generate.probing import ExitRule, StoppingRule, probe_answer
from cotplan.loopback import LoopbackReasoner, UsageTally, arithmetic_items
from cotplan.planner.exit_probes import apply_rule, probe_sequences

ITEMS = arithmetic_items(6, n=8)
ANSWER_TOKENS = 16
UNCAPPED = 4096
RULE = ExitRule(ceiling=480, every=40, rule=StoppingRule(agree=3))


def _backend(base_url: str) -> Backend:
    return connect("openai:loopback-r1", base_url=base_url, protocol="think", cache=None)


@pytest.mark.slow
def test_chat_probes_generate_one_run_an_item_and_ask_for_answers_only() -> None:
    with LoopbackReasoner(mean_thinking=300) as server:
        with UsageTally(server.base_url) as uncapped_tally:
            backend = _backend(uncapped_tally.base_url)
            for item in ITEMS:
                budgeted_answers(backend, item, [UNCAPPED])
        one_run_each = sum(c[2] for c in uncapped_tally.calls if c[0] == UNCAPPED)
        with UsageTally(server.base_url) as tally:
            backend = _backend(tally.base_url)
            live = [probe_answer(backend, item, RULE) for item in ITEMS]
    runs = [c for c in tally.calls if c[0] > ANSWER_TOKENS]
    answers = [c for c in tally.calls if c[0] <= ANSWER_TOKENS]
    # One reasoning request an item, capped at the ceiling; every other request is an answer.
    assert [c[0] for c in runs] == [RULE.ceiling] * len(ITEMS)
    assert len(answers) == sum(a.calls for a in live) - len(ITEMS)
    thinking = tally.generated - sum(c[2] for c in answers)
    assert thinking <= 1.05 * one_run_each
    # The answers are forced by continuing the turn after the prefix.
    assert all(c[1] for c in answers)
    assert all(a.mode == "chat" and a.thinking_tokens <= RULE.ceiling for a in live)
    assert sum(a.thinking_tokens + a.answer_tokens * (a.calls == 1) for a in live) == thinking
    # The rule stopped some items before the ceiling: those probes cost answers, not thinking.
    assert any(a.stopped_by == "rule" and a.stop_k < RULE.ceiling for a in live)


@pytest.mark.slow
def test_chat_probes_stop_where_the_calibration_replay_stops() -> None:
    """The rule read live on one run stops where `apply_rule` stops on the same item's
    calibration answers (budgeted CoT at every checkpoint, one run shared)."""
    with LoopbackReasoner(mean_thinking=300) as server:
        backend = _backend(server.base_url)
        live = {item.id: probe_answer(backend, item, RULE) for item in ITEMS}
        rows = [
            a.to_row()
            for item in ITEMS
            for a in budgeted_answers(backend, item, list(RULE.checkpoints), run_tokens=UNCAPPED)
        ]
    replay = apply_rule(RULE.rule, probe_sequences(pd.DataFrame(rows), {8: RULE.ceiling}))
    for row in replay.itertuples():
        answer = live[row.item]
        assert (answer.stop_k, answer.correct) == (row.stop_k, row.correct)
        assert answer.probes == row.probes
        assert answer.probe_answer_tokens == row.probe_tokens
    assert set(replay["stop_k"]) != {RULE.ceiling}


def test_a_run_in_hand_is_cut_without_thinking_again() -> None:
    item = ITEMS[0]
    with LoopbackReasoner(mean_thinking=300) as server, UsageTally(server.base_url) as tally:
        backend = _backend(tally.base_url)
        setup = budget_setup(
            backend,
            item,
            mode="chat",
            protocol="auto",
            prompt=None,
            answer_tokens=ANSWER_TOKENS,
            temperature=0.0,
            seed=None,
            logprobs=True,
        )
        run = thinking_run(setup, UNCAPPED)  # the item's uncapped run, as calibration makes it
        before = len(tally.calls)
        answer = probe_answer(backend, item, RULE, run=run)
    assert all(c[0] <= ANSWER_TOKENS for c in tally.calls[before:])
    assert answer.calls == len(tally.calls) - before
    assert answer.stop_k <= RULE.ceiling
    with pytest.raises(InputError, match="`run`"):
        probe_answer(_template_stub(), item, RULE, run=run, mode="template")


def _template_stub() -> Backend:
    from tests.test_generate_probing import _Stub

    return _Stub("smollm2-135m-thinking")


@pytest.mark.model
@pytest.mark.slow
def test_the_thinking_model_is_probed_in_chat_mode_from_one_run(thinking_model: object) -> None:
    """On the embedded thinking model driven by chat requests (llama.cpp's reasoning parser):
    one run an item, answers only after it, the probes those of budgeted CoT at the same
    budgets."""
    from cotplan.backends.local import LocalModel
    from cotplan.tasks import make_tasks

    assert isinstance(thinking_model, LocalModel)
    item = make_tasks("count", n=3, count=1, seed=11)[0]
    rule = ExitRule(ceiling=96, every=16, rule=StoppingRule(agree=2))
    with UsageTally(thinking_model.base_url) as tally:
        backend = thinking_model.backend(cache=None, base_url=tally.base_url)
        live = probe_answer(backend, item, rule, mode="chat")
    assert live.mode == "chat"
    assert [c[0] for c in tally.calls if c[0] > ANSWER_TOKENS] == [rule.ceiling]
    assert sum(c[2] for c in tally.calls if c[0] > ANSWER_TOKENS) <= rule.ceiling
    offline = budgeted_answers(
        thinking_model.backend(cache=None), item, [p.k for p in live.trace], mode="chat"
    )
    assert [p.extracted for p in live.trace] == [a.extracted for a in offline]
