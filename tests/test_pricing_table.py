"""The shipped price table, strict model lookup, stale prices and user price files."""

from __future__ import annotations

import json
import warnings
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from cotplan.errors import InputError, UnknownModelError
from cotplan.pricing import (
    PRICES_ENV,
    REASONING_BILLING,
    STALE_AFTER_DAYS,
    StalePriceWarning,
    load_price_file,
    price_table,
    prices,
)

READ_ON = date(2026, 11, 29)  # the day the shipped prices were collected
HEADER = (
    "provider,model,input_per_mtok,cached_input_per_mtok,output_per_mtok,reasoning_billing,"
    "batch_discount,as_of,source_url"
)


def write(tmp_path: Path, text: str, name: str = "prices.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the shipped table ----------------------------------------------------------------------


def test_shipped_table_has_sources_dates_and_valid_rules() -> None:
    frame = prices(on=READ_ON)
    assert len(frame) >= 15
    assert {"openai", "anthropic", "google", "local"} <= set(frame["provider"])
    for row in frame.itertuples(index=False):
        assert row.source_url, row.model
        assert isinstance(row.as_of, date), row.model
        assert row.as_of <= READ_ON, row.model
        assert row.reasoning_billing in REASONING_BILLING
        assert isinstance(row.input_per_mtok, Decimal)
        assert row.age_days <= STALE_AFTER_DAYS, f"{row.model} ships already stale"
    # Every paid model has a real price; the only zeros are the deliberate local ones: the
    # embedded models (plain and thinking) and the lab reasoning models trained in-process.
    zero = frame[frame["input_per_mtok"] == 0]
    assert set(zero["provider"]) == {"local"}
    assert set(zero["model"]) == {"smollm2-135m-instruct", "smollm2-135m-thinking"} | {
        f"lab-{family}" for family in ("parity", "sum", "state", "bits", "majority")
    }
    assert set(zero["source_url"]) == {"local, no API charge"}


def test_shipped_prices_are_the_published_numbers() -> None:
    table = price_table()
    sol = table.lookup("gpt-6.2-sol", on=READ_ON)
    assert (sol.input_per_mtok, sol.cached_input_per_mtok, sol.output_per_mtok) == (
        Decimal("2.00"), Decimal("0.10"), Decimal("10.00")
    )  # fmt: skip
    assert sol.long_context_threshold == 272_000
    assert sol.long_output_per_mtok == Decimal("15.00")
    haiku = table.lookup("claude-haiku-5-5", on=READ_ON)
    assert haiku.long_context_threshold == 100_000
    assert haiku.long_input_per_mtok == Decimal("0.50")
    assert table.lookup("gemini-4-neon", on=READ_ON).reasoning_billing == "separate"
    assert table.lookup("claude-opus-5-5", on=READ_ON).reasoning_billing == "in_completion"


def test_scheduled_price_change_is_picked_by_date() -> None:
    table = price_table()
    before = table.lookup("gemini-4-argon", on=date(2026, 11, 30))
    after = table.lookup("gemini-4-argon", on=date(2026, 12, 1))
    assert before.input_per_mtok == Decimal("2.00")
    assert after.input_per_mtok == Decimal("4.00")
    assert after.effective_from == date(2026, 12, 1)
    changes = table.changes("gemini-4-argon", date(2026, 11, 1), date(2027, 1, 1))
    assert [r.effective_from for r in changes] == [date(2026, 12, 1)]


# --- lookup ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("GPT-6.2-Sol", "gpt-6.2-sol"),
        ("openai/gpt-6.2-sol", "gpt-6.2-sol"),
        ("gpt-6.2-sol-2026-11-17", "gpt-6.2-sol"),
        ("claude-opus-5-5-20261001", "claude-opus-5-5"),
        ("smollm2-135m-instruct@b179c9523d0e", "smollm2-135m-instruct"),
        ("SmolLM2-135M-Instruct.Q4_1", "smollm2-135m-instruct"),
    ],
)
def test_lookup_accepts_case_prefixes_dates_and_aliases(name: str, expected: str) -> None:
    assert price_table().lookup(name, on=READ_ON).model == expected


@pytest.mark.parametrize("name", ["gpt-99o", "gpt-6.2-sol-fast", "ft:gpt-6.2-sol:org::x"])
def test_unknown_models_are_errors_with_suggestions(name: str) -> None:
    with pytest.raises(UnknownModelError, match=r"`model`.*unknown model") as info:
        price_table().lookup(name, on=READ_ON)
    assert info.value.model == name
    assert isinstance(info.value, KeyError)


