"""The small things a finance user trips on (issue 46) and the finance inputs of issue 43.

Rates are genai-prices 0.2.3's bundled data and cotplan's own rows, read offline; dates are
fixed so nothing depends on the day the tests run.
"""

from __future__ import annotations

import json
import warnings
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app, main
from cotplan.errors import InputError
from cotplan.pricing import ParametricTokens, Workload, call_cost, cost_of, price_table
from cotplan.pricing import project_costs as project
from cotplan.pricing.actuals import actuals_from_jsonl
from cotplan.pricing.table import StalePriceWarning

TABLE = price_table()
ON = date(2026, 11, 29)
runner = CliRunner()


def cli(*args: str, columns: int = 200) -> Any:
    return runner.invoke(app, ["cost", *args], env={"COLUMNS": str(columns)})


def fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one error line the command line prints for `args`, after it exits 2."""
    with pytest.raises(SystemExit) as info:
        main(["cost", *args])
    assert info.value.code == 2
    return " ".join(capsys.readouterr().err.split())


def test_a_price_change_is_listed_once_and_only_where_the_price_moves() -> None:
    # deepseek-v4-flash changes on 2026-08-17 and 2026-09-10 in genai-prices; every other
    # month used to add a "price change 0.4844 -> 0.4844" line.
    work = Workload(queries_per_day=1_000, start=date(2026, 7, 1), horizon_months=6)
    result = project("deepseek-v4-flash", work, ParametricTokens(500, 0, 500, 0), draws=100,
                     today=ON, table=TABLE)  # fmt: skip
    changes = result.price_changes
    assert [str(d) for d in changes["date"]] == ["2026-08-17", "2026-09-10"]
    assert (changes["usd_per_1k_queries"] != changes["usd_per_1k_queries_before"]).all()


def test_a_rate_this_workload_does_not_pay_is_not_a_change_from_a_number_to_itself() -> None:
    # claude-sonnet-4-6 dropped its long-context rates on 2026-03-13: short prompts pay the same.
    out = cli("project", "claude-sonnet-4-6", "--queries-per-day", "1000", "--prompt-mean", "500",
              "--output-mean", "500", "--start", "2026-01", "--months", "6", "--on", "2026-12-01",
              "--draws", "100")  # fmt: skip
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert text.count("price change on") == 1
    assert "price change on 2026-03-13: rates this workload does not pay" in text
    assert "9.0000 -> 9.0000" not in text


def test_deepseek_call_names_the_hour_and_accepts_one(capsys: pytest.CaptureFixture[str]) -> None:
    plain = cli("call", "deepseek-chat", "--prompt-tokens", "10000", "--completion-tokens", "1000",
                "--on", "2026-11-29").output  # fmt: skip
    plain = " ".join(plain.split())
    assert "hour: none given, so priced outside 00:30-16:30 UTC" in plain
    peak = cli("call", "deepseek-chat", "--prompt-tokens", "10000", "--completion-tokens", "1000",
               "--on", "2026-11-29", "--at", "12:00")  # fmt: skip
    assert peak.exit_code == 0, peak.output
    assert "priced at 12:00 UTC, inside 00:30-16:30 UTC" in " ".join(peak.output.split())
    noon = call_cost("deepseek-chat", prompt_tokens=10_000, completion_tokens=1_000,
                     at=datetime(2026, 11, 29, 12, tzinfo=UTC), table=TABLE)  # fmt: skip
    night = call_cost("deepseek-chat", prompt_tokens=10_000, completion_tokens=1_000, on=ON,
                      table=TABLE)  # fmt: skip
    assert noon.usd > night.usd
    assert f"{noon.usd}" in peak.output
    bad = fails(capsys, "call", "deepseek-chat", "--prompt-tokens", "1", "--completion-tokens",
                "1", "--at", "noon")  # fmt: skip
    assert "`at`: 'noon' is not a time of day" in bad


def test_token_counts_take_1e3_and_refuse_text_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ok = cli("call", "gpt-6.2-sol", "--prompt-tokens", "1e3", "--completion-tokens", "1_000",
             "--on", "2026-11-29")  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "1,000" in ok.output
    bad = fails(capsys, "call", "gpt-6.2-sol", "--prompt-tokens", "1.5e3x", "--completion-tokens",
                "1")  # fmt: skip
    assert "`prompt_tokens`: must be a whole number, got '1.5e3x'" in bad
    assert "╭" not in bad  # no boxed usage panel


def test_xai_raw_counts_price_as_cost_of_prices_the_usage() -> None:
    # xAI's completion_tokens leave the reasoning out.
    body = {"object": "chat.completion", "model": "grok-4", "created": 1764417600,
            "usage": {"prompt_tokens": 1_000, "completion_tokens": 100,
                      "completion_tokens_details": {"reasoning_tokens": 500}}}  # fmt: skip
    read = cost_of(body, provider="x-ai", table=TABLE)
    # Python's call_cost keeps one convention (reasoning inside completion) for every seller.
    ours = call_cost("grok-4", prompt_tokens=1_000, completion_tokens=600, reasoning_tokens=500,
                     on=ON, table=TABLE)  # fmt: skip
    assert ours.usd == read.usd
    assert (ours.output_tokens, ours.reasoning_tokens) == (100, 500)
    out = cli("call", "grok-4", "--prompt-tokens", "1000", "--completion-tokens", "100",
              "--reasoning-tokens", "500", "--on", "2026-11-29")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "counts completion tokens without reasoning" in " ".join(out.output.split())
    assert "0.012 " in out.output  # the same total, shown without trailing zeros
    assert read.usd == Decimal("0.0120")


def test_flex_before_it_existed_is_a_note_in_python_and_on_the_command_line() -> None:
    early = call_cost("openai/o3", prompt_tokens=1_000, completion_tokens=100, tier="flex",
                      on=date(2025, 5, 1), table=TABLE)  # fmt: skip
    assert early.tier == ""
    assert "has no flex price on 2025-05-01: the standard price is used" in early.notes
    out = cli("call", "openai/o3", "--prompt-tokens", "1000", "--completion-tokens", "100",
              "--tier", "flex", "--on", "2025-05-01")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "has no flex price on 2025-05-01" in " ".join(out.output.split())


def test_completion_mean_counts_reasoning_as_cost_call_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    common = ("project", "gpt-6.2-sol", "--queries-per-day", "100", "--prompt-mean", "500",
              "--reasoning-mean", "300", "--draws", "100", "--on", "2026-11-29")  # fmt: skip
    by_output = cli(*common, "--output-mean", "200").output
    by_completion = cli(*common, "--completion-mean", "500").output
    assert by_output == by_completion
    both = fails(capsys, *common, "--output-mean", "200", "--completion-mean", "500")
    assert "`completion_mean`: give --output-mean" in both


def test_on_means_as_if_today_were_that_date_in_project_too() -> None:
    out = cli("project", "gpt-6.2-sol", "--queries-per-day", "100", "--prompt-mean", "500",
              "--output-mean", "50", "--draws", "100", "--on", "2026-11-29",
              "--months", "2")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "total (2026-12 to 2027-01)" in out.output


@pytest.mark.parametrize("columns", [80, 120])
def test_the_scenario_table_fits_with_every_number_whole(columns: int) -> None:
    out = cli("project", "gpt-6.2-sol", "--queries-per-day", "10000", "--prompt-mean", "500",
              "--output-mean", "500", "--reasoning-mean", "800", "--compare-model",
              "deepseek-chat", "--compare-model", "claude-opus-4-6", "--compare-cap", "100",
              "--on", "2026-11-29", "--draws", "1000", "--volume-cv", "0.2",
              columns=columns)  # fmt: skip
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert "…" not in out.output
    table = out.output[out.output.index("Scenarios over the horizon") :]
    assert "P50" in table
    assert "x base" in table
    # The cheapest baseline's dearer rival reads as a multiple, never as -2,122.5%.
    row = next(line for line in table.splitlines() if line.strip().startswith("claude-opus"))
    assert row.rstrip().endswith("x")
    assert "%" not in table


def test_a_rate_is_shown_whole() -> None:
    from cotplan.render.costs import rate

    assert rate(pytest.importorskip("decimal").Decimal("0.01875")) == "0.01875"


def _write_log(path: Path, bodies: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(b) for b in bodies) + "\n")
    return path


def _body(created: int, model: str = "gpt-4o-mini") -> dict[str, Any]:
    return {"object": "chat.completion", "created": created, "model": model,
            "usage": {"prompt_tokens": 1_000, "completion_tokens": 200}}  # fmt: skip


def test_a_stale_price_is_noted_once_for_a_whole_log(tmp_path: Path) -> None:
    # A year of daily calls on a price read long before: one note, not one a day.
    day = 86_400
    start = int(datetime(2027, 6, 1, tzinfo=UTC).timestamp())
    log = _write_log(tmp_path / "calls.jsonl", [_body(start + i * day) for i in range(200)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spent = actuals_from_jsonl(log, table=TABLE, today=date(2028, 1, 1))
    stale = [w for w in caught if issubclass(w.category, StalePriceWarning)]
    assert len(stale) == 1
    assert "2027-12-17" in str(stale[0].message)  # judged on the latest call's day
    assert int(spent.frame["calls"].sum()) == 200


def test_a_log_that_is_not_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    log.write_bytes(json.dumps(_body(1764417600)).encode() + b'\n{"model": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"calls.jsonl, line 2: not UTF-8 text"):
        actuals_from_jsonl(log, table=TABLE, today=ON)


def test_a_call_dated_2050_is_refused(tmp_path: Path) -> None:
    later = int(datetime(2050, 1, 1, tzinfo=UTC).timestamp())
    log = _write_log(tmp_path / "calls.jsonl", [_body(1764417600), _body(later)])
    with pytest.raises(InputError, match=r"calls.jsonl, line 2, `time`: 2050-01-01.* after today"):
        actuals_from_jsonl(log, table=TABLE, today=ON)


def test_deeply_nested_prices_and_actuals_are_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    log = tmp_path / "calls.jsonl"
    log.write_text(deep + "\n")
    with pytest.raises(InputError, match=r"calls.jsonl, line 1: nested more than 64 levels"):
        actuals_from_jsonl(log, table=TABLE, today=ON)
    prices = tmp_path / "prices.json"
    prices.write_text(deep)
    out = fails(capsys, "prices", "--prices", str(prices))
    assert "prices.json: nested more than 64 levels" in out
    assert "Traceback" not in out


def test_sample_errors_name_the_line_a_spreadsheet_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = tmp_path / "calls.csv"
    pd.DataFrame({"prompt_tokens": [100, 200, -5], "completion_tokens": [10, 20, 30]}).to_csv(
        sample, index=False
    )
    out = fails(capsys, "project", "gpt-6.2-sol", "--queries-per-day", "10", "--sample",
                str(sample), "--draws", "100")  # fmt: skip
    assert "calls.csv, line 4, `prompt_tokens`: is -5: must not be negative" in out


def test_a_projection_of_millions_fits_80_columns_with_every_number_whole() -> None:
    out = cli("project", "claude-opus-4-6", "--queries-per-day", "2000000", "--prompt-mean",
              "5000", "--output-mean", "2000", "--growth", "0.05", "--on", "2026-11-29",
              "--draws", "1000", "--fiscal-year-start", "apr", "--growth-low", "0",
              "--growth-high", "0.1", "--budget", "5e6", columns=80)  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "…" not in out.output
    assert max(len(line) for line in out.output.splitlines()) <= 80
    assert "$72,645,923" in out.output
