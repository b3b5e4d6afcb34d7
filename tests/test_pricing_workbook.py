"""The projection workbook sums: months, quarters and fiscal years on sheets of their own, shares
as fractions with a percent format, the price that held each month with its source, price
changes called out, inputs as entered beside what was simulated, files readable by the group."""

from __future__ import annotations

import stat
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openpyxl import load_workbook

from cotplan.pricing import (
    Budget,
    ParametricTokens,
    Projection,
    Scenario,
    Workload,
    compare_scenarios,
    price_table,
    project_costs,
)
from cotplan.pricing.excel import SHARED_MODE

TODAY = date(2026, 11, 29)
TABLE = price_table()
TOKENS = ParametricTokens(1_500, 600, 300, 150, 2_000, 1_500, n_observed=200)
SHARE_FORMAT = "0.0%"


def project(model: str = "gpt-6.2-sol", **kwargs: Any) -> Projection:
    kwargs.setdefault("draws", 5_000)
    workload = kwargs.pop("workload", Workload(queries_per_day=1_000, start=date(2027, 1, 1)))
    table = kwargs.pop("table", TABLE)
    return project_costs(model, workload, TOKENS, table=table, today=TODAY, **kwargs)


def sheet_rows(book: Any, name: str) -> list[dict[str, Any]]:
    rows = list(book[name].iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def column_cells(book: Any, name: str, column: str) -> list[Any]:
    sheet = book[name]
    header = [c.value for c in sheet[1]]
    j = header.index(column) + 1
    return [sheet.cell(row=i, column=j) for i in range(2, sheet.max_row + 1)]


def summary_cells(book: Any) -> dict[Any, Any]:
    return {c.value: c for row in book["summary"].iter_rows() for c in row if c.value is not None}


def test_each_sheet_sums_to_the_total_without_double_counting(tmp_path: Path) -> None:
    # 18 months from November with an April fiscal year: partial quarters and fiscal years at
    # both ends, and more than one twelve-month year.
    w = Workload(
        queries_per_day=2_000, growth_rate=0.02, start=date(2026, 11, 1), horizon_months=18
    )
    p = project(workload=w, fiscal_year_start="apr")
    p.to_excel(tmp_path / "p.xlsx")
    book = load_workbook(tmp_path / "p.xlsx")
    total = float(p.frame.loc[p.frame["period"] == "total", "mean_usd"].iloc[0])
    for name in ("monthly", "quarters", "fiscal_years"):
        values = [c.value for c in column_cells(book, name, "mean_usd")]
        assert sum(values) == pytest.approx(total, rel=1e-12), name
        assert all(isinstance(v, float) for v in values)
    assert len(sheet_rows(book, "monthly")) == 18
    labels = [r["label"] for r in sheet_rows(book, "fiscal_years")]
    assert labels == [
        "FY2027 (2026-11 to 2027-03, partial)",
        "FY2028 (2027-04 to 2028-03)",
        "FY2029 (2028-04, partial)",
    ]
    quarters = sheet_rows(book, "quarters")
    assert quarters[0]["label"] == "FY2027 Q3 (2026-11 to 2026-12, partial)"
    assert [q["complete"] for q in quarters] == [False, True, True, True, True, True, False]
    # The summary's totals are separate figures, and it says so; no month rows on it.
    cells = summary_cells(book)
    assert any(str(v).startswith("Each row above is a total of its own") for v in cells)
    assert not any(str(v) == "2026-11" for v in cells)


def test_a_one_year_workbook_lists_the_year_once(tmp_path: Path) -> None:
    p = project()
    p.to_excel(tmp_path / "p.xlsx")
    book = load_workbook(tmp_path / "p.xlsx")
    assert book.sheetnames == [
        "summary",
        "monthly",
        "quarters",
        "fiscal_years",
        "assumptions",
        "prices",
    ]
    headline = [c.value for c in book["summary"]["A"][3:6]]
    assert headline[0] == "year 1 (2027-01 to 2027-12)"
    assert not any(str(v).startswith("total") for v in headline if v)
    # With a January fiscal year the fiscal year is the year: same figures, one percentile pass.
    fy = p.rollups[p.rollups["period"] == "fiscal_year"].iloc[0]
    year = p.frame[p.frame["period"] == "year"].iloc[0]
    assert (fy["mean_usd"], fy["p10_usd"], fy["p90_usd"]) == (
        year["mean_usd"],
        year["p10_usd"],
        year["p90_usd"],
    )


def test_shares_are_fractions_with_a_percent_format(tmp_path: Path) -> None:
    w = Workload(queries_per_day=1_000, start=date(2027, 1, 1), horizon_months=3)
    cmp = compare_scenarios(
        w,
        TOKENS,
        [Scenario("sol", "gpt-6.2-sol"), Scenario("luna", "gpt-6-luna", cache_hit_rate=0.25)],
        draws=2_000,
        table=TABLE,
        today=TODAY,
        budget=Budget(2_000, "month"),
    )
    cmp.to_excel(tmp_path / "c.xlsx")
    book = load_workbook(tmp_path / "c.xlsx")
    saving = column_cells(book, "comparison", "savings_pct")[1]
    percent = float(cmp.frame["savings_pct"].iloc[1])
    assert percent > 50  # the table keeps percent points for the notebook...
    assert saving.value == pytest.approx(percent / 100)  # ...the workbook stores the fraction
    assert saving.number_format == SHARE_FORMAT
    p_over = column_cells(book, "comparison", "p_over_budget")[0]
    assert 0 <= p_over.value <= 1
    assert p_over.number_format == SHARE_FORMAT
    rates = {r["assumption"]: r for r in sheet_rows(book, "assumptions") if r["scenario"] == "luna"}
    assert rates["cache_hit_rate"]["value"] == 0.25
    hit = next(c for c in book["assumptions"]["B"] if c.value == "cache_hit_rate")
    assert hit.offset(column=1).number_format == SHARE_FORMAT


def test_each_month_has_the_price_that_held_and_changes_are_called_out(tmp_path: Path) -> None:
    # gemini-4-argon's introductory price ends 2026-11-30: the standard price from December.
    w = Workload(queries_per_day=1_000, start=date(2026, 11, 1), horizon_months=3)
    p = project("gemini-4-argon", workload=w)
    p.to_excel(tmp_path / "p.xlsx")
    book = load_workbook(tmp_path / "p.xlsx")
    months = sheet_rows(book, "monthly")
    per_1k = [m["usd_per_1k_queries"] for m in months]
    assert per_1k[1] == pytest.approx(2 * per_1k[0], rel=1e-9)
    assert per_1k[1] == pytest.approx(per_1k[2], rel=1e-12)
    assert months[0]["price_from"] is None
    assert months[1]["price_from"].date() == date(2026, 12, 1)
    assert all("ai.google.dev" in m["price_source"] for m in months)
    assert column_cells(book, "monthly", "usd_per_1k_queries")[0].number_format == '"$"#,##0.0000'
    cells = summary_cells(book)
    heading = cells["Price changes in the horizon"]
    header = [c.value for c in book["summary"][heading.row + 1]]
    change = [c.value for c in book["summary"][heading.row + 2]]
    row = dict(zip(header, change, strict=False))
    assert row["date"].date() == date(2026, 12, 1)
    assert row["cost_change"] == pytest.approx(1.0)
    assert "ai.google.dev" in row["source"]
    # Without a change the summary says so.
    project().to_excel(tmp_path / "q.xlsx")
    assert "none: one price holds for the whole horizon" in summary_cells(
        load_workbook(tmp_path / "q.xlsx")
    )


def test_a_change_inside_a_month_applies_from_its_day(tmp_path: Path) -> None:
    prices = tmp_path / "prices.csv"
    pd.DataFrame(
        [
            {
                "provider": "acme",
                "model": "widget",
                "input_per_mtok": 1.0,
                "cached_input_per_mtok": 0.1,
                "output_per_mtok": 4.0,
                "reasoning_billing": "in_completion",
                "batch_discount": 0.5,
                "effective_from": "",
                "as_of": "2026-11-20",
                "source_url": "https://acme.example/prices",
            },
            {
                "provider": "acme",
                "model": "widget",
                "input_per_mtok": 3.0,
                "cached_input_per_mtok": 0.3,
                "output_per_mtok": 12.0,
                "reasoning_billing": "in_completion",
                "batch_discount": 0.5,
                "effective_from": "2027-01-11",
                "as_of": "2026-11-20",
                "source_url": "https://acme.example/prices",
            },
        ]
    ).to_csv(prices, index=False)
    table = price_table(prices)
    w = Workload(queries_per_day=1_000, start=date(2027, 1, 1), horizon_months=2)
    p = project("widget", workload=w, table=table, provider="acme")
    jan, feb = p.monthly().to_dict("records")
    # 10 of January's 31 days at the old price, 21 at the new (three times it).
    assert jan["usd_per_1k_queries"] == pytest.approx(
        feb["usd_per_1k_queries"] * (10 + 21 * 3) / (31 * 3), rel=1e-9
    )
    assert jan["price_change"] == date(2027, 1, 11)
    assert "from 2027-01-11: " in jan["price_source"]
    assert jan["mean_usd"] / 31 == pytest.approx(feb["mean_usd"] / 28 * 73 / 93, rel=0.02)
    assert list(p.price_changes["date"]) == [date(2027, 1, 11)]


def test_inputs_as_entered_beside_the_simulated_means(tmp_path: Path) -> None:
    p = project(policy=1_000, cache_hit_rate=0.2)
    inputs = p.inputs.set_index("input")
    assert inputs.loc["prompt_tokens_mean", "as_entered"] == 1_500
    assert inputs.loc["prompt_tokens_mean", "simulated"] == pytest.approx(1_500, rel=0.05)
    assert inputs.loc["reasoning_tokens_mean", "as_entered"] == 2_000
    # The cap shows: the reasoning priced is well under the reasoning entered.
    assert inputs.loc["reasoning_tokens_mean", "simulated"] < 1_000
    assert inputs.loc["cache_hit_rate", "as_entered"] == 0.2
    p.to_excel(tmp_path / "p.xlsx")
    book = load_workbook(tmp_path / "p.xlsx")
    cell = next(c for c in book["summary"]["A"] if c.value == "prompt_tokens_sd")
    assert cell.offset(column=1).value == 600
    assert cell.offset(column=2).number_format == "#,##0.0"
    hit = next(c for c in book["summary"]["A"] if c.value == "cache_hit_rate")
    assert (hit.offset(column=1).value, hit.offset(column=1).number_format) == (0.2, SHARE_FORMAT)


def test_files_are_readable_by_the_group_and_say_why(tmp_path: Path) -> None:
    p = project()
    p.to_csv(tmp_path / "p.csv")
    p.to_excel(tmp_path / "p.xlsx")
    for name in ("p.csv", "p.xlsx"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == SHARED_MODE == 0o640
    notes = [v for v in summary_cells(load_workbook(tmp_path / "p.xlsx")) if isinstance(v, str)]
    assert any("0640" in v and "published list prices" in v for v in notes)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.csv", "p.xlsx"]  # no temp


def test_the_comparison_has_a_monthly_column_per_scenario_that_sums(tmp_path: Path) -> None:
    w = Workload(queries_per_day=1_000, start=date(2027, 1, 1), horizon_months=4)
    scenarios = [
        Scenario("sol", "gpt-6.2-sol"),
        Scenario("sol, cap 256", "gpt-6.2-sol", policy=256),
    ]
    cmp = compare_scenarios(w, TOKENS, scenarios, draws=2_000, table=TABLE, today=TODAY)
    cmp.to_excel(tmp_path / "c.xlsx")
    book = load_workbook(tmp_path / "c.xlsx")
    for name in ("sol", "sol, cap 256"):
        cells = column_cells(book, "monthly", f"{name} mean_usd")
        total = float(cmp.frame.set_index("scenario").loc[name, "total_mean_usd"])
        assert sum(c.value for c in cells) == pytest.approx(total, rel=1e-12)
        assert cells[0].number_format == '"$"#,##0.00'
