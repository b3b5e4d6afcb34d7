"""A server that sends no `usage`: its token counts are unknown, never 0, and budget sharing
(one greedy run at the largest budget cut at each smaller one) refuses them.

Before, the missing count read 0, `cut_run` took "the run is 0 tokens long" as real and handed
every smaller budget the whole long thought: every budget answered as well as the largest, and
the certified caps fell (on the fault server, from (17, 60) to (8, 32)). Here a template-mode
double thinks a fixed number of steps per size and answers right only when its thinking was
complete; the same calibration with and without `usage` must agree answer for answer, and the
plan must say which counts were unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt, TokenLogprob, Usage
from cotplan.cli import main
from cotplan.generate.budgeted import budgeted_answers, cut_run
from cotplan.planner.calibrate import calibrate, calibration_spend
from cotplan.planner.calibration_file import usage_note
from cotplan.tasks import TaskItem

BUDGETS = [0, 4, 8, 16, 32]


class _Thinker(Backend):
    """A text-completion endpoint with a known template: it thinks `steps(n)` tokens, then
    stops; the answer is right only after a complete thought. `usage` False: the server sends
    none (what `read_usage` makes of a response without it)."""

    model = "smollm2-135m-instruct"
    text_completions = True
    supports_logprobs = True
    default_concurrency = 1

    def __init__(self, *, usage: bool) -> None:
        self.usage = usage
        self.requests = 0

    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        self.requests += 1
        text = prompt if isinstance(prompt, str) else str(prompt)
        if text.rstrip().endswith("Answer:"):
            n = int(text.split("size ")[1].split(":")[0])
            done = text.count(" step") >= 4 * n
            return self._reply(" 7" if done else " 1", "stop", [" 7" if done else " 1"])
        n = int(text.split("size ")[1].split(":")[0])
        steps = [" step"] * (4 * n)
        cut = steps[:max_tokens]
        return self._reply("".join(cut), "length" if len(cut) < len(steps) else "stop", cut)

    def _reply(self, text: str, finish: str, tokens: Sequence[str]) -> Completion:
        usage = Usage(20, len(tokens)) if self.usage else Usage(trusted=False)
        notes = () if self.usage else ("the server sent no `usage`",)
        logprobs = tuple(TokenLogprob(t, -0.1) for t in tokens)
        return Completion(text, finish, usage, self.model, logprobs=logprobs, notes=notes)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


def _items() -> list[TaskItem]:
    return [
        TaskItem(id=f"{n}-{i}", prompt=f"Task of size {n}: what is 3 + 4?", answer="7", n=n)
        for n in (1, 2, 4)
        for i in range(3)
    ]


def test_a_run_whose_length_is_unknown_is_not_cut() -> None:
    tokens = tuple(TokenLogprob(t, -0.1) for t in ("a", " b", " c", " d"))
    run = Completion("a b c d", "stop", Usage(trusted=False), "m", logprobs=tokens)
    assert run.usage.known("completion_tokens") is None
    assert cut_run(run, 2) is None  # before: the whole run, as if it were 0 tokens long
    measured = Completion("a b c d", "stop", Usage(5, 4), "m", logprobs=tokens)
    assert measured.usage.known("completion_tokens") == 4
    short = cut_run(measured, 2)
    assert short is not None
    assert short.text == "a b"


def test_without_usage_every_budget_is_asked_on_its_own() -> None:
    item = _items()[-1]  # n = 4: 16 steps of thinking
    measured = budgeted_answers(_Thinker(usage=True), item, BUDGETS)
    backend = _Thinker(usage=False)
    unknown = budgeted_answers(backend, item, BUDGETS)
    assert [a.correct for a in unknown] == [a.correct for a in measured]
    assert [a.correct for a in unknown] == [False, False, False, True, True]
    assert [a.truncated for a in unknown] == [a.truncated for a in measured]
    assert not any(a.usage_trusted for a in unknown)


def test_the_calibration_and_its_caps_do_not_change_without_usage() -> None:
    measured = calibrate(_Thinker(usage=True), _items(), BUDGETS, progress=False)
    unknown = calibrate(_Thinker(usage=False), _items(), BUDGETS, progress=False)
    key = ["item", "k"]
    left = measured.frame.sort_values(key)[[*key, "correct", "truncated"]].reset_index(drop=True)
    right = unknown.frame.sort_values(key)[[*key, "correct", "truncated"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right)
    # The smallest budget answering every item right at each size: what a cap certifies.
    for frame in (measured.frame, unknown.frame):
        right_at = frame[frame["correct"].astype(bool)].groupby("n")["k"].min().to_dict()
        assert right_at == {1: 4, 2: 8, 4: 16}
    # Unknown counts are blank, never 0: the spend's token totals are unknown, not small.
    assert unknown.frame["reasoning_tokens"].isna().all()
    spend = calibration_spend(unknown.frame)
    assert spend["reasoning_tokens"] != spend["reasoning_tokens"]  # NaN
    assert usage_note(measured.frame) == ""
    note = usage_note(unknown.frame)
    assert f"of {len(unknown.frame)} answers are unknown" in note


@pytest.mark.slow  # fits every law and draws the charts
def test_plan_says_which_counts_were_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    unknown = calibrate(_Thinker(usage=False), _items(), BUDGETS, progress=False)
    path = unknown.to_csv(tmp_path / "calibration.csv")
    with pytest.raises(SystemExit) as info:
        main(["plan", "--calibration", str(path), "--eps", "0.3", "--out", str(tmp_path / "plan")])
    assert not info.value.code
    out = " ".join(capsys.readouterr().out.split())
    assert "note: the token counts of 45 of 45 answers are unknown" in out
    assert (tmp_path / "plan" / "plan.json").is_file()
