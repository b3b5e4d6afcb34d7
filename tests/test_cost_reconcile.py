"""A month of provider exports, in the providers' own shapes, reconciled line by line.

The exports are synthetic but format-exact (OpenAI's Usage and Costs API pages and its cost
CSV; Anthropic's usage and cost reports, amounts in cents; a Google Cloud billing export saved
as CSV). Their stated costs are worked out here from the published rates, independently of
the code under test, and a few are billed the way real invoices differ: at a batch rate the
usage export does not name, at the price before a change, with a negotiated discount. Every
line must end matched or explained; one changed amount must end flagged.
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cotplan.errors import InputError
from cotplan.pricing import price_table
from cotplan.pricing.exports import (
    read_anthropic_costs,
    read_anthropic_usage,
    read_openai_costs,
    read_openai_costs_csv,
    read_openai_usage,
)
from cotplan.pricing.exports_gcp import read_gcp_billing_csv
from cotplan.pricing.reconcile import Invoice, LoggedCall, reconcile

MILLION = Decimal(1_000_000)
NOVEMBER = [date(2026, 11, 1) + timedelta(days=i) for i in range(30)]
# gpt-6.2-sol gets a new price on 2026-11-15 in this table; the provider kept the old one.
PRICES = (
    "provider,model,input_per_mtok,cached_input_per_mtok,cache_write_per_mtok,output_per_mtok,"
    "reasoning_billing,batch_discount,long_context_threshold,long_input_per_mtok,"
    "long_cached_input_per_mtok,long_cache_write_per_mtok,long_output_per_mtok,effective_from,"
    "as_of,source_url\n"
    "openai,gpt-6.2-sol,2.00,0.10,2.50,10.00,in_completion,0.5,272000,4.00,0.20,5.00,15.00,,"
    "2026-11-29,https://developers.openai.com/api/docs/models/gpt-6.2-sol\n"
    "openai,gpt-6.2-sol,2.40,0.12,3.00,12.00,in_completion,0.5,272000,4.80,0.24,6.00,18.00,"
    "2026-11-15,2026-11-29,https://example.com/announced-change\n"
)


def unix(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def page(buckets: list[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "page", "data": buckets, "has_more": False, "next_page": None}


def usd(tokens: int, rate: Decimal) -> Decimal:
    return Decimal(tokens) * rate / MILLION


def openai_month(folder: Path) -> tuple[Path, Path, Path, Decimal]:
    """Usage and costs for two projects: gpt-4o-mini (search, part of it batch) and
    gpt-6.2-sol (chat, billed at its old price all month)."""
    usage, costs, total = [], [], Decimal(0)
    mini, sol = Decimal("0.15"), Decimal("2.00")
    for n, day in enumerate(NOVEMBER):
        inp, cached, out, req = 200_000 + 1_000 * n, 50_000, 40_000, 100
        results = [
            {"object": "organization.usage.completions.result", "input_tokens": inp,
             "input_cached_tokens": cached, "output_tokens": out, "num_model_requests": req,
             "project_id": "proj_search", "user_id": None, "api_key_id": "key_a",
             "model": "gpt-4o-mini-2024-07-18", "batch": False},
            {"object": "organization.usage.completions.result", "input_tokens": 30_000,
             "input_cached_tokens": 0, "output_tokens": 60_000, "num_model_requests": 20,
             "project_id": "proj_chat", "user_id": None, "api_key_id": "key_b",
             "model": "gpt-6.2-sol", "batch": False},
        ]  # fmt: skip
        if n % 7 == 0:  # a weekly batch job, marked batch in the usage export
            results.append({"object": "organization.usage.completions.result",
                            "input_tokens": 1_000_000, "input_cached_tokens": 0,
                            "output_tokens": 100_000, "num_model_requests": 500,
                            "project_id": "proj_search", "user_id": None, "api_key_id": "key_a",
                            "model": "gpt-4o-mini-2024-07-18", "batch": True})  # fmt: skip
        usage.append({"object": "bucket", "start_time": unix(day),
                      "end_time": unix(day + timedelta(days=1)), "results": results})  # fmt: skip
        mini_cost = (
            usd(inp - cached, mini) + usd(cached, Decimal("0.075")) + usd(out, Decimal("0.6"))
        )
        sol_cost = usd(30_000, sol) + usd(60_000, Decimal("10.00"))  # the old price, all month
        items = [("gpt-4o-mini-2024-07-18, input", "proj_search", mini_cost),
                 ("gpt-6.2-sol, input", "proj_chat", sol_cost)]  # fmt: skip
        if n % 7 == 0:
            items.append(("gpt-4o-mini-2024-07-18, batch input", "proj_search",
                          usd(1_000_000, mini / 2) + usd(100_000, Decimal("0.3"))))  # fmt: skip
        costs.append({"object": "bucket", "start_time": unix(day),
                      "end_time": unix(day + timedelta(days=1)), "results": [
                          {"object": "organization.costs.result",
                           "amount": {"value": float(v), "currency": "usd"},
                           "line_item": item, "project_id": project}
                          for item, project, v in items]})  # fmt: skip
        total += sum((v for _, _, v in items), Decimal(0))
    usage_file, costs_file = folder / "openai_usage.json", folder / "openai_costs.json"
    usage_file.write_text(json.dumps(page(usage[:15])) + "\n" + json.dumps(page(usage[15:])))
    costs_file.write_text(json.dumps([page(costs[:10]), page(costs[10:])]))
    csv_file = folder / "openai_costs.csv"
    with csv_file.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["start_time", "end_time", "line_item", "project_id", "amount_value",
                         "amount_currency"])  # fmt: skip
        for bucket in costs:
            for r in bucket["results"]:
                writer.writerow([bucket["start_time"], bucket["end_time"], r["line_item"],
                                 r["project_id"], r["amount"]["value"], "usd"])  # fmt: skip
    return usage_file, costs_file, csv_file, total


def anthropic_month(folder: Path, discount: Decimal = Decimal(0)) -> tuple[Path, Path, Decimal]:
    """claude-sonnet-4-5 in one workspace: cache reads and five-minute and one-hour writes."""
    usage, costs, total = [], [], Decimal(0)
    rate_in, rate_read, rate_write, rate_out = (Decimal(x) for x in ("3", "0.3", "3.75", "15"))
    for n, day in enumerate(NOVEMBER):
        start = f"{day.isoformat()}T00:00:00Z"
        end = f"{(day + timedelta(days=1)).isoformat()}T00:00:00Z"
        uncached, read, w5, w1, out = 120_000 + 500 * n, 400_000, 20_000, 5_000, 30_000
        usage.append({"starting_at": start, "ending_at": end, "results": [
            {"uncached_input_tokens": uncached, "cache_read_input_tokens": read,
             "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1},
             "output_tokens": out, "server_tool_use": {"web_search_requests": 0},
             "api_key_id": "apikey_01", "workspace_id": "wrkspc_support",
             "model": "claude-sonnet-4-5-20250929", "service_tier": "standard",
             "context_window": "0-200k"}]})  # fmt: skip
        dollars = (usd(uncached, rate_in) + usd(read, rate_read) + usd(w5, rate_write)
                   + usd(w1, rate_in * 2) + usd(out, rate_out)) * (1 - discount)  # fmt: skip
        cents = dollars * 100
        costs.append({"starting_at": start, "ending_at": end, "results": [
            {"currency": "USD", "amount": f"{cents:f}", "workspace_id": "wrkspc_support",
             "description": "Claude Sonnet 4.5 Usage - Input Tokens", "cost_type": "tokens",
             "context_window": "0-200k", "model": "claude-sonnet-4-5-20250929",
             "service_tier": "standard", "token_type": "uncached_input_tokens"}]})  # fmt: skip
        total += dollars
    usage_file, costs_file = folder / "anthropic_usage.json", folder / "anthropic_costs.json"
    usage_file.write_text(json.dumps(page(usage)))
    costs_file.write_text(json.dumps(page(costs)))
    return usage_file, costs_file, total


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    prices = tmp_path_factory.mktemp("prices") / "prices.csv"
    prices.write_text(PRICES)
    return price_table(prices)


def test_a_month_of_openai_and_anthropic_exports_reconciles_line_by_line(
    tmp_path: Path, table: Any
) -> None:
    o_usage, o_costs, _, o_total = openai_month(tmp_path)
    a_usage, a_costs, a_total = anthropic_month(tmp_path)
    lines = [*read_openai_usage(o_usage), *read_openai_costs(o_costs),
             *read_anthropic_usage(a_usage), *read_anthropic_costs(a_costs)]  # fmt: skip
    # cotplan's own log holds the search project's interactive calls, priced.
    log = [LoggedCall(day, "openai", "gpt-4o-mini", Decimal("0.02"), {"project": "proj_search"})
           for day in NOVEMBER]  # fmt: skip
    invoices = [
        Invoice("openai", "2026-11", total_usd=o_total - 25 + Decimal("12.50"),
                tax_usd=Decimal("12.50"), credits_usd=Decimal(25)),
        Invoice("anthropic", "2026-11", total_usd=a_total),
    ]  # fmt: skip
    result = reconcile(lines, log=log, invoices=invoices, table=table)
    frame = result.frame.set_index(["provider", "model", "project"])
    assert result.all_explained, result.flagged.to_string()
    assert len(frame) == 3
    assert frame.loc[("openai", "gpt-4o-mini", "proj_search"), "status"] == "matched"
    sol = frame.loc[("openai", "gpt-6.2-sol", "proj_chat")]
    assert sol["status"] == "explained"
    assert sol["why"].startswith("price change: billed at the price that held on 2026-")
    assert "(input 2.00, output 10.00 per 1M)" in sol["why"]
    assert sol["difference_usd"] < 0
    claude = frame.loc[("anthropic", "claude-sonnet-4-5", "wrkspc_support")]
    assert claude["status"] == "matched"
    assert abs(claude["stated_usd"] - a_total) < Decimal("0.000001")
    logged = frame.loc[("openai", "gpt-4o-mini", "proj_search"), "logged_usd"]
    assert logged == Decimal("0.60")
    assert "cotplan's log covers" in frame.loc[("openai", "gpt-4o-mini", "proj_search"), "why"]
    bills = result.invoices.set_index("provider")
    assert (bills["status"] == "explained").all()


def test_the_cost_csv_export_reads_as_the_costs_api(tmp_path: Path, table: Any) -> None:
    _, o_costs, o_csv, o_total = openai_month(tmp_path)
    from_api, from_csv = read_openai_costs(o_costs), read_openai_costs_csv(o_csv)
    assert [(x.day, x.model, x.project, x.batch, x.usd) for x in from_api] == [
        (x.day, x.model, x.project, x.batch, x.usd) for x in from_csv
    ]
    assert abs(sum(x.usd for x in from_csv) - o_total) < Decimal("0.000001")


def test_an_unexplained_difference_is_flagged(tmp_path: Path, table: Any) -> None:
    o_usage, o_costs, _, _ = openai_month(tmp_path)
    costs = json.loads(o_costs.read_text())
    costs[0]["data"][3]["results"][0]["amount"]["value"] += 7.0  # an overcharge on one day
    o_costs.write_text(json.dumps(costs))
    result = reconcile([*read_openai_usage(o_usage), *read_openai_costs(o_costs)], table=table)
    flagged = result.flagged
    assert list(flagged["model"]) == ["gpt-4o-mini"]
    assert flagged["why"].iloc[0].startswith("unexplained difference +$7.00")


def test_a_negotiated_discount_explains_a_lower_bill(tmp_path: Path, table: Any) -> None:
    a_usage, a_costs, _ = anthropic_month(tmp_path, discount=Decimal("0.15"))
    lines = [*read_anthropic_usage(a_usage), *read_anthropic_costs(a_costs)]
    assert not reconcile(lines, table=table).all_explained
    result = reconcile(lines, table=table, discounts={"anthropic": Decimal("0.15")})
    assert result.all_explained
    assert "negotiated discount of 15%" in result.frame["why"].iloc[0]


def test_an_invoice_that_does_not_add_up_is_flagged(tmp_path: Path, table: Any) -> None:
    a_usage, a_costs, a_total = anthropic_month(tmp_path)
    lines = [*read_anthropic_usage(a_usage), *read_anthropic_costs(a_costs)]
    wrong = Invoice("anthropic", "2026-11", total_usd=a_total + 40, tax_usd=Decimal(0))
    bills = reconcile(lines, table=table, invoices=[wrong]).invoices
    assert bills["status"].tolist() == ["flagged"]
    assert "+$40.00" in bills["why"].iloc[0]


def test_a_google_billing_export_prices_its_token_skus(tmp_path: Path, table: Any) -> None:
    row = table.lookup("gemini-2.5-pro", on=date(2026, 11, 3), provider="google", warn=False)
    rows = [
        ("Vertex AI", "Gemini 2.5 Pro Input Tokens", 2_000_000, row.input_per_mtok * 2),
        ("Vertex AI", "Gemini 2.5 Pro Output Tokens", 300_000,
         row.output_per_mtok * Decimal("0.3")),
    ]  # fmt: skip
    path = tmp_path / "gcp.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["billing_account_id", "service.description", "sku.description",
                         "usage_start_time", "usage_end_time", "project.id", "cost", "currency",
                         "usage.amount", "usage.unit", "credits", "cost_type"])  # fmt: skip
        for service, sku, amount, cost in rows:
            writer.writerow(["0X0X0X", service, sku, "2026-11-03T00:00:00Z",
                             "2026-11-04T00:00:00Z", "proj-ml", f"{cost:f}", "USD", amount,
                             "count", "[]", "regular"])  # fmt: skip
        writer.writerow(["0X0X0X", "Vertex AI", "Gemini 2.5 Pro Input Tokens",
                         "2026-11-03T00:00:00Z", "2026-11-04T00:00:00Z", "proj-ml", "0", "USD",
                         0, "count", json.dumps([{"name": "Free trial", "amount": -5.0}]),
                         "regular"])  # fmt: skip
        writer.writerow(["0X0X0X", "", "", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z", "",
                         "3.10", "USD", "", "", "[]", "tax"])  # fmt: skip
    lines = read_gcp_billing_csv(path)
    bill = Invoice("google", "2026-11", total_usd=sum((r[3] for r in rows), Decimal(0)) - 5
                   + Decimal("3.10"), tax_usd=Decimal(0))  # fmt: skip
    result = reconcile([x for x in lines if x.model or x.credit], table=table, invoices=[bill])
    model_rows = result.frame[result.frame["model"] == "gemini-2.5-pro"]
    assert model_rows["status"].tolist() == ["matched"]
    tax_rows = [x for x in lines if x.extra.get("cost_type") == "tax"]
    assert [x.usd for x in tax_rows] == [Decimal("3.10")]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ('{"object": "page"}', r"page 1: expected an object with a `data` list"),
        ('{"data": [{"start_time": 1, "results": [{"input_tokens": -3}]}]}',
         r"`page 1 data\[0\].results\[0\].input_tokens`: must be a whole number"),
        ('{"data": [{"start_time": 1, "results": [{"input_tokens": 3, '
         '"input_cached_tokens": 9}]}]}', r"input_cached_tokens \(9\) exceed input_tokens"),
        ("[" * 200 + "]" * 200, r"nested more than 64 levels"),
    ],
)  # fmt: skip
def test_a_bad_export_names_the_file_and_the_record(
    tmp_path: Path, text: str, pattern: str
) -> None:
    path = tmp_path / "usage.json"
    path.write_text(text)
    with pytest.raises(InputError, match=pattern):
        read_openai_usage(path)


def _response(day: date, model: str, tags: dict[str, str], prompt: int = 1_000) -> str:
    return json.dumps({"object": "chat.completion", "created": unix(day) + 3600, "model": model,
                       "usage": {"prompt_tokens": prompt, "completion_tokens": 200},
                       "metadata": tags})  # fmt: skip


def test_the_command_reconciles_and_exits_1_only_when_something_is_flagged(
    tmp_path: Path, table: Any
) -> None:
    from typer.testing import CliRunner

    from cotplan.cli import app

    o_usage, _, o_csv, o_total = openai_month(tmp_path)
    prices = tmp_path / "prices.csv"
    prices.write_text(PRICES)
    bills = tmp_path / "invoices.csv"
    bills.write_text(f"provider,month,total_usd,tax_usd,credits_usd\nopenai,2026-11,"
                     f"{o_total - 25:f},0,25\n")  # fmt: skip
    log = tmp_path / "calls.jsonl"
    log.write_text(_response(date(2026, 11, 3), "gpt-4o-mini", {"project": "proj_search"}) + "\n")
    args = ["cost", "reconcile", "--openai-usage", str(o_usage), "--openai-costs", str(o_csv),
            "--prices", str(prices), "--invoices", str(bills), "--log", str(log),
            "--on", "2026-12-01", "--csv", str(tmp_path / "out.csv")]  # fmt: skip
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "2 rows: 1 matched, 1 explained, 0 flagged" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    assert "price change: billed at the price that held on" in " ".join(result.output.split())
    written = pd.read_csv(tmp_path / "out.csv")
    assert list(written["status"]) == ["matched", "explained"]
    bills.write_text("provider,month,total_usd\nopenai,2026-11,1.00\n")
    flagged = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert flagged.exit_code == 1


def test_actuals_by_team_and_feature_sum_to_the_month(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cotplan.cli import app
    from cotplan.pricing.attribution import calls_from_jsonl, spend_by

    log = tmp_path / "calls.jsonl"
    lines = [
        _response(date(2026, 11, 2), "gpt-4o-mini", {"team": "search", "feature": "suggest"}),
        _response(date(2026, 11, 3), "gpt-4o-mini", {"team": "search", "feature": "rank"}, 9_000),
        _response(date(2026, 11, 4), "claude-haiku-4-5", {"team": "support"}),
        _response(date(2026, 11, 5), "gpt-4o-mini", {}),
    ]
    log.write_text("\n".join(lines) + "\n")
    calls = calls_from_jsonl(log, today=date(2026, 12, 1))
    frame = spend_by(calls, ["team", "feature"])
    assert list(zip(frame["team"], frame["feature"], strict=True)) == [
        ("(untagged)", "(untagged)"), ("search", "rank"), ("search", "suggest"),
        ("support", "(untagged)")]  # fmt: skip
    assert sum(frame["usd"]) == sum(c.usd for c in calls)
    assert frame["share"].sum() == pytest.approx(1.0)
    out = CliRunner().invoke(app, ["cost", "actuals", str(log), "--by", "team,feature",
                                   "--on", "2026-12-01"], env={"COLUMNS": "80"})  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "support" in out.output
    assert "Spend by team, feature" in out.output
