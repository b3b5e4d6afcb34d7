"""Spend projections: workloads, token distributions, CoT policies, Monte Carlo, exports."""

from __future__ import annotations

import math
import warnings
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cotplan.backends.base import Completion, Usage
from cotplan.errors import InputError
from cotplan.pricing import (
    EmpiricalTokens,
    FixedCap,
    ParametricTokens,
    PlannerCap,
    Projection,
    Scenario,
    StalePriceWarning,
    Workload,
    call_cost,
    compare_scenarios,
    price_table,
    project_costs,
)

TODAY = date(2026, 11, 29)
START = date(2026, 12, 1)
TABLE = price_table()

RNG = np.random.default_rng(7)
N_RECORDS = 60
PROMPT = RNG.integers(500, 3_000, N_RECORDS)
REASONING = RNG.integers(0, 4_000, N_RECORDS)
COMPLETION = REASONING + RNG.integers(20, 400, N_RECORDS)
SAMPLE = EmpiricalTokens(PROMPT, COMPLETION, REASONING)


def project(model: str = "gpt-6.2-sol", **kwargs: Any) -> Projection:
    kwargs.setdefault("draws", 20_000)
    workload = kwargs.pop("workload", Workload(queries_per_day=1_000, start=START))
    tokens = kwargs.pop("tokens", SAMPLE)
    return project_costs(model, workload, tokens, table=TABLE, today=TODAY, **kwargs)


def exact_mean_call(model: str, cap: int | None = None, on: date = START) -> float:
    """Mean cost per call over the sample, each call priced exactly with call_cost."""
    total = Decimal(0)
    for p, c, r in zip(PROMPT, COMPLETION, REASONING, strict=True):
        kept = int(r) if cap is None else min(int(r), cap)
        answer = int(c) - int(r)
        total += call_cost(model, prompt_tokens=int(p), completion_tokens=answer + kept,
                           reasoning_tokens=kept, on=on, table=TABLE).usd  # fmt: skip
    return float(total / N_RECORDS)


# --- workload and inputs -----------------------------------------------------------------------


