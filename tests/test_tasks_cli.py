"""`cotplan tasks list / make / check / split` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cotplan.cli import app, main
from cotplan.errors import InputError
from cotplan.tasks import TaskItem, load_tasks, make_tasks, save_tasks
from cotplan.tasks.files import split_tasks

runner = CliRunner()


def test_list_shows_every_family_and_what_n_means() -> None:
    result = runner.invoke(app, ["tasks", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in ("addition", "arithmetic", "coin_flip", "last_letter", "count", "pattern"):
        assert name in result.output
    assert "numbers to add" in result.output
    assert "demo" in result.output


def test_make_writes_a_loadable_file_for_several_sizes(tmp_path: Path) -> None:
    out = tmp_path / "arith.jsonl"
    result = runner.invoke(
        app,
        ["tasks", "make", "arithmetic", "--n", "2", "--n", "5", "--count", "3", "--seed", "4",
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "wrote 6 arithmetic items" in result.output
    items = load_tasks(out)
    expected = make_tasks("arithmetic", n=2, count=3, seed=4)
    assert items == expected + make_tasks("arithmetic", n=5, count=3, seed=4)


def test_make_without_out_prints_jsonl() -> None:
    result = runner.invoke(app, ["tasks", "make", "parity", "--n", "3", "--count", "2"])
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["n"] for r in rows] == [3, 3]
    assert {r["kind"] for r in rows} == {"binary"}


def test_check_summarises_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        '{"id": "a", "prompt": "2+2?", "answer": "4"}\n'
        '{"id": "b", "prompt": "3+3?", "answer": "6", "n": 2, "family": "sums"}\n',
        encoding="utf-8",
    )
    result = runner.invoke(app, ["tasks", "check", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "2 items, all valid" in result.output
    assert "1 without n (prompt tokens)" in result.output


def test_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    with pytest.raises(SystemExit) as info:
        main(["tasks", "make", "coinflip", "--n", "3"])
    assert info.value.code == 2
    assert "unknown task family 'coinflip'; did you mean coin_flip?" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "x"}\n', encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["tasks", "check", str(bad)])
    assert info.value.code == 2
    assert "line 1, `answer`: missing" in capsys.readouterr().err


def test_list_measured_shows_the_findings() -> None:
    result = runner.invoke(app, ["tasks", "list", "--measured"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "no answer right at any budget" in result.output


def test_split_writes_two_files_split_by_item(tmp_path: Path) -> None:
    source = tmp_path / "parity.jsonl"
    items = make_tasks("parity", n=6, count=8, seed=2) + make_tasks("parity", n=9, count=8, seed=2)
    save_tasks(items, source)
    argv = ["tasks", "split", str(source), "--held-out", "0.25", "--seed", "3"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    calibration = load_tasks(tmp_path / "parity.calibration.jsonl")
    held_out = load_tasks(tmp_path / "parity.held-out.jsonl")
    assert "wrote 12 items" in result.output
    assert "wrote 4 items" in result.output
    assert {i.id for i in calibration}.isdisjoint({i.id for i in held_out})
    assert sorted(i.id for i in calibration + held_out) == sorted(i.id for i in items)
    assert sorted(i.n or 0 for i in held_out) == [6, 6, 9, 9]  # each size is held out
    # Same seed, same split; the files are in the source's order.
    again = split_tasks(items, 0.25, seed=3)
    assert [i.id for i in again.held_out] == [i.id for i in held_out]
    assert [i.id for i in again.calibration] == [i.id for i in items if i in calibration]
    assert again.to_frame()["set"].value_counts().to_dict() == {"calibration": 12, "held_out": 4}


def test_split_keeps_items_asking_the_same_question_together() -> None:
    items = [TaskItem(id=f"q{i}", prompt=f"question {i // 2}", answer="1", n=3) for i in range(12)]
    for seed in range(5):
        split = split_tasks(items, 0.5, seed=seed)
        held = {item.prompt for item in split.held_out}
        assert held.isdisjoint({item.prompt for item in split.calibration})
        assert len(split.held_out) == 6


def test_split_checks_its_fraction_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    with pytest.raises(SystemExit) as info:
        main(["tasks", "split", str(tmp_path / "none.jsonl"), "--held-out", "1.5"])
    assert info.value.code == 2
    assert "`held_out`: must be a fraction in (0, 1), got 1.5" in capsys.readouterr().err
    one = [TaskItem(id="a", prompt="x", answer="1")]
    with pytest.raises(InputError, match="`items`: needs at least 2 items"):
        split_tasks(one, 0.5)


# -- the lab's families ------------------------------------------------------------------------


def test_make_knows_the_lab_families_by_name_or_by_backend(tmp_path: Path) -> None:
    from cotplan.research.lab.reasoning.tasks import make_lab_tasks

    out = tmp_path / "lab.jsonl"
    result = runner.invoke(
        app,
        ["tasks", "make", "--family", "lab-parity", "--n", "4", "--count", "3", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert load_tasks(out) == make_lab_tasks("parity", n=4, count=3, seed=0)
    # The same family name means the lab's questions when the items are for a lab model.
    for_lab = runner.invoke(
        app,
        ["tasks", "make", "--family", "parity", "--backend", "lab:parity-overthink", "--n", "4",
         "--count", "1"],
    )  # fmt: skip
    assert json.loads(for_lab.output)["prompt"].startswith("Parity: [1]")
    built_in = runner.invoke(
        app, ["tasks", "make", "--family", "parity", "--n", "4", "--count", "1"]
    )
    assert json.loads(built_in.output)["family"] == "parity"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["parity", "--family", "parity", "--n", "3"], "family"),
        (["--n", "3"], "family"),
        (["parity"], "n"),
        (["--family", "lab-parity", "--n", "999"], "n"),
    ],
)
def test_make_names_the_option_it_refuses(
    args: list[str], field: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    with pytest.raises(SystemExit) as info:
        main(["tasks", "make", *args])
    assert info.value.code == 2
    assert f"`{field}`" in capsys.readouterr().err


@pytest.mark.torch
@pytest.mark.slow
def test_lab_items_calibrate_a_lab_model_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    tasks = tmp_path / "lab.jsonl"
    main_ok(["tasks", "make", "--family", "parity", "--backend", "lab:parity-overthink",
             "--n", "4", "--count", "4", "--out", str(tasks)])  # fmt: skip
    main_ok(["calibrate", "--tasks", str(tasks), "--backend", "lab:parity-overthink",
             "--budgets", "0,24", "--out", str(tmp_path / "cal"), "--no-progress"])  # fmt: skip
    import pandas as pd

    frame = pd.read_csv(tmp_path / "cal" / "calibration.csv")
    assert len(frame) == 8
    # With its whole trace (3n = 12 tokens, then re-checks) the lab model answers parity.
    assert frame[frame["k"] == 24]["correct"].mean() == 1.0
    # The issue's own command: a family asked of a lab model is made the lab's way.
    family = ["--family", "parity", "--backend", "lab:parity-overthink", "--n", "4"]
    rest = ["--count", "4", "--budgets", "0,24", "--out", str(tmp_path / "fam"), "--no-progress"]
    main_ok(["calibrate", *family, *rest])
    direct = pd.read_csv(tmp_path / "fam" / "calibration.csv")
    assert list(direct["item"]) == list(frame["item"])
    assert list(direct["correct"]) == list(frame["correct"])


def main_ok(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
