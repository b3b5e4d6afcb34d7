"""Thinking traces for the embedded thinking model: their shape, their arithmetic, their states."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.errors import InputError
from cotplan.tasks import TaskItem, make_tasks
from cotplan.tasks.answers import is_correct
from cotplan.thinking.data import ThinkingSettings, render_prompt, training_examples
from cotplan.thinking.traces import (
    ANSWER_MARKER,
    THINK_CLOSE,
    THINK_OPEN,
    TRACE_FAMILIES,
    make_trace,
    work_lines,
)

_SIZES = {
    "count": (1, 12),
    "find": (1, 80),
    "coin_flip": (1, 8),
    "parity": (1, 10),
    "addition": (2, 6),
    "arithmetic": (1, 5),
    "last_letter": (1, 5),
}


@settings(max_examples=60, deadline=None)
@given(
    family=st.sampled_from(sorted(TRACE_FAMILIES)),
    size=st.integers(0, 100),
    seed=st.integers(0, 10_000),
)
def test_a_full_trace_settles_on_the_items_answer(family: str, size: int, seed: int) -> None:
    low, high = _SIZES[family]
    n = low + size % (high - low + 1)
    item = make_tasks(family, n=n, count=1, seed=seed)[0]
    trace = make_trace(item, np.random.default_rng(seed))
    assert trace.answer == item.answer
    assert is_correct(f"{ANSWER_MARKER} {trace.answer}", item)
    assert trace.text.startswith(THINK_OPEN)
    assert THINK_CLOSE + ANSWER_MARKER in trace.text
    # Over-thinking: at least one re-check after the answer settled.
    assert len(trace.thinking) > trace.settled_chars


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(sorted(TRACE_FAMILIES)), seed=st.integers(0, 10_000))
def test_a_truncated_trace_answers_from_the_state_it_reached(family: str, seed: int) -> None:
    high = _SIZES[family][1]
    item = make_tasks(family, n=high, count=1, seed=seed)[0]
    work = work_lines(item)
    trace = make_trace(item, np.random.default_rng(seed), truncate=True)
    assert trace.answer in work.states
    assert work.conclusion not in trace.thinking


def test_count_steps_carry_the_running_count() -> None:
    item = TaskItem(
        "x",
        'How many times does the word "cat" appear in this list: dog, cat, cat?',
        "2",
        kind="integer",
        family="count",
    )
    work = work_lines(item)
    assert work.steps == ("dog - no, 0", "cat - yes, 1", "cat - yes, 2")
    assert work.states == ("0", "0", "1", "2")


def test_a_family_without_traces_is_refused_by_name() -> None:
    item = make_tasks("pattern", n=2, count=1)[0]
    with pytest.raises(InputError, match="family"):
        work_lines(item)


def test_a_question_that_does_not_read_as_its_family_is_refused() -> None:
    item = TaskItem("odd", "What is love?", "x", family="addition")
    with pytest.raises(InputError, match="'odd'"):
        work_lines(item)


def test_training_examples_are_seeded_and_use_the_served_prompt() -> None:
    settings_ = ThinkingSettings(examples=30, seed=3)
    first, second = training_examples(settings_), training_examples(settings_)
    assert first == second
    assert training_examples(ThinkingSettings(examples=30, seed=4)) != first
    for example in first:
        assert example.prompt.startswith(render_prompt("")[:40])
        assert example.prompt.endswith("<|im_start|>assistant\n")
        assert example.completion.startswith(THINK_OPEN)
        assert example.completion.endswith("<|im_end|>")


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 80), seed=st.integers(0, 10_000))
def test_a_find_trace_stops_reading_where_the_word_stands(n: int, seed: int) -> None:
    item = make_tasks("find", n=n, count=1, seed=seed)[0]
    work = work_lines(item)
    words = str(item.prompt).split("list: ", 1)[1].removesuffix("? Answer yes or no.").split(", ")
    if item.answer == "yes":
        assert work.steps[-1].endswith("- yes")
        assert len(work.steps) == words.index(work.heading.split('"')[1]) + 1
        assert work.states[:-1] == ("no",) * len(work.steps)
    else:
        assert len(work.steps) == n
        assert set(work.states) == {"no"}


@settings(max_examples=40, deadline=None)
@given(family=st.sampled_from(["count", "find", "addition"]), seed=st.integers(0, 10_000))
def test_long_rechecks_read_at_least_to_where_the_answer_settled(family: str, seed: int) -> None:
    item = make_tasks(family, n=30, count=1, seed=seed)[0]
    work = work_lines(item)
    final = work.states[-1]
    settled = min(j for j in range(len(work.states)) if set(work.states[j:]) == {final})
    trace = make_trace(item, np.random.default_rng(seed), rechecks=(2, 2), recheck_to_settled=True)
    lines = trace.thinking[trace.settled_chars :].strip("\n").split("\n")
    # Two blocks: a re-check sentence, the steps re-read from the first, a confirmation.
    confirmations = ("Yes, ", "That agrees: ", "Same result, ")
    ends = [i for i, line in enumerate(lines) if line.startswith(confirmations)]
    assert len(ends) == 2
    for start, end in zip([0, ends[0] + 1], ends, strict=True):
        reread = lines[start + 1 : end]
        assert reread == list(work.steps[: len(reread)])
        assert len(reread) >= max(1, settled)
