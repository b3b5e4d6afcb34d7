"""A corpus of bad inputs: each gets one clear cotplan error naming the field (and the line, for
files), the CLI exits 2 without a traceback, no model server starts, no request leaves the
process, and nothing is written (what a previous run saved stays exactly as it was).

Every CLI case runs the real CLI in-process (`cotplan.cli.main`) inside `no_model_calls()`, which
turns any attempt to start a process (a llama.cpp server, pip), open a network connection or
send a model request into a `ForbiddenCall`. `ForbiddenCall` derives from `BaseException`, so no
`except Exception` on the way (the openai SDK's retry loop, say) can swallow it: it escapes `main`
and fails the case. An exception that is not turned into the one-line error escapes `main` too,
so "no traceback" is checked by construction; one case also runs as a separate process to check
what a user's terminal shows.

Adding cases (owners of each command: append a block headed with your area at the end of this
file):

    CASES += [Case("ε above 1", ("plan", ..., "--eps", "1.5"), ("`eps`",))]
    API_CASES += [ApiCase("calibrate with no items", lambda d: calibrate(b, []), ("`items`",))]

`{dir}` in a CLI case's arguments is the case's own folder (also its working directory, so a
default `reports/<time>/` would land there and be caught); `files` are written there first.
Each case gets its own empty `COTPLAN_HOME` inside that folder, so a cache or log written there
counts as a write.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cotplan.cli import main
from cotplan.errors import CotplanError, InputError


class ForbiddenCall(BaseException):
    """A bad input reached a model: a process start, a connection or a request."""


@contextlib.contextmanager
def no_model_calls() -> Iterator[list[str]]:
    """Refuse, and record, every way out to a model for the duration of the block.

    Patched: process creation (`subprocess.Popen`, which every server start, `pip download` and
    `subprocess.run` goes through), TCP connections (any HTTP client: httpx, the openai SDK),
    the OpenAI-compatible backend's request funnel and the in-process lab model. Yields the
    list of attempts; each attempt also raises `ForbiddenCall`.
    """
    attempts: list[str] = []

    def refuse(what: str) -> None:
        attempts.append(what)
        raise ForbiddenCall(f"a bad input reached a model: {what}")

    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse(f"connection to {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        refuse(f"connection to {address!r}")
        return 1

    def execute_child(self: subprocess.Popen[Any], args: Any, *rest: Any) -> None:
        refuse(f"process {args!r}")

    def send(self: object, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        refuse(f"{operation} request to {getattr(self, 'base_url', None)!r}")
        return {}

    def lab_model(cls: type, family: str, *args: Any, **options: Any) -> object:
        refuse(f"lab model {family!r}")
        return None

    from cotplan.backends import openai_compat
    from cotplan.research.lab.reasoning import backend as lab

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", connect)
        patch.setattr(socket.socket, "connect_ex", connect_ex)
        patch.setattr(subprocess.Popen, "_execute_child", execute_child)
        patch.setattr(openai_compat.OpenAICompatibleBackend, "_send", send)
        patch.setattr(lab.LabBackend, "for_family", classmethod(lab_model))
        yield attempts


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` (None for a folder, the bytes for a file)."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def one_line(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


GOOD_ROW = '{"id": "a", "prompt": "What is 1+1?", "answer": "2"}'


@dataclass(frozen=True)
class Case:
    """`files` are written into the case's folder; `{dir}` in the arguments is that folder."""

    name: str
    argv: tuple[str, ...]
    expect: tuple[str, ...]  # substrings of the one error line (the field, the line)
    files: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class ApiCase:
    """A bad call to the public API: `call(folder)` must raise `error` naming the field."""

    name: str
    call: Callable[[Path], object]
    expect: tuple[str, ...]  # substrings of the error message (the field, the line)
    error: type[CotplanError] = InputError
    files: tuple[tuple[str, bytes], ...] = ()  # written into the case's folder first


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

