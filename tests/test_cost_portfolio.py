"""Portfolios of workloads with a shared growth factor, and negotiated terms."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from cotplan.errors import InputError
from cotplan.pricing import ParametricTokens, Workload, price_table, project_costs
from cotplan.pricing.portfolio import PortfolioWorkload, project_portfolio, read_portfolio
from cotplan.pricing.terms import Terms, apply_terms, read_terms

TABLE = price_table()
TODAY = date(2026, 12, 1)
START = date(2027, 1, 1)


def item(name: str, model: str, per_day: float, growth: float, **extra: Any) -> PortfolioWorkload:
    work = Workload(queries_per_day=per_day, growth_rate=growth, start=START, horizon_months=12)
    tokens = ParametricTokens(1_500, 400, 200, 80, n_observed=200)
    return PortfolioWorkload(name, model, work, tokens, **extra)


FIVE = [
    item("search", "gpt-4o-mini", 200_000, 0.04, tags={"team": "search"}),
    item("support", "claude-sonnet-4-5", 20_000, 0.02, tags={"team": "support"}),
    item("summaries", "gpt-6.2-sol", 30_000, 0.06, batch_share=0.5, tags={"team": "content"}),
    item("extraction", "gemini-2.5-pro", 10_000, 0.10, growth_beta=1.5),
    item("rank", "gpt-4o-mini", 500_000, 0.01, tags={"team": "search"}),
]


def run(items: list[PortfolioWorkload], **kwargs: Any) -> Any:
    return project_portfolio(items, draws=20_000, table=TABLE, today=TODAY, **kwargs)


def test_the_company_total_is_the_sum_of_draws_not_of_percentiles() -> None:
    result = run(FIVE, growth_sd=0.0)
    total = result.total
    # Means add; independent surprises partly cancel, so percentiles do not.
    assert total["mean_usd"] == pytest.approx(result.workloads["mean_usd"].sum(), rel=1e-9)
    assert total["p90_usd"] < total["sum_of_p90_usd"]
    assert total["p10_usd"] > total["sum_of_p10_usd"]
    months = result.months
    assert months["mean_usd"].sum() == pytest.approx(total["mean_usd"], rel=1e-9)
    per_workload = months[[f"{w.name} mean_usd" for w in FIVE]].sum(axis=1)
    assert np.allclose(per_workload, months["mean_usd"], rtol=1e-9)


def test_a_shared_growth_shock_moves_all_workloads_together() -> None:
    calm, shared = run(FIVE, growth_sd=0.0), run(FIVE, growth_sd=0.03)

    def spread(result: Any) -> float:
        return float(result.total["p90_usd"] - result.total["p10_usd"])

    assert spread(shared) > 2 * spread(calm)
    # With one driver for all, the combined P90 comes close to the sum of P90s.
    gap = shared.total["sum_of_p90_usd"] - shared.total["p90_usd"]
    assert gap / shared.total["p90_usd"] < 0.02


def test_one_workload_agrees_with_its_own_projection() -> None:
    one = FIVE[1]
    alone = run([one], growth_sd=0.0)
    projection = project_costs(one.model, one.workload, one.tokens, draws=20_000, today=TODAY,
                               table=TABLE)  # fmt: skip
    months = projection.monthly()
    assert np.allclose(alone.months["mean_usd"], months["mean_usd"], rtol=0.01)
    assert alone.total["p50_usd"] == pytest.approx(alone.workloads["p50_usd"].iloc[0], rel=1e-9)


def test_terms_lower_what_is_paid(tmp_path: Path) -> None:
    path = tmp_path / "terms.toml"
    path.write_text(
        '[[commitments]]\nprovider = "openai"\nper = "month"\ncommitted_usd = 1000\n'
        "discount = 0.10\n\n"
        '[[credits]]\nprovider = "anthropic"\nusd = 5000\ngranted = "2027-01"\n'
        'expires = "2027-02"\n'
    )
    terms = read_terms(path)
    listed, paid = run(FIVE), run(FIVE, terms=terms)
    assert paid.total["mean_usd"] < listed.total["mean_usd"]
    assert any("negotiated terms" in n for n in paid.notes)


def test_apply_terms_in_order_discount_tiers_true_up_credits() -> None:
    from cotplan.pricing.terms import Commitment, Credit, VolumeTier

    d = __import__("decimal").Decimal
    terms = Terms(
        commitments=(Commitment("openai", "month", d(500), d("0.10")),),
        tiers=(VolumeTier("openai", d(1000), d("0.05")),),
        credits=(Credit("openai", d(300), "2027-02", "2027-03"),),
    )
    months = ["2027-01", "2027-02", "2027-03", "2027-04"]
    paid, notes = apply_terms(terms, "openai", months, [2000.0, 100.0, 800.0, 800.0])
    # 2000 -> 1800 after 10%; 5% off the 800 above 1000 -> 1760.
    assert float(paid[0]) == pytest.approx(1760.0)
    # 100 -> 90, trued up to the 500 committed, then 300 of credit -> 200.
    assert float(paid[1]) == pytest.approx(200.0)
    # 800 -> 720; the credit is spent: nothing left in March.
    assert float(paid[2]) == pytest.approx(720.0)
    assert float(paid[3]) == pytest.approx(720.0)
    assert notes


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ('[[commitments]]\nprovider = "openai"\ndiscount = 1.5\n',
         r"`commitments\[0\].discount`: must be a fraction below 1"),
        ('[[credits]]\nprovider = "openai"\nusd = 5\ngranted = "2027-05"\nexpires = "2027-01"\n',
         r"`credits\[0\].expires`: 2027-01 is before it was granted"),
        ("[[rebates]]\n", r"unknown section\(s\) rebates"),
    ],
)  # fmt: skip
def test_a_bad_terms_file_names_the_entry(tmp_path: Path, text: str, pattern: str) -> None:
    path = tmp_path / "terms.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=pattern):
        read_terms(path)


PORTFOLIO = """start = "2027-01"
months = 12
growth_sd = 0.02