def test_unknown_model_lists_the_closest_names() -> None:
    with pytest.raises(UnknownModelError, match=r"closest known: gpt-6\.2-sol") as info:
        price_table().lookup("gpt-6.2-sool", on=READ_ON)
    assert "gpt-6.1-sol" in info.value.suggestions


def test_empty_model_name_is_an_input_error() -> None:
    with pytest.raises(InputError, match="`model`: must be a non-empty model name"):
        price_table().lookup("  ")


def test_no_price_in_effect_yet(tmp_path: Path) -> None:
    path = write(
        tmp_path, HEADER + ",effective_from\nacme,m1,1,1,1,none,0,2026-11-01,x,2027-01-01\n"
    )
    with pytest.raises(InputError, match="no price for 'm1' is in effect on 2026-12-01"):
        price_table(path).lookup("m1", on=date(2026, 12, 1))


# --- stale prices ------------------------------------------------------------------------------


def test_stale_price_warns_with_its_date() -> None:
    table = price_table()
    later = date(2027, 9, 1)
    with pytest.warns(
        StalePriceWarning,
        match=r"gpt-6-astra \(openai\) was read on 2026-09-13, 353 days before 2027-09-01",
    ):
        table.lookup("gpt-6-astra", on=later)


def test_fresh_price_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        price_table().lookup("gpt-6-astra", on=date(2026, 9, 13).replace(month=12))


def test_stale_boundary_is_180_days(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "\nacme,m1,1,1,1,none,0,2026-01-01,x\n")
    row = price_table(path).lookup("m1", on=date(2026, 6, 30))  # 180 days: not yet stale
    assert row.age_days(date(2026, 6, 30)) == 180
    assert not row.is_stale(date(2026, 6, 30))
    with pytest.warns(StalePriceWarning, match="2026-01-01"):
        price_table(path).lookup("m1", on=date(2026, 7, 1))


# --- user price files ---------------------------------------------------------------------------


def test_override_file_replaces_and_adds_rows(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEADER + ",notes\n"
        "openai,gpt-6.2-sol,1.50,0.05,7.50,in_completion,0.5,2026-11-28,contract,negotiated\n"
        "acme,acme-1,0.30,0.03,1.20,separate,0,2026-11-20,https://acme.example/pricing,\n"
        "google,gemini-4-argon,3,0.3,15,separate,0.5,2026-11-28,contract,\n",
    )
    table = price_table(path)
    sol = table.lookup("gpt-6.2-sol", on=READ_ON)
    assert sol.input_per_mtok == Decimal("1.50")
    assert sol.origin == str(path)
    assert table.lookup("acme-1", on=READ_ON).reasoning_billing == "separate"
    # A user row replaces every shipped row of that model, scheduled changes included.
    argon = [r for r in table.rows if r.model == "gemini-4-argon" and r.provider == "google"]
    assert len(argon) == 1
    assert argon[0].input_per_mtok == Decimal("3")
    assert table.lookup("gemini-4-argon", on=date(2027, 1, 1)).input_per_mtok == Decimal("3")
    # Two argon rows became one, acme added; genai-prices' rows are the same in both.
    assert len(table.own_rows) == len(price_table().own_rows) - 1 + 1
    assert len(table.rows) - len(table.own_rows) == len(price_table().rows) - len(
        price_table().own_rows
    )


def test_env_var_names_the_override_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, HEADER + "\nacme,acme-2,1,0.5,2,none,0,2026-11-20,x\n")
    monkeypatch.setenv(PRICES_ENV, str(path))
    assert "acme-2" in set(prices(on=READ_ON)["model"])
    monkeypatch.delenv(PRICES_ENV)
    assert "acme-2" not in set(prices(on=READ_ON)["model"])


def test_builtin_false_uses_only_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "\nacme,acme-3,1,0.5,2,none,0,2026-11-20,x\n")
    assert list(prices(path, builtin=False)["model"]) == ["acme-3"]


