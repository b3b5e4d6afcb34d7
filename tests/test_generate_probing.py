"""Live probing (issue 29): think in chunks, force an answer at each checkpoint, stop on a rule.

The lab over-thinker checks that live probing sees exactly the forced answers a calibration
records at the same budgets (so a rule certified on calibration data is the rule applied live);
error paths use small stand-in backends (no model behind them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt
from cotplan.errors import CapabilityError, InputError
from cotplan.generate.budgeted import budgeted_answers
from cotplan.generate.probing import (
    ExitRule,
    ProbedAnswer,
    StoppingRule,
    probe_answer,
    probed_frame,
)
from cotplan.tasks import TaskItem, make_tasks


class _Stub(Backend):
    """A backend that must never be called: only its capabilities are read."""

    def __init__(self, model: str, *, budget_rule: str = "vllm") -> None:
        self.model = model
        self.budget_rule = budget_rule

    def generate(  # pragma: no cover - never reached
        self,
        prompt: Prompt,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        logprobs: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        raise AssertionError("no request expected")

    def next_token_probs(  # pragma: no cover - never reached
        self, prompt: Prompt, candidates: Sequence[str]
    ) -> NextTokenProbs:
        raise AssertionError("no request expected")


ITEM = make_tasks("count", n=3, count=1, seed=0)[0]
RULE = ExitRule(ceiling=32, every=8, rule=StoppingRule(agree=2))


def test_exit_rule_checkpoints_stop_at_the_ceiling() -> None:
    assert RULE.checkpoints == (8, 16, 24, 32)
    assert ExitRule(ceiling=30, every=8, rule=StoppingRule(agree=2)).checkpoints == (8, 16, 24, 30)
    # The fixed cap probes nothing: one checkpoint, the ceiling.
    assert ExitRule(ceiling=30, every=8).checkpoints == (30,)


def test_rules_round_trip_as_plain_data() -> None:
    rule = ExitRule(ceiling=96, every=16, rule=StoppingRule(agree=3, min_prob=0.9))
    assert ExitRule.from_dict(rule.to_dict()) == rule
    assert rule.to_dict() == {"ceiling": 96, "every": 16, "rule": {"agree": 3, "min_prob": 0.9}}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"ceiling": 0, "every": 8, "rule": {}}, "exit.ceiling"),
        ({"ceiling": 8, "every": True, "rule": {}}, "exit.every"),
        ({"ceiling": 8, "every": 8, "rule": {"agree": 0}}, "exit.rule.agree"),
        ({"ceiling": 8, "every": 8, "rule": {"min_prob": 1.5}}, "exit.rule.min_prob"),
        ({"ceiling": 8, "every": 8, "rule": {"agree": 2, "lambda": 1}}, "exit.rule"),
        ({"ceiling": 8, "every": 8}, "exit"),
        ({"ceiling": 8, "every": 8, "rule": [], "x": 1}, "exit"),
    ],
)
def test_bad_rules_name_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        ExitRule.from_dict(data)
    assert info.value.field == field


def test_hidden_reasoning_cannot_be_probed() -> None:
    with pytest.raises(CapabilityError, match=r"hidden tokens.*fixed cap"):
        probe_answer(_Stub("o4-mini", budget_rule="openai-reasoning-o"), ITEM, RULE)


def test_a_chat_only_api_without_token_strings_cannot_be_probed() -> None:
    # Chat turns cannot continue a thought, and with no token strings one run cannot be cut
    # at the probes (tests/test_generate_probing_chat.py: with them it can).
    backend = _Stub("some-chat-model")
    backend.supports_logprobs = False
    with pytest.raises(CapabilityError, match=r"chat turns.*token strings.*fixed cap"):
        probe_answer(backend, ITEM, RULE)


def test_bad_arguments_name_the_field() -> None:
    backend = _Stub("smollm2-135m-thinking")
    with pytest.raises(InputError, match="`exit_rule`"):
        probe_answer(backend, ITEM, {"ceiling": 8})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`item`"):
        probe_answer(backend, "question", RULE)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`answer_tokens`"):
        probe_answer(backend, ITEM, RULE, answer_tokens=0)


# -- the lab over-thinker: live probes are the calibration's forced answers --------------------


@pytest.fixture(scope="module")
def lab() -> Iterator[Backend]:
    pytest.importorskip("torch")
    from cotplan.backends import connect

    with connect("lab:parity-overthink") as backend:
        yield backend


def _lab_items() -> list[TaskItem]:
    from cotplan.research.lab.reasoning import make_lab_tasks

    return make_lab_tasks("lab-parity-overthink", n=8, count=6, seed=3)


def _offline_stop(answers: list[Any], rule: ExitRule) -> tuple[int, bool]:
    """Where `rule` stops on one long run's forced answers, replayed by hand."""
    run, last = 0, None
    for a in answers:
        if a.reasoning_tokens < a.k:
            return a.reasoning_tokens, a.correct  # the model ended its thinking
        run = run + 1 if a.extracted == last else 1
        last = a.extracted
        if run >= (rule.rule.agree or 10**9) or a.k == rule.ceiling:
            return a.k, a.correct
    raise AssertionError("no stop")  # pragma: no cover


