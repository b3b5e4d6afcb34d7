"""Two price sources: cotplan's own dated rows first, genai-prices' bundled data behind them."""

from __future__ import annotations

import socket
import warnings
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.backends.base import Completion, Usage
from cotplan.errors import InputError, UnknownModelError
from cotplan.pricing import (
    STALE_AFTER_DAYS,
    PriceRow,
    StalePriceWarning,
    call_cost,
    cost_of_completion,
    price_table,
    prices,
)
from cotplan.pricing import genai as genai_source
from cotplan.pricing.carried import carry_tiers

ON = date(2026, 11, 29)
TABLE = price_table()
GENAI = [r for r in TABLE.rows if r.from_genai]


def test_at_least_two_thousand_models_are_priced_offline() -> None:
    pairs = {(r.provider, r.model) for r in TABLE.rows}
    assert len(pairs) >= 2_000
    assert len({r.provider for r in TABLE.rows}) >= 40
    # Every cotplan row is in the merged table, first, with the tier prices carried onto it.
    own = TABLE.rows[: len(TABLE.own_rows)]
    assert own == tuple(carry_tiers(r) for r in TABLE.own_rows)
    assert [replace(r, tiers=()) for r in own] == list(TABLE.own_rows)


def test_reading_genai_prices_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import genai_prices
    import httpx2
    from genai_prices import update_prices

    calls: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        calls.append(repr(args[:2]))
        raise AssertionError("genai-prices tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(httpx2.Client, "send", refuse)
    monkeypatch.setattr(httpx2.AsyncClient, "send", refuse)
    monkeypatch.setattr(update_prices.UpdatePrices, "start", refuse)
    monkeypatch.setattr(update_prices.UpdatePrices, "fetch", refuse)
    # A snapshot swapped in by an updater elsewhere in the process is never read.
    from genai_prices.data_snapshot import DataSnapshot, set_custom_snapshot

    set_custom_snapshot(DataSnapshot(providers=[], from_auto_update=True))
    try:
        for cached in (genai_source.genai_rows, genai_source.genai_candidates,
                       genai_source.genai_lookup, genai_source._rows_for):  # fmt: skip
            cached.cache_clear()
        table = price_table()
        cost = call_cost("gpt-4o-mini", provider="openai", prompt_tokens=1_000_000,
                         completion_tokens=0, on=ON, table=table)  # fmt: skip
    finally:
        set_custom_snapshot(None)
    assert cost.usd == Decimal("0.15")
    assert len(table) == len(TABLE)
    assert calls == []
    assert update_prices._shared_updater.ref_count == 0
    assert genai_prices.__version__ == genai_source.GENAI_PRICES_VERSION


def test_cotplan_rows_win_where_both_price_a_model() -> None:
    ours = TABLE.lookup("gpt-6.1-sol", on=ON)
    assert ours.origin == "cotplan"
    assert (
        ours.source == "https://developers.openai.com/api/docs/models/gpt-6.1-sol, read 2026-10-01"
    )
    # The same model sold elsewhere comes from genai-prices.
    other = TABLE.lookup("gpt-6.1-sol", provider="github-copilot", on=ON)
    assert other.from_genai
    # No genai-prices row duplicates a (provider, model) cotplan prices.
    own = {(r.provider, r.model.lower()) for r in TABLE.own_rows}
    assert not [r for r in GENAI if (r.provider, r.model.lower()) in own]


def test_models_only_one_source_has() -> None:
    assert TABLE.lookup("gpt-6.2-sol", on=ON).origin == "cotplan"  # not in genai-prices 0.2.3
    row = TABLE.lookup("deepseek-reasoner", on=ON)
    assert (row.provider, row.origin) == (
        "deepseek",
        f"genai-prices {genai_source.GENAI_PRICES_VERSION}",
    )


def test_every_row_is_found_by_its_provider_and_name() -> None:
    for row in TABLE.rows:
        on = row.effective_from or ON
        got = TABLE.lookup(row.model, provider=row.provider, on=on, warn=False)
        assert (got.provider, got.model) == (row.provider, row.model)


def test_a_name_several_providers_sell_is_priced_at_its_makers_price() -> None:
    made = TABLE.lookup("claude-3-5-haiku", on=ON)
    assert made.provider == "anthropic"
    assert "'claude-3-5-haiku' is also sold by google; priced at its maker's" in made.notes
    assert made.input_per_mtok == TABLE.lookup("anthropic/claude-3-5-haiku", on=ON).input_per_mtok
    # No maker among the sellers: the provider is still needed.
    pattern = (
        r"`provider`: 'deepseek-r1-distill-llama-70b' is priced for several providers "
        r"\(groq, ovhcloud\); name one, e.g. 'groq/deepseek-r1-distill-llama-70b'"
    )
    with pytest.raises(InputError, match=pattern):
        TABLE.lookup("deepseek-r1-distill-llama-70b", on=ON)
    by_prefix = TABLE.lookup("google/claude-3-5-haiku", on=ON)
    by_argument = TABLE.lookup("claude-3-5-haiku", provider="google", on=ON)
    assert by_prefix == by_argument
    assert TABLE.lookup("google/claude-3-5-haiku", provider="google", on=ON) == by_prefix
    assert by_prefix.provider == "google"
    # OpenRouter's names hold a slash of their own.
    assert TABLE.lookup("openrouter/anthropic/claude-3.5-haiku", on=ON).provider == "openrouter"


def test_a_reseller_priced_by_genai_prices_fallback_says_so() -> None:
    row = TABLE.lookup("gpt-4o", provider="azure", on=ON)
    assert row.provider == "azure"
    assert "azure sells this model at openai's prices" in row.notes


def test_unknown_model_suggests_names_from_both_sources() -> None:
    with pytest.raises(UnknownModelError, match="unknown model 'gpt-4o-minii'") as info:
        TABLE.lookup("gpt-4o-minii", on=ON)
    assert "gpt-4o-mini" in info.value.suggestions  # genai-prices
    with pytest.raises(UnknownModelError) as info:
        TABLE.lookup("gpt-6.2-sool", on=ON)
    assert "gpt-6.2-sol" in info.value.suggestions  # cotplan
    with pytest.raises(UnknownModelError, match="unknown model 'gpt-4o'"):
        TABLE.lookup("gpt-4o", provider="anthropic", on=ON)


def test_a_loose_genai_match_never_prices_an_unknown_model() -> None:
    """genai-prices' Azure o4-mini matches any name containing "o4-mini": that must not price
    a model nobody listed, nor add a wrong seller to a model that is listed."""
    with pytest.raises(UnknownModelError, match="unknown model 'o4-mini-unpriced'") as info:
        TABLE.lookup("o4-mini-unpriced", on=ON)
    assert "o4-mini" in info.value.suggestions
    assert TABLE.lookup("o4-mini-deep-research", on=ON).provider == "openai"
    with pytest.raises(UnknownModelError):
        TABLE.lookup("deepseek-r1-distill-qwen-99b", provider="deepseek", on=ON)
    # Dated releases, and an instruction-tuned build priced as its base model, still resolve.
    assert TABLE.lookup("o4-mini-2025-04-16", provider="openai", on=ON).model == "o4-mini"
    assert TABLE.lookup("gpt-4o-2024-08-06", on=ON).model == "gpt-4o"
    assert TABLE.lookup("gemini-2.0-flash-001", provider="google", on=ON).model == (
        "gemini-2.0-flash"
    )
    assert TABLE.lookup("mixtral-8x7b-instruct", provider="mistral", on=ON).model == "mixtral-8x7b"


def test_every_cost_says_where_its_price_came_from() -> None:
    ours = call_cost("gpt-6.2-sol", prompt_tokens=10, completion_tokens=1, on=ON)
    assert (
        ours.source == "https://developers.openai.com/api/docs/models/gpt-6.2-sol, read 2026-11-29"
    )
    theirs = call_cost("o3", provider="openai", prompt_tokens=10, completion_tokens=1, on=ON)
    version = genai_source.GENAI_PRICES_VERSION
    assert theirs.source == (
        f"genai-prices {version}, valid from 2025-06-10 (https://developers.openai.com/api/docs/pricing)"
    )
    frame = prices(on=ON)
    assert {"origin", "source", "effective_to"} <= set(frame.columns)
    assert frame["source"].map(bool).all()


def test_historic_genai_prices_hold_between_their_dates() -> None:
    before = TABLE.lookup("o3", provider="openai", on=date(2025, 6, 9))
    after = TABLE.lookup("o3", provider="openai", on=date(2025, 6, 10))
    assert before.effective_to == date(2025, 6, 9)
    assert after.effective_from == date(2025, 6, 10)
    assert (before.input_per_mtok, after.input_per_mtok) == (Decimal(10), Decimal(2))


# --- local models --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "smollm2-135m-instruct@b179c9523d0e",
        "gemma-3-270m-it-Q4_K_M.gguf@0123456789ab",
        "local:/models/gemma-3-270m.gguf",
        "lab:parity",
        "lab-state@3f2a",
    ],
)
def test_local_models_are_free_and_never_stale(name: str) -> None:
    far = date(2031, 1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cost = call_cost(name, prompt_tokens=5_000, completion_tokens=800, reasoning_tokens=300,
                         on=far)  # fmt: skip
    assert cost.usd == 0
    assert cost.provider == "local"
    assert cost.source == "local, no API charge"
    assert not TABLE.lookup(name, on=far).is_stale(far)


# --- rules carried over from genai-prices ---------------------------------------------------------


def test_reasoning_is_counted_once_with_each_providers_rule() -> None:
    # Gemini reports thinking apart: 1,000 x 0.30 + (100 + 500) x 2.50, per million.
    gemini = call_cost("gemini-2.5-flash", prompt_tokens=1_000, completion_tokens=100,
                       reasoning_tokens=500, on=ON)  # fmt: skip
    assert gemini.usd == Decimal("0.0018")
    # OpenAI counts it inside the completion: 1,000 x 2 + 600 x 8, per million.
    o3 = call_cost("openai/o3", prompt_tokens=1_000, completion_tokens=600, reasoning_tokens=500,
                   on=ON)  # fmt: skip
    assert o3.usd == Decimal("0.0068")
    with pytest.raises(InputError, match="`reasoning_tokens`"):
        call_cost("openai/o3", prompt_tokens=1, completion_tokens=100, reasoning_tokens=500, on=ON)
    # A model that prices reasoning apart: 100 answer x 8 + 900 reasoning x 3, per million.
    sonar = call_cost("perplexity/sonar-deep-research", prompt_tokens=0, completion_tokens=1_000,
                      reasoning_tokens=900, on=ON)  # fmt: skip
    assert sonar.usd == Decimal("0.0035")


def test_a_per_request_fee_is_charged_once_per_call() -> None:
    # Perplexity's sonar: $1 per million tokens each way and $12 per thousand requests.
    sonar = call_cost("perplexity/sonar", prompt_tokens=1_000, completion_tokens=500, on=ON)
    assert (sonar.request_usd, sonar.usd) == (Decimal("0.012"), Decimal("0.0135"))
    assert "request fee" in list(sonar.to_frame()["item"])


def test_batch_discount_where_genai_prices_lists_a_batch_price() -> None:
    full = call_cost("openai/gpt-4o-mini", prompt_tokens=1_000_000, completion_tokens=0, on=ON)
    batch = call_cost("openai/gpt-4o-mini", prompt_tokens=1_000_000, completion_tokens=0, on=ON,
                      batch=True)  # fmt: skip
    assert (full.usd, batch.usd) == (Decimal("0.15"), Decimal("0.075"))
    # No batch price listed: no discount assumed.
    groq = TABLE.lookup("llama-3.3-70b-versatile", on=ON)
    assert groq.batch_discount == 0


def _genai_total(row: PriceRow, call: dict[str, Any], on: date) -> Decimal:
    """genai-prices' own arithmetic on its bundled model (the conversion's cross-check)."""
    from genai_prices import Usage as GenaiUsage
    from genai_prices.data import providers

    provider = next(p for p in providers if p.id == row.provider)
    model = next(m for m in provider.models if m.id == row.model)
    when = datetime(on.year, on.month, on.day, 12, tzinfo=UTC)
    usage = GenaiUsage(
        input_tokens=call["prompt_tokens"], cache_read_tokens=call["cached_tokens"],
        cache_write_tokens=call["cache_write_tokens"], output_tokens=call["completion_tokens"],
    )  # fmt: skip
    return model.calc_price(usage, provider, genai_request_timestamp=when).total_price


# Rows whose every charge cotplan models: no off-peak price, no separate reasoning rate or
# Gemini's reasoning rule (genai-prices' usage has no reasoning count).
PLAIN = [
    r for r in GENAI
    if r.reasoning_per_mtok is None and r.reasoning_billing == "in_completion"
    and "time-of-day" not in r.notes and "fallback" not in r.notes
]  # fmt: skip


def test_every_converted_row_prices_like_genai_prices_itself() -> None:
    calls = [(1_000, 0, 0, 500), (250_000, 50_000, 20_000, 100), (1_500_000, 0, 0, 10)]
    wrong = []
    for row in PLAIN:
        on = row.effective_to or row.effective_from or ON
        for prompt, cached, written, completion in calls:
            call: dict[str, Any] = {"prompt_tokens": prompt, "cached_tokens": cached,
                                    "cache_write_tokens": written,
                                    "completion_tokens": completion}  # fmt: skip
            ours = call_cost(row.model, provider=row.provider, on=on, table=TABLE, **call).usd
            theirs = _genai_total(row, call, on)
            if ours != theirs:
                wrong.append(f"{row.provider}/{row.model} {call}: {ours} vs {theirs}")
    assert len(PLAIN) >= 1_900
    assert not wrong, "\n".join(wrong[:20])


@settings(max_examples=300, deadline=None)
@given(
    row=st.sampled_from(PLAIN),
    prompt=st.integers(0, 400_000),
    cached=st.floats(0, 1),
    written=st.floats(0, 1),
    completion=st.integers(0, 100_000),
)
def test_converted_rows_price_like_genai_prices_itself(
    row: PriceRow, prompt: int, cached: float, written: float, completion: int
) -> None:
    read = int(prompt * cached)
    write = int((prompt - read) * written)
    on = row.effective_from or ON
    if row.effective_to is not None:
        on = row.effective_to
    call: dict[str, Any] = {
        "prompt_tokens": prompt,
        "cached_tokens": read,
        "cache_write_tokens": write,
        "completion_tokens": completion,
    }
    ours = call_cost(row.model, provider=row.provider, on=on, table=TABLE, **call).usd
    assert ours == _genai_total(row, call, on), (row.provider, row.model, on, call)


# --- the two sources side by side -----------------------------------------------------------------

_COMPARED = (
    "input_per_mtok", "cached_input_per_mtok", "cache_write_per_mtok", "output_per_mtok",
    "reasoning_billing", "long_context_threshold", "long_input_per_mtok",
    "long_cached_input_per_mtok", "long_cache_write_per_mtok", "long_output_per_mtok",
)  # fmt: skip


def test_both_sources_agree_wherever_both_price_a_model() -> None:
    """Fails the day a genai-prices release disagrees with one of cotplan's rows, naming both."""
    compared, differences = 0, []
    for ours in TABLE.own_rows:
        if ours.is_local:
            continue
        match = genai_source.genai_lookup(ours.model.lower(), ours.provider)
        if match is None:
            continue
        on = ours.effective_from or ours.as_of
        theirs = [r for r in match.rows if r.effective_from is None or r.effective_from <= on][-1]
        compared += 1
        fields = list(_COMPARED)
        if theirs.batch_discount:  # genai-prices lists a batch price for this date
            fields.append("batch_discount")
        for name in fields:
            a, b = getattr(ours, name), getattr(theirs, name)
            if a != b:
                differences.append(
                    f"{ours.provider}/{ours.model} on {on}: {name} is {a} in cotplan "
                    f"({ours.source}) but {b} in {theirs.source}"
                )
    assert compared >= 12
    assert not differences, "\n".join(differences)


# --- stale prices: warn, never fail, where a cost is only recorded -------------------------------


def test_recording_a_cost_with_a_stale_price_warns_and_never_fails() -> None:
    completion = Completion(text="x", finish_reason="stop", model="gpt-6-astra",
                            usage=Usage(prompt_tokens=100, completion_tokens=10))  # fmt: skip
    late = date(2027, 9, 1)
    assert TABLE.lookup("gpt-6-astra", on=late, warn=False).age_days(late) > STALE_AFTER_DAYS
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error")  # as strict as the test suite's own filter
        cost = cost_of_completion(completion, on=late)
    assert cost.usd > 0
    assert [type(w.message) for w in caught] == [StalePriceWarning]
    assert "read on 2026-09-13" in str(caught[0].message)
    # Pricing a call ahead of time still warns as a warning, which a strict filter can refuse.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(StalePriceWarning):
            call_cost("gpt-6-astra", prompt_tokens=1, completion_tokens=1, on=late)


def test_genai_rows_go_stale_with_their_release() -> None:
    row = TABLE.lookup("deepseek-reasoner", on=ON)
    assert row.as_of == genai_source.genai_as_of()
    late = date(2027, 12, 1)
    assert row.is_stale(late)
    assert "install a newer genai-prices release" in row.stale_message(late)
