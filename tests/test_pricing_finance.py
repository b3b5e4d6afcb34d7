"""What finance asks next: the chance of going over a budget, low/base/high growth, fiscal
quarters and years, a comparison chart readable with twenty models, and the CLI options."""

from __future__ import annotations

import struct
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cotplan.errors import InputError
from cotplan.pricing import (
    Budget,
    ParametricTokens,
    Projection,
    Scenario,
    Workload,
    compare_scenarios,
    price_table,
    project_costs,
    project_growth,
)
from cotplan.pricing.periods import check_fiscal_year_start, fiscal_period

TODAY = date(2026, 11, 29)
TABLE = price_table()
TOKENS = ParametricTokens(1_500, 600, 300, 150, 2_000, 1_500, n_observed=200)
YEAR = Workload(queries_per_day=1_000, growth_rate=0.03, start=date(2027, 1, 1), volume_cv=0.2)


def project(**kwargs: Any) -> Projection:
    kwargs.setdefault("draws", 20_000)
    workload = kwargs.pop("workload", YEAR)
    return project_costs("gpt-6.2-sol", workload, TOKENS, table=TABLE, today=TODAY, **kwargs)


# --- budgets -------------------------------------------------------------------------------


def test_a_monthly_budget_at_a_months_median_is_exceeded_half_the_time() -> None:
    plain = project()
    months = plain.monthly()
    middle = float(months["p50_usd"].iloc[5])
    p = project(budget=Budget(middle, "month"))
    per_month = p.monthly()["p_over_budget"]
    # Same seed, same draws: the budget changes nothing but the check. The tolerance is five
    # standard errors of a share of 20,000 draws (false alarm about 1 in 10^6).
    assert p.monthly()["mean_usd"].tolist() == months["mean_usd"].tolist()
    assert per_month.iloc[5] == pytest.approx(0.5, abs=5 * 0.5 / np.sqrt(20_000))
    # Growth makes the last month likelier to go over than the first (both have 31 days);
    # "some month" is at least as likely as the likeliest month.
    assert per_month.iloc[11] > per_month.iloc[0]
    assert p.budget is not None
    assert p.budget.probability >= per_month.max()
    assert list(p.budget.to_frame()["period"]) == ["month"] * 12
    assert project(budget=Budget(1e12, "month")).budget.probability == 0.0  # type: ignore[union-attr]
    assert project(budget=Budget(1.0, "month")).budget.probability == 1.0  # type: ignore[union-attr]


def test_a_yearly_budget_is_the_share_of_draws_over_it() -> None:
    plain = project()
    year = plain.frame[plain.frame["period"] == "year"].iloc[0]
    limit = float(year["p90_usd"])
    p = project(budget=Budget(limit, "year"))
    assert p.budget is not None
    assert p.budget.probability == pytest.approx(float((plain.totals > limit).mean()), abs=1e-12)
    assert p.budget.probability == pytest.approx(0.10, abs=0.005)
    over = p.budget.periods.iloc[0]
    assert over["label"] == "year 1 (2027-01 to 2027-12)"
    assert over["mean_over_usd"] > 0
    # A fiscal year that is also the twelve-month year is listed once.
    assert len(p.budget.periods) == 1
    assert p.frame.loc[p.frame["period"] == "year", "p_over_budget"].iloc[0] == pytest.approx(
        p.budget.probability
    )


