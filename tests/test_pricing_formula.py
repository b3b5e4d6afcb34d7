"""One price formula: a projection of one fixed call costs exactly what `call_cost` says."""

from __future__ import annotations

import re
import tempfile
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.pricing import (
    EmpiricalTokens,
    PriceRow,
    Workload,
    call_cost,
    price_table,
    project_costs,
)

TABLE = price_table()
NOV = date(2026, 11, 1)


def first_month(row: PriceRow) -> date | None:
    """The first day of a month in which `row` is the price in effect every day (None if there
    is none): a price change inside a month applies from its day on, so a month that
    straddles one is priced at a blend of the two."""
    if row.effective_from is None:
        day = NOV
    elif row.effective_from.day == 1:
        day = row.effective_from
    else:
        day = (row.effective_from.replace(day=28) + timedelta(days=4)).replace(day=1)
    if row.effective_to is not None:
        # The last month that ends on or before the price's last day.
        limit = (row.effective_to + timedelta(days=1)).replace(day=1)
        last_whole = (limit - timedelta(days=1)).replace(day=1)
        if row.effective_from is None:
            day = min(day, last_whole)
        if day > last_whole:
            return None
    month_end = (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    if TABLE.changes(row.model, day, month_end, provider=row.provider):
        return None
    return day


# Rows with time-of-day prices are left out: a projection blends their hours (uniform by
# default), which `call_cost` without `at` does not; test_pricing_tiers.py checks that blend.
ROWS = [
    (row, day)
    for row in TABLE.rows
    if not row.time_of_day and (day := first_month(row)) is not None
]
SHARES = [0.0, 0.05, 0.1, 0.2, 0.25, 0.5]


def fixed_call(row: PriceRow, prompt: int, hit: float, write: float, answer: int,
               reasoning: int) -> dict[str, Any]:  # fmt: skip
    cached = int(Decimal(prompt) * Decimal(repr(hit)))
    written = int(Decimal(prompt) * Decimal(repr(write)))
    apart = row.reasoning_billing == "separate"
    return {"prompt_tokens": prompt, "cached_tokens": cached, "cache_write_tokens": written,
            "completion_tokens": answer if apart else answer + reasoning,
            "reasoning_tokens": reasoning}  # fmt: skip


@settings(max_examples=250, deadline=None)
@given(
    pick=st.sampled_from(ROWS),
    prompt=st.integers(0, 30_000).map(lambda x: 20 * x),  # 20 x: every share is whole tokens
    hit=st.sampled_from(SHARES),
    write=st.sampled_from(SHARES),
    answer=st.integers(0, 50_000),
    reasoning=st.integers(0, 50_000),
    batch=st.booleans(),
)
def test_projection_of_one_fixed_call_equals_call_cost_exactly(
    pick: tuple[PriceRow, date], prompt: int, hit: float, write: float, answer: int,
    reasoning: int, batch: bool,
) -> None:  # fmt: skip
    row, day = pick
    call = fixed_call(row, prompt, hit, write, answer, reasoning)
    expected = call_cost(row.model, provider=row.provider, batch=batch, on=day, table=TABLE,
                         **call)  # fmt: skip
    inside = row.reasoning_billing != "separate"
    tokens = EmpiricalTokens([prompt, prompt], [call["completion_tokens"]] * 2, [reasoning] * 2,
                             reasoning_in_completion=inside)  # fmt: skip
    projection = project_costs(
        row.model, Workload(queries_per_month=1_000, start=day, horizon_months=1), tokens,
        provider=row.provider, cache_hit_rate=hit, cache_write_rate=write,
        batch_share=1.0 if batch else 0.0, draws=100, today=day, table=TABLE,
    )  # fmt: skip
    assert projection.assumptions["usd_per_call"] == float(expected.usd)
    assert projection.per_query_usd == float(expected.usd)
    # No uncertainty in a sample of one repeated call: every draw is 1,000 such calls.
    month = projection.frame[projection.frame["period"] == "month"].iloc[0]
    assert month["p10_usd"] == pytest.approx(1_000 * float(expected.usd), rel=1e-12)


def test_long_context_and_cache_writes_in_a_sampled_projection() -> None:
    # Parametric draws take the float path: the same rates, the long tier for long prompts.
    from cotplan.pricing import ParametricTokens

    tokens = ParametricTokens(150_000, 0, 1_000, 0)
    work = Workload(queries_per_month=100, start=date(2026, 12, 1), horizon_months=1)
    projection = project_costs("claude-haiku-5-5", work, tokens, cache_write_rate=0.2,
                               cache_hit_rate=0.5, draws=1_000, today=NOV, table=TABLE)  # fmt: skip
    exact = call_cost("claude-haiku-5-5", prompt_tokens=150_000, cached_tokens=75_000,
                      cache_write_tokens=30_000, completion_tokens=1_000, on=NOV)  # fmt: skip
    assert exact.long_context
    assert projection.per_query_usd == pytest.approx(float(exact.usd), rel=1e-12)


# --- the command line agrees to the cent ----------------------------------------------------------

runner = CliRunner()
CALLS = [
    ("gpt-6.2-sol", None, date(2026, 11, 29)),  # cotplan
    ("gpt-4o-mini", "openai", date(2026, 11, 29)),  # genai-prices
    ("gemini-2.5-flash", None, date(2026, 11, 29)),  # genai-prices, reasoning apart
    ("claude-3-5-haiku", "google", date(2026, 11, 29)),  # genai-prices, a reseller
]


def _cli_agrees(row: PriceRow, day: date, call: dict[str, Any], folder: Path) -> None:
    """`cost call` prints `call_cost`'s exact total; `cost project` on a sample of that call
    prints the same cost per query (to its six decimals, far below a cent)."""
    exact = call_cost(row.model, provider=row.provider, on=day, table=TABLE, **call).usd
    seller = ["--provider", row.provider]
    out = runner.invoke(app, [
        "cost", "call", row.model, *seller, "--on", day.isoformat(),
        "--prompt-tokens", str(call["prompt_tokens"]),
        "--cached-tokens", str(call["cached_tokens"]),
        "--completion-tokens", str(call["completion_tokens"]),
        "--reasoning-tokens", str(call["reasoning_tokens"]),
    ], env={"COLUMNS": "200"})  # fmt: skip
    assert out.exit_code == 0, out.output
    printed = re.search(r"│ total .*│\s+([0-9.]+) │", out.output)
    assert printed is not None, out.output
    assert Decimal(printed.group(1)) == exact
    sample = folder / "calls.csv"
    pd.DataFrame({
        "prompt_tokens": [call["prompt_tokens"]] * 2,
        "completion_tokens": [call["completion_tokens"] + (
            call["reasoning_tokens"] if row.reasoning_billing == "separate" else 0)] * 2,
        "reasoning_tokens": [call["reasoning_tokens"]] * 2,
    }).to_csv(sample, index=False)  # fmt: skip
    hit = Decimal(call["cached_tokens"]) / Decimal(call["prompt_tokens"] or 1)
    out = runner.invoke(app, [
        "cost", "project", row.model, *seller, "--queries-per-month", "1000", "--months", "1",
        "--start", day.isoformat()[:7], "--sample", str(sample),
        "--cache-hit-rate", str(hit), "--draws", "200", "--on", day.isoformat(),
    ], env={"COLUMNS": "200"})  # fmt: skip
    assert out.exit_code == 0, out.output
    per_query = re.search(r"cost per query \$([0-9.]+)", out.output)
    assert per_query is not None, out.output
    assert abs(Decimal(per_query.group(1)) - exact) <= Decimal("0.0000005")
    assert f"price of {row.model}" in out.output


@pytest.mark.parametrize(("model", "provider", "day"), CALLS)
def test_cost_call_cost_project_and_call_cost_agree_to_the_cent(
    model: str, provider: str | None, day: date, tmp_path: Path
) -> None:
    row = TABLE.lookup(model, provider=provider, on=day)
    _cli_agrees(row, day.replace(day=1), fixed_call(row, 40_000, 0.25, 0.0, 3_000, 2_000),
                tmp_path)  # fmt: skip


@settings(max_examples=12, deadline=None)
@given(
    pick=st.sampled_from(ROWS),
    prompt=st.integers(0, 20_000).map(lambda x: 20 * x),
    hit=st.sampled_from(SHARES),
    answer=st.integers(0, 20_000),
    reasoning=st.integers(0, 20_000),
)
def test_the_command_line_agrees_on_any_model_of_either_source(
    pick: tuple[PriceRow, date], prompt: int, hit: float, answer: int, reasoning: int
) -> None:
    row, day = pick
    with tempfile.TemporaryDirectory() as folder:
        _cli_agrees(row, day, fixed_call(row, prompt, hit, 0.0, answer, reasoning), Path(folder))
