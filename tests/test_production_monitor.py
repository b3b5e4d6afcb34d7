"""`cotplan monitor`: the call log read against the plan, the labels file checked line by
line, and the anytime-valid error alarm checked by seeded simulation (the long run is
benchmarks/monitor_alarm.py, transcript benchmarks/results/monitor_alarm.txt)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from production_support import PLAIN, make_plan, record, run_cli

from cotplan.errors import InputError
from cotplan.production import CallLog
from cotplan.production.monitor import load_labels, monitor
from cotplan.production.sequential import error_test, lower_bound, prior_for, simulate_alarms

EPS, DELTA = 0.1, 0.05
#: What benchmarks/monitor_alarm.py printed (2,000 runs): at 2ε the alarm fired by label 199 in
#: 90% of runs. The quick run here, with other seeds and 400 runs, must do as well by 250.
DRIFT_LABELS = 250


def test_at_the_nominal_error_the_alarm_fires_in_at_most_delta_of_runs() -> None:
    first = simulate_alarms(EPS, EPS, delta=DELTA, runs=400, labels=300, seed=11)
    assert (first > 0).mean() <= DELTA
    below = simulate_alarms(EPS / 2, EPS, delta=DELTA, runs=400, labels=300, seed=12)
    assert (below > 0).mean() <= (first > 0).mean()  # a better model alarms less, not more


def test_a_drift_to_twice_epsilon_alarms_within_the_stated_labels() -> None:
    first = simulate_alarms(2 * EPS, EPS, delta=DELTA, runs=400, labels=DRIFT_LABELS, seed=13)
    assert ((first > 0) & (first <= DRIFT_LABELS)).mean() >= 0.9


def test_peeking_after_every_label_is_what_is_simulated() -> None:
    # The simulation counts an alarm at ANY label, as a team reading the monitor after each
    # label would see it; a fixed-sample test read that way alarms far more often than δ.
    rng = np.random.default_rng(5)
    wrong = rng.random((400, 300)) < EPS
    s, t = np.cumsum(wrong, axis=1), np.arange(1, 301)
    from scipy.stats import binom

    naive = (binom.sf(s - 1, t, EPS) <= DELTA).any(axis=1).mean()
    assert naive > 3 * DELTA  # what the confidence sequence guards against


def test_the_lower_end_crosses_epsilon_exactly_when_the_alarm_fires() -> None:
    outcomes = [i % 3 == 0 for i in range(60)]  # an error rate of 1/3 against ε = 0.1
    test = error_test(outcomes, EPS, DELTA)
    assert test.alarm
    assert test.alarm_at is not None
    frame = test.to_frame()
    before = frame[frame["label"] < test.alarm_at]
    assert (before["e_value"] < 1 / DELTA).all()
    assert float(frame["lower"].iloc[test.alarm_at - 1]) >= EPS - 1e-9
    assert (before["lower"] <= EPS + 1e-9).all()
    assert "ALARM" in test.verdict


def test_few_errors_give_no_alarm_and_say_how_far_from_one() -> None:
    test = error_test([False] * 40 + [True] * 3, EPS, DELTA)
    assert not test.alarm
    assert test.lower < EPS
    assert test.verdict.startswith("no alarm: 3 of 43")
    assert lower_bound(0, 10, DELTA, prior_for(EPS)) == 0.0


@pytest.mark.parametrize(("eps", "delta", "field"), [(0.0, 0.05, "eps"), (0.1, 1.0, "delta")])
def test_the_test_checks_its_levels(eps: float, delta: float, field: str) -> None:
    with pytest.raises(InputError) as info:
        error_test([True], eps, delta)
    assert info.value.field == field


# -- the log against the plan -----------------------------------------------------------------


def write_case(tmp_path: Path, calls: int = 10) -> tuple[Path, Path]:
    """A log of `calls` calls at n = 3 (cap 6: every second one bitten), a plan beside its
    calibration (at n = 3 and k = 6 a quarter of the answers were cut)."""
    log = CallLog(tmp_path / "log.sqlite")
    for i in range(calls):
        bitten = i % 2 == 0
        log.append(
            record(
                call_id=f"c{i}",
                cap_bitten=bitten,
                answer_forced=bitten,
                reasoning_tokens=6 if bitten else 4,
                cost_usd=0.001,
            )
        )
    log.append(record(call_id="other", model="another-model"))
    plan = make_plan(PLAIN).save(tmp_path / "plan.json")
    rows = ["item,n,k,correct,truncated,forced,reasoning_tokens,cost_usd"]
    rows += [f"i{j},3,6,1,{int(j == 0)},{int(j == 0)},{6 if j == 0 else 3},0.002" for j in range(4)]
    rows += [f"i{j},3,12,1,0,0,5,0.003" for j in range(4)]
    (tmp_path / "calibration.csv").write_text("\n".join(rows) + "\n")
    return log.path, plan


def test_the_log_is_read_by_size_against_the_calibration(tmp_path: Path) -> None:
    log, plan = write_case(tmp_path)
    report = monitor(log, plan=plan)
    assert (report.calls, report.other_models) == (10, 1)
    (line,) = report.sizes
    assert (line.size, line.cap, line.calls) == (3.0, 6, 10)
    assert (line.cap_bitten, line.answer_forced, line.reasoning_tokens) == (0.5, 0.5, 5.0)
    assert (line.predicted_bitten, line.predicted_forced) == (0.25, 0.25)
    assert line.predicted_reasoning_tokens == 3.75
    assert line.cost_usd == pytest.approx(0.01)
    assert line.projected_cost_usd == pytest.approx(0.02)
    assert report.spend_usd == pytest.approx(0.01)
    assert report.projected_reasoning_tokens == pytest.approx(37.5)
    assert report.test is None
    assert not report.alarm
    assert any("other than the plan" in note for note in report.notes)
    assert list(report.to_frame()["calls"]) == [10]


def test_a_stream_stopped_early_pays_but_does_not_move_the_rates(tmp_path: Path) -> None:
    log_path, plan = write_case(tmp_path)
    # Stopped during the thinking: the cap never had the chance to bite.
    CallLog(log_path).append(
        record(call_id="s", cap_bitten=False, reasoning_tokens=1, cost_usd=0.001, outcome="stopped")
    )
    (line,) = monitor(log_path, plan=plan).sizes
    assert (line.calls, line.cap_bitten, line.reasoning_tokens) == (11, 0.5, 5.0)
    assert line.cost_usd == pytest.approx(0.011)


def test_without_its_calibration_the_plan_predicts_nothing_and_says_so(tmp_path: Path) -> None:
    log, plan = write_case(tmp_path)
    (tmp_path / "calibration.csv").unlink()
    report = monitor(log, plan=plan)
    assert math.isnan(report.sizes[0].predicted_bitten)
    assert math.isnan(report.projected_usd)
    assert any("was not found" in note for note in report.notes)


def test_labels_are_tested_against_the_plans_epsilon(tmp_path: Path) -> None:
    log, plan = write_case(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("call_id,correct\n" + "".join(f"c{i},{int(i >= 6)}\n" for i in range(10)))
    report = monitor(log, plan=plan, labels=labels)
    assert report.test is not None
    assert (report.test.labels, report.test.errors) == (10, 6)
    assert report.alarm
    assert (report.sizes[0].labelled, report.sizes[0].label_errors) == (10, 6)


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("id,correct\nc1,1\n", 1, "call_id"),
        ("call_id,correct\nc1,1\nc2,maybe\n", 3, "correct"),
        ("call_id,correct\nc1,1\n\nc1,0\n", 4, "call_id"),
        ("call_id,correct\n,1\n", 2, "call_id"),
        ("call_id,correct\nc1,1,extra\n", 2, "labels"),
        ("call_id,correct\nc1,1\nnot-a-call,1\n", 3, "call_id"),
    ],
)
def test_a_bad_labels_file_names_its_line_and_field(
    tmp_path: Path, text: str, line: int, field: str
) -> None:
    log, plan = write_case(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text(text)
    with pytest.raises(InputError) as info:
        monitor(log, plan=plan, labels=labels)
    assert (info.value.line, info.value.field) == (line, field)
    assert str(labels) in str(info.value)


def test_labels_without_a_target_are_refused(tmp_path: Path) -> None:
    log, _ = write_case(tmp_path)
    with pytest.raises(InputError) as info:
        monitor(log, labels=[])
    assert info.value.field == "eps"
    assert load_labels is not None


def test_a_file_that_is_no_log_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "log.sqlite"
    bad.write_text("not sqlite at all, just text that is long enough to be read as a header")
    with pytest.raises(InputError) as info:
        monitor(bad)
    assert info.value.field == "log"


# -- the command line -------------------------------------------------------------------------


def test_monitor_prints_the_table_and_exits_1_on_the_alarm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    log, plan = write_case(tmp_path)
    labels = tmp_path / "labels.csv"
    labels.write_text("call_id,correct\n" + "".join(f"c{i},0\n" for i in range(10)))
    code, out = run_cli(["monitor", str(log), "--plan", str(plan), "--labels", str(labels)], capsys)
    assert code == 1
    assert "ALARM" in out
    assert "0.25" in out  # the calibration's bite rate beside the log's
    labels.write_text("call_id,correct\nc0,1\n")
    code, out = run_cli(["monitor", str(log), "--plan", str(plan), "--labels", str(labels)], capsys)
    assert code == 0
    assert "no alarm" in out


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--eps", "1.5"], "`eps`"),
        (["--delta", "0"], "`delta`"),
        (["--labels", "missing.csv", "--eps", "0.1"], "`labels`"),
        (["--plan", "missing.json"], "`plan`"),
        (["--calibration", "missing.csv"], "`calibration`"),
        (["--labels", "LABELS"], "`eps`"),
    ],
)
def test_monitor_checks_every_option_before_reading_the_log(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    named: str,
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "LABELS").write_text("call_id,correct\nc1,1\n")
    log = tmp_path / "log.sqlite"
    log.write_text("")  # an empty file: any read of it would first migrate it
    code, out = run_cli(["monitor", str(log), *extra], capsys)
    assert code == 2
    assert named in out
    assert log.read_bytes() == b""  # nothing read, nothing written
