"""One run per item serves every budget, on the embedded thinking model, in chat and template
modes: the tokens the server generated are counted by a proxy in front of it."""

from __future__ import annotations

import pytest

from cotplan.backends.local import LocalModel
from cotplan.generate.budgeted import budgeted_answer, budgeted_answers
from cotplan.loopback import UsageTally
from cotplan.planner.calibrate import calibrate
from cotplan.tasks import make_tasks

pytestmark = [pytest.mark.model, pytest.mark.slow]

ITEMS = make_tasks("count", n=3, count=3, seed=5)
UNCAPPED = 400
ANSWER_TOKENS = 16


@pytest.mark.parametrize("mode", ["chat", "template"])
def test_an_auto_calibration_generates_each_items_thinking_once(
    thinking_model: LocalModel, mode: str
) -> None:
    with UsageTally(thinking_model.base_url) as tally:
        backend = thinking_model.backend(cache=None, base_url=tally.base_url)
        result = calibrate(
            backend,
            ITEMS,
            mode=mode,  # type: ignore[arg-type]
            uncapped_tokens=UNCAPPED,
            answer_tokens=ANSWER_TOKENS,
            progress=False,
        )
    runs = [c for c in tally.calls if c[0] == UNCAPPED]
    others = [c for c in tally.calls if c[0] != UNCAPPED]
    # One uncapped run an item; every other request asks for an answer only.
    assert len(runs) == len(ITEMS)
    assert all(c[0] <= ANSWER_TOKENS for c in others)
    one_run_each = sum(c[2] for c in runs)
    thinking = tally.generated - sum(c[2] for c in others)
    assert thinking <= 1.05 * one_run_each
    # The grid reaches the thinking the runs measured (the 95th percentile of 3 items).
    (profile,) = result.thinking
    assert profile.lengths
    assert max(profile.budgets) >= sorted(profile.lengths)[1]
    assert sorted(result.frame["k"].unique()) == list(profile.budgets)
    assert len(result.frame) == len(ITEMS) * len(profile.budgets)


def test_chat_answers_cut_from_one_run_are_the_capped_requests_answers(
    thinking_model: LocalModel,
) -> None:
    """A prefix of the greedy run is the run capped there: the thinking, the forced answer and
    the token counts match a request made at that cap on its own."""
    backend = thinking_model.backend(cache=None)
    budgets = [16, 48]
    shared = budgeted_answers(backend, ITEMS[0], budgets, mode="chat", run_tokens=UNCAPPED)
    for answer in shared:
        alone = budgeted_answer(backend, ITEMS[0], answer.k, mode="chat")
        assert answer.reasoning == alone.reasoning
        assert answer.extracted == alone.extracted
        assert answer.reasoning_tokens == alone.reasoning_tokens == answer.k
        assert answer.truncated
        assert answer.forced
