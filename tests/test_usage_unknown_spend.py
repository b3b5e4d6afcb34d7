"""Token counts a server could not be trusted for stay unknown where they are summed and shown:
a permutation average's accounts, its frame and `cotplan answer`'s line (before: the
placeholder 0s of a budgeted answer were added to the sum as if measured)."""

from __future__ import annotations

import numpy as np
import pytest

from cotplan.backends.base import Usage
from cotplan.generate.answer_record import BudgetedAnswer
from cotplan.permutation.job import accounts
from cotplan.permutation.scoring import PromptScore
from cotplan.render.usage import usage_phrase


def _answer(*, trusted: bool) -> BudgetedAnswer:
    return BudgetedAnswer(
        item="a", family="count", n=3, k=8, expected="3", extracted="3", correct=True,
        reasoning="", answer_text="3", truncated=False, forced=False,
        prompt_tokens=0 if not trusted else 40, question_tokens=0 if not trusted else 30,
        reasoning_tokens=0 if not trusted else 8, answer_tokens=0 if not trusted else 2,
        cost_usd=0.0, latency_s=0.1, answer_prob=1.0, cap_held=True, overrun=0,
        from_cache=False, calls=1, model="m", mode="template", usage_trusted=trusted,
    )  # fmt: skip


def _score(*answers: BudgetedAnswer) -> PromptScore:
    return PromptScore(
        probs=np.array([1.0, 0.0]), raw=np.array([1.0, 0.0]), covered_mass=1.0,
        missing=(False, False), completions=(), answers=answers,
    )  # fmt: skip


@pytest.mark.parametrize("trusted", [True, False])
def test_an_answer_with_untrusted_counts_makes_the_sum_unknown(trusted: bool) -> None:
    totals = accounts([_score(_answer(trusted=True), _answer(trusted=trusted))])
    assert totals.usage.trusted is trusted
    if trusted:
        assert totals.usage.known("prompt_tokens") == 80
        assert usage_phrase(totals.usage).startswith("80 prompt + ")
    else:
        assert totals.usage.known("prompt_tokens") is None
        assert totals.usage.known("completion_tokens") is None
        assert usage_phrase(totals.usage) == (
            "token counts unknown (the server's could not be trusted)"
        )


def test_the_phrase_of_trusted_counts_is_the_counts() -> None:
    usage = Usage(prompt_tokens=120, completion_tokens=8)
    assert usage_phrase(usage) == "120 prompt + 8 completion tokens"
    assert "unknown" in usage_phrase(Usage(prompt_tokens=0, completion_tokens=0, trusted=False))
