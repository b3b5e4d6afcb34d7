"""Built-in task families: determinism, sizes, and answers re-derived from the prompt text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.errors import InputError
from cotplan.tasks import (
    TaskItem,
    families,
    get_family,
    is_correct,
    list_families,
    make_tasks,
)


def _solve(item: TaskItem) -> str:
    """Answer each family's question from its text alone (an independent check)."""
    assert isinstance(item.prompt, str)
    text = item.prompt
    if item.family == "addition":
        terms = re.fullmatch(r"What is (.+)\?", text)
        assert terms
        return str(sum(int(t) for t in terms.group(1).split(" + ")))
    if item.family == "arithmetic":
        value = int(re.match(r"Start with (\d+)\.", text).group(1))  # type: ignore[union-attr]
        for op, x in re.findall(r"(add|subtract) (\d+)", text, flags=re.IGNORECASE):
            value += int(x) if op.lower() == "add" else -int(x)
        return str(value)
    if item.family == "coin_flip":
        flips = len(re.findall(r"\b\w+ flips the coin\.", text))
        return "yes" if flips % 2 == 0 else "no"
    if item.family == "last_letter":
        words = re.search(r'"([a-z ]+)"', text).group(1).split()  # type: ignore[union-attr]
        return "".join(w[-1] for w in words)
    if item.family == "count":
        target = re.search(r'word "(\w+)"', text).group(1)  # type: ignore[union-attr]
        listed = text.split("list: ", 1)[1].rstrip("?").split(", ")
        return str(listed.count(target))
    if item.family == "find":
        target = re.search(r'word "(\w+)"', text).group(1)  # type: ignore[union-attr]
        listed = text.split("list: ", 1)[1].removesuffix("? Answer yes or no.").split(", ")
        assert listed.count(target) <= 1
        return "yes" if target in listed else "no"
    if item.family == "pattern":
        pairs = [(int(a), int(b)) for a, b in re.findall(r"Input: (\d+) Output: (\d+)", text)]
        query = int(re.search(r"for input (\d+)\?", text).group(1))  # type: ignore[union-attr]
        if len(pairs) == 1:  # one example cannot pin a·x + b; check the example instead
            return item.answer
        (x1, y1), (x2, y2) = pairs[:2]
        slope = (y2 - y1) // (x2 - x1)
        return str(slope * query + (y1 - slope * x1))
    if item.family == "parity":
        bits = re.search(r"bits ([01 ]+) \(", text).group(1).split()  # type: ignore[union-attr]
        return str(sum(map(int, bits)) % 2)
    raise AssertionError(item.family)


def _size(item: TaskItem) -> int:
    text = str(item.prompt)
    if item.family == "addition":
        return text.count(" + ") + 1
    if item.family == "arithmetic":
        return len(re.findall(r"(?i)\b(add|subtract) \d", text))
    if item.family == "coin_flip":
        return text.count(" the coin.")
    if item.family == "last_letter":
        return len(re.search(r'"([a-z ]+)"', text).group(1).split())  # type: ignore[union-attr]
    if item.family in ("count", "find"):
        return len(text.split("list: ", 1)[1].split(", "))
    if item.family == "pattern":
        return text.count("Input: ")
    if item.family == "parity":
        return len(re.search(r"bits ([01 ]+) \(", text).group(1).split())  # type: ignore[union-attr]
    raise AssertionError(item.family)


def test_registry_lists_every_family_with_its_meaning_of_n() -> None:
    infos = list_families()
    names = [f.name for f in infos]
    assert names == list(families)
    assert set(names) == {
        "addition",
        "arithmetic",
        "coin_flip",
        "last_letter",
        "count",
        "find",
        "pattern",
        "parity",
    }
    for info in infos:
        assert info.n_meaning
        assert info.description
        assert info.example
        assert info.n_min >= 1
        assert info.n_max > info.n_min
        assert info.answer_kind in {"integer", "choice", "binary", "text"}
        assert isinstance(info.demo, bool)


@pytest.mark.parametrize("family", list(families))
def test_items_are_reproducible_sized_and_exactly_answered(family: str) -> None:
    info = get_family(family)
    n = max(info.n_min, 6)  # parity at n = 4 has only 16 distinct items
    items = make_tasks(family, n=n, count=30, seed=7)
    assert items == make_tasks(family, n=n, count=30, seed=7)
    assert items != make_tasks(family, n=n, count=30, seed=8)
    assert len({i.id for i in items}) == 30
    assert len({i.prompt for i in items}) == 30
    for item in items:
        assert item.family == family
        assert item.n == n
        assert item.kind == info.answer_kind
        assert _size(item) == n
        assert _solve(item) == item.answer
        assert is_correct(item.answer, item)
        # The prompt is the question only; budgeted generation adds the instructions.
        assert "step by step" not in str(item.prompt).lower()
        assert "Answer:" not in str(item.prompt)


