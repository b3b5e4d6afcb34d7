"""The last leftovers of the adversarial probe (issue 30, "nothing lost, nothing poisoned").

Dates past year 9999, absurd finite projection inputs, a training run's learning rate and
folder, `COTPLAN_HOME` on a file, `tasks make --backend`, `serve --timeout/--log`, `monitor` on
an empty log, and `--actuals` on someone else's SQLite database. Each bad input gets one line
naming the option (or the file, line and field) before any work starts, through the corpus's
own check (`tests/test_bad_input.py::check_case`: exit 2, no model call, nothing written); the
inputs that are fine (an empty log, an older log) are read without a byte of the file changing.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from test_bad_input import (
    _COST_PROJECT,
    SAVED,
    Case,
    ForbiddenCall,
    _plan_json,
    _text,
    check_case,
    one_line,
)

from cotplan.cli import main
from cotplan.errors import ConfigError, InputError


def _sqlite(*statements: str) -> bytes:
    """The bytes of a SQLite database made by `statements`."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "db.sqlite"
        with sqlite3.connect(path) as db:
            for statement in statements:
                db.execute(statement)
        db.close()
        return path.read_bytes()


def _call_log(*times: str, schema: int | None = None) -> bytes:
    """A cotplan call log (all migrations, or the first `schema`) with one row per time."""
    from cotplan.production.log import MIGRATIONS

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.sqlite"
        with sqlite3.connect(path) as db:
            for number, migrate in enumerate(MIGRATIONS[:schema], start=1):
                migrate(db)
                db.execute(f"PRAGMA user_version = {number}")
            for time in times:
                db.execute(
                    "INSERT INTO calls (time, model, size, cap, basis, mode, reasoning_tokens, "
                    "answer_tokens, prompt_tokens, cap_bitten, answer_forced, cost_usd, via) "
                    f"VALUES ('{time}', 'm', 3, 6, 'certified', 'template', 6, 2, 90, 1, 1, "
                    "0.001, 'wrapper')"
                )
        db.close()
        return path.read_bytes()


#: Another program's database: no `calls` table.
OTHER_DB = _sqlite("CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('mine')")


def _response(**fields: Any) -> str:
    body = {
        "object": "chat.completion",
        "model": "gpt-4o",
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        **fields,
    }
    return json.dumps(body)


ACTUALS = (*_COST_PROJECT, "--draws", "1000", "--actuals")
TRAIN = ("models", "train-thinking", "--out", "{dir}/adapter")
SERVE = ("serve", "--plan", "{dir}/plan.json", "--upstream", "http://127.0.0.1:9/v1")
PLANNED = (("plan.json", _plan_json()),)


def _project(*options: str) -> tuple[str, ...]:
    return (*_COST_PROJECT, "--draws", "1000", *options)


