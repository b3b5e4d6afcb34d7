"""Bad input to `cotplan plan` and `cotplan run` (issue 30): one line naming the option, or the
file, line and field, before any model starts, and nothing written.

The harness is `tests/test_bad_input.py`'s (`no_model_calls` refuses every process start,
connection and request); these cases are the planner's, kept in their own file. Calibration
CSVs that disagree with themselves (an item and budget twice with different outcomes, a budget
of 1e300, two models, one item at two sizes, a line after a blank one) are in that corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import (
    SAVED,
    ApiCase,
    Case,
    _calibration_csv,
    _plan_json,
    _text,
    check_case,
    no_model_calls,
    one_line,
)

from cotplan.backends.models import KNOWN_MODELS

PLAN = ("plan", "--calibration", "{dir}/calibration.csv", "--out", "{dir}/report")
RUN = ("run", "--plan", "{dir}/plan.json", "--family", "parity", "--n", "4", "--out",
       "{dir}/report", "--no-progress")  # fmt: skip
CALIBRATED = (("calibration.csv", _calibration_csv()),)
PLANNED = (("plan.json", _plan_json()),)


def _with(field: str, value: object, **more: object) -> bytes:
    record = json.loads(_plan_json())
    record[field] = value
    record.update(more)
    return json.dumps(record, indent=2).encode()


#: The embedded model's id: what a plan for `--backend local` (the default) names.
LOCAL_ID = KNOWN_MODELS["smollm2-135m-instruct"].model_id


CASES = [
    Case("plan with a negative seed", (*PLAN, "--eps", "0.1", "--seed=-1"), ("`seed`", "-1"),
         CALIBRATED),
    Case("plan with a seed beyond 32 bits", (*PLAN, "--eps", "0.1", "--seed", str(2**40)),
         ("`seed`",), CALIBRATED),
    Case("plan on a folder", ("plan", "--calibration", "{dir}/report", "--eps", "0.1"),
         ("`calibration`", "is a folder")),
    Case("plan into an existing file", (*PLAN[:4], "{dir}/taken.txt", "--eps", "0.1"),
         ("`out`", "not a folder"), (*CALIBRATED, ("taken.txt", b"mine"))),
    Case("plan with 10^8 bootstrap resamples", (*PLAN, "--eps", "0.1", "--bootstrap",
         "100000000"), ("`bootstrap`", "100000"), CALIBRATED),
    Case("plan with ε of 1e300", (*PLAN, "--eps", "1e300"), ("`eps`",), CALIBRATED),
    Case("plan with a NaN reach", (*PLAN, "--eps", "0.1", "--reach", "nan"), ("`reach`",),
         CALIBRATED),
    Case("plan with a reach below 1", (*PLAN, "--eps", "0.1", "--reach", "0.5"), ("`reach`",),
         CALIBRATED),
    Case("plan with α that is not a number", (*PLAN, "--eps", "0.1", "--alpha", "half"),
         ("`alpha`", "half"), CALIBRATED),
    Case("plan with an unknown log base", (*PLAN, "--eps", "0.1", "--log-base", "3"),
         ("`log_base`",), CALIBRATED),
    Case("plan for sizes that are not numbers", (*PLAN, "--eps", "0.1", "--n", "4,x"),
         ("`n`", "whole numbers"), CALIBRATED),
    Case("plan on a calibration with 1e300 as a size", (*PLAN, "--eps", "0.1"),
         ("calibration.csv", "line 2", "`n`"),
         (("calibration.csv", _text("item,n,k,correct", "a,1e300,0,1")),)),
    Case("run with uncapped 99999999999", (*RUN, "--uncapped", "99999999999"),
         ("`uncapped`", "1048576"), PLANNED),
    Case("run into an existing file", (*RUN[:8], "{dir}/taken.txt", *RUN[9:]),
         ("`out`", "not a folder"), (*PLANNED, ("taken.txt", b"mine"))),
    Case("run with a negative seed", (*RUN, "--seed=-1"), ("`seed`",), PLANNED),
    Case("run on a folder for a plan", ("run", "--plan", "{dir}/report", "--family", "parity",
         "--n", "4"), ("`plan`", "is a folder")),
    Case("run with an unknown protocol", (*RUN, "--protocol", "thunk"), ("`protocol`",),
         PLANNED),
    Case("run on a plan whose protocol is not text", RUN, ("plan.json", "`protocol`"),
         (("plan.json", _with("protocol", 7)),)),
    Case("plan on a calibration with negative reasoning tokens", (*PLAN, "--eps", "0.1"),
         ("calibration.csv", "line 2", "`reasoning_tokens`"),
         (("calibration.csv", _text("item,n,k,correct,reasoning_tokens", "a,4,0,1,-5")),)),
    Case("plan on a calibration with a cost that is text", (*PLAN, "--eps", "0.1"),
         ("calibration.csv", "line 2", "`cost_usd`"),
         (("calibration.csv", _text("item,n,k,correct,cost_usd", "a,4,0,1,x")),)),
    Case("plan on a calibration with a probability of 5", (*PLAN, "--eps", "0.1"),
         ("calibration.csv", "line 2", "`answer_prob`"),
         (("calibration.csv", _text("item,n,k,correct,answer_prob", "a,4,0,1,5")),)),
    Case("plan on a calibration with an unknown protocol", (*PLAN, "--eps", "0.1"),
         ("calibration.csv", "line 2", "`protocol`"),
         (("calibration.csv", _text("item,n,k,correct,protocol", "a,4,0,1,thunk")),)),
    Case("plan on a calibration with an unknown mode", (*PLAN, "--eps", "0.1"),
         ("calibration.csv", "line 2", "`mode`"),
         (("calibration.csv", _text("item,n,k,correct,mode", "a,4,0,1,telepathy")),)),
    Case("plan on a calibration with a column given twice", (*PLAN, "--eps", "0.1"),
         ("calibration.csv", "line 1", "`correct`", "twice"),
         (("calibration.csv", _text("item,n,k,correct,correct", "a,4,0,1,0")),)),
    Case("run on a plan made for another protocol", (*RUN, "--protocol", "qwen3"),
         ("`protocol`", "'think'", "'qwen3'", "--allow-other-model"),
         (("plan.json", _with("protocol", "think", model=LOCAL_ID)),)),
]  # fmt: skip


def _request_fields(folder: Path, plan: bytes, provider: str = "openai-compatible") -> object:
    from cotplan.planner import SavedPlan

    (folder / "plan.json").write_bytes(plan)
    return SavedPlan.load(folder / "plan.json").request_fields(4, provider=provider)


API_CASES = [
    ApiCase("plan from a calibration with ε of 2", lambda d: _plan(d, eps=2.0), ("`eps`",),
            files=CALIBRATED),
    ApiCase("plan from a calibration with a bootstrap of 10^8",
            lambda d: _plan(d, n_bootstrap=10**8), ("`bootstrap`",), files=CALIBRATED),
    ApiCase("plan from a calibration with a reach of 0", lambda d: _plan(d, reach=0.0),
            ("`reach`",), files=CALIBRATED),
    ApiCase("request fields of a plan that records no model",
            lambda d: _request_fields(d, _plan_json()), ("`model`", "plan again")),
    ApiCase("request fields from an unknown provider",
            lambda d: _request_fields(d, _with("model", "Qwen3-8B"), "nowhere"),
            ("`provider`", "nowhere")),
]  # fmt: skip


def _plan(folder: Path, **options: object) -> object:
    from cotplan.planner import plan_from_calibration

    eps = options.pop("eps", 0.1)
    return plan_from_calibration(folder / "calibration.csv", eps, **options)  # type: ignore[arg-type]


@pytest.fixture
def case_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The case's working directory, with a previous report and a private empty user folder."""
    report = tmp_path / "report"
    report.mkdir()
    for name, content in SAVED.items():
        (report / name).write_bytes(content)
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    monkeypatch.setenv("COTPLAN_HOME", str(home))
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_plan_input_gets_one_line_before_any_call_and_writes_nothing(
    case: Case, case_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_case(case, case_folder, capsys)


@pytest.mark.parametrize("api_case", API_CASES, ids=[c.name for c in API_CASES])
def test_bad_plan_call_raises_before_any_call(api_case: ApiCase, case_folder: Path) -> None:
    for name, content in api_case.files:
        (case_folder / name).write_bytes(content)
    with no_model_calls() as attempts, pytest.raises(api_case.error) as raised:
        api_case.call(case_folder)
    assert attempts == []
    message = one_line(str(raised.value))
    for expected in api_case.expect:
        assert expected in message, f"{expected!r} not in {message!r}"