CASES: list[Case] = [
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
        ("calibration.csv", "line 3", "`correct`"),
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

# --- #16 suite: calibrate, tasks, models, answer, lab -------------------------------------------
FAMILY = ("calibrate", "--family", "count", "--n", "3", "--no-progress")
EXAMPLES = '{"input": "0 1 1", "output": "1"}\n{"input": "1 0 0", "output": "0"}\n'
ANSWER = ("answer", "{dir}/examples.jsonl", "--query", "1 1 0")
WITH_EXAMPLES = (("examples.jsonl", EXAMPLES.encode()),)


def _calibrate(*options: str, expect: str, name: str | None = None) -> Case:
    return Case(name or f"calibrate {' '.join(options)}", (*FAMILY, *options), (expect,))


def _answer(*options: str, expect: str) -> Case:
    return Case(f"answer {' '.join(options)}", (*ANSWER, *options), (expect,), WITH_EXAMPLES)


CASES += [
    _calibrate("--budgets", "", expect="`budgets`", name="calibrate with empty budgets"),
    _calibrate("--budgets", "4.5", expect="`budgets`"),
    _calibrate("--budgets", "1e9", expect="`budgets`"),
    _calibrate("--budgets", "0,2000000", expect="`budgets`"),
    _calibrate("--budgets", "0,,8", expect="`budgets`"),
    _calibrate("--count", "0", expect="`count`"),
    _calibrate("--count", "1000000", expect="`count`"),
    _calibrate("--concurrency", "0", expect="`concurrency`"),
    _calibrate("--answer-tokens", "0", expect="`answer_tokens`"),
    _calibrate("--answer-tokens", "-3", expect="`answer_tokens`"),
    _calibrate("--backend", "local:{dir}", expect="`backend`", name="a folder as the model"),
    _calibrate("--backend", "local:../../x", expect="`backend`", name="a path outside as model"),
    _calibrate("--backend", "local:/dev/zero", expect="`backend`", name="a device as the model"),
    _calibrate("--backend", "lab:nosuch", expect="`backend`"),
    _calibrate("--backend", "openai:", expect="`backend`"),
    _calibrate("--backend", "nosuch:model", expect="`backend`"),
    _calibrate("--base-url", "ftp://127.0.0.1/v1", expect="`base_url`"),
    _calibrate("--out", "{dir}/report/plan.csv", expect="`out`", name="a file as the folder"),
    Case(
        "calibrate an unknown family",
        ("calibrate", "--family", "nosuch", "--n", "3"),
        ("`family`", "nosuch"),
    ),
    Case("calibrate a family and a file", (*FAMILY, "--tasks", "{dir}/x.jsonl"), ("`family`",)),
    Case("calibrate neither family nor file", ("calibrate", "--n", "3"), ("`family`",)),
    Case("calibrate without sizes", ("calibrate", "--family", "count"), ("`n`",)),
    Case("calibrate a size out of range", ("calibrate", "--family", "count", "--n", "0"), ("`n`",)),
    Case(
        "task file with a BOM",
        TASKS,
        ("tasks.jsonl", "line 1", "`path`", "BOM"),
        (("tasks.jsonl", b"\xef\xbb\xbf" + _text(GOOD_ROW)),),
    ),
    Case(
        "task file with a NUL byte",
        TASKS,
        ("tasks.jsonl", "line 2", "`path`", "NUL"),
        (("tasks.jsonl", _text(GOOD_ROW, '{"id": "b", "prompt": "x\x00", "answer": "1"}')),),
    ),
    Case(
        "task file with a lone surrogate",
        TASKS,
        ("line 1", "`prompt`", "surrogate"),
        (("tasks.jsonl", _text('{"id": "a", "prompt": "q \\ud800", "answer": "1"}')),),
    ),
    Case(
        "task file with a 10 MB line",
        TASKS,
        ("line 2", "`path`", "characters long"),
        (
            (
                "tasks.jsonl",
                _text(GOOD_ROW, '{"id": "b", "prompt": "' + "x" * 10_000_000 + '", "answer": "1"}'),
            ),
        ),
    ),
    Case("task file that is a folder", ("tasks", "check", "{dir}/report"), ("report", "`path`")),
    Case(
        "task file with an unknown field",
        ("tasks", "check", "{dir}/tasks.jsonl"),
        ("line 1", "anwser"),
        (("tasks.jsonl", _text('{"id": "a", "prompt": "q", "anwser": "1"}')),),
    ),
    Case(
        "choices without the answer",
        ("tasks", "check", "{dir}/tasks.jsonl"),
        ("line 1", "`answer`"),
        (
            (
                "tasks.jsonl",
                _text('{"id": "a", "prompt": "q", "answer": "C", "choices": ["A", "B"]}'),
            ),
        ),
    ),
    Case("tasks make an unknown family", ("tasks", "make", "nosuch", "--n", "3"), ("`family`",)),
    Case(
        "tasks make zero items",
        ("tasks", "make", "count", "--n", "3", "--count", "0"),
        ("`count`",),
    ),
    Case(
        "tasks make into a folder",
        ("tasks", "make", "count", "--n", "3", "--out", "{dir}"),
        ("`out`",),
    ),
    Case("models pull a path", ("models", "pull", "../../etc/passwd"), ("`model`",)),
    Case("models pull an absolute GGUF", ("models", "pull", "/tmp/x.gguf"), ("`model`",)),
    Case("models pull nothing", ("models", "pull", ""), ("`model`",)),
    Case("lab on port 0", ("lab", "--port", "0"), ("`port`",)),
    Case("lab on a missing folder", ("lab", "--notebooks", "{dir}/nope"), ("`notebooks`",)),
    Case("notebooks on port 0", ("notebooks", "--port", "0"), ("`port`",)),
    Case(
        "notebooks on a missing folder",
        ("notebooks", "--notebooks", "{dir}/nope"),
        ("`notebooks`",),
    ),
    _answer("--m", "0", expect="`m`"),
    _answer("--schedule", "sorted", expect="`schedule`"),
    _answer("--bands", "3", expect="`bands`"),
    _answer("--samples", "0", expect="`samples`"),
    _answer("--temperature", "0", expect="`temperature`"),
    _answer("--temperature", "nan", expect="`temperature`"),
    _answer("--confidence", "1.5", expect="`confidence`"),
    _answer("--target-width", "0", expect="`target_width`"),
    _answer("--k", "-1", expect="`k`"),
    _answer("--seed", "-1", expect="`seed`"),
    _answer("--method", "guess", expect="`method`"),
    _answer("--chart", "{dir}/chart.pdf", expect="`chart`"),
    _answer("--choice", "1", "--choice", "1", expect="`choice`"),
    _answer("--backend", "local:/dev/zero", expect="`backend`"),
    Case(
        "answer an empty query",
        ("answer", "{dir}/examples.jsonl", "--query", " "),
        ("`query`",),
        WITH_EXAMPLES,
    ),
    Case("answer from missing examples", ANSWER, ("examples.jsonl", "`examples`")),
    # kstar-lab (validated by its owner; listed here so every command has cases).
    Case("kstar-lab train an unknown family", ("kstar-lab", "train", "nosuch"), ("`family`",)),
    Case(
        "kstar-lab train an unknown preset",
        ("kstar-lab", "train", "parity", "--preset", "x"),
        ("`preset`",),
    ),
    Case(
        "kstar-lab train on 0 threads",
        ("kstar-lab", "train", "parity", "--threads", "0"),
        ("`threads`",),
    ),
    Case(
        "kstar-lab export below a file",
        ("kstar-lab", "train", "parity", "--export", "{dir}/report/plan.csv/weights"),
        ("`export`", "plan.csv"),
    ),
    Case(
        "kstar-lab study into a file",
        ("kstar-lab", "study", "parity", "--out", "{dir}/report/plan.csv"),
        ("`out`",),
    ),
    Case("kstar-lab study an unknown family", ("kstar-lab", "study", "nosuch"), ("`family`",)),
]

API_CASES: list[ApiCase] = []


def _offline_backend() -> Any:
    """A client for a port nothing listens on: building it sends nothing."""
    from cotplan.backends.openai_compat import OpenAICompatibleBackend

    return OpenAICompatibleBackend("m", base_url="http://127.0.0.1:9/v1", api_key="x", cache=None)


def _calibrate(budgets: Any = None, items: Any = None) -> Any:
    from cotplan import calibrate
    from cotplan.tasks import make_tasks

    chosen = make_tasks("count", n=3, count=2) if items is None else items
    return calibrate(_offline_backend(), chosen, budgets, progress=False)


def _load(folder: Path) -> Any:
    from cotplan.tasks import load_tasks

    return load_tasks(folder / "tasks.jsonl")


def _budgeted(k: Any = 8, **options: Any) -> Any:
    from cotplan.generate import budgeted_answer
    from cotplan.tasks import make_tasks

    return budgeted_answer(_offline_backend(), make_tasks("count", n=3, count=1)[0], k, **options)


def _local(**options: Any) -> Any:
    from cotplan.backends.local import LocalModel

    return LocalModel(**options)


def _connect(spec: str) -> Any:
    from cotplan.backends import connect

    return connect(spec)


def _make(family: str, **options: Any) -> Any:
    from cotplan.tasks import make_tasks

    return make_tasks(family, **{"n": 3, "count": 2, **options})


# --- #16 suite: the public API behind calibrate, tasks, models, answer ---
API_CASES += [
    ApiCase("calibrate(items=[])", lambda d: _calibrate(items=[]), ("`items`",)),
    ApiCase("calibrate(budgets=[])", lambda d: _calibrate(budgets=[]), ("`budgets`",)),
    ApiCase("calibrate(budgets=[-1])", lambda d: _calibrate(budgets=[0, -1]), ("`budgets`",)),
    ApiCase("calibrate(budgets=[4.5])", lambda d: _calibrate(budgets=[4.5]), ("`budgets`",)),
    ApiCase("calibrate(budgets='fast')", lambda d: _calibrate(budgets="fast"), ("`budgets`",)),
    ApiCase("load_tasks with a BOM", _load, ("line 1", "`path`", "BOM"),
            files=(("tasks.jsonl", b"\xef\xbb\xbf" + _text(GOOD_ROW)),)),
    ApiCase("load_tasks with a NUL byte", _load, ("line 1", "`path`", "NUL"),
            files=(("tasks.jsonl", b"\x00" + _text(GOOD_ROW)),)),
    ApiCase("load_tasks with a lone surrogate", _load, ("line 1", "`answer`", "surrogate"),
            files=(("tasks.jsonl", _text('{"id": "a", "prompt": "q", "answer": "\\udc80"}')),)),
    ApiCase("load_tasks of a folder", lambda d: __import__("cotplan.tasks").tasks.load_tasks(d),
            ("`path`",)),
    ApiCase("make_tasks(n=0)", lambda d: _make("count", n=0), ("`n`",)),
    ApiCase("make_tasks(count=0)", lambda d: _make("count", count=0), ("`count`",)),
    ApiCase("make_tasks of an unknown family", lambda d: _make("nosuch"), ("`family`",)),
    ApiCase("budgeted_answer(k=-1)", lambda d: _budgeted(-1), ("`k`",)),
    ApiCase("budgeted_answer(k=nan)", lambda d: _budgeted(float("nan")), ("`k`",)),
    ApiCase("budgeted_answer(answer_tokens=0)", lambda d: _budgeted(answer_tokens=0),
            ("`answer_tokens`",)),
    ApiCase("LocalModel(port=0)", lambda d: _local(port=0), ("`port`",)),
    ApiCase("LocalModel(n_ctx=8)", lambda d: _local(n_ctx=8), ("`n_ctx`",)),
    ApiCase("LocalModel(parallel=0)", lambda d: _local(parallel=0), ("`parallel`",)),
    ApiCase("connect('')", lambda d: _connect(""), ("`backend`",)),
    ApiCase("connect of an unknown provider", lambda d: _connect("nosuch:model"), ("`backend`",)),
    ApiCase("connect('local:no-such-model')", lambda d: _connect("local:no-such-model"),
            ("`model`", "no-such-model")),
    ApiCase("models.pull of a path", lambda d: _pull("../../etc/passwd"), ("`model`",)),
    ApiCase("a fault proxy off loopback",
            lambda d: __import__("cotplan.backends.testing").backends.testing.FaultProxy("http://10.0.0.1:8/v1"),
            ("`upstream`", "loopback")),
    ApiCase("the embedded model's backend pointed off loopback",
            lambda d: __import__("cotplan").LocalModel().backend(base_url="http://10.0.0.1:8/v1"),
            ("`base_url`", "loopback")),
    ApiCase("the embedded model's backend pointed at a name that is not loopback",
            lambda d: __import__("cotplan").LocalModel().backend(base_url="http://example.com/v1"),
            ("`base_url`", "'example.com'")),
    ApiCase("the embedded model's backend with a negative timeout",
            lambda d: __import__("cotplan").LocalModel().backend(timeout=-1),
            ("`timeout`",)),
]  # fmt: skip


def _pull(name: str) -> Any:
    from cotplan.backends.models import pull

    return pull(name)


# What a previous run left in the report folder: a bad input must leave it exactly as it was.
SAVED = {"calibration.csv": b"item,n,k,correct\nold,4,0,1\n", "plan.csv": b"n,k_star\n4,12\n"}


@pytest.fixture
def case_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The case's working directory, with a previous report and a private empty user folder."""
    report = tmp_path / "report"
    report.mkdir()
    for name, content in SAVED.items():
        (report / name).write_bytes(content)
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)  # `paths.home()` creates these on first use
    monkeypatch.setenv("COTPLAN_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Here rather than in a decorator, so cases appended at the end of the file are included.
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", CASES, ids=[c.name for c in CASES])
    if "api_case" in metafunc.fixturenames:
        metafunc.parametrize("api_case", API_CASES, ids=[c.name for c in API_CASES])


def test_bad_input_gets_one_clear_error_before_any_call_and_writes_nothing(
    case: Case, case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_case(case, case_folder, capsys)


def check_case(case: Case, case_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run `case` on the command line: one `error:` line naming what it expects, exit 2, no
    model call, no file written (shared with the planner's corpus, tests/test_bad_input_plan.py)."""
    for name, content in case.files:
        (case_folder / name).write_bytes(content)
    argv = [arg.replace("{dir}", str(case_folder)) for arg in case.argv]
    before = snapshot(case_folder)
    with no_model_calls() as attempts, pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert attempts == []
    assert exit_info.value.code == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith("error: "), err
    for expected in case.expect:
        assert expected in err, f"{expected!r} not in {err!r}"
    assert "Traceback" not in err
    assert snapshot(case_folder) == before, "a bad input wrote, changed or removed files"


def test_bad_api_call_raises_before_any_call_and_writes_nothing(
    api_case: ApiCase, case_folder: Path
) -> None:
    for name, content in api_case.files:
        (case_folder / name).write_bytes(content)
    before = snapshot(case_folder)
    with no_model_calls() as attempts, pytest.raises(api_case.error) as raised:
        api_case.call(case_folder)
    assert attempts == []
    message = one_line(str(raised.value))
    for expected in api_case.expect:
        assert expected in message, f"{expected!r} not in {message!r}"
    assert snapshot(case_folder) == before, "a bad call wrote, changed or removed files"


def test_the_guard_catches_a_server_start_and_a_request(case_folder: Path) -> None:
    """The guard itself can fail a case: a real start and a real request are both refused."""
    from cotplan.backends.openai_compat import OpenAICompatibleBackend

    with no_model_calls() as attempts:
        with pytest.raises(ForbiddenCall, match="process"):
            subprocess.run([sys.executable, "-c", "pass"], check=False)
        backend = OpenAICompatibleBackend(
            "m", base_url="http://127.0.0.1:9/v1", api_key="x", cache=None, max_retries=0
        )
        with pytest.raises(ForbiddenCall, match="request"):
            backend.generate("hi", max_tokens=1)
        with pytest.raises(ForbiddenCall, match="connection"):
            socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert len(attempts) == 3


def test_every_case_names_a_field_a_file_or_a_line() -> None:
    named: list[tuple[str, tuple[str, ...]]] = [(c.name, c.expect) for c in CASES]
    named += [(c.name, c.expect) for c in API_CASES]
    for name, expect in named:
        assert any("`" in e or "." in e or "line " in e for e in expect), name


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
    monkeypatch.setenv("COTPLAN_DEBUG", "1")
    with pytest.raises(SystemExit) as info:
        main(["tasks", "make", "count", "--n", "-1"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "Traceback" in err
    assert "InputError" in err
    assert "`n`" in err


# --- #19 cost commands: prices, call, project -------------------------------------------------

_COST_CALL = ("cost", "call", "gpt-6.2-sol", "--prompt-tokens", "100", "--completion-tokens", "10")
_COST_PROJECT = (
    "cost",
    "project",
    "gpt-6.2-sol",
    "--queries-per-day",
    "100",
    "--prompt-mean",
    "900",
    "--output-mean",
    "100",
    "--out",
    "{dir}/report",
)
_NAN_SAMPLE = _text("prompt_tokens,completion_tokens,reasoning_tokens", "100,50,0", "120,NaN,0")

CASES += [
    Case("cost call with a bad --on", (*_COST_CALL, "--on", "2026-13-40"), ("`on`", "not a date")),
    Case(
        "cost call for an unknown provider",
        (*_COST_CALL, "--provider", "opneai"),
        ("`provider`", "opneai"),
    ),
    Case(
        "cost call on a name several providers sell, none of them its maker",
        ("cost", "call", "deepseek-r1-distill-llama-70b", *_COST_CALL[3:]),
        ("`provider`", "groq, ovhcloud"),
    ),
    Case(
        "cost project with 1e9 draws",
        (*_COST_PROJECT, "--draws", "1e9"),
        ("`draws`", "at most 10,000,000"),
    ),
    Case("cost project with 1.5 draws", (*_COST_PROJECT, "--draws", "1.5"), ("`draws`",)),
    Case("cost project with NaN draws", (*_COST_PROJECT, "--draws", "nan"), ("`draws`",)),
    Case("cost project with a negative seed", (*_COST_PROJECT, "--seed", "-1"), ("`seed`",)),
    Case("cost project with a bad --on", (*_COST_PROJECT, "--on", "yesterday"), ("`on`",)),
    Case("cost project with a bad --start", (*_COST_PROJECT, "--start", "2027-13"), ("`start`",)),
    Case(
        "cost project with a NaN in the sample",
        (
            "cost",
            "project",
            "gpt-6.2-sol",
            "--queries-per-day",
            "100",
            "--sample",
            "{dir}/calls.csv",
            "--out",
            "{dir}/report",
        ),
        ("`completion_tokens`", "finite"),
        (("calls.csv", _NAN_SAMPLE),),
    ),
    Case(
        "cost project with cache shares over 1",
        (*_COST_PROJECT, "--cache-hit-rate", "0.8", "--cache-write-rate", "0.5"),
        ("`cache_write_rate`",),
    ),
    Case(
        "cost project with a negative cap to compare",
        (*_COST_PROJECT, "--compare-cap", "-5"),
        ("`k`",),
    ),
    Case(
        "cost project comparing an unknown model",
        (*_COST_PROJECT, "--compare-model", "gpt-99o"),
        ("`model`", "gpt-99o"),
    ),
    Case(
        "cost project --out on a file",
        (*_COST_PROJECT[:-1], "{dir}/report/plan.csv"),
        ("`out`", "is a file"),
    ),
    Case(
        "cost project growing per week", (*_COST_PROJECT, "--growth-per", "week"), ("`growth_per`",)
    ),
    Case(
        "cost prices --csv in a missing folder",
        ("cost", "prices", "--csv", "{dir}/no/p.csv"),
        ("`csv`", "does not exist"),
    ),
    Case(
        "cost prices for an unknown provider",
        ("cost", "prices", "--provider", "acme"),
        ("`provider`", "acme"),
    ),
    Case(
        "cost prices from an unknown source", ("cost", "prices", "--source", "web"), ("`source`",)
    ),
]


def _projection(**options: Any) -> object:
    from cotplan.pricing import ParametricTokens, Workload, project_costs

    work = Workload(queries_per_day=100)
    return project_costs("gpt-6.2-sol", work, ParametricTokens(900, 0, 100, 0), **options)


def _comparison_with_a_bad_last_scenario() -> object:
    from cotplan.pricing import ParametricTokens, Scenario, Workload, compare_scenarios

    scenarios = [Scenario("a", "gpt-6.2-sol"), Scenario("b", "gpt-99o")]
    return compare_scenarios(
        Workload(queries_per_day=100), ParametricTokens(900, 0, 100, 0), scenarios
    )


def _ambiguous_call() -> object:
    from cotplan.pricing import call_cost

    return call_cost("deepseek-r1-distill-llama-70b", prompt_tokens=1, completion_tokens=1)


API_CASES += [
    ApiCase("project_costs(draws=10**9)", lambda d: _projection(draws=10**9), ("`draws`",)),
    ApiCase(
        "project_costs with cache shares over 1",
        lambda d: _projection(cache_hit_rate=0.7, cache_write_rate=0.7),
        ("`cache_write_rate`",),
    ),
    ApiCase("project_costs(provider='')", lambda d: _projection(provider=" "), ("`provider`",)),
    ApiCase(
        "compare_scenarios checks every scenario first",
        lambda d: _comparison_with_a_bad_last_scenario(),
        ("`model`", "gpt-99o"),
    ),
    ApiCase(
        "call_cost on a name several providers sell, none of them its maker",
        lambda d: _ambiguous_call(),
        ("`provider`", "groq, ovhcloud"),
    ),
]


# --- #17 experiment commands: martingale, debias, order, entropy, falck, report, pe-ablation ---
# Each runs with the default backend (the embedded model): the guard fails the case if a bad
# option is only noticed after the server starts.

CASES += [
    Case("martingale with one sequence", ("experiment", "martingale", "--n-sequences", "1"),
         ("`n_sequences`",)),
    Case("martingale with an unknown design", ("experiment", "martingale", "--design", "zigzag"),
         ("`design`", "zigzag")),
    Case("martingale on a malformed reference", ("experiment", "martingale", "-b", "beta:1"),
         ("`backend`",)),
    Case("debias with no sequences", ("experiment", "debias", "--quick", "--concurrency", "0"),
         ("`concurrency`",)),
    Case("order with two orderings", ("experiment", "order", "--n-orderings", "2"),
         ("`n_orderings`",)),
    Case("entropy with p above 1", ("experiment", "entropy", "--p", "1.5"), ("`p`", "prior")),
    Case("entropy with p a word", ("experiment", "entropy", "--p", "uniform"), ("`p`",)),
    Case("entropy with short sequences", ("experiment", "entropy", "--n-max", "3"), ("`n_max`",)),
    Case("falck with two paths", ("experiment", "falck", "--quick", "--n-paths", "2"),
         ("`n_paths`",)),
    Case("report of an unknown experiment", ("experiment", "report", "--only", "order,tarot"),
         ("`only`", "tarot")),
    Case("report with p out of range", ("experiment", "report", "--quick", "--p", "0"), ("`p`",)),
    Case("report with an unknown lab family", ("experiment", "report", "--cot-lab", "chess"),
         ("`cot_lab`", "chess")),
    Case("report with an unknown lab preset",
         ("experiment", "report", "--cot-lab", "parity", "--cot-lab-preset", "huge"),
         ("`cot_lab_preset`",)),
    Case("pe-ablation with no seeds", ("experiment", "pe-ablation", "--quick", "--seeds", "0"),
         ("`seeds`",)),
    Case("pe-ablation with zero steps", ("experiment", "pe-ablation", "--steps", "0"),
         ("`steps`",)),
]  # fmt: skip


def _falck_with_few_null_draws() -> object:
    from cotplan.research.experiments import falck_tests, laplace

    return falck_tests(laplace(), n_null=500)


API_CASES += [
    ApiCase("falck_tests with 500 null draws", lambda d: _falck_with_few_null_draws(),
            ("`n_null`", "5000")),
]  # fmt: skip


# --- #14 planner commands: plan, run, demo ---
# `plan` checks every option before it fits; `run` and `demo` before the model starts.


def _plan_json(sizes: tuple[int, ...] = (4,), **fields: object) -> bytes:
    """A plan file as `cotplan plan` writes it, with budgets for `sizes` (and `fields`)."""
    import json
    from dataclasses import asdict

    from cotplan.planner import Budget

    budgets = [
        asdict(Budget(n=n, eps=0.1, k_star=3.0 * n, low=2.0 * n, high=4.0 * n, tokens=3 * n,
                      log_base="e", c_in_base=1.0, formula="k* = 3n", law="step"))
        for n in sizes
    ]  # fmt: skip
    record = {"eps": 0.1, "delta": 0.05, "law": "step", "status_": "helps", "verdict_": "v",
              "calibration": "none.csv", "budgets": budgets, **fields}  # fmt: skip
    return json.dumps(record).encode()


def _local_id() -> str:
    """The embedded model's id: what a plan for `--backend local` (the default) names."""
    from cotplan.backends.models import KNOWN_MODELS

    return KNOWN_MODELS["smollm2-135m-instruct"].model_id


RUN = ("run", "--plan", "{dir}/plan.json", "--family", "parity", "--out", "{dir}/report",
       "--no-progress")  # fmt: skip
CALIBRATED = (("calibration.csv", _calibration_csv()),)

CASES += [
    Case("plan with δ of 1", (*PLAN, "--eps", "0.1", "--delta", "1"), ("`delta`",), CALIBRATED),
    Case("plan with an unknown law", (*PLAN, "--eps", "0.1", "--law", "exponential"),
         ("`law`", "exponential"), CALIBRATED),
    Case("plan with negative bootstrap", (*PLAN, "--eps", "0.1", "--bootstrap", "-1"),
         ("`bootstrap`",), CALIBRATED),
    Case("plan for n = 0", (*PLAN, "--eps", "0.1", "--n", "0"), ("`n`",), CALIBRATED),
    Case("run without a plan file", (*RUN, "--n", "4"), ("plan.json", "`plan`")),
    Case("run on a file that is no plan", (*RUN, "--n", "4"), ("`plan`",),
         (("plan.json", b'{"eps": 0.1}'),)),
    Case("run for a size the plan lacks", (*RUN, "--n", "4,8"), ("`n`", "8"),
         (("plan.json", _plan_json((4,), model=_local_id())),)),
    Case("run with n = 0", (*RUN, "--n", "0"), ("`n`",), (("plan.json", _plan_json()),)),
    Case("run with no items", (*RUN, "--n", "4", "--count", "0"), ("`count`",),
         (("plan.json", _plan_json()),)),
    Case("run with uncapped 0", (*RUN, "--n", "4", "--uncapped", "0"), ("`uncapped`",),
         (("plan.json", _plan_json()),)),
    Case("run with concurrency 0", (*RUN, "--n", "4", "--concurrency", "0"),
         ("`concurrency`",), (("plan.json", _plan_json()),)),
    Case("demo with ε of 1.5", ("demo", "--quick", "--eps", "1.5"), ("`eps`",)),
    Case("demo with negative queries a day", ("demo", "--quick", "--queries-per-day", "-1"),
         ("`queries_per_day`",)),
    Case("demo with no items", ("demo", "--quick", "--count", "0"), ("`count`",)),
    Case("demo with no held-out items", ("demo", "--quick", "--held-out", "0"),
         ("`held_out`",)),
]  # fmt: skip

# --- #15 lab reasoning commands: kstar-lab train, study, law ---
# Each checks its options before a lab model is loaded or trained (a training run that started
# would not be refused by the guard: it would only be slow, so the case would time out).
LAB_FILE = (("model.pt", b"not a folder"),)

CASES += [
    Case("kstar-lab train of an unknown family", ("kstar-lab", "train", "parrot"),
         ("`family`", "parrot")),
    Case("kstar-lab train with an unknown preset", ("kstar-lab", "train", "parity", "--preset",
         "huge"), ("`preset`", "huge")),
    Case("kstar-lab train of a size the family lacks", ("kstar-lab", "train", "parity",
         "--preset", "wide"), ("`n_max`", "24")),
    Case("kstar-lab train exporting into a file", ("kstar-lab", "train", "parity", "--export",
         "{dir}/model.pt"), ("`export`", "is a file"), LAB_FILE),
    Case("kstar-lab train exporting under a file", ("kstar-lab", "train", "parity", "--export",
         "{dir}/model.pt/weights"), ("`export`", "is a file"), LAB_FILE),
    Case("kstar-lab train on 0 threads", ("kstar-lab", "train", "lamp", "--threads", "0"),
         ("`threads`",)),
    Case("kstar-lab train with a negative estimate", ("kstar-lab", "train", "lamp",
         "--estimate", "-5"), ("`estimate`",)),
    Case("kstar-lab train checking a size it does not train", ("kstar-lab", "train", "lamp",
         "--check-sizes", "8,40"), ("`check_sizes`", "40")),
    Case("kstar-lab train checking sizes that are not numbers", ("kstar-lab", "train", "lamp",
         "--check-sizes", "8,x"), ("`check_sizes`", "whole numbers")),
    Case("kstar-lab study of an unknown family", ("kstar-lab", "study", "parrot", "--out",
         "{dir}/report"), ("`family`", "parrot")),
    Case("kstar-lab study with an unknown preset", ("kstar-lab", "study", "parity", "--preset",
         "nope"), ("`preset`", "nope")),
    Case("kstar-lab study into a file", ("kstar-lab", "study", "parity", "--out",
         "{dir}/model.pt"), ("`out`", "is a file"), LAB_FILE),
    Case("kstar-lab law at a size the model lacks", ("kstar-lab", "law", "lamp", "--sizes",
         "4,99"), ("`sizes`", "99")),
    Case("kstar-lab law with sizes that are not numbers", ("kstar-lab", "law", "lamp",
         "--sizes", "4,x"), ("`sizes`",)),
    Case("kstar-lab law with n = 0", ("kstar-lab", "law", "lamp", "--sizes", "0"),
         ("`sizes`",)),
    Case("kstar-lab law with ε above 1", ("kstar-lab", "law", "lamp", "--eps", "0.5,1.5"),
         ("`eps`", "(0, 1)")),
    Case("kstar-lab law with no items", ("kstar-lab", "law", "lamp", "--items", "0"),
         ("`items`",)),
    Case("kstar-lab law with negative bootstrap", ("kstar-lab", "law", "lamp", "--bootstrap",
         "-1"), ("`bootstrap`",)),
    Case("kstar-lab law into a file", ("kstar-lab", "law", "lamp", "--out", "{dir}/model.pt"),
         ("`out`", "is a file"), LAB_FILE),
]  # fmt: skip


def _lab_mechanism(k: int) -> object:
    from cotplan.research.lab.reasoning.tasks import mechanism_error

    return mechanism_error("lamp", 4, k)


def _lab_items(n: int) -> object:
    from cotplan.research.lab.reasoning.tasks import make_lab_tasks

    return make_lab_tasks("lamp", n=n, count=1)


API_CASES += [
    ApiCase("lab mechanism at a negative budget", lambda d: _lab_mechanism(-1), ("`k`",)),
    ApiCase("lab items of size 0", lambda d: _lab_items(0), ("`n`",)),
]


# --- the remaining planner cases: targets at the edges, an empty calibration, a NaN size


def _fitted_planner_budget(n: float) -> object:
    import pandas as pd

    from cotplan.planner import BudgetPlanner

    rows = [
        {"item": f"i{i}", "n": size, "k": k, "correct": int(k >= 3 * size or i % 2 == 0)}
        for size in (4, 8)
        for i in range(12)
        for k in (0, 3 * size, 5 * size)
    ]
    planner = BudgetPlanner(n_bootstrap=0).fit(pd.DataFrame(rows))
    return planner.budget(n, 0.1)


CASES += [
    Case("ε of exactly 1", (*PLAN, "--eps", "1"), ("`eps`",), CALIBRATED),
    Case("negative ε", (*PLAN, "--eps", "-0.1"), ("`eps`",), CALIBRATED),
    Case("infinite ε", (*PLAN, "--eps", "inf"), ("`eps`",), CALIBRATED),
    Case("a calibration with only its header", (*PLAN, "--eps", "0.1"), ("`calibration`",),
         (("calibration.csv", _text("item,n,k,correct")),)),
]  # fmt: skip

API_CASES += [
    ApiCase("budget(n=nan)", lambda d: _fitted_planner_budget(float("nan")), ("`n`",)),
]


# --- #30 saved files validated on load, timeouts, report folders -------------------------------
# plan.json and calibration CSVs are checked field by field when read, before any model starts;
# each error names the file, the line (a CSV's file line, header = line 1) and the field.


def _edited_plan(edit: Callable[[dict[str, Any]], None]) -> bytes:
    """`_plan_json((4, 8))` as `cotplan plan` indents it, with `edit` applied to the record."""
    import json

    record = json.loads(_plan_json((4, 8)))
    edit(record)
    return json.dumps(record, indent=2).encode()


def _line_of(data: bytes, text: str, occurrence: int = 1) -> str:
    """'line N' of the `occurrence`-th line of `data` that contains `text`."""
    found = [i for i, line in enumerate(data.decode().splitlines(), 1) if text in line]
    return f"line {found[occurrence - 1]}"


def _set(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.update(changes)


def _set_budget(index: int, **changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record["budgets"][index].update(changes)


_EPS_TEXT = _edited_plan(_set(eps="x"))
_EPS_FIVE = _edited_plan(_set(eps=5))
_TOKENS_NULL = _edited_plan(_set_budget(0, tokens=None))
_TOKENS_HUGE = _edited_plan(_set_budget(1, tokens=10**12))
_SAME_N = _edited_plan(_set_budget(1, n=4))
_DELTA_BOOL = _edited_plan(_set(delta=True))
RUN_4 = (*RUN, "--n", "4")

CASES += [
    Case(
        "plan.json with ε as text",
        RUN_4,
        ("plan.json", _line_of(_EPS_TEXT, '"eps"'), "`eps`"),
        (("plan.json", _EPS_TEXT),),
    ),
    Case(
        "plan.json with ε = 5", RUN_4, ("plan.json", "`eps`", "(0, 1)"), (("plan.json", _EPS_FIVE),)
    ),
    Case(
        "plan.json with tokens null",
        RUN_4,
        ("plan.json", _line_of(_TOKENS_NULL, '"tokens"'), "`budgets[0].tokens`"),
        (("plan.json", _TOKENS_NULL),),
    ),
    Case(
        "plan.json with 10^12 tokens",
        RUN_4,
        ("plan.json", _line_of(_TOKENS_HUGE, '"tokens"', 2), "`budgets[1].tokens`"),
        (("plan.json", _TOKENS_HUGE),),
    ),
    Case(
        "plan.json with one size twice",
        RUN_4,
        ("plan.json", "`budgets[1].n`", "budgets[0]"),
        (("plan.json", _SAME_N),),
    ),
    Case("plan.json with δ true", RUN_4, ("plan.json", "`delta`"), (("plan.json", _DELTA_BOOL),)),
    Case(
        "run into a file",
        (*RUN_4[:6], "{dir}/taken.txt", *RUN_4[7:]),
        ("`out`", "not a folder"),
        (("plan.json", _plan_json()), ("taken.txt", b"mine")),
    ),
    Case(
        "run with timeout 0",
        (*RUN_4, "--timeout", "0"),
        ("`timeout`",),
        (("plan.json", _plan_json()),),
    ),
    Case(
        "plan into a file",
        (*PLAN[:4], "{dir}/taken.txt", "--eps", "0.1"),
        ("`out`", "not a folder"),
        (*CALIBRATED, ("taken.txt", b"mine")),
    ),
    Case(
        "plan on a folder",
        ("plan", "--calibration", "{dir}/report", "--eps", "0.1"),
        ("`calibration`", "is a folder"),
    ),
    Case(
        "calibration with one item and budget recorded twice, differently",
        (*PLAN, "--eps", "0.1"),
        ("calibration.csv", "line 5", "`correct`", "line 3"),
        (
            (
                "calibration.csv",
                _text("item,n,k,correct", "a,4,0,1", "a,4,8,1", "b,4,0,0", "a,4,8,0"),
            ),
        ),
    ),
    Case(
        "calibration with a budget of 1e300",
        (*PLAN, "--eps", "0.1"),
        ("calibration.csv", "line 3", "`k`"),
        (("calibration.csv", _text("item,n,k,correct", "a,4,0,1", "a,4,1e300,1")),),
    ),
    Case(
        "calibration of two models",
        (*PLAN, "--eps", "0.1"),
        ("calibration.csv", "line 4", "`model`", "line 2"),
        (
            (
                "calibration.csv",
                _text("item,n,k,correct,model", "a,4,0,1,m1", "a,4,8,1,m1", "b,4,0,0,m2"),
            ),
        ),
    ),
    Case(
        "calibration with one item at two sizes",
        (*PLAN, "--eps", "0.1"),
        ("calibration.csv", "line 3", "`n`"),
        (("calibration.csv", _text("item,n,k,correct", "a,4,0,1", "a,8,8,1")),),
    ),
    Case(
        "calibration error after a blank line names the file line",
        (*PLAN, "--eps", "0.1"),
        ("calibration.csv", "line 4", "`correct`"),
        (("calibration.csv", _text("item,n,k,correct", "a,4,0,1", "", "a,4,8,maybe")),),
    ),
    Case(
        "calibration with a size of 0",
        (*PLAN, "--eps", "0.1"),
        ("calibration.csv", "line 2", "`n`"),
        (("calibration.csv", _text("item,n,k,correct", "a,0,0,1")),),
    ),
    Case("calibrate with timeout 0", (*FAMILY, "--timeout", "0"), ("`timeout`",)),
    Case("calibrate with an unknown protocol", (*FAMILY, "--protocol", "thunk"), ("`protocol`",)),
    Case(
        "demo with an unknown protocol",
        ("demo", "--quick", "--protocol", "harmonica"),
        ("`protocol`", "think"),
    ),
    Case("calibrate with a NaN timeout", (*FAMILY, "--timeout", "nan"), ("`timeout`",)),
    Case("calibrate with a day's timeout", (*FAMILY, "--timeout", "86400"), ("`timeout`",)),
    Case("calibrate with negative retries", (*FAMILY, "--max-retries=-1"), ("`max_retries`",)),
    Case("calibrate with 100 retries", (*FAMILY, "--max-retries", "100"), ("`max_retries`",)),
    Case("answer with timeout 0", (*ANSWER, "--timeout", "0"), ("`timeout`",), WITH_EXAMPLES),
    Case("demo with negative retries", ("demo", "--quick", "--max-retries=-1"), ("`max_retries`",)),
    Case(
        "experiment with timeout 0",
        ("experiment", "martingale", "--quick", "--timeout", "0"),
        ("`timeout`",),
    ),
    Case(
        "experiment report with too many retries",
        ("experiment", "report", "--quick", "--max-retries", "11"),
        ("`max_retries`",),
    ),
]

# Numbers the issue saw accepted or turned into tracebacks: each is now refused by name.
CASES += [
    Case("plan with seed -1", (*PLAN, "--eps", "0.1", "--seed=-1"), ("`seed`",), CALIBRATED),
    Case(
        "plan with 10^8 bootstrap resamples",
        (*PLAN, "--eps", "0.1", "--bootstrap", "100000000"),
        ("`bootstrap`",),
        CALIBRATED,
    ),
    Case(
        "run with an uncapped cap of 10^11",
        (*RUN_4, "--uncapped", "99999999999"),
        ("`uncapped`",),
        (("plan.json", _plan_json()),),
    ),
    Case("run with seed -1", (*RUN_4, "--seed=-1"), ("`seed`",), (("plan.json", _plan_json()),)),
    Case("calibrate with seed -1", (*FAMILY, "--seed=-1"), ("`seed`",)),
]


# --- #30 task files, examples files, answer and cache (backend and files helper) -------------


def _row(**fields: object) -> str:
    return json.dumps({"id": "a", "prompt": "q", "answer": "1", **fields})


def _tasks(*lines: str | bytes, name: str) -> Case:
    content = b"".join(line if isinstance(line, bytes) else line.encode() + b"\n" for line in lines)
    return Case(name, TASKS, (), (("tasks.jsonl", content),))


def _expect(case: Case, *expect: str) -> Case:
    return Case(case.name, case.argv, ("tasks.jsonl", *expect), case.files)


CASES += [
    _expect(_tasks('{"id": "a", "prompt": "q", "answer": NaN}', name="task answer NaN"),
            "line 1", "`answer`", "finite"),
    _expect(_tasks(_row(), '{"id": "b", "prompt": "q", "answer": 1e400}', name="task answer 1e400"),
            "line 2", "`answer`"),
    _expect(_tasks('{"id": "a", "prompt": "q", "answer": "1", "answer": "2"}',
                   name="task field given twice"), "line 1", "`answer`", "twice"),
    _expect(_tasks("[", _row(), "]", name="task file that is one JSON array"),
            "line 1", "one object per line"),
    _expect(_tasks(_row(), '{"id": "b", "prompt": "q", "answer": ' + "9" * 5000 + "}",
                   name="task answer of 5000 digits"), "line 2", "4,300 digits"),
    _expect(_tasks('{"id": "a", "prompt": "q", "answer": "1", "family": ' + "[" * 100000
                   + "]" * 100000 + "}", name="task nested too deeply"), "line 1", "nested"),
    _expect(_tasks(json.dumps({"id": "a", "messages": [{"role": "user", "content": "q",
                                                        "nmae": "x"}], "answer": "1"}),
                   name="task message with an unknown field"), "line 1", "`messages[0]`"),
    _expect(_tasks(_row(), _row(prompt="   "), name="task empty prompt"), "line 2", "`prompt`"),
    _expect(_tasks(_row(), _row(id="b", prompt=None), name="task prompt null"),
            "line 2", "`prompt`"),
    _expect(_tasks(_row(id=1.5), name="task id a float"), "line 1", "`id`"),
    _expect(_tasks(_row(id=1), '{"id": "1", "prompt": "q", "answer": "1"}',
                   name="task ids 1 and '1'"), "line 2", "`id`", "first on line 1"),
    _expect(_tasks(_row(kind="binary", answer="2"), name="task binary answer 2"),
            "line 1", "`answer`"),
    _expect(_tasks(_row(choices=["A", "B"], answer="C"), name="task answer not a choice"),
            "line 1", "`answer`"),
    _expect(_tasks(_row(choices=["A", "A"], answer="A"), name="task choice repeated"),
            "line 1", "`choices`"),
    _expect(_tasks(_row(kind="choice"), name="task choice without choices"),
            "line 1", "`choices`"),
    _expect(_tasks(_row(anwser="1"), name="task field misspelt"), "line 1", "'anwser'"),
    _expect(_tasks(_row(family=""), name="task empty family"), "line 1", "`family`"),
    _expect(_tasks(_row(n=3.0), name="task n 3.0"), "line 1", "`n`"),
    _expect(_tasks(json.dumps({"id": "a", "messages": [{"role": "robot", "content": "q"}],
                               "answer": "1"}), name="task message role unknown"),
            "line 1", "`messages[0].role`"),
    _expect(_tasks(json.dumps({"id": "a", "prompt": "q", "messages": [], "answer": "1"}),
                   name="task prompt and messages"), "line 1", "`prompt`"),
    # A U+2028 inside a JSON string is valid JSON and no line break: line 2 is the bad one.
    _expect(_tasks(_row(prompt="q\u2028x"), '{"id": "b"', name="task with U+2028 in a prompt"),
            "line 2", "not valid JSON"),
]  # fmt: skip

_ANSWER_FILE = ("answer", "{dir}/ex.{suffix}", "--query", "1 1")


def _examples(suffix: str, content: bytes, *expect: str, name: str) -> Case:
    argv = tuple(a.replace("{suffix}", suffix) for a in _ANSWER_FILE)
    return Case(name, argv, (f"ex.{suffix}", "`examples`", *expect), ((f"ex.{suffix}", content),))


CASES += [
    _examples("jsonl", b"\xff\xfe{", "UTF-8", name="examples not UTF-8"),
    _examples("csv", b"input,output\n\xff,1\nb,0\n", "UTF-8", name="examples CSV not UTF-8"),
    _examples("jsonl", b'{"input": "a", "output": ' + b"9" * 5000 + b"}\n" + EXAMPLES.encode(),
              "digits", name="examples number of 5000 digits"),
    _examples("jsonl", b'{"input": ' + b"[" * 100000 + b"]" * 100000 + b"}\n",
              "nested", name="examples nested too deeply"),
    _examples("csv", b"input,output\n" + b"a" * 200000 + b",1\nb,0\n", "field larger",
              name="examples CSV field of 200,000 characters"),
    Case("answer with choices equal but for spaces",
         (*ANSWER, "--choice", "a", "--choice", "a "), ("`choice`",), WITH_EXAMPLES),
    Case("answer with k of 10^11", (*ANSWER, "--k", "99999999999"), ("`k`",), WITH_EXAMPLES),
    Case("cache clear older than forever", ("cache", "clear", "--older-than", "inf"),
         ("`older_than`", "finite")),
    Case("cache clear older than NaN days", ("cache", "clear", "--older-than", "nan"),
         ("`older_than`",)),
    Case("cache clear older than -1 days", ("cache", "clear", "--older-than", "-1"),
         ("`older_than`",)),
    Case("cache clear for an empty model", ("cache", "clear", "--model", " "), ("`model`",)),
]  # fmt: skip

API_CASES += [
    ApiCase("load_tasks of a NaN answer",
            lambda d: _load_tasks(d / "t.jsonl"), ("t.jsonl", "line 1", "`answer`"),
            files=(("t.jsonl", b'{"id": "a", "prompt": "q", "answer": NaN}\n'),)),
    ApiCase("load_tasks of a key given twice",
            lambda d: _load_tasks(d / "t.jsonl"), ("t.jsonl", "line 1", "`id`"),
            files=(("t.jsonl", b'{"id": "a", "id": "b", "prompt": "q", "answer": "1"}\n'),)),
]  # fmt: skip


# --- #43: files read as untrusted JSON, plans bound to their model -----------------------------

_DEEP = b"[" * 100_000 + b"]" * 100_000
_SERVE = ("serve", "--plan", "{dir}/plan.json", "--upstream", "http://127.0.0.1:9/v1")
_ACTUALS_43 = (*_COST_PROJECT, "--draws", "1000", "--actuals", "{dir}/a.jsonl")


def _plan_v3(**changes: object) -> bytes:
    """`_plan_json` as a version-3 file for the embedded model, with `changes` (None drops)."""
    import json

    record = json.loads(_plan_json())
    record |= {"schema_version": 3, "model": _local_id()}
    for key, value in changes.items():
        if value is None:
            record.pop(key)
        else:
            record[key] = value
    return json.dumps(record, indent=2).encode()


CASES += [
    Case("run on a plan nested 100,000 deep", RUN, ("plan.json", "nested"),
         (("plan.json", _DEEP),)),
    Case("serve on a plan nested 100,000 deep", _SERVE, ("plan.json", "nested"),
         (("plan.json", _DEEP),)),
    Case("run on a plan.json with a key given twice", RUN, ("plan.json", "'eps'", "twice"),
         (("plan.json", _plan_v3().replace(b'"eps": 0.1', b'"eps": 0.1, "eps": 0.5')),)),
    Case("run on a version-3 plan without a model", RUN, ("plan.json", "`model`", "missing"),
         (("plan.json", _plan_v3(model=None)),)),
    Case("run on a plan that records no model", RUN,
         ("`backend`", "does not record the model", "--allow-other-model"),
         (("plan.json", _plan_json()),)),
    Case("serve on a plan that is not UTF-8", _SERVE, ("plan.json", "UTF-8"),
         (("plan.json", b'{"eps": "\xff"}'),)),
    Case("cost call with a price file nested 100,000 deep", (*CALL, "--prices", "{dir}/p.json"),
         ("p.json", "nested"), (("p.json", _DEEP),)),
    Case("cost call with a price file giving a key twice", (*CALL, "--prices", "{dir}/p.json"),
         ("p.json", "'input'", "twice"),
         (("p.json", b'[{"model": "gpt-4o", "input": 1, "input": 2, "output": 3}]'),)),
    Case("actuals nested 100,000 deep", _ACTUALS_43, ("a.jsonl", "line 2", "nested"),
         (("a.jsonl", b"\n" + _DEEP + b"\n"),)),
    Case("actuals with a key given twice", _ACTUALS_43, ("a.jsonl", "line 1", "'model'", "twice"),
         (("a.jsonl", b'{"model": "gpt-4o", "model": "gpt-4o-mini"}\n'),)),
]  # fmt: skip


def _load_plan(path: Path) -> object:
    from cotplan.planner import SavedPlan

    return SavedPlan.load(str(path))  # a str, as a user types it


def _load_exit_plan(path: Path) -> object:
    from cotplan.planner.exit_plan import load_exit_plan

    return load_exit_plan(path)


API_CASES += [
    ApiCase("SavedPlan.load of a str path to a plan nested 100,000 deep",
            lambda d: _load_plan(d / "plan.json"), ("plan.json", "nested"),
            files=(("plan.json", _DEEP),)),
    ApiCase("SavedPlan.load of a plan with a key given twice",
            lambda d: _load_plan(d / "plan.json"), ("plan.json", "'delta'", "twice"),
            files=(("plan.json", _plan_v3().replace(b'"delta": 0.05', b'"delta": 0.05, '
                                                     b'"delta": 0.5')),)),
    ApiCase("load_exit_plan of a file nested 100,000 deep",
            lambda d: _load_exit_plan(d / "exit.json"), ("exit.json", "nested"),
            files=(("exit.json", _DEEP),)),
]  # fmt: skip


def _load_tasks(path: Path) -> object:
    from cotplan.tasks import load_tasks

    return load_tasks(path)


def test_the_docs_give_the_corpus_its_true_size() -> None:
    import re

    text = (Path(__file__).parent.parent / "docs" / "reliability.md").read_text(encoding="utf-8")
    said = re.search(r"corpus \((\d+) command-line cases over every command and (\d+)", text)
    assert said is not None, "docs/reliability.md no longer states the corpus's size"
    assert (int(said[1]), int(said[2])) == (len(CASES), len(API_CASES)), (
        "docs/reliability.md states another size: `.venv/bin/python tests/test_bad_input.py` "
        "prints the true one"
    )


if __name__ == "__main__":
    # The count docs/reliability.md gives: `.venv/bin/python tests/test_bad_input.py`.
    print(f"{len(CASES)} command-line cases and {len(API_CASES)} calls of the Python API")