CASES = [
    # 1. Dates past 9999: on the command line and inside an --actuals file.
    Case("cost project from year 99999", _project("--start", "99999-01-01"), ("`start`",)),
    Case("cost project running past 9999-12", _project("--start", "9999-06", "--months", "12"),
         ("`start`", "past 9999-12")),
    Case("actuals with a timestamp in year 31 million", (*ACTUALS, "{dir}/a.jsonl"),
         ("a.jsonl", "line 2", "`created`", "years 1 to 9999"),
         (("a.jsonl", _text(_response(created=1700000000), _response(created=1e15))),)),
    Case("actuals with a NaN timestamp", (*ACTUALS, "{dir}/a.jsonl"),
         ("a.jsonl", "line 1", "`created`"), (("a.jsonl", _text(_response(created=math.nan))),)),
    Case("actuals with a time in year 99999", (*ACTUALS, "{dir}/a.jsonl"),
         ("a.jsonl", "line 1", "`time`", "ISO 8601"),
         (("a.jsonl", _text(_response(time="99999-01-01T00:00:00"))),)),
    Case("actuals with a time whose UTC day is past 9999", (*ACTUALS, "{dir}/a.jsonl"),
         ("a.jsonl", "line 1", "`time`", "years 1 to 9999"),
         (("a.jsonl", _text(_response(time="9999-12-31T23:00:00-05:00"))),)),
    Case("actuals with a created_at whose UTC day is before year 1", (*ACTUALS, "{dir}/a.jsonl"),
         ("a.jsonl", "line 1", "`created`", "years 1 to 9999"),
         (("a.jsonl", _text(_response(created_at="0001-01-01T00:00:00+05:00"))),)),
    Case("production log with a time past 9999 in UTC", (*ACTUALS, "{dir}/log.sqlite"),
         ("log.sqlite", "`calls[1].time`", "years 1 to 9999"),
         (("log.sqlite", _call_log("9999-12-31T23:00:00-05:00")),)),
    # 4. Absurd finite projection inputs: bounds that keep every printed figure finite.
    Case("1e300 queries a day", (*_COST_PROJECT[:3], "--queries-per-day", "1e300",
         *_COST_PROJECT[5:]), ("`queries_per_day`", "at most 1e+12")),
    Case("1e300 queries a month", (*_COST_PROJECT[:3], "--queries-per-month", "1e300",
         *_COST_PROJECT[5:]), ("`queries_per_month`", "at most 3.1e+13")),
    Case("1e200 prompt tokens a call", _project("--prompt-mean", "1e200"),
         ("`prompt_mean`", "at most 1e+08")),
    Case("a prompt spread of 1e200", _project("--prompt-sd", "1e200"),
         ("`prompt_sd`", "1000 times")),
    Case("a reasoning spread a billion times its mean",
         _project("--reasoning-mean", "1", "--reasoning-sd", "1e9"), ("`reasoning_sd`",)),
    Case("growth of 1e10 a month for 600 months", _project("--growth", "1e10", "--months", "600"),
         ("`growth_rate`", "fewer months")),
    Case("a high growth scenario past every bound",
         _project("--growth", "0.01", "--growth-low", "0", "--growth-high", "1e10", "--months",
                  "600"), ("`growth_high`",)),
    Case("a volume CV of 1e200", _project("--volume-cv", "1e200"), ("`volume_cv`", "at most 10")),
    Case("a sample with 1e200 tokens in a call",
         ("cost", "project", "gpt-6.2-sol", "--queries-per-day", "100", "--sample",
          "{dir}/calls.csv"), ("calls.csv, line 3, `prompt_tokens`", "1e+200"),
         (("calls.csv", _text("prompt_tokens,completion_tokens", "100,50", "1e200,50")),)),
    # 2. train-thinking: its learning rate and its folder, before torch is imported.
    *(Case(f"train with a learning rate of {rate}", (*TRAIN, f"--learning-rate={rate}"),
           ("`learning_rate`",)) for rate in ("-1", "0", "nan", "inf", "2")),
    Case("train with a NaN time limit", (*TRAIN, "--max-seconds", "nan"), ("`max_seconds`",)),
    Case("train into an existing file", (*TRAIN[:3], "{dir}/taken.txt"), ("`out`", "not a folder"),
         (("taken.txt", b"mine"),)),
    Case("train into a folder under a file", (*TRAIN[:3], "{dir}/taken.txt/adapter"), ("`out`",),
         (("taken.txt", b"mine"),)),
    Case("train over an earlier adapter", (*TRAIN[:3], "{dir}/report"),
         ("`out`", "already holds a trained adapter", "train.json"),
         (("report/train.json", b"{}"),)),
    # 5. tasks make --backend.
    Case("tasks make for an unknown backend", ("tasks", "make", "count", "--n", "3", "--backend",
         "X"), ("`backend`", "unknown backend 'X'", "local:PATH", "openai:MODEL")),
    Case("tasks make for an unknown lab family", ("tasks", "make", "count", "--n", "3",
         "--backend", "lab:nonsense"), ("`backend`", "nonsense")),
    # 6. serve --timeout and --log, before the server starts.
    *(Case(f"serve with a timeout of {value}", (*SERVE, f"--timeout={value}"), ("`timeout`",),
           PLANNED) for value in ("nan", "inf", "-1", "0", "1e9")),
    Case("serve logging into a folder", (*SERVE, "--log", "{dir}/report"),
         ("`log`", "is a folder"), PLANNED),
    Case("serve logging into a missing folder", (*SERVE, "--log", "{dir}/missing/log.sqlite"),
         ("`log`", "does not exist"), PLANNED),
    Case("serve logging into a text file", (*SERVE, "--log", "{dir}/notes.txt"),
         ("`log`", "notes.txt"), (*PLANNED, ("notes.txt", b"my notes, not a database\n"))),
    Case("serve logging into another program's database", (*SERVE, "--log", "{dir}/other.db"),
         ("`log`", "not a cotplan call log"), (*PLANNED, ("other.db", OTHER_DB))),
    # 7. monitor on another program's database: refused, and the file is left as it was.
    Case("monitor another program's database", ("monitor", "{dir}/other.sqlite"),
         ("`log`", "not a cotplan call log"), (("other.sqlite", OTHER_DB),)),
    # 8. --actuals on another program's database: refused, never written into.
    Case("actuals from another program's database", (*ACTUALS, "{dir}/other.sqlite"),
         ("other.sqlite", "`actuals`", "no `calls` table"), (("other.sqlite", OTHER_DB),)),
    Case("actuals from an empty database", (*ACTUALS, "{dir}/empty.sqlite"),
         ("empty.sqlite", "`actuals`", "no calls"), (("empty.sqlite", b""),)),
]  # fmt: skip


