"""`drop_seen`: held-out items minus those calibration saw, by id or by prompt."""

from __future__ import annotations

from cotplan.tasks import TaskItem, drop_seen, make_tasks


def test_an_item_seen_by_prompt_under_another_id_is_dropped() -> None:
    calibration = make_tasks("parity", n=2, count=4, seed=0)  # every question there is
    held = make_tasks("parity", n=2, count=2, seed=1)
    assert not {it.id for it in held} & {it.id for it in calibration}
    kept, dropped = drop_seen(held, calibration)
    assert (kept, dropped) == ([], 2)


def test_an_item_seen_by_id_is_dropped_whatever_its_prompt() -> None:
    first = TaskItem("q1", "What is 1 + 1?", "2")
    renamed = TaskItem("q1", "What is 2 + 2?", "4")
    fresh = TaskItem("q2", "What is 3 + 3?", "6")
    assert drop_seen([renamed, fresh], [first]) == ([fresh], 1)


def test_bare_ids_match_ids_only() -> None:
    item = TaskItem("q1", "q2", "x")
    assert drop_seen([item], ["q2"]) == ([item], 0)
    assert drop_seen([item], ["q1"]) == ([], 1)


def test_chat_prompts_compare_by_content() -> None:
    chat = ({"role": "user", "content": "Hi?"},)
    seen = TaskItem("a", chat, "x")
    again = TaskItem("b", ({"role": "user", "content": "Hi?"},), "x")
    other = TaskItem("c", ({"role": "user", "content": "Bye?"},), "x")
    assert drop_seen([again, other], [seen]) == ([other], 1)


def test_nothing_seen_keeps_everything_in_order() -> None:
    items = make_tasks("count", n=3, count=5, seed=0)
    assert drop_seen(iter(items), ()) == (items, 0)
