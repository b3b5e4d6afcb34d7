"""`cotplan monitor` on calls under the certified early exit: their own lines (stops by rule,
by the model and at the ceiling, stop_k, probe tokens), the fixed cap's bite rate read over
fixed-cap calls only, the exit replayed on the calibration, and their labels in the alarm."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from production_support import PLAIN, make_plan, record, run_cli

from cotplan.errors import InputError
from cotplan.generate.probing import ExitRule, StoppingRule
from cotplan.planner.exit_plan import ExitPlan
from cotplan.production import CallLog
from cotplan.production.monitor import monitor

RULE = StoppingRule(agree=2)
#: The rule's name, as the wrapper logs it in `exit_rule`.
NAME = RULE.name

#: Four calibration items at n = 3, answered at k = 2, 4, 6 (the cap): (answer, thinking) per
#: budget. Replayed under "same answer at 2 probes", probing every 2 tokens up to the ceiling 6:
#: i0 stops by the rule at 4, i1 by the rule at the ceiling, i2 at the ceiling, i3 ended its
#: thinking at 3 tokens (before the probe at 4). Ceiling share 1/4, forced 3/4, mean thinking
#: at the stop 4.75, earlier probes' answer tokens 1.5 a call (one token each).
CALIBRATION = {
    "i0": [("5", 2), ("5", 4), ("5", 6)],
    "i1": [("3", 2), ("4", 4), ("4", 6)],
    "i2": [("1", 2), ("2", 4), ("3", 6)],
    "i3": [("7", 2), ("7", 3), ("7", 3)],
}


def write_plan(folder: Path, *, exit_json: bool = True, rule: StoppingRule = RULE) -> Path:
    """plan.json (cap 6 at n = 3), its calibration and, beside them, exit.json."""
    plan = make_plan(PLAIN).save(folder / "plan.json")
    rows = ["item,n,k,correct,extracted,truncated,forced,reasoning_tokens,answer_tokens,cost_usd"]
    for item, answers in CALIBRATION.items():
        for k, (answer, thinking) in zip((2, 4, 6), answers, strict=True):
            cut = int(thinking >= k)
            rows.append(f"{item},3,{k},1,{answer},{cut},{cut},{thinking},1,0.002")
    (folder / "calibration.csv").write_text("\n".join(rows) + "\n")
    if exit_json:
        exits = ExitPlan(
            model=PLAIN, eps=0.1, delta=0.05, sizes={3: ExitRule(ceiling=6, every=2, rule=rule)}
        )
        exits.save(folder / "exit.json")
    return plan


def exit_record(stopped_by: str, stop_k: int | None, probes: int, **changes: Any) -> Any:
    """A call under the exit: its thinking `stop_k`, one answer token per earlier probe (which
    the log counts in reasoning_tokens), bitten only at the ceiling, forced unless ended."""
    values: dict[str, Any] = {
        "exit_rule": NAME,
        "stopped_by": stopped_by,
        "stop_k": stop_k,
        "probe_tokens": probes,
        "reasoning_tokens": (stop_k or 0) + probes,
        "cap_bitten": stopped_by == "ceiling",
        "answer_forced": stopped_by in ("rule", "ceiling"),
        "cost_usd": 0.002,
    }
    return record(**{**values, **changes})


def write_log(folder: Path, *, fixed: bool = True, exits: bool = True) -> Path:
    """Fixed-cap calls f0..f3 (two bitten) and exit calls e0..e4: two stopped by the rule at 4
    tokens, one at the ceiling, one the model ended at 3, and one stream the caller closed
    before the exit decided (no stop_k)."""
    log = CallLog(folder / "log.sqlite")
    if fixed:
        for i in range(4):
            bitten = i < 2
            log.append(
                record(
                    call_id=f"f{i}",
                    cap_bitten=bitten,
                    answer_forced=bitten,
                    reasoning_tokens=6 if bitten else 4,
                    cost_usd=0.001,
                )
            )
    if exits:
        log.append(exit_record("rule", 4, 1, call_id="e0"))
        log.append(exit_record("rule", 4, 1, call_id="e1"))
        log.append(exit_record("ceiling", 6, 2, call_id="e2"))
        log.append(exit_record("ended", 3, 1, call_id="e3"))
        log.append(exit_record("", None, 1, call_id="e4", outcome="stopped"))
    return log.path


def test_exit_calls_get_a_line_of_their_own_beside_the_replayed_exit(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    report = monitor(write_log(tmp_path), plan=plan)
    fixed, under = report.sizes
    assert (report.calls, report.exit_calls) == (9, 5)
    # The fixed cap's bite rate over its own calls, against the calibration at the cap (3 of
    # the 4 items ran to 6): the rule's early stops do not dilute it.
    assert (fixed.exit_rule, fixed.calls, fixed.cap_bitten, fixed.answer_forced) == (
        "",
        4,
        0.5,
        0.5,
    )
    assert (fixed.predicted_bitten, fixed.predicted_forced) == (0.75, 0.75)
    assert (fixed.by_rule, fixed.probe_tokens) == (0, 0)
    assert math.isnan(fixed.stop_k)
    assert under.exit_rule == NAME
    assert (under.calls, under.by_rule, under.by_end, under.by_ceiling) == (5, 2, 1, 1)
    assert (under.cap_bitten, under.answer_forced) == (0.25, 0.75)  # of the 4 that ran to the end
    assert under.stop_k == pytest.approx(17 / 4)
    assert under.probe_tokens == 6  # the closed stream's probe was paid too
    # Thinking 17 and probing 5 over the calls that stopped: probing is 5/22 of that spend.
    assert under.probe_share == pytest.approx(5 / 22)
    assert under.reasoning_tokens == pytest.approx(22 / 4)
    assert (under.predicted_bitten, under.predicted_forced) == (0.25, 0.75)
    assert under.predicted_stop_k == pytest.approx(4.75)
    assert under.predicted_probe_tokens == pytest.approx(1.5)
    assert under.predicted_reasoning_tokens == pytest.approx(6.25)
    assert math.isnan(under.projected_cost_usd)
    assert math.isnan(report.projected_usd)
    assert any("no projected spend for exit calls" in note for note in report.notes)


def test_the_replay_stops_where_the_certification_replays_the_rule(tmp_path: Path) -> None:
    from cotplan.planner.calibrate import load_calibration
    from cotplan.planner.early_exit import apply_rule, probe_sequences

    plan = write_plan(tmp_path)
    frame = load_calibration(tmp_path / "calibration.csv").frame
    stops = apply_rule(RULE, probe_sequences(frame, {3: 6}, every=2))
    under = monitor(write_log(tmp_path), plan=plan).sizes[1]
    assert under.predicted_stop_k == pytest.approx(stops["thinking_tokens"].mean())
    assert under.predicted_probe_tokens == pytest.approx(stops["probe_tokens"].mean())
    # Two items stop at 6, but i1's rule fired there: a stop by the rule, not a bite.
    assert (stops["stop_k"] == 6).mean() == 0.5
    assert under.predicted_bitten == 0.25


def test_spend_is_read_as_logged_since_probing_is_already_in_it(tmp_path: Path) -> None:
    report = monitor(write_log(tmp_path))
    rows = CallLog(tmp_path / "log.sqlite").records()
    assert report.reasoning_tokens == sum(r.reasoning_tokens for r in rows)
    assert report.spend_usd == pytest.approx(4 * 0.001 + 5 * 0.002)
    assert report.sizes[1].cost_usd == pytest.approx(5 * 0.002)


def test_a_log_of_exit_calls_alone_has_no_fixed_line(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    report = monitor(write_log(tmp_path, fixed=False), plan=plan)
    (line,) = report.sizes
    assert (line.exit_rule, line.by_rule, line.by_end, line.by_ceiling) == (NAME, 2, 1, 1)
    frame = report.to_frame()
    assert {"exit_rule", "by_rule", "by_end", "by_ceiling", "stop_k", "probe_share"} <= set(
        frame.columns
    )
    assert list(frame["probe_tokens"]) == [6]


def test_labels_of_exit_calls_feed_the_one_alarm(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    log = write_log(tmp_path)
    labels = tmp_path / "labels.csv"
    # Every fixed-cap call right, every exit call wrong: only the exit's labels can alarm.
    labels.write_text(
        "call_id,correct\n"
        + "".join(f"f{i},1\n" for i in range(4))
        + "".join(f"e{i},0\n" for i in range(5))
    )
    report = monitor(log, plan=plan, labels=labels)
    fixed, under = report.sizes
    assert (fixed.labelled, fixed.label_errors) == (4, 0)
    assert (under.labelled, under.label_errors) == (5, 5)
    assert report.test is not None
    assert (report.test.labels, report.test.errors) == (9, 5)
    assert report.alarm
    labels.write_text("call_id,correct\n" + "".join(f"e{i},0\n" for i in range(5)))
    alone = monitor(write_log(tmp_path / "alone", fixed=False), plan=plan, labels=labels)
    assert alone.test is not None
    assert (alone.test.labels, alone.test.errors, alone.alarm) == (5, 5, True)


def test_without_a_matching_exit_plan_the_exit_line_predicts_nothing(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, exit_json=False)
    log = write_log(tmp_path)
    report = monitor(log, plan=plan)
    assert math.isnan(report.sizes[1].predicted_bitten)
    assert report.sizes[0].predicted_bitten == 0.75  # the fixed cap's predictions stay
    assert any("no exit.json beside the plan" in note for note in report.notes)
    other = tmp_path / "other"
    other.mkdir()
    write_plan(other, rule=StoppingRule(agree=3))
    report = monitor(log, plan=plan, exit_plan=other / "exit.json")
    assert math.isnan(report.sizes[1].predicted_stop_k)
    assert any("is not the one the calls ran" in note for note in report.notes)


def test_an_exit_plan_for_another_epsilon_or_without_a_plan_is_refused(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    log = write_log(tmp_path)
    wrong = ExitPlan(model=PLAIN, eps=0.2, delta=0.05, sizes={})
    with pytest.raises(InputError) as info:
        monitor(log, plan=plan, exit_plan=wrong)
    assert info.value.field == "exit_plan"
    with pytest.raises(InputError) as info:
        monitor(log, exit_plan=tmp_path / "exit.json")
    assert info.value.field == "exit_plan"


# -- the command line -------------------------------------------------------------------------


#: What `cotplan monitor LOG --plan PLAN --labels LABELS` printed for tests/
#: test_production_monitor.py's `write_case` before exit calls had lines of their own (after
#: its first line, which names the log and wraps where the path is long).
FIXED_ONLY = """\
                            the cap, by size
  n   cap   basis       calls    bit   calib.   forced   calib.   wrong
 ───────────────────────────────────────────────────────────────────────
  3     6   certified      10   0.50     0.25     0.50     0.25    3/10
                spend per call, by size
  n   cap   reasoning   calib.       spend   projected
 ──────────────────────────────────────────────────────
  3     6         5.0      3.8   $0.001000   $0.002000
