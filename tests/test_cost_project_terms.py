"""Negotiated terms and dated exchange rates on a single model's projection (`cost project
MODEL --terms --currency --rates`), through the same library call as a portfolio's."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.errors import InputError
from cotplan.pricing.forecast import SpendForecast, forecast_spend

# No spread in tokens or volume: every draw is the same, so what the terms do is exact.
_WORKLOAD: dict[str, Any] = {
    "queries_per_day": 2_000,
    "start": "2027-01",
    "months": 3,
    "prompt_mean": 900.0,
    "output_mean": 300.0,
    "reasoning_mean": 1200.0,
    "draws": 1000,
    "on": date(2026, 12, 1),
}
_RATES = "date,currency,per_usd\n2026-11-01,EUR,0.93\n2026-11-28,EUR,0.95\n2026-12-05,EUR,0.97\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _months(forecast: SpendForecast) -> list[float]:
    return [float(v) for v in forecast.baseline.monthly()["mean_usd"]]


def _total(forecast: SpendForecast) -> float:
    frame = forecast.baseline.frame
    return float(frame[frame["period"] == "total"]["mean_usd"].iloc[0])


def test_a_discount_commitment_and_credit_apply_month_by_month(tmp_path: Path) -> None:
    listed = forecast_spend("gpt-6.2-sol", **_WORKLOAD)
    assert isinstance(listed, SpendForecast)
    list_months = _months(listed)
    low = min(list_months)
    # A commitment a little above the cheapest month (February, 28 days) after the discount,
    # so the true-up shows there and nowhere else; a credit used up in January.
    floor = round(0.88 * low * 1.01, 2)
    terms = _write(tmp_path / "terms.toml", (
        '[[commitments]]\nprovider = "openai"\nper = "month"\n'
        f"committed_usd = {floor}\ndiscount = 0.12\n"
        '[[credits]]\nprovider = "openai"\nusd = 100\ngranted = "2027-01"\nexpires = "2027-01"\n'
    ))  # fmt: skip
    paid = forecast_spend("gpt-6.2-sol", terms=terms, **_WORKLOAD)
    assert isinstance(paid, SpendForecast)
    expected = [max(0.88 * m, floor) for m in list_months]
    expected[0] -= 100
    assert _months(paid) == pytest.approx(expected, rel=1e-9)
    assert _total(paid) == pytest.approx(sum(expected), rel=1e-9)
    assert paid.baseline.assumptions["terms"] == str(terms)
    assert any("negotiated terms from" in n for n in paid.baseline.terms_notes)
    # The list price per query is what the table says; what is paid differs from it.
    assert paid.baseline.per_query_usd == listed.baseline.per_query_usd


def test_each_compared_model_pays_its_own_providers_terms(tmp_path: Path) -> None:
    terms = _write(tmp_path / "terms.toml",
                   '[[commitments]]\nprovider = "openai"\ndiscount = 0.2\n')  # fmt: skip
    listed = forecast_spend("gpt-6.2-sol", compare_models=["claude-sonnet-4-5"], **_WORKLOAD)
    paid = forecast_spend("gpt-6.2-sol", compare_models=["claude-sonnet-4-5"], terms=terms,
                          **_WORKLOAD)  # fmt: skip
    assert isinstance(listed, SpendForecast)
    assert isinstance(paid, SpendForecast)
    before, after = listed.to_frame(), paid.to_frame()
    assert after["total_mean_usd"].iloc[0] == pytest.approx(
        0.8 * before["total_mean_usd"].iloc[0], rel=1e-9
    )
    assert after["total_mean_usd"].iloc[1] == pytest.approx(
        before["total_mean_usd"].iloc[1], rel=1e-12
    )
    claude = paid.comparison.projections[after["scenario"].iloc[1]]
    assert claude.terms_notes == (f"anthropic: no negotiated terms in {terms}; list prices",)


def test_the_amounts_show_in_the_currency_at_the_rate_dated_on_or_before_on(
    tmp_path: Path,
) -> None:
    rates = _write(tmp_path / "rates.csv", _RATES)
    usd = forecast_spend("gpt-6.2-sol", **_WORKLOAD)
    eur = forecast_spend("gpt-6.2-sol", currency="eur", rates=rates, **_WORKLOAD)
    assert isinstance(eur, SpendForecast)
    assert isinstance(usd, SpendForecast)
    # 2026-12-05's rate is after --on (2026-12-01): the rate of 2026-11-28 holds.
    assert eur.scale == pytest.approx(0.95)
    assert "rate of 2026-11-28" in eur.rate_line
    # The numbers stay in USD; only the display converts.
    assert _total(eur) == _total(usd)
    with pytest.raises(InputError, match="no GBP rate") as caught:
        forecast_spend("gpt-6.2-sol", currency="GBP", rates=rates, **_WORKLOAD)
    assert caught.value.field == "currency"


@pytest.mark.parametrize("columns", [80, 120])
def test_the_command_prints_the_paid_spend_in_euros_within_the_width(
    tmp_path: Path, columns: int
) -> None:
    from cotplan.cli import app

    terms = _write(tmp_path / "terms.toml",
                   '[[commitments]]\nprovider = "openai"\ndiscount = 0.1\n')  # fmt: skip
    rates = _write(tmp_path / "rates.csv", _RATES)
    common = ["cost", "project", "gpt-6.2-sol", "--queries-per-day", "2000", "--prompt-mean",
              "900", "--output-mean", "300", "--reasoning-mean", "1200", "--months", "3",
              "--start", "2027-01", "--draws", "1000", "--on", "2026-12-01",
              "--compare-cap", "512"]  # fmt: skip
    runner = CliRunner()
    plain = runner.invoke(app, common, env={"COLUMNS": str(columns)})
    # The files (charts, workbook, page) once: they are the same at any width.
    files = ["--out", str(tmp_path / "out")] if columns == 120 else []
    out = runner.invoke(app, [*common, "--terms", str(terms), "--currency", "EUR",
                              "--rates", str(rates), *files],
                        env={"COLUMNS": str(columns)})  # fmt: skip
    assert plain.exit_code == 0, plain.output
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert "…" not in out.output
    # Answer first: the paid spend per period, in euros, then the rate and its date.
    assert "gpt-6.2-sol: projected paid spend (EUR)" in lines[0]
    text = " ".join(out.output.split())
    assert "amounts in EUR at 0.95 EUR per USD, rate of 2026-11-28 (rates.csv)" in text
    assert "terms: openai: negotiated terms from" in text

    def total(output: str, sign: str) -> float:
        row = next(r for r in output.splitlines() if r.lstrip().startswith("total"))
        return float(row.split(sign)[1].split()[0].replace(",", ""))

    assert total(out.output, "EUR ") == pytest.approx(total(plain.output, "$") * 0.9 * 0.95,
                                                       rel=1e-3)  # fmt: skip
    if files:
        # The files stay in USD, the paid spend: a finance sheet sums dollars.
        written = pd.read_csv(tmp_path / "out" / "projection_total.csv")
        assert float(written["mean_usd"].iloc[0]) == pytest.approx(
            total(plain.output, "$") * 0.9, rel=1e-3
        )


def test_actuals_beside_a_forecast_after_terms_say_they_are_at_list_price(tmp_path: Path) -> None:
    import json
    from datetime import UTC, datetime

    from rich.console import Console

    from cotplan.render.costs import render_forecast

    start = int(datetime(2027, 1, 5, tzinfo=UTC).timestamp())
    body = {"object": "chat.completion", "model": "gpt-6.2-sol",
            "usage": {"prompt_tokens": 900, "completion_tokens": 1500}}  # fmt: skip
    log = tmp_path / "calls.jsonl"
    log.write_text("".join(json.dumps({**body, "created": start + i}) + "\n" for i in range(3)))
    terms = _write(tmp_path / "terms.toml",
                   '[[commitments]]\nprovider = "openai"\ndiscount = 0.1\n')  # fmt: skip
    on = {**_WORKLOAD, "on": date(2027, 1, 31), "start": "2027-01"}
    for given, title in (
        ({}, "Forecast against actuals"),
        ({"terms": terms}, "Forecast after terms against actuals at list price"),
    ):
        forecast = forecast_spend("gpt-6.2-sol", actuals=log, **given, **on)  # fmt: skip
        console = Console(record=True, width=120)
        render_forecast(forecast, console)
        assert title + " (" in " ".join(console.export_text().split())