def test_live_probes_are_the_forced_answers_a_calibration_records(lab: Backend) -> None:
    rule = ExitRule(ceiling=40, every=4, rule=StoppingRule(agree=3))
    answers = [probe_answer(lab, item, rule) for item in _lab_items()]
    for item, live in zip(_lab_items(), answers, strict=True):
        offline = budgeted_answers(lab, item, list(rule.checkpoints))
        seen = {a.k: a.extracted for a in offline}
        assert all(seen[p.k] == p.extracted for p in live.trace)
        assert (live.stop_k, live.correct) == _offline_stop(offline, rule)
        assert live.thinking_tokens <= rule.ceiling
    # The rule stops some items early, so the probes differ from one item to the next.
    assert len({a.stop_k for a in answers}) > 1
    assert any(a.stopped_by == "rule" and a.stop_k < rule.ceiling for a in answers)


def test_tokens_add_up_and_the_stopping_probe_is_the_answer(lab: Backend) -> None:
    rule = ExitRule(ceiling=40, every=4, rule=StoppingRule(agree=3))
    item = _lab_items()[0]
    plain = probe_answer(lab, item, rule)
    billed = probe_answer(lab, item, rule, bill_prompt=True)
    assert plain.probes == len(plain.trace) == plain.checkpoint
    assert plain.probe_answer_tokens == sum(p.answer_tokens for p in plain.trace[:-1])
    assert plain.answer_tokens == plain.trace[-1].answer_tokens
    assert plain.total_tokens == plain.thinking_tokens + plain.probe_answer_tokens + 1
    extra = billed.probe_prompt_tokens + billed.resume_prompt_tokens
    assert extra > 0
    assert billed.total_tokens == plain.total_tokens + extra
    frame = probed_frame([plain, billed])
    assert list(frame["total_tokens"]) == [plain.total_tokens, billed.total_tokens]
    assert len(plain.to_frame()) == plain.probes


def test_the_fixed_cap_rule_thinks_once_to_the_ceiling(lab: Backend) -> None:
    item = _lab_items()[1]
    answer = probe_answer(lab, item, ExitRule(ceiling=20, every=4))
    (offline,) = budgeted_answers(lab, item, [20])
    assert (answer.stopped_by, answer.probes, answer.calls) == ("ceiling", 1, 2)
    assert answer.probe_answer_tokens == 0
    assert (answer.extracted, answer.thinking_tokens) == (offline.extracted, 20)


# -- the embedded thinking model --------------------------------------------------------------


@pytest.mark.slow
def test_the_thinking_model_is_probed_live_as_calibrated(thinking_backend: Backend) -> None:
    item = make_tasks("count", n=3, count=1, seed=11)[0]
    rule = ExitRule(ceiling=96, every=16, rule=StoppingRule(agree=2))
    live = probe_answer(thinking_backend, item, rule)
    assert isinstance(live, ProbedAnswer)
    assert (live.mode, live.protocol) == ("template", "think")
    assert live.thinking_tokens <= rule.ceiling
    # Chunked thinking continues the same greedy text, so each probe is the forced answer
    # budgeted CoT gives at that budget.
    offline = budgeted_answers(thinking_backend, item, [p.k for p in live.trace])
    assert [p.extracted for p in live.trace] == [a.extracted for a in offline]
    assert live.extracted == live.trace[-1].extracted
