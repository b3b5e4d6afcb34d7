"""Tags on calls (team, feature) from the wrapper's and the gateway's request metadata, carried
into the production call log (schema 5, which keeps an older file's rows readable) and into
`cotplan cost actuals --by team,feature` read from that log."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from production_support import THINKER, Upstream, ask, make_plan, record, text_reply
from starlette.testclient import TestClient
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.errors import InputError
from cotplan.production import CallLog, capped
from cotplan.production.gateway import make_app
from cotplan.production.log import MIGRATIONS
from cotplan.production.tags import call_tags, decode_tags, parse_tag_header


def two_phase() -> Upstream:
    return Upstream(text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2))


def test_tags_come_from_metadata_then_the_header_then_the_tags_argument() -> None:
    metadata = {"team": "search", "feature": "suggest", "cotplan_size": "3", "n": 4}
    assert call_tags(metadata) == {"team": "search", "feature": "suggest"}
    assert call_tags(metadata, {"feature": "rank"}, "team=ads, cost_centre=cc-12") == {
        "team": "ads",
        "feature": "rank",
        "cost_centre": "cc-12",
    }
    assert parse_tag_header('{"team": "ads"}') == {"team": "ads"}
    with pytest.raises(InputError) as bad:
        parse_tag_header("team")
    assert bad.value.field == "X-Cotplan-Tags"
    with pytest.raises(InputError) as wrong:
        call_tags({}, ["team"])
    assert wrong.value.field == "tags"
    assert decode_tags("") == {}
    assert decode_tags("[1]") == {}


def test_the_wrapper_logs_a_calls_tags_and_does_not_send_them_on(tmp_path: Path) -> None:
    upstream = two_phase()
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(upstream.client(), make_plan(THINKER), log=log)
    client.chat.completions.create(
        **ask(),
        size=3,
        metadata={"team": "search", "feature": "suggest"},
        tags={"feature": "rank"},
    )
    (row,) = log.records()
    assert decode_tags(row.tags) == {"team": "search", "feature": "rank"}
    assert all("tags" not in body and "metadata" not in body for _, body in upstream.requests)


def test_the_gateway_takes_tags_from_its_header_and_refuses_a_bad_one(tmp_path: Path) -> None:
    upstream = two_phase()
    log = CallLog(tmp_path / "log.sqlite")
    client = capped(upstream.client(), make_plan(THINKER), log=log)
    with TestClient(make_app(client)) as http:
        ok = http.post(
            "/v1/chat/completions",
            json={**ask(), "size": 3, "metadata": {"team": "search"}},
            headers={"X-Cotplan-Tags": "team=ads, feature=ranking"},
        )
        bad = http.post(
            "/v1/chat/completions",
            json={**ask(), "size": 3},
            headers={"X-Cotplan-Tags": "ads"},
        )
    assert ok.status_code == 200
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "X-Cotplan-Tags")
    (row,) = log.records()
    assert decode_tags(row.tags) == {"team": "ads", "feature": "ranking"}


def _old_log(path: Path) -> None:
    """A call log as cotplan wrote it before tags (schema 4), with one row."""
    with sqlite3.connect(path) as db:
        for number, migrate in enumerate(MIGRATIONS[:4], start=1):
            migrate(db)
            db.execute(f"PRAGMA user_version = {number}")
        db.execute(
            "INSERT INTO calls (time, model, size, cap, basis, mode, reasoning_tokens, "
            "answer_tokens, prompt_tokens, cap_bitten, answer_forced, cost_usd, via) VALUES "
            "('2026-11-02T10:00:00+00:00', 'gpt-4o-mini', 3, 6, 'certified', 'hidden', 6, 2, "
            "90, 1, 1, 0.25, 'gateway')"
        )
    db.close()


def test_an_old_log_keeps_its_rows_and_takes_tagged_ones_into_actuals_by_team(
    tmp_path: Path,
) -> None:
    path = tmp_path / "production.sqlite"
    _old_log(path)
    log = CallLog(path)
    (old,) = log.records()  # read-only: the old file is not migrated by reading it
    assert old.tags == ""
    assert old.cost_usd == 0.25
    log.append(
        record(
            time="2026-11-03T10:00:00+00:00",
            model="gpt-4o-mini",
            cost_usd=1.5,
            tags=json.dumps({"team": "search", "feature": "suggest"}),
        )
    )
    log.append(record(time="2026-11-04T10:00:00+00:00", model="gpt-4o-mini", cost_usd=math.nan))
    log.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    db.close()
    assert [r.tags for r in CallLog(path).records()][:2] == [
        "",
        '{"team": "search", "feature": "suggest"}',
    ]
    args = ["cost", "actuals", str(path), "--by", "team,feature", "--csv", str(tmp_path / "t.csv")]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "100"})
    assert out.exit_code == 0, out.output
    rows = (tmp_path / "t.csv").read_text().splitlines()
    assert rows[0] == "month,team,feature,calls,usd,share"
    assert rows[1:] == [
        "2026-11,(untagged),(untagged),1,0.25,0.14285714285714285",
        "2026-11,search,suggest,1,1.5,0.8571428571428571",
    ]
