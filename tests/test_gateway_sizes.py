"""No size needed: a call without one, or beyond the plan's reach, gets the plan's largest
certified cap with a note (or a refusal where the operator asks for it); a size may also come
from the call's metadata or the gateway's header."""

from __future__ import annotations

from pathlib import Path

import pytest
from production_support import THINKER, Upstream, ask, make_plan, text_reply
from starlette.testclient import TestClient

from cotplan.errors import InputError
from cotplan.production import capped, report_of
from cotplan.production.gateway import make_app


def two_phase() -> Upstream:
    return Upstream(text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2))


def test_a_call_without_a_size_gets_the_largest_certified_cap_with_a_note() -> None:
    upstream = two_phase()
    client = capped(upstream.client(), make_plan(THINKER, tokens=6, n=3), log=False)
    reply = client.chat.completions.create(**ask())
    report = report_of(reply)
    assert report.cap == 6
    assert "no size given" in report.note
    assert upstream.requests[0][1]["max_tokens"] == 6


def test_a_size_beyond_reach_gets_the_largest_cap_unless_refused() -> None:
    upstream = two_phase()
    client = capped(upstream.client(), make_plan(THINKER, tokens=6, n=3), log=False)
    report = report_of(client.chat.completions.create(**ask(), size=50))
    assert report.cap == 6
    assert "beyond its reach" in report.note
    strict = capped(Upstream().client(), make_plan(THINKER), log=False, size_policy="refuse")
    for size in (None, 50):
        with pytest.raises(InputError) as info:
            strict.chat.completions.create(**ask(), size=size)
        assert info.value.field == "size"


def test_the_size_may_come_from_metadata(tmp_path: Path) -> None:
    upstream = two_phase()
    client = capped(upstream.client(), make_plan(THINKER), log=False, size_policy="refuse")
    with TestClient(make_app(client)) as http:
        ok = http.post("/v1/chat/completions", json={**ask(), "metadata": {"cotplan_size": "3"}})
        bad = http.post("/v1/chat/completions", json={**ask(), "metadata": {"cotplan_size": "big"}})
    assert ok.status_code == 200
    assert ok.json()["cotplan"]["size"] == 3
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "metadata.cotplan_size")


def test_the_size_policy_is_checked() -> None:
    with pytest.raises(InputError) as info:
        capped(Upstream().client(), make_plan(THINKER), log=False, size_policy="maybe")
    assert info.value.field == "size_policy"


def test_an_empty_forced_answer_is_flagged_not_passed_off() -> None:
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply(" ", "length", 1))
    client = capped(upstream.client(), make_plan(THINKER), log=False)
    reply = client.chat.completions.create(**ask(), size=3, max_tokens=1)
    report = report_of(reply)
    assert reply.choices[0].message.content == ""
    assert report.answer_missing
    assert "no answer" in report.note
