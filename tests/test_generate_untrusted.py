"""Usage a server got wrong, and an answer it never sent, carried through budgeted CoT: a call
whose counts cannot be trusted has no cost (NaN and a note, never $0) and marks its row; a
``content: null`` answer is its own outcome, not a wrong answer; the cut that lets one run serve
several budgets keeps both flags.

`cotplan.backends.parsing` sets the flags from the response (`Usage.trusted`,
`Completion.no_answer`, `Completion.notes`); here a scripted double returns such completions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt, TokenLogprob, Usage
from cotplan.backends.budgets import rule_for_model
from cotplan.generate import BudgetedAnswer, answers_frame, budgeted_answer
from cotplan.generate.budgeted import cut_run
from cotplan.tasks import TaskItem

ITEM = TaskItem(id="q1", prompt="What is 3 + 4?", answer="7", kind="integer", n=2)
# The embedded model's name is priced at a deliberate zero, whatever the date: a trusted call
# costs exactly $0.0, so NaN can only come from the untrusted usage.
MODEL = "smollm2-135m-instruct"
BAD_USAGE = Usage(trusted=False)
WHY = ("`usage.completion_tokens` is missing",)


class _Scripted(Backend):
    """A chat model behind the OpenAI API that replies from a script."""

    supports_logprobs = False
    text_completions = False

    def __init__(self, replies: Sequence[Completion], provider: str = "openai") -> None:
        self.model = MODEL
        self.budget_rule = rule_for_model(provider, MODEL).name
        self.replies = list(replies)

    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        return self.replies.pop(0)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


def _reply(text: str, finish: str = "stop", usage: Usage | None = None, **kw: Any) -> Completion:
    return Completion(text, finish, usage or Usage(10, 4), MODEL, **kw)


# -- usage that cannot be trusted ---------------------------------------------------------------


def test_a_trusted_call_is_priced_and_marked_trusted() -> None:
    answer = budgeted_answer(_Scripted([_reply("7. Answer: 7")]), ITEM, 8, logprobs=False)
    assert answer.cost_usd == 0.0
    assert answer.cost_note == ""
    assert answer.usage_trusted
    assert answer.correct


def test_an_untrusted_call_has_no_cost_not_zero_and_says_why() -> None:
    reply = _reply("7. Answer: 7", usage=BAD_USAGE, notes=WHY)
    answer = budgeted_answer(_Scripted([reply]), ITEM, 8, logprobs=False)
    assert math.isnan(answer.cost_usd)
    assert "cannot be trusted" in answer.cost_note
    assert WHY[0] in answer.cost_note
    assert not answer.usage_trusted
    assert "token counts of 1 call(s) cannot be trusted" in answer.budget_note
    # The answer itself is still scored: only its counts are in doubt.
    assert answer.correct


def test_one_untrusted_call_of_two_marks_the_whole_answer() -> None:
    cut = _reply("3 plus", "length", Usage(10, 8))
    forced = _reply("Answer: 7", usage=BAD_USAGE, notes=WHY)
    answer = budgeted_answer(_Scripted([cut, forced]), ITEM, 8, logprobs=False)
    assert answer.calls == 2
    assert math.isnan(answer.cost_usd)
    assert not answer.usage_trusted
    assert answer.forced
    assert answer.correct


def test_the_cut_keeps_the_flags_of_the_run_it_cuts() -> None:
    tokens = tuple(TokenLogprob(t, -0.1) for t in ("3", " plus", " 4", " is", " 7"))
    run = Completion(
        "3 plus 4 is 7", "stop", Usage(10, 5), MODEL, logprobs=tokens, latency_s=1.0, notes=WHY
    )
    cut = cut_run(run, 2)
    assert cut is not None
    assert cut.text == "3 plus"
    assert cut.truncated
    assert cut.usage.completion_tokens == 2
    assert cut.usage.prompt_tokens == 10
    assert cut.usage_trusted
    assert cut.notes == WHY
    assert cut.latency_s == 0.4
    # A run whose length is unknown is not cut at all: each budget is then asked on its own
    # (tests/test_usage_unknown.py).
    assert cut_run(replace(run, usage=Usage(10, 5, trusted=False)), 2) is None


# -- an answer the server never sent ------------------------------------------------------------


def test_no_answer_is_its_own_outcome_not_a_wrong_answer() -> None:
    # A thinker that closed its thinking inside the budget, then sent `content: null`.
    why = ("the server sent no answer (`content: null`)",)
    silent = _reply("", reasoning="3 + 4 = 7", notes=why, no_answer=True)
    backend = _Scripted([silent], provider="vllm")
    backend.protocol = "think"
    answer = budgeted_answer(backend, ITEM, 8, logprobs=False)
    assert answer.calls == 1
    assert answer.no_answer
    assert not answer.answer_lost
    assert answer.extracted is None
    assert not answer.correct
    assert "sent no answer" in answer.budget_note


def test_a_forced_answer_that_never_came_is_no_answer() -> None:
    cut = _reply("3 plus", "length", Usage(10, 8))
    silent = _reply("", no_answer=True)
    answer = budgeted_answer(_Scripted([cut, silent]), ITEM, 8, logprobs=False)
    assert answer.forced
    assert answer.no_answer
    assert not answer.correct


def test_a_cut_thought_with_no_content_then_an_answer_is_scored() -> None:
    # Under a reasoning parser a thought cut at k comes back with no content: that is the cut,
    # not a missing answer, and the forced answer after it is scored.
    cut = _reply("", "length", Usage(10, 8), reasoning="3 plus", no_answer=True)
    backend = _Scripted([cut, _reply(" 7")], provider="vllm")
    backend.protocol = "think"
    answer = budgeted_answer(backend, ITEM, 8, logprobs=False)
    assert not answer.no_answer
    assert answer.correct


def test_a_cap_that_ate_the_answer_is_answer_lost_not_no_answer() -> None:
    eaten = _reply("", "length", Usage(10, 24), reasoning="3 plus 4", no_answer=True)
    backend = _Scripted([eaten], provider="llama.cpp-thinking")
    backend.protocol = "think"
    answer = budgeted_answer(backend, ITEM, 8, answer_tokens=8, logprobs=False)
    assert answer.path == "one-request"
    assert answer.answer_lost
    assert not answer.no_answer
    assert not answer.correct


def test_a_one_request_reply_with_no_answer_is_no_answer() -> None:
    silent = _reply("", "stop", Usage(10, 6), reasoning="3 plus 4", no_answer=True)
    backend = _Scripted([silent], provider="llama.cpp-thinking")
    backend.protocol = "think"
    answer = budgeted_answer(backend, ITEM, 8, logprobs=False)
    assert answer.path == "one-request"
    assert answer.no_answer
    assert not answer.answer_lost
    assert not answer.correct


# -- the record -----------------------------------------------------------------------------------


def test_the_new_columns_come_last_and_old_rows_still_build_a_record() -> None:
    answer = budgeted_answer(_Scripted([_reply("Answer: 7")]), ITEM, 8, logprobs=False)
    frame = answers_frame([answer])
    assert list(frame.columns)[-3:] == ["usage_trusted", "no_answer", "completion_tokens"]
    # A row saved before the two fields existed (a CSV read back) still makes a record, with
    # the defaults: trusted, and an answer sent.
    row = frame.drop(columns=["usage_trusted", "no_answer", "completion_tokens"]).iloc[0]
    old = {str(k): v.item() if hasattr(v, "item") else v for k, v in row.items()}
    rebuilt = BudgetedAnswer(**old)
    assert rebuilt.usage_trusted
    assert not rebuilt.no_answer
    assert pd.isna(frame["cost_usd"]).sum() == 0
