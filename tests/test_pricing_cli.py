"""`cotplan cost prices|call|project` through the real command line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app, main

runner = CliRunner()


def run(*args: str) -> str:
    result = runner.invoke(app, ["cost", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_prices_lists_dates_and_sources(tmp_path: Path) -> None:
    out = run("prices", "--provider", "anthropic", "--csv", str(tmp_path / "p.csv"))
    assert "claude-opus-5-5" in out
    assert "https://platform.claude.com/docs/en/about-claude/pricing" in out
    assert "gpt-6.2-sol" not in out
    written = pd.read_csv(tmp_path / "p.csv")
    assert set(written["provider"]) == {"anthropic"}
    assert {"as_of", "source_url", "age_days"} <= set(written.columns)


def test_call_prints_the_breakdown_and_total() -> None:
    out = run("call", "gpt-6.2-sol", "--prompt-tokens", "10000", "--completion-tokens", "3000",
              "--reasoning-tokens", "2000", "--cached-tokens", "4000", "--on", "2026-11-29",
              "--batch")  # fmt: skip
    assert "batch discount" in out
    assert "0.0212" in out
    assert "read 2026-11-29" in out


def test_unknown_model_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["cost", "call", "gpt-99o", "--prompt-tokens", "1", "--completion-tokens", "1"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown model 'gpt-99o'" in err
    assert "closest known" in err


def test_bad_option_value_names_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["cost", "project", "gpt-6.2-sol", "--queries-per-day", "-3", "--prompt-mean",
              "100", "--output-mean", "10"])  # fmt: skip
    assert info.value.code == 2
    assert "`queries_per_day`: must not be negative" in capsys.readouterr().err


def test_project_with_a_sample_compares_and_writes_files(tmp_path: Path) -> None:
    sample = tmp_path / "calls.csv"
    pd.DataFrame(
        {"prompt_tokens": [800, 1200, 950, 1500], "completion_tokens": [900, 2100, 400, 3000],
         "reasoning_tokens": [700, 1800, 250, 2600]}
    ).to_csv(sample, index=False)  # fmt: skip
    out = run("project", "gpt-6.2-sol", "--queries-per-month", "30000", "--start", "2026-12",
              "--months", "3", "--sample", str(sample), "--compare-cap", "256",
              "--compare-model", "gpt-6-luna", "--draws", "2000", "--out",
              str(tmp_path / "out"))  # fmt: skip
    assert "total (2026-12 to 2027-02)" in out
    assert "gpt-6.2-sol, cap 256" in out
    assert "x base" in out
    assert "P50" in out
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    charts = ["comparison.png", "comparison.svg", "projection.png", "projection.svg"]
    kinds = ("months", "days", "quarters", "fiscal_years", "total")
    tables = ["comparison.csv", "comparison.xlsx", "projection.xlsx"]
    tables += [f"projection_{kind}.csv" for kind in kinds]
    assert names == sorted([*charts, *tables, "report.html", "manifest.json"])
    comparison = pd.read_csv(tmp_path / "out" / "comparison.csv")
    assert list(comparison["scenario"]) == ["gpt-6.2-sol", "gpt-6-luna", "gpt-6.2-sol, cap 256"]
    assert (comparison["savings_mean_usd"].iloc[1:] > 0).all()


def test_project_needs_a_token_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["cost", "project", "gpt-6.2-sol", "--queries-per-day", "10"])
    assert "`sample`: give a token sample" in capsys.readouterr().err


def test_prices_filter_by_provider_and_name_and_show_the_source(tmp_path: Path) -> None:
    out = run("prices", "--provider", "openai", "--model", "4o-mini", "--csv",
              str(tmp_path / "p.csv"))  # fmt: skip
    assert "gpt-4o-mini" in out
    assert "gpt-6.2-sol" not in out
    assert "genai-prices 0.2.3" in out
    written = pd.read_csv(tmp_path / "p.csv")
    assert set(written["provider"]) == {"openai"}
    assert written["model"].str.contains("4o-mini").all()
    assert {"origin", "source", "effective_to", "as_of", "age_days"} <= set(written.columns)


def test_prices_without_filters_lists_cotplan_rows_and_exports_the_merged_table(
    tmp_path: Path,
) -> None:
    out = run("prices", "--csv", str(tmp_path / "all.csv"), "--on", "2026-11-29")
    assert "gpt-6.2-sol" in out
    assert "The rest come from genai-prices" in out
    merged = pd.read_csv(tmp_path / "all.csv")
    assert len(merged) >= 2_000
    assert merged["origin"].str.startswith("genai-prices").sum() >= 2_000
    assert (merged["origin"] == "cotplan").sum() >= 19


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (("--provider", "opneai"), "`provider`: no prices for 'opneai' (did you mean openai"),
        (("--model", "no-such-model-anywhere"), "`model`: no price rows match"),
        (("--source", "web"), "`source`: must be one of cotplan, genai-prices, all"),
    ],
)
def test_prices_options_are_checked(
    args: tuple[str, ...], pattern: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["cost", "prices", *args])
    assert info.value.code == 2
    assert pattern in " ".join(capsys.readouterr().err.split())


def test_an_ambiguous_model_names_its_sellers(capsys: pytest.CaptureFixture[str]) -> None:
    # Sold by several providers, none of them its maker: the provider is needed.
    one = ("--prompt-tokens", "1", "--completion-tokens", "1")
    with pytest.raises(SystemExit):
        main(["cost", "call", "deepseek-r1-distill-llama-70b", *one])
    assert "several providers (groq, ovhcloud)" in " ".join(capsys.readouterr().err.split())
    # Sold by its maker and by others: the maker's price.
    counts = ("--prompt-tokens", "1000", "--completion-tokens", "10", "--on", "2026-11-29")
    made = run("call", "claude-3-5-haiku", *counts)
    assert "claude-3-5-haiku-latest (anthropic)" in made
    out = run("call", "claude-3-5-haiku", "--provider", "google", "--prompt-tokens", "1000",
              "--completion-tokens", "10", "--on", "2026-11-29")  # fmt: skip
    assert "claude-3-5-haiku (google)" in out
    assert "price: genai-prices 0.2.3" in out


def test_warnings_are_one_line_notes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["cost", "call", "gpt-6-astra", "--prompt-tokens", "10", "--completion-tokens", "1",
              "--on", "2027-09-01"])  # fmt: skip
    assert info.value.code == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if line.strip()]
    assert notes[0].startswith("note: the price of gpt-6-astra (openai) was read on 2026-09-13")
    assert ".py:" not in err
    assert "StalePriceWarning" not in err


def test_a_local_gguf_is_free_in_the_cli() -> None:
    out = run("call", "local:/models/gemma-3-270m-it-Q4_K_M.gguf", "--prompt-tokens", "900",
              "--completion-tokens", "100", "--on", "2031-01-01")  # fmt: skip
    assert "price: local, no API charge" in out
    assert "note:" not in out
