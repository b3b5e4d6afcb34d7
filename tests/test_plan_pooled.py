"""The pooled cap: certified on every calibrated size's items pooled, saved in plan.json and read
back (older plans without it still load), and what a capped call without a size gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from production_support import THINKER, Upstream, ask, make_plan, text_reply
from test_plan_saved import calibration, saved_plan

from cotplan.errors import InputError
from cotplan.planner import BudgetPlanner
from cotplan.planner.certify import clopper_pearson_upper
from cotplan.planner.pooled import POOLED_N, pooled_certificate
from cotplan.planner.run import SavedPlan
from cotplan.production import capped, report_of


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> tuple[SavedPlan, BudgetPlanner, Path]:
    """30 items at each of two sizes: ε = 0.3 is certified at both, and on the 60 pooled."""
    folder = tmp_path_factory.mktemp("pooled")
    plan, planner = saved_plan(folder, calibration(30), 0.3)
    return plan, planner, plan.save(folder / "plan.json")


def test_the_pooled_cap_is_certified_on_the_items_of_every_size(
    pooled: tuple[SavedPlan, BudgetPlanner, Path],
) -> None:
    plan, planner, _ = pooled
    cert = plan.pooled
    assert cert is not None
    assert cert.n == POOLED_N
    assert cert.k is not None
    assert cert.items == 60  # both sizes' items
    assert cert.error_bound <= 0.3
    # The bound is the exact one on the pooled counts, and the next budget down fails it.
    bound = float(clopper_pearson_upper(cert.errors, cert.items, plan.delta))
    assert bound == pytest.approx(cert.error_bound)
    table = planner.certified_.table
    below = table[table["k"] < cert.k]
    if not below.empty:
        k = int(below["k"].max())
        rows = table[table["k"] == k]
        lower = float(clopper_pearson_upper(rows["errors"].sum(), rows["items"].sum(), 0.05))
        assert lower > 0.3
    # Never more than the largest size's own cap, never less than the smallest's.
    assert plan.cap(4).tokens <= cert.k <= plan.cap(8).tokens
    cap = plan.pooled_cap()
    assert cap is not None
    assert (cap.tokens, cap.certified, cap.n) == (cert.k, True, 0.0)
    assert "pooled over n = 4, 8" in cap.note


def test_it_is_saved_and_read_back_and_an_older_plan_still_loads(
    pooled: tuple[SavedPlan, BudgetPlanner, Path], tmp_path: Path
) -> None:
    plan, _, path = pooled
    record = json.loads(path.read_text())
    assert record["pooled"]["k"] == plan.pooled.k  # type: ignore[union-attr]
    again = SavedPlan.load(path)
    assert again.pooled == plan.pooled
    del record["pooled"]
    older = tmp_path / "older.json"
    older.write_text(json.dumps(record))
    assert SavedPlan.load(older).pooled is None
    record["pooled"] = {**json.loads(path.read_text())["pooled"], "errors": 99}
    older.write_text(json.dumps(record, indent=2))
    with pytest.raises(InputError, match="errors among") as info:
        SavedPlan.load(older)
    assert info.value.field == "pooled.errors"


def test_one_size_or_no_shared_budget_gives_no_pooled_cap(tmp_path: Path) -> None:
    plan, planner = saved_plan(tmp_path, calibration(30, sizes=(4,)), 0.3)
    assert plan.pooled is None
    assert pooled_certificate(planner.certified_, 0.3) is None


def test_a_call_without_a_size_gets_the_pooled_cap(
    pooled: tuple[SavedPlan, BudgetPlanner, Path],
) -> None:
    plan, _, _ = pooled
    assert plan.pooled is not None
    own = SavedPlan(**{**plan.__dict__, "model": THINKER})
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2))
    reply = capped(upstream.client(), own, log=False).chat.completions.create(**ask())
    report = report_of(reply)
    assert (report.cap, report.size, report.certified) == (plan.pooled.k, 0.0, True)
    assert "no size given: pooled cap" in report.note
    assert upstream.requests[0][1]["max_tokens"] == plan.pooled.k
    # Without a pooled cap: the largest certified one, as before.
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2))
    reply = capped(upstream.client(), make_plan(THINKER), log=False).chat.completions.create(
        **ask()
    )
    assert "largest" in report_of(reply).note


def test_a_size_rule_in_the_plan_gives_a_call_its_size(tmp_path: Path) -> None:
    rule = {"by": "prompt_chars", "steps": [[10, 1], [100, 3]]}
    plan = make_plan(THINKER).with_size_rule(rule)
    path = plan.save(tmp_path / "plan.json")
    assert SavedPlan.load(path).size_rule == plan.size_rule
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2))
    client = capped(upstream.client(), path, log=False, size_policy="refuse")
    report = report_of(client.chat.completions.create(**ask()))  # 18 characters: n = 3
    assert (report.size, report.cap) == (3.0, 6)
    long = {"model": THINKER, "messages": [{"role": "user", "content": "x" * 101}]}
    with pytest.raises(InputError) as info:  # beyond the rule: no size, and refusal asked for
        client.chat.completions.create(**long)
    assert info.value.field == "size"
    assert (
        plan.with_size_rule({"by": "prompt_tokens", "steps": [[5, 3]]}).size_rule.size(  # type: ignore[union-attr]
            [{"role": "user", "content": "x" * 20}]
        )
        == 3.0
    )


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"by": "words", "steps": [[1, 1]]}, "size_rule.by"),
        ({"by": "prompt_chars", "steps": []}, "size_rule.steps"),
        ({"by": "prompt_chars", "steps": [[10, 1], [5, 2]]}, "size_rule.steps"),
        ({"by": "prompt_chars", "steps": [[10, -1]]}, "size_rule.steps"),
    ],
)
def test_a_bad_size_rule_is_refused_naming_the_field(
    rule: dict[str, object], field: str, tmp_path: Path
) -> None:
    with pytest.raises(InputError) as info:
        make_plan(THINKER).with_size_rule(rule)
    assert info.value.field == field
    record = json.loads(make_plan(THINKER).to_json())
    record["size_rule"] = rule
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(record, indent=2))
    with pytest.raises(InputError) as loaded:
        SavedPlan.load(path)
    assert loaded.value.field == field
    assert loaded.value.line is not None
