"""`cost project`'s work as one library call (`forecast_spend`), as a notebook makes it, and
the renderer the command line hands its result to: the same numbers either way."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from cotplan.errors import InputError
from cotplan.pricing.forecast import PortfolioForecast, SpendForecast, forecast_spend
from cotplan.render.costs import render_forecast

_WORKLOAD = {
    "queries_per_month": 30_000,
    "start": "2026-12",
    "months": 3,
    "prompt_mean": 900.0,
    "output_mean": 300.0,
    "reasoning_mean": 1200.0,
    "draws": 1000,
    "on": date(2026, 11, 15),
}


def test_a_forecast_compares_scenarios_and_renders_what_the_command_prints() -> None:
    forecast = forecast_spend("gpt-6.2-sol", compare_caps=[256], **_WORKLOAD)
    assert isinstance(forecast, SpendForecast)
    frame = forecast.to_frame()
    assert list(frame["scenario"]) == ["gpt-6.2-sol", "gpt-6.2-sol, cap 256"]
    # A cap below the mean reasoning saves money against the uncapped baseline.
    assert frame["savings_mean_usd"].iloc[1] > 0
    assert forecast.compared
    assert forecast.growth is None
    assert forecast.versus_actuals is None
    console = Console(record=True, width=200)
    render_forecast(forecast, console)
    text = console.export_text()
    assert "total (2026-12 to 2027-02)" in text
    assert "1,000 draws, seed 0" in text
    assert "x base" in text


def test_the_same_seed_gives_the_same_forecast() -> None:
    first = forecast_spend("gpt-6.2-sol", **_WORKLOAD).to_frame()
    again = forecast_spend("gpt-6.2-sol", **{**_WORKLOAD, "draws": "1e3"}).to_frame()
    pd.testing.assert_frame_equal(first, again)


def test_low_and_high_growth_come_with_the_forecast() -> None:
    forecast = forecast_spend(
        "gpt-6.2-sol", growth=0.05, growth_low=0.0, growth_high=0.1, **_WORKLOAD
    )
    assert isinstance(forecast, SpendForecast)
    assert list(forecast.growth.frame["scenario"]) == ["low", "base", "high"]


@pytest.mark.parametrize(
    ("given", "field", "message"),
    [
        ({"currency": "EUR"}, "currency", "together"),
        ({"terms": Path("no-such-terms.toml")}, None, "no-such-terms.toml"),
        ({"portfolio": Path("p.toml")}, "portfolio", "not both"),
        ({"draws": "1.5"}, "draws", "must be a whole number"),
        ({"budget_per": "week"}, "budget_per", "must be 'month' or 'year'"),
        ({"growth_low": 0.0}, "growth_high", "together"),
        ({"completion_mean": 100.0}, "completion_mean", "not both"),
    ],
)
def test_each_option_is_refused_by_name(
    given: dict[str, object], field: str | None, message: str
) -> None:
    with pytest.raises(InputError, match=message) as caught:
        forecast_spend("gpt-6.2-sol", **{**_WORKLOAD, **given})  # type: ignore[arg-type]
    assert caught.value.field == field


def test_a_portfolio_without_a_model_is_a_portfolio_forecast(tmp_path: Path) -> None:
    path = tmp_path / "portfolio.toml"
    path.write_text(
        'start = "2027-01"\nmonths = 3\ngrowth_sd = 0.0\n[[workloads]]\nname = "support"\n'
        'model = "gpt-6.2-sol"\nqueries_per_day = 1000\nprompt_mean = 500\noutput_mean = 200\n',
        encoding="utf-8",
    )
    forecast = forecast_spend(portfolio=path, draws=1000, on=date(2026, 11, 15))
    assert isinstance(forecast, PortfolioForecast)
    assert forecast.workloads == 1
    assert not forecast.to_frame().empty
