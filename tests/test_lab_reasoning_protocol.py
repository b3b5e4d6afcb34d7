"""How the lab backend reads prompts, and the study's model-free arithmetic (no torch needed)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from cotplan.errors import InputError
from cotplan.generate.budgeted import DEFAULT_PROMPT
from cotplan.research.lab.reasoning.backend import encode_prompt
from cotplan.research.lab.reasoning.study import (
    StudySettings,
    empirical_budgets,
    oracle_budgets,
    study_grid,
)
from cotplan.research.lab.reasoning.tokenizer import default_tokenizer

TOKENIZER = default_tokenizer()
QUESTION = "Parity: [1] 1 [2] 0"


def words(prompt: object) -> list[str]:
    return [TOKENIZER.words[i] for i in encode_prompt(prompt, TOKENIZER)]  # type: ignore[arg-type]


def test_a_bare_question_is_answered_with_reasoning() -> None:
    assert words(QUESTION) == ["<bos>", "Parity:", "[1]", "1", "[2]", "0", "Reasoning:"]


def test_budgeted_answers_instruction_asks_for_reasoning() -> None:
    prompt = [{"role": "user", "content": f"{QUESTION}\n{DEFAULT_PROMPT.instruction}"}]
    assert words(prompt)[-1] == "Reasoning:"


def test_the_direct_prompt_asks_for_the_answer_alone() -> None:
    prompt = [{"role": "user", "content": f"{QUESTION}\n{DEFAULT_PROMPT.direct}"}]
    assert words(prompt)[-2:] == ["0", "Answer:"]


def test_the_forced_answer_closes_the_reasoning_so_far() -> None:
    prompt = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": f"{QUESTION}\n{DEFAULT_PROMPT.instruction}"},
        {"role": "assistant", "content": " [1] 1 1 [2]"},
        {"role": "user", "content": DEFAULT_PROMPT.force},
    ]
    assert words(prompt)[-6:] == ["Reasoning:", "[1]", "1", "1", "[2]", "Answer:"]


def test_a_forced_answer_after_a_written_answer_answers_again() -> None:
    prompt = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": " [1] 1 1 [2] 0 1 Answer: 1"},
        {"role": "user", "content": DEFAULT_PROMPT.force},
    ]
    assert words(prompt)[-2:] == ["1", "Answer:"]


def test_a_tale_style_budget_statement_still_reasons() -> None:
    content = f'{QUESTION}\nThink step by step and use less than 8 tokens, then give "Answer:".'
    assert words([{"role": "user", "content": content}])[-1] == "Reasoning:"


def test_an_assistant_prefill_is_continued() -> None:
    prompt = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "[1] 1"}]
    assert words(prompt)[-3:] == ["Reasoning:", "[1]", "1"]


@pytest.mark.parametrize(
    ("prompt", "match"),
    [
        ("What is the parity of 1 0?", "no lab question"),
        ([{"role": "assistant", "content": "[1]"}], "assistant turn before any lab question"),
        (
            [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "I think"}],
            "unknown words 'I', 'think'",
        ),
        ("", "must not be empty"),
    ],
)
def test_prompts_the_model_cannot_read_are_refused(prompt: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        words(prompt)


def test_the_grid_reaches_past_the_full_trace() -> None:
    # Every budget to 3n + 3, then four into an over-thinker's check pass.
    assert study_grid(4) == [*range(16), 18, 21, 24, 27]
    grid = study_grid(16, max_points=13)
    assert grid == [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 47, 48, 50, 51, 54, 57, 60, 63]


def test_empirical_budget_is_where_the_error_stays_below_eps() -> None:
    rows = []
    # Item a: right from k = 6 on; item b: right at k = 3 by luck, then from k = 9 on.
    for item, right in (("a", [0, 0, 1, 1]), ("b", [0, 1, 0, 1])):
        for k, r in zip([0, 3, 6, 9], right, strict=True):
            rows.append({"item": item, "n": 4, "k": k, "correct": bool(r)})
    frame = pd.DataFrame(rows)
    # Errors by budget: 1, 0.5, 0.5, 0.
    table = empirical_budgets(frame, [1.0, 0.5, 0.4])
    assert table["k"].tolist() == [0.0, 3.0, 9.0]
    oracle = oracle_budgets(frame).set_index("item")
    assert oracle.loc["a", "oracle_k"] == 6
    assert oracle.loc["b", "oracle_k"] == 3
    assert oracle.loc["b", "stable_k"] == 9


def test_an_item_never_right_has_no_oracle_budget() -> None:
    frame = pd.DataFrame({"item": ["x", "x"], "n": [2, 2], "k": [0, 6], "correct": [False] * 2})
    assert math.isnan(oracle_budgets(frame)["oracle_k"].iloc[0])
    assert empirical_budgets(frame, [0.5])["k"].iloc[0] == math.inf


@pytest.mark.parametrize(
    ("changes", "match"),
    [({"sizes": ()}, "`sizes`"), ({"items": 0}, "`items`"), ({"eps": 1.5}, "`eps`")],
)
def test_study_settings_are_checked(changes: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        StudySettings(**changes)  # type: ignore[arg-type]


def test_a_family_needing_no_reasoning_says_so() -> None:
    from cotplan.research.lab.reasoning.report import no_law

    frame = pd.DataFrame(
        {"item": ["a", "a", "b", "b"], "n": [4, 4, 8, 8], "k": [0, 3, 0, 3], "correct": [True] * 4}
    )
    assert no_law(empirical_budgets(frame, [0.2, 0.1])).startswith("no reasoning needed")
    mixed = frame.assign(correct=[False, False, True, True])
    assert "without reasoning at some" in no_law(empirical_budgets(mixed, [0.2]))
    once = frame.assign(correct=[False, True, False, False])
    assert "fewer than two sizes" in no_law(empirical_budgets(once, [0.2]))
