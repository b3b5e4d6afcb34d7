"""Report folders are written as a unit (`cotplan.io.reports`): named at the start, staged beside
the target, moved into place together, a manifest written last; an interrupted command leaves
the folder exactly as it was."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from cotplan.cli import main
from cotplan.errors import InputError
from cotplan.io.reports import MANIFEST, ReportFolder, check_report_file, report_name


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_two_runs_in_the_same_second_get_two_folders() -> None:
    now = datetime(2026, 12, 1, 13, 0, 0)
    names = {report_name("calibrate", "openai:gpt-4o", now=now) for _ in range(50)}
    assert len(names) == 50
    assert all(name.startswith("calibrate-20261201-130000-") for name in names)
    assert all(name.endswith("-openai-gpt-4o") for name in names)


def test_a_new_folder_appears_whole_with_its_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COTPLAN_REPORTS", str(tmp_path / "reports"))
    first = ReportFolder.start(kind="calibrate")
    second = ReportFolder.start(kind="calibrate")
    assert first.target != second.target  # named at the start, apart even in one second
    (first.path / "calibration.csv").write_text("item,n,k,correct\n")
    assert not first.target.exists()  # nothing visible until the commit
    committed = first.commit()
    second.discard()
    assert committed.folder == first.target
    assert _visible(first.target) == ["calibration.csv", MANIFEST]
    assert committed.replaced == ()
    manifest = json.loads((first.target / MANIFEST).read_text())
    assert set(manifest["files"]) == {"calibration.csv"}
    assert _visible(tmp_path / "reports") == [first.target.name]  # no staging left behind


def test_an_error_or_ctrl_c_discards_what_was_staged(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "report"

    def interrupted() -> None:
        with ReportFolder.start(target) as report:
            (report.path / "plan.csv").write_text("n,k\n")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert not (tmp_path / "deep").exists()  # the folders it made for itself are gone too


def test_an_existing_folder_says_what_was_replaced(tmp_path: Path) -> None:
    target = tmp_path / "report"
    target.mkdir()
    (target / "calibration.csv").write_text("old calibration\n")
    (target / "plan.csv").write_text("old plan\n")
    with ReportFolder.start(target) as report:
        (report.path / "plan.csv").write_text("new plan\n")
        (report.path / "plan.json").write_text("{}\n")
        committed = report.commit(last=("plan.json",))
    assert committed.replaced == ("plan.csv",)
    assert committed.files[-1] == "plan.json"  # the file a reader trusts goes in last
    assert (target / "calibration.csv").read_text() == "old calibration\n"  # left alone
    assert (target / "plan.csv").read_text() == "new plan\n"
    assert _visible(tmp_path) == ["report"]
    assert check_report_file(target / "plan.csv") is None
    (target / "plan.csv").write_text("edited\n")
    note = check_report_file(target / "plan.csv")
    assert note is not None
    assert "differs from what cotplan wrote" in note
    assert check_report_file(target / "calibration.csv") is None  # not cotplan's: no claim


def test_a_file_in_the_way_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("mine")
    with pytest.raises(InputError, match=r"`out`: .*taken exists and is not a folder"):
        ReportFolder.start(tmp_path / "taken")
    assert _visible(tmp_path) == ["taken"]


def _calibration(path: Path) -> None:
    rows = ["item,n,k,correct"]
    rows += [f"i{i},4,{k},{int(k > 0 and i % 4 > 0)}" for i in range(12) for k in (0, 8, 32)]
    path.write_text("\n".join(rows) + "\n")


def test_plan_interrupted_while_rendering_leaves_the_old_report_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: killing `plan` during chart rendering left a new plan.csv beside the
    old plan.json. Now the new files are staged and the folder keeps the old pair."""
    from cotplan.charts import planner as planner_charts

    report = tmp_path / "report"
    report.mkdir()
    _calibration(report / "calibration.csv")
    argv = ["plan", "--calibration", str(report / "calibration.csv"), "--eps", "0.4"]
    argv += ["--bootstrap", "0", "--law", "step"]
    with pytest.raises(SystemExit) as first:
        main(argv)
    assert first.value.code in (0, None)
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    assert {"plan.json", "plan.csv", MANIFEST} <= set(before)

    class Interrupted:
        def save(self, path: str) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(planner_charts, "calibration_chart", lambda planner: Interrupted())
    with pytest.raises(SystemExit) as second:
        main([*argv[:4], "0.35", *argv[5:]])
    assert second.value.code == 130
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before
    assert _visible(tmp_path) == ["report"]  # no staging folder left beside it


def test_plan_into_its_own_folder_again_says_what_it_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report"
    report.mkdir()
    _calibration(report / "calibration.csv")
    argv = ["plan", "--calibration", str(report / "calibration.csv"), "--eps", "0.4"]
    argv += ["--bootstrap", "0", "--law", "step"]
    for _ in range(2):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code in (0, None)
    out = " ".join(capsys.readouterr().out.split())
    assert "replaced" in out
    assert "plan.json" in out.split("replaced", 1)[1]


def test_two_runs_into_one_new_folder_both_land_and_the_second_says_so(tmp_path: Path) -> None:
    target = tmp_path / "shared"
    first, second = ReportFolder.start(target), ReportFolder.start(target)
    (first.path / "calibration.csv").write_text("first\n")
    (second.path / "calibration.csv").write_text("second\n")
    (second.path / "extra.csv").write_text("second\n")
    assert first.commit().replaced == ()
    assert second.commit().replaced == ("calibration.csv",)
    assert (target / "calibration.csv").read_text() == "second\n"
    manifest = json.loads((target / MANIFEST).read_text())
    assert set(manifest["files"]) == {"calibration.csv", "extra.csv"}
    assert _visible(tmp_path) == ["shared"]