def test_months_follow_the_calendar_and_growth() -> None:
    w = Workload(queries_per_day=100, growth_rate=0.10, start=date(2027, 1, 15), horizon_months=3)
    months = w.months()
    assert list(months["label"]) == ["2027-01", "2027-02", "2027-03"]
    assert list(months["days"]) == [31, 28, 31]
    assert list(months["queries"]) == pytest.approx([3_100, 2_800 * 1.1, 3_100 * 1.21])
    yearly = Workload(queries_per_month=1_000, growth_rate=0.20, growth_per="year", start=START)
    assert yearly.monthly_growth == pytest.approx(1.2 ** (1 / 12) - 1)
    assert yearly.months()["queries"].iloc[-1] == pytest.approx(1_000 * 1.2 ** (11 / 12))


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"queries_per_day": -5}, r"`queries_per_day`: must not be negative"),
        ({"queries_per_day": math.nan}, r"`queries_per_day`: must be a finite number"),
        ({"queries_per_month": math.inf}, r"`queries_per_month`: must be a finite number"),
        ({"queries_per_day": "many"}, r"`queries_per_day`: must be a number"),
        ({}, r"`queries_per_day`: give exactly one of"),
        ({"queries_per_day": 1, "queries_per_month": 30}, r"give exactly one of"),
        ({"queries_per_day": 1, "growth_rate": -1.0}, r"`growth_rate`: must be above -1"),
        ({"queries_per_day": 1, "growth_per": "week"}, r"`growth_per`: must be 'month' or 'year'"),
        ({"queries_per_day": 1, "horizon_months": 0}, r"`horizon_months`: must be at least 1"),
        ({"queries_per_day": 1, "horizon_months": 2.5}, r"`horizon_months`: must be a whole"),
        ({"queries_per_day": 1, "volume_cv": -0.1}, r"`volume_cv`: must not be negative"),
    ],
)
def test_bad_workloads_name_the_field(kwargs: dict[str, object], pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        Workload(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: EmpiricalTokens([1, 2], [1]), r"`completion_tokens`: prompt \(2\), completion"),
        (
            lambda: EmpiricalTokens([1, -2], [1, 1]),
            r"`prompt_tokens`: position 1 is -2: must not",
        ),
        (
            lambda: EmpiricalTokens([1, math.nan], [1, 1]),
            r"position 1 is nan: must be finite",
        ),
        (lambda: EmpiricalTokens([1], [1]), r"`prompt_tokens`: needs at least 2 records"),
        (
            lambda: EmpiricalTokens([1, 1], [5, 5], [1, 9]),
            r"position 1 has 9 reasoning",
        ),
        (lambda: ParametricTokens(100, -1, 10, 1), r"`prompt_sd`: must not be negative"),
        (lambda: ParametricTokens(100, 1, 0, 5), r"`output_sd`: a zero mean needs a zero"),
        (lambda: ParametricTokens(100, 1, 10, 1, n_observed=0), r"`n_observed`: must be at"),
        (lambda: FixedCap(-3), r"`k`: must not be negative"),
        (lambda: PlannerCap("k*"), r"`planner`: must be a number or an object with a budget"),
    ],
)
def test_bad_token_inputs_name_the_field(make: object, pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"cache_hit_rate": 1.5}, r"`cache_hit_rate`: must be between 0 and 1"),
        ({"batch_share": -0.1}, r"`batch_share`: must be between 0 and 1"),
        ({"permutations": 0}, r"`permutations`: must be at least 1"),
        ({"draws": 10}, r"`draws`: must be at least 100"),
        ({"seed": -1}, r"`seed`: must be an integer >= 0"),
        ({"policy": "short"}, r"`policy`: must be None, an int cap"),
        ({"tokens": [1, 2, 3]}, r"`tokens`: must be EmpiricalTokens"),
        ({"workload": {"queries_per_day": 5}}, r"`workload`: must be a Workload"),
    ],
)
def test_bad_projection_inputs_name_the_field(kwargs: dict[str, Any], pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        project(**kwargs)


# --- the numbers -------------------------------------------------------------------------------


def test_cost_per_query_matches_exact_call_costs() -> None:
    p = project_costs("gpt-6.2-sol", Workload(queries_per_day=1, start=START), SAMPLE,
                      table=TABLE, today=TODAY, draws=1_000)  # fmt: skip
    assert p.per_query_usd == pytest.approx(exact_mean_call("gpt-6.2-sol"), rel=1e-12)
    capped = project_costs("gpt-6.2-sol", Workload(queries_per_day=1, start=START), SAMPLE,
                           policy=512, table=TABLE, today=TODAY, draws=1_000)  # fmt: skip
    assert capped.per_query_usd == pytest.approx(exact_mean_call("gpt-6.2-sol", 512), rel=1e-12)
    assert capped.policy == "cap 512"


def test_monthly_mean_is_queries_times_cost_per_query() -> None:
    frame = project(seed=3)
    months = frame.frame[frame.frame["period"] == "month"]
    expected = months["queries"] * exact_mean_call("gpt-6.2-sol")
    # 20,000 draws: the Monte Carlo error of each mean is about 0.05% here; allow 0.5%.
    assert np.allclose(months["mean_usd"], expected, rtol=5e-3)
    total = frame.frame[frame.frame["period"] == "total"].iloc[0]
    assert total["mean_usd"] == pytest.approx(months["mean_usd"].sum(), rel=1e-9)
    year = frame.frame[frame.frame["period"] == "year"].iloc[0]
    assert year["p90_usd"] == total["p90_usd"]
    days = frame.frame[frame.frame["period"] == "day"]
    assert np.allclose(days["mean_usd"].to_numpy() * months["days"].to_numpy(),
                       months["mean_usd"].to_numpy())  # fmt: skip


def test_percentiles_are_ordered_and_seeded() -> None:
    a = project(seed=11).frame
    b = project(seed=11).frame
    c = project(seed=12).frame
    pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
    assert not a["p90_usd"].equals(c["p90_usd"])
    assert (a["p10_usd"] < a["p50_usd"]).all()
    assert (a["p50_usd"] < a["p90_usd"]).all()


def test_percentiles_of_a_million_draws_are_numpys_bit_for_bit() -> None:
    # The projection's percentiles select each order statistic in a window of the draws
    # instead of partitioning them all: the figures must be np.percentile's to the last bit,
    # whatever the arrangement (sorted, partitioned, ties, all equal) and however short.
    from cotplan.pricing.gamma_sums import draw_percentiles, draws_summary

    rng = np.random.default_rng(5)
    n = 1_000_003
    cases = {
        "gamma": rng.gamma(0.3, 10.0, n),
        "sorted": np.sort(rng.lognormal(0.0, 2.0, n)),
        "reversed": np.sort(rng.normal(size=n))[::-1].copy(),
        "partitioned": np.partition(rng.normal(size=n), [n // 10, n // 2, 9 * n // 10]),
        "ties": np.round(rng.normal(size=n), 1),
        "mostly zero": np.where(rng.random(n) < 0.95, 0.0, rng.random(n)),
        "constant": np.full(n, 3.25),
        "short": rng.normal(size=1_000),
        # Every 30th draw, where the windows are placed from, far below the rest: the windows
        # miss and the whole array is partitioned.
        "misleading": np.where(np.arange(n) % 30 == 0, -1.0, rng.random(n)),
        "with nan": np.where(np.arange(n) == 7, np.nan, rng.normal(size=n)),
    }
    for name, values in cases.items():
        kept = values.copy()
        for q in ((10.0, 50.0, 90.0), (10.0, 90.0), (0.0, 37.3, 100.0)):
            want = [float(x) for x in np.percentile(values, q)]
            got = list(draw_percentiles(values, q))
            assert np.array_equal(got, want, equal_nan=True), (name, q)
        np.testing.assert_array_equal(values, kept)  # left as it was
        mean, *ps = draws_summary(values.copy(), in_place=True)
        assert np.array_equal(ps, np.percentile(values, (10.0, 50.0, 90.0)), equal_nan=True)
        assert np.array_equal([mean], [values.mean()], equal_nan=True)


def test_gamma_sums_drawn_block_by_block_are_the_whole_array_formula() -> None:
    # `SumModel.draw` runs the Wilson-Hilferty transform in cache-sized blocks: every draw must
    # be what the formula on whole arrays gives, to the last bit (dead and spread-free draws,
    # and a length that is no multiple of the block, included).
    from cotplan.pricing.gamma_sums import SumModel

    rng = np.random.default_rng(8)
    n = 100_003
    a = np.where(rng.random(n) < 0.01, 0.0, rng.gamma(4.0, 0.01, n))
    b = np.where(rng.random(n) < 0.01, 0.0, a * a * rng.uniform(0.1, 3.0, n))
    model = SumModel.build(a, b)
    z = rng.standard_normal(n)
    for q in (30_000.0, 2.5):
        out = model.c2 * z
        out *= 1.0 / math.sqrt(q)
        out -= model.c1 * (1.0 / q)
        out += 1.0
        np.maximum(out, 0.0, out=out)
        want = out * out
        want *= out
        want *= model.a
        want *= q
        got = model.draw(q, z, np.random.default_rng(0))
        if q * model.k_min < 1.0:  # the exact gamma draws replace the skewed ones
            keep = ~((q * model.k < 1.0) & (model.a > 0))
            assert keep.sum() < n
            got, want = got[keep], want[keep]
        np.testing.assert_array_equal(got, want)


def test_sample_size_sets_the_uncertainty_of_the_mean() -> None:
    def width(n: int) -> float:
        tokens = ParametricTokens(1_500, 500, 300, 100, 2_000, 1_500, n_observed=n)
        total = project(tokens=tokens).frame.iloc[-1]
        return float((total["p90_usd"] - total["p10_usd"]) / total["p50_usd"])

    few, many = width(25), width(2_500)
    # The band is set by the mean's standard error, which shrinks as 1/sqrt(n): 10x for 100x.
    assert few == pytest.approx(10 * many, rel=0.15)
    assert few > 0.1


def test_volume_uncertainty_widens_the_band() -> None:
    known = Workload(queries_per_day=1_000, start=START)
    unsure = Workload(queries_per_day=1_000, start=START, volume_cv=0.3)
    a = project(workload=known).frame.iloc[-1]
    b = project(workload=unsure).frame.iloc[-1]
    assert b["p90_usd"] - b["p10_usd"] > 3 * (a["p90_usd"] - a["p10_usd"])
    assert b["mean_usd"] == pytest.approx(a["mean_usd"], rel=0.01)


def test_small_volumes_match_a_brute_force_simulation() -> None:
    # 2 queries a day for one 31-day month: the sum of 62 skewed per-call costs. The projection
    # draws it from a moment-matched gamma; compare its percentiles with summing 62 simulated
    # calls 200,000 times. The tolerance (4%) covers the gamma approximation; Monte Carlo error
    # at 200,000 draws is about 0.3%, so a failure means the method is off, not bad luck.
    tokens = ParametricTokens(1_000, 500, 200, 400)
    w = Workload(queries_per_day=2, start=START, horizon_months=1)
    p = project_costs("gpt-6.2-sol", w, tokens, draws=200_000, seed=3, table=TABLE, today=TODAY)
    month = p.frame[p.frame["period"] == "month"].iloc[0]
    rng = np.random.default_rng(99)
    prompt, answer, _ = tokens.sample(62 * 200_000, rng)
    sums = ((prompt * 2.0 + answer * 10.0) / 1e6).reshape(200_000, 62).sum(axis=1)
    for q, col in zip((10, 50, 90), ("p10_usd", "p50_usd", "p90_usd"), strict=True):
        assert month[col] == pytest.approx(np.percentile(sums, q), rel=0.04)
    assert month["mean_usd"] == pytest.approx(sums.mean(), rel=0.01)


def test_levers_scale_the_cost_per_query() -> None:
    base = project(draws=1_000)
    assert project(permutations=5, draws=1_000).per_query_usd == pytest.approx(
        5 * base.per_query_usd
    )
    # Batch: half the calls at half price is 25% off. Cache: 40% of prompt tokens at $0.10
    # instead of $2.00.
    assert project(batch_share=0.5, draws=1_000).per_query_usd == pytest.approx(
        0.75 * base.per_query_usd
    )
    prompt_cost = PROMPT.mean() * 2.0 / 1e6
    cached = project(cache_hit_rate=0.4, draws=1_000).per_query_usd
    assert cached == pytest.approx(base.per_query_usd - 0.4 * prompt_cost * (1 - 0.05))


def test_planner_policy_takes_k_from_budget() -> None:
    class Planner:
        def budget(self, n: int, eps: float) -> float:
            return math.sqrt(n) * math.log(1 / eps) * 10

    policy = PlannerCap(Planner(), n=100, eps=0.1)
    assert policy.k == math.ceil(100 * math.log(10))
    p = project(policy=policy, draws=1_000)
    assert p.per_query_usd == pytest.approx(exact_mean_call("gpt-6.2-sol", int(policy.k)))
    assert p.policy == f"planner k*={int(policy.k)}"
    with pytest.raises(InputError, match="`n`: a planner needs `n` and `eps`"):
        PlannerCap(Planner())


def test_scheduled_price_change_lands_in_its_month() -> None:
    w = Workload(queries_per_day=1_000, start=date(2026, 11, 1), horizon_months=2)
    frame = project("gemini-4-argon", workload=w).frame
    nov, dec = frame[frame["period"] == "month"].to_dict("records")
    assert (nov["price_as_of"], dec["price_as_of"]) == (date(2026, 11, 5), date(2026, 11, 5))
    per_day_ratio = (dec["mean_usd"] / 31) / (nov["mean_usd"] / 30)
    assert per_day_ratio == pytest.approx(2.0, rel=0.01)


def test_empirical_tokens_from_frames_and_completions() -> None:
    frame = pd.DataFrame({"prompt_tokens": PROMPT, "completion_tokens": COMPLETION,
                          "reasoning_tokens": REASONING})  # fmt: skip
    a = EmpiricalTokens.from_frame(frame)
    done = [Completion("x", "stop", Usage(int(p), int(c), int(r)), "gpt-6.2-sol")
            for p, c, r in zip(PROMPT, COMPLETION, REASONING, strict=True)]  # fmt: skip
    b = EmpiricalTokens.from_completions(done)
    for x, y in zip(a.records(), b.records(), strict=True):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(InputError, match="`completion_tokens`: no column 'completion_tokens'"):
        EmpiricalTokens.from_frame(frame.drop(columns="completion_tokens"))


def test_completions_whose_usage_is_not_trusted_are_left_out_and_counted() -> None:
    from cotplan.backends.parsing import read_usage

    done = [Completion("x", "stop", Usage(int(p), int(c), int(r)), "gpt-6.2-sol")
            for p, c, r in zip(PROMPT, COMPLETION, REASONING, strict=True)]  # fmt: skip
    lost, notes = read_usage(None)  # the server sent no usage: counts read 0
    untrusted = Completion("x", "stop", lost, "gpt-6.2-sol", notes=notes)
    tokens = EmpiricalTokens.from_completions([untrusted, *done, untrusted])
    assert (tokens.n_observed, tokens.skipped) == (N_RECORDS, 2)
    for x, y in zip(tokens.records(), SAMPLE.records(), strict=True):
        np.testing.assert_array_equal(x, y)  # no free zero-token call among them
    inputs = project(tokens=tokens).inputs
    kind = inputs.loc[inputs["input"] == "tokens", "note"].item()
    assert kind.endswith(f"{N_RECORDS} calls, priced record by record (2 left out: their usage "
                         "could not be trusted)")  # fmt: skip
    with pytest.raises(InputError, match=r"needs at least 2 records \(3 more left out"):
        EmpiricalTokens.from_completions([untrusted, done[0], untrusted, untrusted])
    with pytest.raises(InputError, match="`skipped`: must be a whole number of calls"):
        EmpiricalTokens(PROMPT, COMPLETION, skipped=-1)


def test_stale_price_warnings_point_at_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "old.csv"
    path.write_text(
        "provider,model,input_per_mtok,cached_input_per_mtok,output_per_mtok,reasoning_billing,"
        "batch_discount,as_of,source_url\nacme,old-1,1,0.1,4,in_completion,0,2026-01-10,x\n"
    )
    table = price_table(path)
    w = Workload(queries_per_day=10, start=START)
    with pytest.warns(StalePriceWarning) as one:
        project_costs("old-1", w, SAMPLE, table=table, today=TODAY, draws=200)
    with pytest.warns(StalePriceWarning) as several:
        compare_scenarios(w, SAMPLE, [Scenario("a", "old-1")], table=table, today=TODAY,
                          draws=200)  # fmt: skip
    assert [Path(w.filename).name for w in [*one, *several]] == [Path(__file__).name] * 2


def test_stale_price_warns_in_projections(tmp_path: Path) -> None:
    path = tmp_path / "old.csv"
    path.write_text(
        "provider,model,input_per_mtok,cached_input_per_mtok,output_per_mtok,reasoning_billing,"
        "batch_discount,as_of,source_url\nacme,old-1,1,0.1,4,in_completion,0,2026-01-10,x\n"
    )
    table = price_table(path)
    w = Workload(queries_per_day=10, start=START)
    with pytest.warns(
        StalePriceWarning, match=r"old-1 \(acme\) was read on 2026-01-10, 323 days before"
    ):
        project_costs("old-1", w, SAMPLE, table=table, today=TODAY, draws=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # A fresh price stays fresh for every future month it prices.
        project_costs("gpt-6.2-sol", w, SAMPLE, table=TABLE, today=TODAY, draws=200)


# --- scenarios ---------------------------------------------------------------------------------


def test_scenarios_report_savings_against_the_baseline() -> None:
    w = Workload(queries_per_day=5_000, growth_rate=0.02, start=START)
    cmp = compare_scenarios(
        w, SAMPLE,
        [Scenario("uncapped", "gpt-6.2-sol"), Scenario("cap 256", "gpt-6.2-sol", policy=256),
         Scenario("terra", "gpt-6.1-terra")],
        draws=20_000, table=TABLE, today=TODAY,
    )  # fmt: skip
    frame = cmp.frame.set_index("scenario")
    assert cmp.baseline == "uncapped"
    assert frame.loc["uncapped", "savings_mean_usd"] == 0
    # Terra's rates are exactly half of Sol's: paired draws make the saving exactly half.
    assert frame.loc["terra", "savings_pct"] == pytest.approx(50.0, abs=1e-9)
    cap = frame.loc["cap 256"]
    expected = 100 * (1 - exact_mean_call("gpt-6.2-sol", 256) / exact_mean_call("gpt-6.2-sol"))
    assert cap["savings_pct"] == pytest.approx(expected, rel=0.01)
    assert 0 < cap["savings_p10_usd"] < cap["savings_mean_usd"] < cap["savings_p90_usd"]
    assert set(cmp.monthly["scenario"]) == {"uncapped", "cap 256", "terra"}
    with pytest.raises(InputError, match="`baseline`: 'x' is not a scenario name"):
        compare_scenarios(w, SAMPLE, [Scenario("a", "gpt-6.2-sol")], baseline="x", table=TABLE)
    with pytest.raises(InputError, match=r"`scenarios\[1\]\.name`: scenario names must be"):
        compare_scenarios(w, SAMPLE, [Scenario("a", "gpt-6.2-sol"), Scenario("a", "gpt-6-luna")])


def test_exports_for_spreadsheets_and_charts(tmp_path: Path) -> None:
    from openpyxl import load_workbook

    from cotplan.charts import chart
    from cotplan.charts.costs import save_chart

    w = Workload(queries_per_day=1_000, start=START, horizon_months=3)
    cmp = compare_scenarios(w, SAMPLE, [Scenario("sol", "gpt-6.2-sol"),
                                        Scenario("luna", "gpt-6-luna")],
                            draws=2_000, table=TABLE, today=TODAY)  # fmt: skip
    proj = cmp.projections["sol"]
    proj.to_csv(tmp_path / "p.csv")
    back = pd.read_csv(tmp_path / "p.csv")
    assert list(back["period"].unique()) == ["day", "month", "total"]
    assert back["mean_usd"].iloc[-1] == pytest.approx(proj.frame["mean_usd"].iloc[-1])
    proj.to_excel(tmp_path / "p.xlsx")
    cmp.to_excel(tmp_path / "c.xlsx")
    book = load_workbook(tmp_path / "p.xlsx")
    sheets = ["summary", "monthly", "quarters", "fiscal_years", "assumptions", "prices"]
    assert book.sheetnames == sheets
    sheet = book["monthly"]
    header = [c.value for c in sheet[1]]
    assert sheet.freeze_panes == "A2"
    mean = sheet.cell(row=2, column=header.index("mean_usd") + 1)
    assert isinstance(mean.value, float)
    assert mean.number_format == '"$"#,##0.00'
    assert sheet.cell(row=2, column=header.index("start") + 1).number_format == "yyyy-mm-dd"
    assert sheet.column_dimensions["A"].width >= len("2026-12")
    # The summary: headline figures with their header frozen, then the inputs as entered and
    # the price sources beside them.
    summary = book["summary"]
    cells = {c.value: c for row in summary.iter_rows() for c in row if c.value is not None}
    assert str(cells["label"].coordinate) == "A3"
    assert summary.freeze_panes == "A4"
    assert cells["usd_per_query"].offset(column=1).number_format == '"$"#,##0.000000'
    assert "Inputs as entered, and as simulated" in cells
    assert "Price sources" in cells
    source = cells["price_source"].offset(column=1).value
    assert source == "https://developers.openai.com/api/docs/models/gpt-6.2-sol, read 2026-11-29"
    hit = next(c for c in summary["A"] if c.value == "cache_hit_rate").offset(column=1)
    assert (hit.value, hit.number_format) == (0.0, "0.0%")
    book = load_workbook(tmp_path / "c.xlsx")
    assert book.sheetnames == [
        "summary",
        "comparison",
        "monthly",
        "monthly_detail",
        "assumptions",
        "prices",
    ]
    prices_sheet = book["prices"]
    columns = [c.value for c in prices_sheet[1]]
    rate = prices_sheet.cell(row=2, column=columns.index("input_per_mtok") + 1)
    assert rate.value == 2  # input_per_mtok of gpt-6.2-sol, as a number
    assert "source" in columns
    assert list(cmp.frame["price_source"]) == [
        "https://developers.openai.com/api/docs/models/gpt-6.2-sol, read 2026-11-29",
        "https://developers.openai.com/api/docs/models/gpt-6-luna, read 2026-11-29",
    ]
    png = save_chart(chart(cmp), tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in save_chart(chart(proj), tmp_path / "p.svg").read_text()[:500]
    html = save_chart(chart(proj), tmp_path / "p.html").read_text()
    assert "cdn.jsdelivr" not in html
    assert "vegaEmbed" in html
    with pytest.raises(InputError, match=r"`path`: unsupported chart file type '\.gif'"):
        save_chart(chart(proj), tmp_path / "p.gif")


def test_planner_cap_reads_a_budget_planners_k_star() -> None:
    import math

    from cotplan.planner import BudgetPlanner
    from cotplan.pricing import PlannerCap

    planner = BudgetPlanner.from_constants(c=2.0, alpha=0.5)
    cap = PlannerCap(planner, n=100, eps=0.1)
    # k* = c · √n · ln(1/ε) = 2 · 10 · ln 10 = 46.05..., rounded up to whole tokens
    assert cap.k == math.ceil(2.0 * 10.0 * math.log(10.0))