spend $0.010000 (projected $0.020000); reasoning tokens 50 (projected 38)"""


def test_a_log_without_exit_calls_prints_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_production_monitor import write_case

    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    log, plan = write_case(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("call_id,correct\n" + "".join(f"c{i},{int(i > 2)}\n" for i in range(10)))
    code, out = run_cli(["monitor", str(log), "--plan", str(plan), "--labels", str(labels)], capsys)
    assert code == 1
    assert out.startswith("10 calls in")
    shown = [line.rstrip() for line in out.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(shown) if "the cap, by size" in line)
    assert "\n".join(shown[start:]).startswith(FIXED_ONLY)
    assert "exit" not in out.replace(str(tmp_path), "")


def test_monitor_prints_where_the_exit_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    plan = write_plan(tmp_path)
    log = write_log(tmp_path)
    code, out = run_cli(["monitor", str(log), "--plan", str(plan)], capsys)
    assert code == 0
    words = " ".join(out.split())  # the first line names the log, and wraps where it is long
    assert "(5 under the certified exit)" in words
    assert "the cap, by size" in words
    assert "the certified exit: where it stopped, by size" in words
    assert f"rule at n = 3: {NAME}" in words
    rows = [line.split() for line in out.splitlines()]
    # n, ceiling, calls, by rule, ended, at the cap, its share beside the replay, wrong; then
    # per call stop k and probe tokens, each beside the replay, probing's share of the
    # reasoning spend, the reasoning tokens and the price.
    assert ["3", "6", "5", "2", "1", "1", "0.25", "0.25", "–"] in rows
    assert ["3", "4.2", "4.8", "1.2", "1.5", "0.23", "5.5", "$0.002000"] in rows


@pytest.mark.parametrize(
    ("extra", "named"),
    [(["--exit-plan", "missing.json"], "`exit_plan`"), (["--exit-plan", "EXIT"], "`exit_plan`")],
)
def test_the_exit_plan_option_is_checked_before_the_log_is_read(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    named: str,
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "EXIT").write_text("{}")  # exists, but no --plan to replay it on
    log = tmp_path / "log.sqlite"
    log.write_text("")
    code, out = run_cli(["monitor", str(log), *extra], capsys)
    assert code == 2
    assert named in out
    assert log.read_bytes() == b""
