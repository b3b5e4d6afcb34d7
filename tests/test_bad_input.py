"""A corpus of bad inputs: each gets one clear cotplan error naming the field (and the line, for
files), the CLI exits 2 without a traceback, and nothing saved before is lost or overwritten.

Every case runs the real CLI in-process (`cotplan.cli.main`). An exception that is not turned
into the one-line error escapes `main` and fails the test, so "no traceback" is checked by
construction; one case also runs as a separate process to check what a user's terminal shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cotplan.cli import main

GOOD_ROW = '{"id": "a", "prompt": "What is 1+1?", "answer": "2"}'


@dataclass(frozen=True)
class Case:
    """`files` are written into the case's folder; `{dir}` in the arguments is that folder."""

    name: str
    argv: tuple[str, ...]
    expect: tuple[str, ...]  # substrings of the one error line (the field, the line)
    files: tuple[tuple[str, bytes], ...] = ()


def _text(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _calibration_csv(rows: int = 30) -> bytes:
    lines = ["item,n,k,correct"]
    lines += [
        f"i{i // 3},4,{(0, 8, 32)[i % 3]},{int(i % 3 > 0 and i % 5 > 0)}" for i in range(rows)
    ]
    return _text(*lines)


TASKS = ("calibrate", "--tasks", "{dir}/tasks.jsonl", "--out", "{dir}/report", "--no-progress")
PLAN = ("plan", "--calibration", "{dir}/calibration.csv", "--out", "{dir}/report")
CALL = ("cost", "call", "gpt-4o", "--prompt-tokens", "100", "--completion-tokens", "10")
PROJECT = ("cost", "project", "gpt-4o", "--queries-per-day", "100", "--out", "{dir}/report")

CASES = [
    # Task files (JSONL).
    Case(
        "truncated JSONL",
        TASKS,
        ("tasks.jsonl", "line 2", "not valid JSON"),
        (("tasks.jsonl", _text(GOOD_ROW, '{"id": "b", "prompt": "2+2?", "answ')),),
    ),
    Case(
        "malformed JSONL",
        TASKS,
        ("line 1", "not valid JSON"),
        (("tasks.jsonl", b"id,prompt,answer\n"),),
    ),
    Case(
        "missing answer",
        TASKS,
        ("line 2", "`answer`", "missing"),
        (("tasks.jsonl", _text(GOOD_ROW, '{"id": "b", "prompt": "2+2?"}')),),
    ),
    Case(
        "prompt of the wrong type",
        TASKS,
        ("line 1", "`prompt`"),
        (("tasks.jsonl", _text('{"id": "a", "prompt": 12, "answer": "2"}')),),
    ),
    Case(
        "answer of the wrong type",
        TASKS,
        ("line 1", "`answer`"),
        (("tasks.jsonl", _text('{"id": "a", "prompt": "q", "answer": ["2"]}')),),
    ),
    Case("empty file", TASKS, ("tasks.jsonl", "empty"), (("tasks.jsonl", b""),)),
    Case("not UTF-8", TASKS, ("tasks.jsonl", "UTF-8"), (("tasks.jsonl", b"\xff\xfe\x00{"),)),
    Case(
        "negative n in a file",
        TASKS,
        ("line 1", "`n`"),
        (("tasks.jsonl", _text('{"id": "a", "prompt": "q", "answer": "1", "n": -4}')),),
    ),
    Case(
        "NaN n in a file",
        TASKS,
        ("line 1", "`n`"),
        (("tasks.jsonl", _text('{"id": "a", "prompt": "q", "answer": "1", "n": NaN}')),),
    ),
    Case(
        "huge n in a file",
        TASKS,
        ("line 1", "`n`"),
        (("tasks.jsonl", _text('{"id": "a", "prompt": "q", "answer": "1", "n": 1e400}')),),
    ),
    Case(
        "duplicate ids",
        TASKS,
        ("line 2", "`id`"),
        (("tasks.jsonl", _text(GOOD_ROW, GOOD_ROW)),),
    ),
    Case("missing task file", TASKS, ("tasks.jsonl", "no such file")),
    # Sizes and budgets on the command line.
    Case("negative n", ("tasks", "make", "count", "--n", "-1"), ("`n`",)),
    Case("huge n", ("tasks", "make", "count", "--n", "99999999999"), ("`n`",)),
    Case("NaN n", ("calibrate", "--family", "count", "--n", "nan"), ("`n`",)),
    Case(
        "negative budget",
        ("calibrate", "--family", "count", "--n", "3", "--budgets", "0,-8"),
        ("`budgets`",),
    ),
    # Targets.
    Case(
        "ε above 1",
        (*PLAN, "--eps", "1.5"),
        ("`eps`", "(0, 1)"),
        (("calibration.csv", _calibration_csv()),),
    ),
    Case("ε of 0", (*PLAN, "--eps", "0"), ("`eps`",), (("calibration.csv", _calibration_csv()),)),
    Case("NaN ε", (*PLAN, "--eps", "nan"), ("`eps`",), (("calibration.csv", _calibration_csv()),)),
    Case(
        "negative n to plan for",
        (*PLAN, "--eps", "0.1", "--n", "-5"),
        ("`n`",),
        (("calibration.csv", _calibration_csv()),),
    ),
    Case(
        "calibration with a bad outcome",
        (*PLAN, "--eps", "0.1"),
        ("`correct`", "row(s) 1"),
        (("calibration.csv", _text("item,n,k,correct", "a,4,0,1", "a,4,8,maybe")),),
    ),
    Case(
        "calibration that is not one",
        (*PLAN, "--eps", "0.1"),
        ("calibration.csv", "`calibration`"),
        (("calibration.csv", _text(GOOD_ROW)),),
    ),
    # Models.
    Case("unknown model to price", ("cost", "call", "gpt-99", *CALL[3:]), ("`model`", "gpt-99")),
    Case(
        "unknown embedded model",
        ("calibrate", "--family", "count", "--n", "3", "--backend", "local:no-such-model"),
        ("`model`", "no-such-model"),
    ),
    Case(
        "a GGUF that is not one",
        ("calibrate", "--family", "count", "--n", "3", "--backend", "local:{dir}/model.gguf"),
        ("model.gguf", "not a GGUF"),
        (("model.gguf", b"<html>404 not found</html>"),),
    ),
    # Price overrides.
    Case(
        "price file with an unknown column",
        (*CALL, "--prices", "{dir}/prices.csv"),
        ("prices.csv", "line 1", "`input`"),
        (("prices.csv", _text("model,input", "gpt-4o,")),),
    ),
    Case(
        "unreadable price file",
        (*CALL, "--prices", "{dir}"),
        ("`path`",),
    ),
    Case(
        "price file that is not text",
        (*CALL, "--prices", "{dir}/prices.csv"),
        ("prices.csv", "`path`"),
        (("prices.csv", b"\xff\xfe\x00\x00"),),
    ),
    Case(
        "negative token count",
        (*CALL[:3], "--prompt-tokens=-1", "--completion-tokens", "10"),
        ("`prompt_tokens`",),
    ),
    Case(
        "NaN volume",
        (*PROJECT[:3], "--queries-per-day", "nan", "--prompt-mean", "9", "--output-mean", "3"),
        ("`queries_per_day`",),
    ),
]

# What a previous run left in the report folder: a bad input must leave it exactly as it was.
SAVED = {"calibration.csv": b"item,n,k,correct\nold,4,0,1\n", "plan.csv": b"n,k_star\n4,12\n"}


def _prepare(case: Case, folder: Path) -> list[str]:
    for name, content in case.files:
        (folder / name).write_bytes(content)
    report = folder / "report"
    report.mkdir()
    for name, content in SAVED.items():
        (report / name).write_bytes(content)
    return [arg.replace("{dir}", str(folder)) for arg in case.argv]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_one_clear_error_and_loses_nothing(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _prepare(case, tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert err.startswith("error: "), err
    for expected in case.expect:
        assert expected in err, f"{expected!r} not in {err!r}"
    assert "Traceback" not in err
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before, "a bad input changed or removed files already saved"


def test_the_terminal_shows_one_line_and_no_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COTPLAN_DEBUG"}
    result = subprocess.run(
        [sys.executable, "-m", "cotplan", "tasks", "make", "count", "--n", "-1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: `n`:")
    assert len(result.stderr.strip().splitlines()) <= 2
    assert "Traceback" not in result.stderr


def test_the_debug_variable_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cotplan.errors import InputError

    monkeypatch.setenv("COTPLAN_DEBUG", "1")
    with pytest.raises(InputError, match="`n`"):
        main(["tasks", "make", "count", "--n", "-1"])