def test_json_and_toml_price_files(tmp_path: Path) -> None:
    record = {
        "provider": "acme", "model": "acme-j", "input_per_mtok": 0.4,
        "cached_input_per_mtok": "0.04", "output_per_mtok": 1.6, "reasoning_billing": "none",
        "batch_discount": 0, "as_of": "2026-11-20", "source_url": "x", "aliases": ["aj"],
    }  # fmt: skip
    js = write(tmp_path, json.dumps({"prices": [record]}), "p.json")
    assert price_table(js).lookup("aj", on=READ_ON).input_per_mtok == Decimal("0.4")
    toml = write(
        tmp_path,
        '[[prices]]\nprovider = "acme"\nmodel = "acme-t"\ninput_per_mtok = "2.5"\n'
        'cached_input_per_mtok = "0.25"\noutput_per_mtok = "10"\nreasoning_billing = "none"\n'
        'batch_discount = 0.5\nas_of = 2026-11-20\nsource_url = "x"\n',
        "p.toml",
    )
    row = price_table(toml).lookup("acme-t", on=READ_ON)
    assert row.output_per_mtok == Decimal("10")
    assert row.as_of == date(2026, 11, 20)


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("acme,m,abc,1,1,none,0,2026-11-01,x", r"line 2, `input_per_mtok`: 'abc' is not a number"),
        ("acme,m,-1,1,1,none,0,2026-11-01,x", r"line 2, `input_per_mtok`: must not be negative"),
        ("acme,m,NaN,1,1,none,0,2026-11-01,x", r"line 2, `input_per_mtok`: must be a finite"),
        ("acme,m,1,1,1,none,0,2026-13-01,x", r"line 2, `as_of`: '2026-13-01' is not a date"),
        ("acme,m,1,1,1,hidden,0,2026-11-01,x", r"line 2, `reasoning_billing`: must be one of"),
        ("acme,m,1,1,1,none,1,2026-11-01,x", r"line 2, `batch_discount`: is the fraction"),
        ("acme,m,1,,1,none,0,2026-11-01,x", r"line 2, `cached_input_per_mtok`: is required"),
        ("acme,m,1,1,1,none,0,2026-11-01", r"line 2, `source_url`: is required"),
        ("acme,m,1,1,1,none,0,2026-11-01,x,extra", r"line 2: has 10 fields but the header has 9"),
    ],
)
def test_malformed_rows_name_the_field_and_line(tmp_path: Path, line: str, pattern: str) -> None:
    path = write(tmp_path, f"{HEADER}\n{line}\n")
    with pytest.raises(InputError, match=pattern) as info:
        load_price_file(path)
    assert info.value.source == str(path)


def test_malformed_header_and_later_lines(tmp_path: Path) -> None:
    typo = write(tmp_path, HEADER.replace("output_per_mtok", "output_per_mtk") + "\n")
    with pytest.raises(InputError, match=r"line 1, `output_per_mtk`: unknown column \(did you"):
        load_price_file(typo)
    missing = write(tmp_path, HEADER.replace(",source_url", "") + "\n")
    with pytest.raises(InputError, match=r"line 1, `source_url`: required column is missing"):
        load_price_file(missing)
    third = write(
        tmp_path, f"{HEADER}\nacme,a,1,1,1,none,0,2026-11-01,x\nacme,b,1,1,x1,none,0,2026-11-01,x\n"
    )
    with pytest.raises(InputError, match=r"line 3, `output_per_mtok`"):
        load_price_file(third)
    dup = write(
        tmp_path, f"{HEADER}\nacme,a,1,1,1,none,0,2026-11-01,x\nacme,A,2,1,1,none,0,2026-11-01,x\n"
    )
    with pytest.raises(InputError, match=r"line 3, `model`: duplicate row for 'A'.*line 2"):
        load_price_file(dup)


def test_long_context_columns_go_together(tmp_path: Path) -> None:
    header = HEADER + ",long_context_threshold,long_input_per_mtok"
    orphan = write(tmp_path, header + "\nacme,m,1,1,1,none,0,2026-11-01,x,,2\n")
    with pytest.raises(InputError, match=r"`long_input_per_mtok`: needs `long_context_threshold`"):
        load_price_file(orphan)
    partial = write(tmp_path, header + "\nacme,m,1,1,1,none,0,2026-11-01,x,1000,2\n")
    with pytest.raises(InputError, match=r"`long_cached_input_per_mtok`: is required when"):
        load_price_file(partial)


def test_bad_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="`path`: price file not found"):
        load_price_file(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="the price file is empty"):
        load_price_file(write(tmp_path, ""))
    with pytest.raises(InputError, match="header but no rows"):
        load_price_file(write(tmp_path, HEADER + "\n"))
    with pytest.raises(InputError, match=r"unsupported price file type '\.xlsx'"):
        load_price_file(write(tmp_path, "x", "p.xlsx"))
    with pytest.raises(InputError, match="not valid JSON"):
        load_price_file(write(tmp_path, "{", "p.json"))
    bad = write(tmp_path, json.dumps([{"provider": "a", "model": "m"}]), "q.json")
    with pytest.raises(InputError, match=r"`prices\[0\]\.input_per_mtok`: is required"):
        load_price_file(bad)
