"""The production call log keeps unknown token counts unknown (issue 43).

A gateway call whose upstream sends no `usage` was logged as 0 tokens and averaged into
`cotplan monitor` as if it had thought for nothing. The log now stores such counts as NULL with
`usage_trusted` 0 (schema 6), `monitor` and `cost actuals` leave those calls out of their means
and totals and say how many, and an older log's rows that had no usage (a complete call with 0
prompt tokens) are judged so when the file is migrated or read.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import httpx2
import pytest
from adversarial_server import FaultServer
from production_support import THINKER, ask, make_plan, record
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.pricing import price_table
from cotplan.production import CallLog
from cotplan.production.gateway import Gateway
from cotplan.production.log import MIGRATIONS, TOKEN_COLUMNS
from cotplan.production.monitor import monitor
from cotplan.production.spend import UnknownSpendWarning, logged_calls


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            f"SELECT {', '.join(TOKEN_COLUMNS)}, usage_trusted FROM calls ORDER BY id"
        ).fetchall()
    db.close()
    return rows


def _gateway_calls(log: Path) -> None:
    """Three calls through a running gateway: one whose upstream sends its usage, then one
    whole and one streamed whose upstream sends none."""
    with FaultServer() as upstream:
        gateway = Gateway(
            make_plan(THINKER), upstream.base_url, api_key="sk-test", log=log, provider=None,
            timeout=5.0,
        )  # fmt: skip
        with gateway, httpx2.Client(timeout=30.0) as http:
            url = gateway.base_url + "/chat/completions"
            assert http.post(url, json={**ask(), "size": 3}).status_code == 200
            upstream.fault = "no-usage"
            whole = http.post(url, json={**ask(), "size": 3})
            streamed = http.post(url, json={**ask(), "size": 3, "stream": True})
    assert whole.status_code == streamed.status_code == 200
    assert whole.json()["choices"][0]["message"]["content"]  # the answer is kept
    assert "[DONE]" in streamed.text


def test_a_gateway_call_without_usage_is_logged_unknown_and_monitor_leaves_it_out(
    tmp_path: Path,
) -> None:
    log = tmp_path / "production.sqlite"
    _gateway_calls(log)
    measured, whole, streamed = _rows(log)
    assert measured[-1] == 1
    assert None not in measured
    # Stored as unknown, never as 0 (before: 0, 0, 0 and trusted).
    assert whole == streamed == (None, None, None, 0)
    records = CallLog(log).records()
    assert [r.tokens_known for r in records] == [True, False, False]
    report = monitor(log)
    (line,) = report.sizes
    assert line.calls == 3
    assert line.unknown_tokens == 2
    # The mean is the measured call's alone (before: a third of it, two 0s averaged in).
    assert line.reasoning_tokens == records[0].reasoning_tokens
    assert report.reasoning_tokens == records[0].reasoning_tokens
    assert report.unknown_tokens == 2
    assert any("token counts of 2 of 3 call(s) are unknown" in n for n in report.notes)
    out = CliRunner().invoke(app, ["monitor", str(log)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "note: the token counts of 2 of 3 call(s) are unknown" in said


def test_cost_actuals_says_how_many_calls_it_left_out(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "production.sqlite")
    day = "2026-11-02T10:00:00+00:00"
    log.append(record(time=day, model="gpt-4o-mini", cost_usd=0.5))
    log.append(record(time=day, model="gpt-4o-mini", cost_usd=0.25))
    log.append(record(time=day, model="gpt-4o-mini", prompt_tokens=None, usage_trusted=False))
    log.close()
    with pytest.warns(UnknownSpendWarning, match=r"1 of 3 call\(s\) .* unknown token counts"):
        calls = logged_calls(log.path, price_table())
    assert [float(c.usd) for c in calls] == [0.5, 0.25]
    csv = tmp_path / "t.csv"
    out = CliRunner().invoke(
        app, ["cost", "actuals", str(log.path), "--csv", str(csv)], env={"COLUMNS": "200"}
    )
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "note: 1 of 3 call(s)" in said
    assert "unknown token counts" in said
    assert csv.read_text().splitlines()[1].startswith("2026-11,(untagged),2,0.75")


def test_a_count_given_as_none_makes_the_row_unknown_whatever_the_flag(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "log.sqlite")
    log.append(record(reasoning_tokens=None))  # the flag left True by mistake
    log.append(record(usage_trusted=False))  # placeholders given with the flag
    log.close()
    assert _rows(log.path) == [(None, None, None, 0), (None, None, None, 0)]
    assert all(not r.tokens_known and r.prompt_tokens is None for r in log.records())


def _version_5_log(path: Path) -> None:
    """A log as cotplan wrote it before schema 6: one measured call, one complete call the
    gateway logged with 0s because its upstream sent no usage, one stream the caller stopped
    (its pieces counted, no prompt: kept as it was)."""
    with sqlite3.connect(path) as db:
        for number, migrate in enumerate(MIGRATIONS[:5], start=1):
            migrate(db)
            db.execute(f"PRAGMA user_version = {number}")
        for tokens, outcome in (((6, 2, 90), "complete"), ((0, 0, 0), "complete"),
                                ((2, 0, 0), "stopped")):  # fmt: skip
            db.execute(
                "INSERT INTO calls (time, model, size, cap, basis, mode, reasoning_tokens, "
                "answer_tokens, prompt_tokens, cap_bitten, answer_forced, cost_usd, via, "
                "outcome) VALUES ('2026-11-02T10:00:00+00:00', 'gpt-4o-mini', 3, 6, "
                "'certified', 'template', ?, ?, ?, 1, 1, NULL, 'gateway', ?)",
                (*tokens, outcome),
            )
    db.close()


def test_an_older_log_is_migrated_with_its_unmeasured_rows_made_unknown(tmp_path: Path) -> None:
    path = tmp_path / "production.sqlite"
    _version_5_log(path)
    before = path.read_bytes()
    read = CallLog(path).records()  # read-only: judged as migrating would, file unchanged
    assert path.read_bytes() == before
    assert [r.tokens_known for r in read] == [True, False, True]
    log = CallLog(path)
    log.append(record(time="2026-11-03T10:00:00+00:00", model="gpt-4o-mini"))
    log.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 6
        ids = [row[0] for row in db.execute("SELECT id FROM calls ORDER BY id")]
    db.close()
    assert ids == [1, 2, 3, 4]  # the rows and their ids kept
    assert _rows(path) == [(6, 2, 90, 1), (None, None, None, 0), (2, 0, 0, 1), (6, 2, 90, 1)]
    assert [r.tokens_known for r in CallLog(path).records()] == [True, False, True, True]
    report = monitor(path)
    assert report.unknown_tokens == 1
    # Means over the complete calls whose counts are known: 6 and 6, not 6, 0 and 6.
    assert report.sizes[0].reasoning_tokens == 6.0
    assert not math.isnan(report.sizes[0].reasoning_tokens)