def test_a_yearly_budget_compares_complete_fiscal_years_only() -> None:
    w = Workload(queries_per_day=1_000, start=date(2027, 1, 1), horizon_months=24)
    p = project(workload=w, budget=Budget(50_000, "year"), fiscal_year_start=7, draws=2_000)
    assert p.budget is not None
    assert list(p.budget.periods["label"]) == [
        "year 1 (2027-01 to 2027-12)",
        "FY2028 (2027-07 to 2028-06)",
        "year 2 (2028-01 to 2028-12)",
    ]
    fiscal = p.rollups[p.rollups["period"] == "fiscal_year"]
    assert fiscal["complete"].tolist() == [False, True, False]
    assert np.isnan(fiscal["p_over_budget"].iloc[0])


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: Budget(0), r"`budget`: must be a positive amount of USD, got 0"),
        (lambda: Budget(-5, "year"), r"`budget`: must be a positive amount"),
        (lambda: Budget(float("nan")), r"`budget`: must be a finite number"),
        (lambda: Budget(100, "week"), r"`budget_per`: must be 'month' or 'year', got 'week'"),
        (lambda: project(budget=100), r"`budget`: must be Budget\(usd, per='month' or 'year'\)"),
        (lambda: project(fiscal_year_start=13), r"`fiscal_year_start`: must be a month, 1-12"),
        (lambda: project(fiscal_year_start="smarch"), r"`fiscal_year_start`: must be a month"),
    ],
)
def test_bad_budgets_and_fiscal_years_name_the_field(make: Any, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        make()


# --- fiscal quarters and years -------------------------------------------------------------


def test_fiscal_years_are_named_by_the_year_they_end_in() -> None:
    assert fiscal_period(date(2026, 10, 1), 10) == (2027, 1)
    assert fiscal_period(date(2027, 9, 1), 10) == (2027, 4)
    assert fiscal_period(date(2027, 3, 1), 1) == (2027, 1)
    assert fiscal_period(date(2027, 3, 1), 4) == (2027, 4)
    assert fiscal_period(date(2027, 4, 1), 4) == (2028, 1)
    assert [check_fiscal_year_start(v) for v in ("apr", "April", "10", 7)] == [4, 4, 10, 7]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    growth=st.floats(-0.2, 0.3),
    months=st.integers(1, 30),
    first_month=st.integers(1, 12),
    fiscal_year_start=st.integers(1, 12),
)
def test_months_quarters_and_fiscal_years_each_sum_to_the_total(
    growth: float, months: int, first_month: int, fiscal_year_start: int
) -> None:
    w = Workload(
        queries_per_day=500,
        growth_rate=growth,
        start=date(2027, first_month, 1),
        horizon_months=months,
    )
    p = project(workload=w, draws=200, fiscal_year_start=fiscal_year_start)
    total = p.frame[p.frame["period"] == "total"].iloc[0]
    for name, part in (
        ("month", p.monthly()),
        ("quarter", p.rollups[p.rollups["period"] == "quarter"]),
        ("fiscal_year", p.rollups[p.rollups["period"] == "fiscal_year"]),
    ):
        assert part["mean_usd"].sum() == pytest.approx(total["mean_usd"], rel=1e-9), name
        assert part["queries"].sum() == pytest.approx(total["queries"], rel=1e-12), name
    assert p.rollups["months"].sum() == 2 * months
    complete = p.rollups[p.rollups["complete"]]
    assert set(complete["months"]) <= {3, 12}


# --- growth scenarios ----------------------------------------------------------------------


def test_growth_scenarios_share_their_draws_and_order_the_spend() -> None:
    g = project_growth(
        "gpt-6.2-sol",
        YEAR,
        TOKENS,
        low=0.0,
        high=0.06,
        draws=5_000,
        table=TABLE,
        today=TODAY,
        budget=Budget(20_000, "month"),
    )
    frame = g.to_frame()
    assert list(frame["scenario"]) == ["low", "base", "high"]
    assert list(frame["growth_rate"]) == [0.0, 0.03, 0.06]
    assert frame["total_mean_usd"].is_monotonic_increasing
    assert frame["p_over_budget"].is_monotonic_increasing
    # Same seed: the first month (before any growth) is identical in every scenario.
    firsts = {name: p.monthly()["mean_usd"].iloc[0] for name, p in g.projections.items()}
    assert len(set(firsts.values())) == 1
    base = project(draws=5_000)
    assert g.projections["base"].totals.tolist() == base.totals.tolist()