def _succeeds(*argv: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code in (0, None)


@pytest.fixture
def case_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The case's working directory, with a previous report and a private empty user folder;
    training and serving are refused outright, so a check that fires too late fails the case
    rather than training for minutes or serving forever."""
    import uvicorn

    from cotplan.thinking import train

    report = tmp_path / "report"
    report.mkdir()
    for name, content in SAVED.items():
        (report / name).write_bytes(content)
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    monkeypatch.setenv("COTPLAN_HOME", str(home))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ForbiddenCall("a bad input reached training or a server start")

    monkeypatch.setattr(train, "_require_train_extra", refuse)
    monkeypatch.setattr(uvicorn, "run", refuse)
    monkeypatch.setattr(uvicorn.Server, "run", refuse)
    return tmp_path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_leftover_bad_input_gets_one_line_before_any_work_and_writes_nothing(
    case: Case, case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_case(case, case_folder, capsys)


# 3. COTPLAN_HOME on a file.


@pytest.mark.parametrize("where", ["homefile", "homefile/below"])
def test_cotplan_home_on_a_file_is_one_line_naming_it(
    where: str,
    case_folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COTPLAN_HOME", str(case_folder / where))
    case = Case("home on a file", ("cache", "info"), ("COTPLAN_HOME", "homefile"),
                (("homefile", b"not a folder"),))  # fmt: skip
    check_case(case, case_folder, capsys)


def test_the_user_folder_on_a_file_raises_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cotplan import paths

    (tmp_path / "home").write_text("x")
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))
    with pytest.raises(ConfigError, match=r"COTPLAN_HOME .*home is a file, not a folder"):
        paths.home()
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "good"))
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "models").write_text("x")
    with pytest.raises(ConfigError, match="models is a file"):
        paths.models_dir()


@pytest.mark.parametrize("name", ["lab", "logs"])
def test_a_file_in_place_of_a_folder_in_cotplan_home_names_it(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cotplan.backends.local import LocalModel
    from cotplan.research.lab.store import lab_dir

    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path))
    (tmp_path / name).write_text("x")
    make = lab_dir if name == "lab" else LocalModel().start  # logs: before any server starts
    with pytest.raises(ConfigError, match=rf"the {name} folder in COTPLAN_HOME .* is a file"):
        make()


# The checks that need a writable-looking folder to be locked: root may write anywhere, so the
# lock is os.access saying no for that one folder.


def _lock(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    real = os.access

    def access(path: Any, mode: int, **kwargs: Any) -> bool:
        if Path(path).resolve() == folder.resolve():
            return False
        return real(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        ((*TRAIN[:3], "{dir}/locked/adapter"), "`out`"),
        ((*SERVE, "--log", "{dir}/locked/log.sqlite"), "`log`"),
    ],
)
def test_an_unwritable_folder_is_refused_before_any_work(
    argv: tuple[str, ...],
    field: str,
    case_folder: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (case_folder / "locked").mkdir()
    _lock(monkeypatch, case_folder / "locked")
    files = PLANNED if argv[0] == "serve" else ()
    check_case(Case("locked", argv, (field, "not writable"), files), case_folder, capsys)


# 7. monitor on an empty log: normal for a gateway just started, so a friendly exit 0.


@pytest.mark.parametrize("content", [b"", _call_log()], ids=["an empty file", "a log with no rows"])
def test_monitor_on_a_log_with_no_calls_says_so_and_changes_nothing(
    content: bytes, case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = case_folder / "production.sqlite"
    log.write_bytes(content)
    _succeeds("monitor", str(log))
    out = one_line(capsys.readouterr().out)
    assert out.startswith("no calls logged yet in "), out
    assert "the cap, by size" not in out
    assert log.read_bytes() == content


# 8. Reading a log never writes into it; one from an older cotplan reads with its defaults.


def test_reading_an_older_log_leaves_it_byte_for_byte(tmp_path: Path) -> None:
    from cotplan.production.log import CallLog

    path = tmp_path / "old.sqlite"
    path.write_bytes(_call_log("2026-01-02T03:04:05+00:00", schema=1))
    before = path.read_bytes()
    (row,) = CallLog(path).records()
    assert (row.call_id, row.outcome, row.cap) == ("", "complete", 6)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite"]  # no journal left


def test_appending_to_another_programs_database_is_refused(tmp_path: Path) -> None:
    from cotplan.errors import CacheError
    from cotplan.production.log import CallLog

    path = tmp_path / "other.sqlite"
    path.write_bytes(OTHER_DB)
    with pytest.raises(CacheError, match="not a cotplan call log"):
        CallLog(path).to_frame()
    assert path.read_bytes() == OTHER_DB


# 1. Times the pricing code meets: checked where they are read.


def test_a_response_created_as_iso_text_is_priced_at_that_time(tmp_path: Path) -> None:
    from cotplan.pricing.actuals import actuals_from_jsonl

    log = tmp_path / "a.jsonl"
    log.write_text(_response(created="2025-01-15T00:00:00") + "\n" + _response(created_at=1.7e9))
    frame = actuals_from_jsonl(log).frame
    assert list(frame["label"]) == ["2023-11", "2025-01"]


def test_cost_of_a_time_with_no_utc_date_names_the_field() -> None:
    from datetime import datetime, timedelta, timezone

    from cotplan.pricing.usage import cost_of

    late = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))
    with pytest.raises(InputError, match=r"`at`: .* has no date in UTC"):
        cost_of(json.loads(_response()), at=late)
    with pytest.raises(InputError, match=r"`created`: .*years 1 to 9999"):
        cost_of(json.loads(_response(created=-1e12)))


# 4. Within the bounds, every figure printed is finite.


def test_the_largest_projection_allowed_prints_no_inf_or_nan(
    case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    largest = (
        "cost", "project", "gpt-6.2-sol", "--queries-per-day", "1e12", "--prompt-mean", "1e8",
        "--prompt-sd", "1e11", "--output-mean", "1e8", "--reasoning-mean", "1e8",
        "--volume-cv", "10", "--draws", "100", "--compare-model", "gpt-4o",
    )  # fmt: skip
    _succeeds(*largest)
    out = capsys.readouterr().out.lower()
    assert "$" in out
    assert "inf" not in out.replace("info", "")
    assert "nan" not in out


def test_a_projection_of_nothing_prints_no_nan_percentage(
    case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _succeeds(*_COST_PROJECT[:4], "0", *_COST_PROJECT[5:9], "--draws", "100",
              "--compare-model", "gpt-4o")  # fmt: skip
    out = capsys.readouterr().out.lower()
    assert "scenarios over the horizon" in out
    assert "nan" not in out


# 5. A backend `tasks make` knows still passes.


@pytest.mark.parametrize("backend", ["openai:gpt-4o-mini", "local", "lab:parity"])
def test_tasks_make_takes_a_known_backend(
    backend: str, case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    family = "lab-parity" if backend.startswith("lab") else "count"
    _succeeds("tasks", "make", family, "--n", "3", "--count", "2", "--backend", backend)
    rows = capsys.readouterr().out.strip().splitlines()
    assert len(rows) == 2


# 6. Good logs still pass: serve gets as far as starting its server.


@pytest.mark.parametrize(
    "log",
    [None, "new.sqlite", "empty.sqlite", "old.sqlite"],
    ids=["the default log", "a new file", "an empty file", "a log from an older cotplan"],
)
def test_serve_with_a_usable_log_gets_to_the_server(
    log: str | None, case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (case_folder / "plan.json").write_bytes(_plan_json())
    (case_folder / "empty.sqlite").write_bytes(b"")
    (case_folder / "old.sqlite").write_bytes(_call_log("2026-01-02T03:04:05+00:00", schema=1))
    argv = [arg.replace("{dir}", str(case_folder)) for arg in SERVE]
    argv += [] if log is None else ["--log", str(case_folder / log)]
    with pytest.raises(ForbiddenCall, match="server start"):
        main(argv)
    assert "serving the plan" in capsys.readouterr().out
