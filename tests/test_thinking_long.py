"""The long thinker's training data: traces of hundreds to thousands of tokens whose answer
settles item by item, and the command that trains it refusing bad options before torch loads."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.errors import InputError
from cotplan.thinking.data import (
    CURRICULUM_RAMP,
    LONG_MIX,
    PRESETS,
    ThinkingSettings,
    training_examples,
)
from cotplan.thinking.traces import work_lines
from cotplan.thinking.train import _batches


def test_the_long_preset_writes_traces_several_times_longer_than_the_short_one() -> None:
    def lengths(preset: str) -> list[int]:
        settings = ThinkingSettings(**{**PRESETS[preset], "examples": 80})
        return [len(e.completion) for e in training_examples(settings) if not e.truncated]

    short, long = lengths("short"), lengths("long")
    # Characters, not tokens (no tokenizer here): a step line is about 6 tokens of 12 chars.
    assert statistics.median(long) > 3 * statistics.median(short)
    assert statistics.median(long) > 1_000
    settings = ThinkingSettings(**{**PRESETS["long"], "examples": 80})
    assert {e.family for e in training_examples(settings)} == set(LONG_MIX)
    assert all(10 <= e.n <= 80 for e in training_examples(settings))


def test_find_items_settle_at_different_steps_within_one_size() -> None:
    from cotplan.tasks import make_tasks

    steps = {len(work_lines(item).steps) for item in make_tasks("find", n=40, count=30, seed=3)}
    # Where the word stands decides how much thinking an item needs: many distinct lengths.
    assert len(steps) >= 10


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--preset", "huge"], "preset"),
        (["--checkpoint-every", "0"], "checkpoint_every"),
        (["--device", "tpu"], "device"),
        (["--preset", "long-curriculum"], "resume"),
    ],
)
def test_train_thinking_refuses_bad_options_before_torch_loads(
    tmp_path: Path, extra: list[str], field: str
) -> None:
    result = CliRunner().invoke(
        app, ["models", "train-thinking", "--out", str(tmp_path / "a"), *extra]
    )
    assert isinstance(result.exception, InputError)
    assert result.exception.field == field
    assert not (tmp_path / "a").exists()


def test_a_curriculum_grows_the_sizes_along_the_examples_and_keeps_their_order() -> None:
    settings = ThinkingSettings(**{**PRESETS["long-curriculum"], "examples": 200})
    examples = training_examples(settings)
    sizes = [e.n for e in examples if e.family == "addition"]
    early, late = sizes[: len(sizes) // 5], sizes[-len(sizes) // 5 :]
    assert max(early) <= 10 + round(30 * 0.2 / CURRICULUM_RAMP) + 1
    assert max(late) == 40 or max(late) >= 35
    assert sum(late) / len(late) > sum(early) / len(early) + 8
    # Without the curriculum the same mix draws the whole range from the first example.
    flat = training_examples(ThinkingSettings(**{**PRESETS["long-focus"], "examples": 200}))
    assert max(e.n for e in flat[:40] if e.family == "addition") > 25


def test_a_curriculum_trains_in_the_examples_order_and_otherwise_shuffles() -> None:
    import numpy as np

    encoded = [([1] * (10 - i), [1] * (10 - i)) for i in range(6)]
    assert _batches(encoded, 2, np.random.default_rng(0), curriculum=True) == [
        [0, 1],
        [2, 3],
        [4, 5],
    ]
    shuffled = _batches(encoded, 1, np.random.default_rng(0))
    assert sorted(b[0] for b in shuffled) == list(range(6))
    assert shuffled != [[i] for i in range(6)]


@pytest.mark.model
def test_the_long_thinker_is_served_thinks_longer_and_its_cap_holds(cotplan_home: Path) -> None:
    from cotplan.backends.adapters import locate_adapter
    from cotplan.backends.local import LocalModel
    from cotplan.generate import budgeted_answer
    from cotplan.tasks import make_tasks

    located = locate_adapter("thinking-long")
    assert located is not None
    assert located[0].name == "smollm2-135m-thinking-long"
    # A word near the top of a 16-word list: a short trace, so the test stays quick.
    item = next(
        it for it in make_tasks("find", n=16, count=20, seed=7) if len(work_lines(it).steps) <= 6
    )
    with LocalModel("thinking-long", threads=1, replicas=1) as model:
        backend = model.backend(cache=None)
        uncapped = budgeted_answer(backend, item, 1024)
        capped = budgeted_answer(backend, item, 8)
    assert "thinking-long" in model.model_id
    # An answer in the task's form; how often it is right is benchmarks/long_thinker.py's job
    # (one item's correctness would pin the test to one adapter's luck).
    assert uncapped.extracted in ("yes", "no")
    assert not uncapped.answer_lost
    # It re-checks after the answer settled: more thinking than the reference trace's steps.
    assert uncapped.reasoning_tokens > 8 * len(work_lines(item).steps)
    assert capped.reasoning_tokens <= 8
