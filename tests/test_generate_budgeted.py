"""Budgeted CoT: templates, token accounting, answer probabilities, cutting a run, errors.

Parsing and accounting only; the real model is exercised in test_generate_budgeted_model.py.
The one double here stands in for a hidden-reasoning API (no such model runs offline).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt, TokenLogprob, Usage
from cotplan.errors import InputError
from cotplan.generate import (
    CHAT_TEMPLATES,
    BudgetedAnswer,
    answers_frame,
    budgeted_answer,
    template_for,
)
from cotplan.generate.answer_record import answer_probability as _answer_probability
from cotplan.generate.budget_setup import joiner as _joiner
from cotplan.generate.budgeted import cut_run as _cut
from cotplan.tasks import TaskItem

ITEM = TaskItem(id="q1", prompt="What is 3 + 4 + 8?", answer="15", kind="integer", n=3)


def test_smollm2_template_matches_the_servers_chat_rendering() -> None:
    template = template_for("smollm2-135m-instruct@b179c9523d0e")
    assert template is CHAT_TEMPLATES["smollm2"]
    text = template.render([{"role": "user", "content": "Hi"}])
    assert text == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    own_system = template.render(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    )
    assert own_system.startswith("<|im_start|>system\nBe brief.<|im_end|>\n")
    assert "SmolLM" not in own_system
    assert template_for("gpt-4o-mini") is None


def test_joiner_keeps_the_models_own_spacing() -> None:
    assert _joiner("") == ""
    assert _joiner("so it is 15. ") == ""
    assert _joiner("so it is 15.\n") == ""
    assert _joiner("so it is 1") == "\n"


def _tokens(*pairs: tuple[str, float]) -> tuple[TokenLogprob, ...]:
    return tuple(TokenLogprob(t, lp) for t, lp in pairs)


def test_answer_probability_multiplies_the_answers_tokens() -> None:
    text = " 15"
    logprobs = _tokens((" 1", math.log(0.5)), ("5", math.log(0.8)))
    assert _answer_probability(logprobs, text, "15", ITEM) == pytest.approx(0.4)


def test_answer_probability_reads_the_last_integer_of_the_answer_line() -> None:
    text = " 3 + 12 = 15\nnext"
    logprobs = _tokens(
        (" 3", -1.0), (" +", -1.0), (" 12", -1.0), (" =", -1.0), (" 15", math.log(0.9)),
        ("\nnext", -5.0),
    )  # fmt: skip
    assert _answer_probability(logprobs, text, "15", ITEM) == pytest.approx(0.9)


def test_answer_probability_is_nan_when_it_cannot_be_located() -> None:
    logprobs = _tokens((" 7", -0.1))
    assert math.isnan(_answer_probability(logprobs, " 7", None, ITEM))
    assert math.isnan(_answer_probability(None, " 7", "7", ITEM))
    assert math.isnan(_answer_probability(logprobs, " 8", "8", ITEM))  # tokens != text
    assert math.isnan(_answer_probability(logprobs, " 7", "9", ITEM))


def _run(tokens: Sequence[str], finish: str = "length") -> Completion:
    return Completion(
        text="".join(tokens),
        finish_reason=finish,
        usage=Usage(prompt_tokens=50, completion_tokens=len(tokens)),
        model="m",
        logprobs=tuple(TokenLogprob(t, -0.1) for t in tokens),
        latency_s=2.0,
    )


def test_cut_gives_the_run_a_smaller_cap_would_have_made() -> None:
    run = _run(["a", " b", " c", " d"], finish="stop")
    short = _cut(run, 2)
    assert short is not None
    assert short.text == "a b"
    assert short.truncated
    assert short.usage.completion_tokens == 2
    assert short.usage.prompt_tokens == 50
    assert short.latency_s == pytest.approx(1.0)
    assert _cut(run, 4) is run
    assert _cut(run, 10) is run


def test_cut_refuses_when_token_strings_do_not_spell_the_text() -> None:
    run = Completion(
        text="abc",
        finish_reason="length",
        usage=Usage(prompt_tokens=5, completion_tokens=3),
        model="m",
        logprobs=_tokens(("a", -0.1), ("x", -0.1), ("c", -0.1)),
    )
    assert _cut(run, 2) is None


class _HiddenReasoner(Backend):
    """An o-series-like API: reasoning hidden, counted in usage, one cap for both."""

    model = "o4-mini"
    supports_logprobs = False
    reasoning = True
    budget_rule = "openai-reasoning"

    def __init__(self, replies: list[tuple[str, int, int, str]]) -> None:
        self.replies = replies
        self.calls: list[dict[str, Any]] = []

    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        self.calls.append({"prompt": prompt, "max_tokens": max_tokens, **kw})
        text, completion, reasoning, finish = self.replies.pop(0)
        return Completion(
            text=text,
            finish_reason=finish,
            usage=Usage(prompt_tokens=30, completion_tokens=completion, reasoning_tokens=reasoning),
            model=self.model,
        )

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


def test_hidden_reasoning_counts_usage_and_checks_the_cap() -> None:
    backend = _HiddenReasoner([("Answer: 15", 70, 64, "stop")])
    result = budgeted_answer(backend, ITEM, 64, answer_tokens=16)
    assert result.mode == "hidden"
    assert backend.calls[0]["max_tokens"] == 80  # reasoning and answer share one cap
    assert backend.calls[0]["extra"] == {"reasoning_effort": "low"}
    assert result.reasoning_tokens == 64
    assert result.answer_tokens == 6
    assert result.correct
    assert result.cap_held
    assert result.calls == 1
    assert math.isnan(result.answer_prob)


def test_hidden_reasoning_that_overran_is_flagged_and_a_cut_is_forced() -> None:
    backend = _HiddenReasoner([("", 80, 80, "length"), ("Answer: 14", 4, 0, "stop")])
    result = budgeted_answer(backend, ITEM, 64, answer_tokens=16)
    assert result.truncated
    assert result.forced
    assert not result.cap_held
    assert result.overrun == 16
    assert result.calls == 2
    assert result.extracted == "14"
    assert not result.correct
    assert result.prompt_tokens == 60


@pytest.mark.parametrize(("k", "effort"), [(0, "low"), (900, "low"), (5000, "medium")])
def test_hidden_reasoning_sends_the_effort_level_of_its_budget(k: int, effort: str) -> None:
    # o4-mini takes low, medium and high only: k = 0 asks for the lowest it accepts.
    backend = _HiddenReasoner([("Answer: 15", 10, 5, "stop")])
    budgeted_answer(backend, ITEM, k)
    assert backend.calls[0]["extra"] == {"reasoning_effort": effort}


def test_unknown_price_is_nan_with_a_note() -> None:
    backend = _HiddenReasoner([("Answer: 15", 10, 5, "stop")])
    backend.model = "o4-zz-unpriced"
    result = budgeted_answer(backend, ITEM, 8)
    assert math.isnan(result.cost_usd)
    assert "no price for o4-zz-unpriced" in result.cost_note


def test_bad_input_names_the_field() -> None:
    backend = _HiddenReasoner([])
    with pytest.raises(InputError, match=r"`k`: must be a whole number of tokens in 0\.\."):
        budgeted_answer(backend, ITEM, -1)
    with pytest.raises(InputError, match="`answer_tokens`: must be an integer between 1 and"):
        budgeted_answer(backend, ITEM, 4, answer_tokens=0)
    with pytest.raises(InputError, match="`item`: must be a TaskItem"):
        budgeted_answer(backend, {"prompt": "x"}, 4)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="`mode`: no chat template known for 'o4-mini'"):
        budgeted_answer(backend, ITEM, 4, mode="template")
    with pytest.raises(InputError, match="`mode`: must be 'auto'"):
        budgeted_answer(backend, ITEM, 4, mode="fast")  # type: ignore[arg-type]


def test_answers_frame_has_one_row_per_answer() -> None:
    backend = _HiddenReasoner([("Answer: 15", 10, 5, "stop"), ("Answer: 15", 12, 8, "stop")])
    answers = [budgeted_answer(backend, ITEM, 8), budgeted_answer(backend, ITEM, 16)]
    frame = answers_frame(answers)
    assert list(frame["k"]) == [8, 16]
    assert list(frame["completion_tokens"]) == [10, 12]
    # Every field but the whole conversation of the answer phase, which is too big for a row.
    assert set(BudgetedAnswer.__dataclass_fields__) - set(frame.columns) == {"answer_prompt"}
