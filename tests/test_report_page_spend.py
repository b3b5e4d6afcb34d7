"""report.html for `cost project` and `monitor` folders: the answer first (the P10/P50/P90 per
period; the calls against the plan by size), then the charts (the monthly spend band and the
scenarios'; the cap's bite rate and the reasoning tokens day by day), then the statistics;
`cotplan report DIR` rebuilds the same page. Their terminal output fits 80 and 120 columns."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from production_support import PLAIN, make_plan, record
from test_report_page import open_in_browser
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.production import CallLog

runner = CliRunner()
PROJECT = ["cost", "project", "gpt-4o", "--queries-per-day", "1000", "--prompt-mean", "900",
           "--output-mean", "200", "--output-sd", "100", "--volume-cv", "0.2",
           "--compare-model", "gpt-4o-mini", "--draws", "2000", "--on", "2026-12-01"]  # fmt: skip


def _answer(page: str) -> str:
    return page[page.index('<section class="answer">') : page.index("</section>")]


def _offline(page: str) -> None:
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


@pytest.fixture(scope="module")
def projected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cost") / "report"
    result = runner.invoke(app, [*PROJECT, "--out", str(out)], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return out


def write_log(folder: Path) -> tuple[Path, Path]:
    """A log over three days at n = 3 (cap 6), the cap biting more each day; a plan beside
    its calibration."""
    log = CallLog(folder / "log.sqlite")
    for day in range(3):
        for i in range(6):
            bitten = i < 2 * (day + 1)
            log.append(
                record(time=f"2026-12-0{day + 1}T0{i}:00:00+00:00", call_id=f"c{day}-{i}",
                       cap_bitten=bitten, answer_forced=bitten,
                       reasoning_tokens=6 if bitten else 4, cost_usd=0.001)
            )  # fmt: skip
    plan = make_plan(PLAIN).save(folder / "plan.json")
    rows = ["item,n,k,correct,truncated,forced,reasoning_tokens,cost_usd"]
    rows += [f"i{j},3,6,1,{int(j == 0)},{int(j == 0)},{6 if j == 0 else 3},0.002" for j in range(4)]
    (folder / "calibration.csv").write_text("\n".join(rows) + "\n")
    return log.path, plan


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("monitor")
    log, plan = write_log(folder)
    out = folder / "report"
    result = runner.invoke(app, ["monitor", str(log), "--plan", str(plan), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_cost_project_writes_a_page_with_the_bands_first_and_its_charts(projected: Path) -> None:
    page = (projected / "report.html").read_text(encoding="utf-8")
    answer = _answer(page)
    year = pd.read_csv(projected / "projection_years.csv").iloc[0]
    for column in ("p10_usd", "p50_usd", "p90_usd"):
        assert f"${year[column]:,.2f}" in answer  # the year's band, as the CSV holds it
    scenarios = pd.read_csv(projected / "comparison.csv")
    for row in scenarios.itertuples():
        assert f"${row.total_p50_usd:,.2f}" in answer
    assert page.index("P10, P50, P90 per period") < page.index("<h2>Charts")
    assert page.index("<h2>Charts") < page.index("<h2>Statistics")
    assert page.count("<svg") >= 2
    _offline(page)


def test_monitor_writes_a_page_with_the_calls_first_and_the_cap_over_time(
    monitored: Path,
) -> None:
    page = (monitored / "report.html").read_text(encoding="utf-8")
    answer = _answer(page)
    assert "18 calls" in answer
    days = pd.read_csv(monitored / "monitor_days.csv")
    assert list(days["calls"]) == [6, 6, 6]
    assert [round(x, 3) for x in days["cap_bitten"]] == [0.333, 0.667, 1.0]
    assert "<td>3</td><td>6</td>" in answer  # n = 3 under its cap of 6
    assert page.count("<svg") >= 2
    assert page.index("<h2>Charts") < page.index("<h2>Statistics")
    _offline(page)


@pytest.mark.parametrize("kind", ["projected", "monitored"])
def test_cotplan_report_rebuilds_the_page(kind: str, request: pytest.FixtureRequest) -> None:
    folder: Path = request.getfixturevalue(kind)
    before = (folder / "report.html").read_text(encoding="utf-8")
    (folder / "report.html").unlink()
    result = runner.invoke(app, ["report", str(folder)])
    assert result.exit_code == 0, result.output
    assert (folder / "report.html").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("columns", [80, 120])
def test_cost_project_and_monitor_fit_the_terminal(columns: int, tmp_path: Path) -> None:
    log, plan = write_log(tmp_path)
    for argv in (PROJECT, ["monitor", str(log), "--plan", str(plan)]):
        result = runner.invoke(app, argv, env={"COLUMNS": str(columns)})
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert max(len(line) for line in lines) <= columns, argv[:2]
        assert "…" not in result.output, argv[:2]


@pytest.mark.parametrize(
    ("kind", "said"),
    [("projected", "P10, P50, P90 per period"), ("monitored", "The calls against the plan")],
)
def test_the_pages_open_offline_in_a_real_browser(
    kind: str, said: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    folder: Path = request.getfixturevalue(kind)
    dom = open_in_browser(folder / "report.html", tmp_path)
    assert dom.count("<svg") >= 2  # both charts rendered in the page
    assert said in dom
