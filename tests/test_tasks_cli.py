"""`cotplan tasks list / make / check` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cotplan.cli import app, main
from cotplan.tasks import load_tasks, make_tasks

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
