"""report.html for `cost project`, `cost project --portfolio` and `monitor` folders: the answer
first (the P10/P50/P90 per period, the company's for a portfolio; the calls against the plan by
size), then the charts (the monthly spend band and the scenarios'; a portfolio's band, its
workloads stacked and each workload's band with the per-workload table; the cap's bite rate
and the reasoning tokens day by day), then the statistics; `cotplan report DIR` rebuilds the
same page. Their terminal output fits 80 and 120 columns."""

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


PORTFOLIO = """start = "2027-01"
months = 6
growth_sd = 0.02

[[workloads]]
name = "search"
model = "gpt-4o-mini"
queries_per_day = 200000
growth = 0.04
prompt_mean = 1500
output_mean = 150
output_sd = 60
tags = { team = "search", feature = "suggest" }

[[workloads]]
name = "support"
model = "claude-sonnet-4-5"
queries_per_day = 20000
growth = 0.02
prompt_mean = 3000
output_mean = 400
reasoning_mean = 600
tags = { team = "support" }

[[workloads]]
name = "summaries"
model = "gpt-6.2-sol"
queries_per_day = 5000
growth = 0.06
prompt_mean = 2000
output_mean = 300
batch_share = 0.5
"""


def portfolio_argv(folder: Path) -> list[str]:
    path = folder / "portfolio.toml"
    path.write_text(PORTFOLIO, encoding="utf-8")
    return ["cost", "project", "--portfolio", str(path), "--draws", "2000", "--on", "2026-12-01"]


@pytest.fixture(scope="module")
def portfolioed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("portfolio")
    out = folder / "report"
    argv = [*portfolio_argv(folder), "--out", str(out)]
    result = runner.invoke(app, argv, env={"COLUMNS": "100"})
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


def test_a_portfolio_writes_a_page_with_the_company_band_first_then_its_workloads(
    portfolioed: Path,
) -> None:
    page = (portfolioed / "report.html").read_text(encoding="utf-8")
    answer = _answer(page)
    total = pd.read_csv(portfolioed / "portfolio_total.csv").iloc[0]
    assert f"Portfolio of 3 workloads, {total['label']}: P50 ${total['p50_usd']:,.0f}" in answer
    assert f"${total['sum_of_p90_usd']:,.0f}" in answer
    months = pd.read_csv(portfolioed / "portfolio_months.csv")
    assert len(months) == 6
    for row in months.itertuples():  # every month's band, as the CSV holds it
        cells = f"{row.label}</td><td>${row.p10_usd:,.0f}</td><td>${row.p50_usd:,.0f}</td>"
        assert cells in answer
    # The company's horizon is the percentile of the summed draws: the months' means add up.
    assert months["mean_usd"].sum() == pytest.approx(total["mean_usd"], rel=1e-9)
    workloads = pd.read_csv(portfolioed / "portfolio_workloads.csv")
    view = page[page.index("<h2>Per workload") : page.index("<h2>Statistics")]
    for row in workloads.itertuples():
        assert f'>{row.workload}</td><td class="text">{row.model}</td>' in view
    assert ">suggest</td>" in view
    assert page.index("P10, P50, P90 per month") < page.index("<h2>Charts")
    assert page.index("<h2>Charts") < page.index("<h2>Per workload")
    assert page.index("<h2>Per workload") < page.index("<h2>Statistics")
    assert page.count("<svg") == 3
    assert "<title>cotplan cost project --portfolio:" in page
    assert "this page is in USD" not in page  # printed in USD: no rate to name
    _offline(page)


def test_a_portfolio_shown_in_euros_names_the_rate_on_its_usd_page(tmp_path: Path) -> None:
    rates = tmp_path / "rates.csv"
    rates.write_text("date,currency,per_usd\n2026-11-28,EUR,0.95\n", encoding="utf-8")
    out = tmp_path / "report"
    argv = [*portfolio_argv(tmp_path), "--draws", "200", "--currency", "EUR", "--rates",
            str(rates), "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, argv, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    answer = _answer((out / "report.html").read_text(encoding="utf-8"))
    said = "The command printed amounts in EUR at 0.95 EUR per USD, rate of 2026-11-28"
    assert said in answer
    assert "this page is in USD" in answer


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


@pytest.mark.parametrize("kind", ["projected", "portfolioed", "monitored"])
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
    monitor = ["monitor", str(log), "--plan", str(plan)]
    for argv in (PROJECT, portfolio_argv(tmp_path), monitor):
        result = runner.invoke(app, argv, env={"COLUMNS": str(columns)})
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert max(len(line) for line in lines) <= columns, argv[:2]
        assert "…" not in result.output, argv[:2]


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("projected", "P10, P50, P90 per period"),
        ("portfolioed", "P10, P50, P90 per month"),
        ("monitored", "The calls against the plan"),
    ],
)
def test_the_pages_open_offline_in_a_real_browser(
    kind: str, said: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    folder: Path = request.getfixturevalue(kind)
    dom = open_in_browser(folder / "report.html", tmp_path)
    assert dom.count("<svg") >= 2  # both charts rendered in the page
    assert said in dom