@pytest.mark.parametrize(
    ("low", "high", "pattern"),
    [
        (0.05, 0.06, r"`growth_low`: needs low <= base <= high, got 0.05, 0.03, 0.06"),
        (0.0, 0.01, r"`growth_high`: needs low <= base <= high"),
        (-1.0, 0.06, r"`growth_low`: must be above -1"),
        ("fast", 0.06, r"`growth_low`: must be a number, got 'fast'"),
    ],
)
def test_bad_growth_scenarios_name_the_field(low: Any, high: Any, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        project_growth("gpt-6.2-sol", YEAR, TOKENS, low=low, high=high, draws=200, table=TABLE)


# --- the comparison chart ------------------------------------------------------------------


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_comparison_chart_ranks_twenty_models_and_saves_for_slides(tmp_path: Path) -> None:
    from cotplan.charts.costs import comparison_chart, projection_chart, save_chart

    w = Workload(queries_per_day=1_000, start=date(2027, 1, 1))
    scenarios = [Scenario(f"sol, {k}x", "gpt-6.2-sol", permutations=k) for k in range(1, 21)]
    cmp = compare_scenarios(
        w, TOKENS, scenarios, draws=500, table=TABLE, today=TODAY, budget=Budget(80_000, "year")
    )
    chart = comparison_chart(cmp)
    spec = chart.to_dict()
    assert spec["height"] >= 20 * 20  # a row per scenario, never squeezed
    y = spec["layer"][0]["encoding"]["y"]
    ranked = cmp.frame.sort_values("total_mean_usd")["scenario"].tolist()
    assert y["sort"] == ranked
    assert any(
        layer["mark"]["type"] == "rule" and "x2" not in layer.get("encoding", {})
        for layer in spec["layer"]
    )  # the budget line
    png = save_chart(chart, tmp_path / "c.png")
    width, height = png_size(png)
    svg = save_chart(chart, tmp_path / "c.svg").read_text()
    svg_width = float(svg.split('width="', 1)[1].split('"', 1)[0])
    assert width == pytest.approx(2 * svg_width, abs=2)  # PNG at twice the size
    assert height > 2 * 400
    budgeted = project(budget=Budget(8_000, "month"), draws=500)
    spec = projection_chart(budgeted).to_dict()
    assert "budget $8,000 per month" in " ".join(spec["title"]["subtitle"])


# --- the CLI -------------------------------------------------------------------------------


def run(*args: str) -> Any:
    from cotplan.cli import app

    return CliRunner().invoke(app, ["cost", "project", *args], env={"COLUMNS": "200"})


BASE = (
    "gpt-6.2-sol",
    "--queries-per-day",
    "1000",
    "--start",
    "2027-01",
    "--prompt-mean",
    "1500",
    "--output-mean",
    "300",
    "--draws",
    "2000",
    "--on",
    "2026-11-29",
)


def test_the_cli_reports_budget_quarters_and_growth(tmp_path: Path) -> None:
    result = run(
        *BASE,
        "--growth",
        "0.02",
        "--budget",
        "3000",
        "--fiscal-year-start",
        "apr",
        "--growth-low",
        "0",
        "--growth-high",
        "0.05",
        "--out",
        str(tmp_path),
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "budget $3,000 per month: chance of going over in some month" in out
    assert "FY2027 Q4" in out
    assert "FY2028 Q1" in out
    assert "growth scenarios" in out
    names = sorted(p.name for p in tmp_path.iterdir())
    kinds = ("months", "days", "years", "quarters", "fiscal_years", "total")
    assert names == sorted(
        ["growth.csv", "projection.png", "projection.svg", "projection.xlsx"]
        + [f"projection_{kind}.csv" for kind in kinds]
        + ["report.html", "manifest.json"]  # the page over them, and what it lists
    )
    # Summing any one file never double counts: months, quarters and fiscal years each add up
    # to the horizon's total (the old single file summed to about three times the year).
    total = pd.read_csv(tmp_path / "projection_total.csv")["mean_usd"].iloc[0]
    for kind in ("months", "quarters", "fiscal_years", "years"):
        frame = pd.read_csv(tmp_path / f"projection_{kind}.csv")
        assert frame["mean_usd"].sum() == pytest.approx(total, rel=1e-9), kind


@pytest.mark.parametrize(
    ("extra", "pattern"),
    [
        (("--budget", "-5"), "`budget`: must be a positive amount of USD"),
        (("--budget", "5", "--budget-per", "week"), "`budget_per`: must be 'month' or 'year'"),
        (("--budget-per", "year"), "`budget_per`: needs --budget"),
        (("--fiscal-year-start", "13"), "`fiscal_year_start`: must be a month"),
        (("--growth-low", "0"), "`growth_high`: give --growth-low and --growth-high together"),
        (("--growth-low", "0.1", "--growth-high", "0.2"), "`growth_low`: needs low <= --growth"),
    ],
)
def test_cli_options_are_checked_before_any_work(
    extra: tuple[str, ...],
    pattern: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import cotplan.pricing.table as table_module
    from cotplan.cli import main

    def no_table(*_: Any, **__: Any) -> None:
        raise AssertionError("the price table was loaded before the options were checked")

    monkeypatch.setattr(table_module, "price_table", no_table)
    with pytest.raises(SystemExit) as info:
        main(["cost", "project", *BASE, *extra, "--out", str(tmp_path / "out")])
    assert info.value.code == 2
    assert pattern in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "out").exists()