[[workloads]]
name = "search"
model = "gpt-4o-mini"
queries_per_day = 200000
growth = 0.04
prompt_mean = 1500
output_mean = 150
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
"""


def test_the_portfolio_file_and_the_command(tmp_path: Path) -> None:
    from cotplan.cli import app

    path = tmp_path / "portfolio.toml"
    path.write_text(PORTFOLIO)
    workloads, growth_sd = read_portfolio(path)
    assert [w.name for w in workloads] == ["search", "support"]
    assert workloads[0].tags == {"team": "search", "feature": "suggest"}
    assert growth_sd == 0.02
    out = CliRunner().invoke(app, ["cost", "project", "--portfolio", str(path), "--draws", "2000",
                                   "--on", "2026-12-01", "--out", str(tmp_path / "out")],
                             env={"COLUMNS": "80"})  # fmt: skip
    assert out.exit_code == 0, out.output
    assert out.output.startswith("Portfolio of 2 workloads, 2027-01 to 2027-12: P50 $")
    assert max(len(line) for line in out.output.splitlines()) <= 80
    assert "…" not in out.output
    assert (tmp_path / "out" / "portfolio_months.csv").is_file()
    path.write_text(PORTFOLIO.replace("prompt_mean = 3000", 'prompt_mean = "lots"'))
    with pytest.raises(InputError, match=r"portfolio.toml, `workloads\[1\].prompt_mean`"):
        read_portfolio(path)


def test_a_currency_without_rates_is_refused_on_a_single_model_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cotplan.cli import main

    with pytest.raises(SystemExit) as info:
        main(["cost", "project", "gpt-6.2-sol", "--queries-per-day", "10", "--prompt-mean", "9",
              "--output-mean", "9", "--currency", "EUR"])  # fmt: skip
    assert info.value.code == 2
    assert "`currency`: give --currency and --rates together" in capsys.readouterr().err