def test_same_seed_at_another_size_draws_new_items() -> None:
    four = make_tasks("addition", n=4, count=5, seed=0)
    five = make_tasks("addition", n=5, count=5, seed=0)
    first_terms = [str(i.prompt).split(" + ")[:4] for i in five]
    assert [str(i.prompt).rstrip("?").split(" + ") for i in four] != first_terms


def test_yes_and_no_both_occur_in_coin_flips() -> None:
    answers = [i.answer for i in make_tasks("coin_flip", n=3, count=60, seed=0)]
    assert 15 <= answers.count("yes") <= 45


@given(
    family=st.sampled_from(list(families)),
    seed=st.integers(0, 2**32),
    data=st.data(),
)
@settings(max_examples=60, deadline=None, derandomize=True)
def test_any_size_and_seed_gives_right_answers(family: str, seed: int, data: st.DataObject) -> None:
    info = get_family(family)
    n = data.draw(st.integers(info.n_min, min(info.n_max, 25)))
    for item in make_tasks(family, n=n, count=2, seed=seed):  # parity at n = 1 has 2
        assert _solve(item) == item.answer
        assert _size(item) == n


def test_unknown_family_suggests_the_closest() -> None:
    with pytest.raises(InputError, match=r"`family`: unknown task family 'coinflip'.*coin_flip"):
        make_tasks("coinflip", n=3, count=2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 1}, r"`n`: must be an integer between 2 and 50, got 1"),
        ({"n": 51}, r"`n`: must be an integer between 2 and 50, got 51"),
        ({"n": True}, r"`n`: must be an integer between 2 and 50, got True"),
        ({"n": 2.5}, r"`n`: must be an integer between 2 and 50, got 2.5"),
        ({"n": 3, "count": 0}, r"`count`: must be an integer between 1 and 100000, got 0"),
        ({"n": 3, "seed": -1}, r"`seed`: must be an integer between 0 and"),
    ],
)
def test_bad_sizes_counts_and_seeds_name_the_parameter(
    kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"count": 2, **kwargs}
    with pytest.raises(InputError, match=message):
        make_tasks("addition", **args)  # type: ignore[arg-type]


def test_asking_for_more_items_than_exist_is_an_error() -> None:
    assert len(make_tasks("parity", n=2, count=4, seed=0)) == 4
    with pytest.raises(InputError, match=r"`count`: only 4 distinct parity items exist at n = 2"):
        make_tasks("parity", n=2, count=5, seed=0)


def test_demo_flags_match_the_saved_measurements() -> None:
    """The registry's `demo` is what the planner concludes from the saved answers."""
    from pathlib import Path

    import pandas as pd

    from cotplan.planner import BudgetPlanner

    path = Path(__file__).parents[1] / "benchmarks" / "results" / "task_families_smollm2.csv"
    answers = pd.read_csv(path)
    assert set(answers["family"]) == set(families)
    for name, info in families.items():
        planner = BudgetPlanner(n_bootstrap=0).fit(answers[answers["family"] == name])
        assert info.demo == (planner.status_ == "helps"), name
        assert info.measured != "not measured yet"


def test_family_sizes_are_the_measured_ones_and_the_demo_uses_them() -> None:
    """One place for the two sizes per family: the saved measurement ran at them, the demo
    draws at them (parity at 4 and 6 bits: 2 bits have only 4 distinct questions)."""
    from pathlib import Path

    import pandas as pd

    from cotplan.workflow import QUICK, demo_setup

    path = Path(__file__).parents[1] / "benchmarks" / "results" / "task_families_smollm2.csv"
    answers = pd.read_csv(path)
    for name, info in families.items():
        assert len(info.sizes) == 2, name
        assert info.n_min <= min(info.sizes) <= max(info.sizes) <= info.n_max, name
        measured = answers.loc[answers["family"] == name, "n"]
        assert tuple(sorted(set(measured))) == info.sizes, name
    assert families["parity"].sizes == (4, 6)
    assert demo_setup("parity", preset=QUICK, count=2, held_out=1).sizes == (4, 6)


def test_held_out_items_can_exclude_the_calibration_set() -> None:
    calibration = make_tasks("addition", n=2, count=60, seed=0)
    held_out = make_tasks("addition", n=2, count=21, seed=1, exclude=calibration)
    assert not {i.prompt for i in calibration} & {i.prompt for i in held_out}
    with pytest.raises(InputError, match=r"beyond the excluded ones, asked for 22"):
        make_tasks("addition", n=2, count=22, seed=1, exclude=calibration)
