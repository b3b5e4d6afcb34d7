"""Exact call costs under each provider's counting rule, pinned to hand-computed values."""

from __future__ import annotations

import math
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.backends.base import Completion, Usage
from cotplan.errors import InputError, UnknownModelError
from cotplan.pricing import call_cost, cost_of_completion, cost_of_text, price_table

ON = date(2026, 11, 29)
TABLE = price_table()


def cost(model: str, **counts: int | bool) -> Decimal:
    return call_cost(model, on=ON, table=TABLE, **counts).usd  # type: ignore[arg-type]


# --- hand-computed costs -----------------------------------------------------------------------


def test_openai_reasoning_is_inside_completion_and_not_added_again() -> None:
    # 6,000 uncached x $2 + 4,000 cached x $0.10 + 3,000 completion (2,000 of them reasoning)
    # x $10, per million: 0.012 + 0.0004 + 0.03 = 0.0424 (adding reasoning again would be 0.0624).
    c = call_cost(
        "gpt-6.2-sol", prompt_tokens=10_000, completion_tokens=3_000, reasoning_tokens=2_000,
        cached_tokens=4_000, on=ON, table=TABLE,
    )  # fmt: skip
    assert c.usd == Decimal("0.0424")
    assert (c.input_usd, c.cached_input_usd) == (Decimal("0.012"), Decimal("0.0004"))
    assert (c.output_usd, c.reasoning_usd) == (Decimal("0.01"), Decimal("0.02"))
    assert (c.output_tokens, c.reasoning_tokens) == (1_000, 2_000)


def test_batch_discount_halves_every_line() -> None:
    c = call_cost(
        "gpt-6.2-sol", prompt_tokens=10_000, completion_tokens=3_000, reasoning_tokens=2_000,
        cached_tokens=4_000, batch=True, on=ON, table=TABLE,
    )  # fmt: skip
    assert c.batch_discount_usd == Decimal("-0.0212")
    assert c.usd == Decimal("0.0212")


def test_gemini_reports_thoughts_apart_and_they_are_added_once() -> None:
    # 1,000 x $3 + (100 answer + 500 thinking) x $15, per million = 0.003 + 0.009.
    assert cost("gemini-4-neon", prompt_tokens=1_000, completion_tokens=100,
                reasoning_tokens=500) == Decimal("0.012")  # fmt: skip
    # Gemini's reasoning may exceed its (answer-only) completion count.
    assert cost("gemini-4-neon", prompt_tokens=0, completion_tokens=0,
                reasoning_tokens=1_000_000) == Decimal("15")  # fmt: skip


def test_anthropic_cache_writes_and_reads_are_priced_once() -> None:
    # 2,000 uncached x $2 + 8,000 written x $2.50 + 500 output x $10 = 0.004 + 0.02 + 0.005.
    c = call_cost(
        "claude-sonnet-5-5", prompt_tokens=10_000, cache_write_tokens=8_000,
        completion_tokens=500, on=ON, table=TABLE,
    )  # fmt: skip
    assert c.usd == Decimal("0.029")
    assert c.cache_write_usd == Decimal("0.02")


def test_long_prompt_moves_the_whole_call_to_long_rates() -> None:
    # Haiku 5.5 above 100,000 prompt tokens: 80,000 x $0.50 + 50,000 cached x $0.05
    # + 20,000 written x $0.625 + 4,000 output x $2.50 = 0.04 + 0.0025 + 0.0125 + 0.01.
    c = call_cost(
        "claude-haiku-5-5", prompt_tokens=150_000, cached_tokens=50_000,
        cache_write_tokens=20_000, completion_tokens=4_000, reasoning_tokens=1_000, on=ON,
        table=TABLE,
    )  # fmt: skip
    assert c.long_context
    assert c.usd == Decimal("0.065")
    # Exactly at the threshold is still short: 100,000 x $0.10 = 0.01.
    at = call_cost("claude-haiku-5-5", prompt_tokens=100_000, completion_tokens=0, on=ON)
    assert not at.long_context
    assert at.usd == Decimal("0.01")
    # GPT-6.2 Astra: 272,001 prompt tokens x $16 + 1,000 output x $60.
    assert cost("gpt-6.2-astra", prompt_tokens=272_001, completion_tokens=1_000) == Decimal(
        "4.412016"
    )


def test_price_in_effect_on_the_call_date() -> None:
    counts: dict[str, Any] = {"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000}
    nov = call_cost("gemini-4-argon", on=date(2026, 11, 30), **counts).usd
    dec = call_cost("gemini-4-argon", on=date(2026, 12, 1), **counts).usd
    assert (nov, dec) == (Decimal("12.00"), Decimal("24.00"))


def test_local_model_is_a_deliberate_zero() -> None:
    c = call_cost("smollm2-135m-instruct@b179c9523d0e", prompt_tokens=5_000,
                  completion_tokens=900, on=ON)  # fmt: skip
    assert c.usd == 0
    assert c.source_url == "local, no API charge"


def test_breakdown_frame_sums_to_the_total() -> None:
    c = call_cost("gpt-6.1-terra", prompt_tokens=5_000, cached_tokens=1_000,
                  completion_tokens=700, reasoning_tokens=200, batch=True, on=ON)  # fmt: skip
    frame = c.to_frame()
    assert list(frame["item"]) == ["input", "cached input", "cache write", "output", "reasoning",
                                   "request fee", "batch discount", "total"]  # fmt: skip
    parts = frame[frame["item"] != "total"]["usd"]
    assert sum(parts, Decimal(0)) == frame["usd"].iloc[-1] == c.usd
    assert frame.attrs["as_of"] == "2026-10-27"
    # (4,000 x $1 + 1,000 x $0.05 + 700 x $5) / 1M = 0.00755, halved by the batch discount.
    assert c.usd == Decimal("0.003775")
    assert float(c) == pytest.approx(0.003775)


# --- after a call, before a call ---------------------------------------------------------------


def test_cost_of_completion_uses_cotplan_usage_convention() -> None:
    # cotplan's Usage counts Gemini's thinking inside completion_tokens (600 = 100 + 500).
    done = Completion("4", "stop", Usage(1_000, 600, 500, 0), "gemini-4-neon")
    assert cost_of_completion(done, on=ON).usd == Decimal("0.012")
    openai = Completion("4", "stop", Usage(10_000, 3_000, 2_000, 4_000), "gpt-6.2-sol")
    assert cost_of_completion(openai, on=ON, batch=True).usd == Decimal("0.0212")


def test_cached_completion_cost_nothing() -> None:
    done = Completion("4", "stop", Usage(1_000, 600, 500, 0), "gpt-6.2-sol", from_cache=True)
    c = cost_of_completion(done, on=ON)
    assert c.usd == 0
    assert c.from_cache


def test_a_completion_whose_usage_is_not_trusted_has_no_cost_not_zero() -> None:
    from cotplan.backends.parsing import read_usage

    usage, notes = read_usage({"prompt_tokens": -5, "completion_tokens": 40})
    assert not usage.trusted
    assert notes
    done = Completion("4", "stop", usage, "gpt-6.2-sol", notes=notes)
    with pytest.raises(InputError, match=r"`completion.usage`: the usage of this gpt-6.2-sol "
                       r"call cannot be trusted \(.*prompt_tokens.*\), so its cost is unknown, "
                       r"not \$0"):  # fmt: skip
        cost_of_completion(done, on=ON)
    # A call the cache answered made no request: nothing was billed, whatever its counts say.
    cached = Completion("4", "stop", usage, "gpt-6.2-sol", from_cache=True, notes=notes)
    assert cost_of_completion(cached, on=ON).usd == 0


def test_cost_of_completion_rejects_other_objects() -> None:
    with pytest.raises(InputError, match="`completion`: must be a cotplan Completion"):
        cost_of_completion({"usage": {}}, on=ON)  # type: ignore[arg-type]


def test_cost_of_text_counts_the_prompt() -> None:
    from cotplan.backends.tokens import count_tokens

    prompt = "Count the ones in 0 1 1 0 1 and answer with a number."
    n = count_tokens(prompt, "gpt-5")
    c = cost_of_text("gpt-6.2-sol", prompt, 50, expected_reasoning_tokens=300,
                     tokenizer="gpt-5", on=ON)  # fmt: skip
    assert c.input_tokens == n > 5
    assert c.usd == (Decimal(n) * 2 + Decimal(350) * 10) / 1_000_000
    messages = [{"role": "user", "content": prompt}]
    assert cost_of_text("gpt-6.2-sol", messages, 0, tokenizer="gpt-5", on=ON).input_tokens > n


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "pattern"),
    [
        ({"prompt_tokens": -1, "completion_tokens": 0}, r"`prompt_tokens`: must not be negative"),
        ({"prompt_tokens": 1, "completion_tokens": math.nan},
         r"`completion_tokens`: must be a finite number"),
        ({"prompt_tokens": 1.5, "completion_tokens": 0}, r"`prompt_tokens`: must be a whole"),
        ({"prompt_tokens": True, "completion_tokens": 0}, r"`prompt_tokens`: must be a whole"),
        ({"prompt_tokens": "10", "completion_tokens": 0}, r"`prompt_tokens`: must be a whole"),
        ({"prompt_tokens": 10, "completion_tokens": 3, "reasoning_tokens": 5},
         r"`reasoning_tokens`: 5 exceeds `completion_tokens` \(3\)"),
        ({"prompt_tokens": 10, "completion_tokens": 3, "cached_tokens": 8,
          "cache_write_tokens": 3}, r"`cached_tokens`: cached \(8\) plus cache-written \(3\)"),
    ],
)  # fmt: skip
def test_bad_counts_name_the_field(counts: dict[str, object], pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        call_cost("gpt-6.2-sol", on=ON, **counts)  # type: ignore[arg-type]


def test_unknown_model_is_never_free() -> None:
    with pytest.raises(UnknownModelError, match="unknown model 'gpt-99o'"):
        call_cost("gpt-99o", prompt_tokens=1, completion_tokens=1, on=ON)


# --- properties --------------------------------------------------------------------------------

# Every (provider, model) of both sources: a name several providers sell needs its provider.
MODELS = sorted({f"{row.provider}/{row.model}" for row in TABLE.rows})
counts = st.integers(min_value=0, max_value=2_000_000)


@st.composite
def calls(draw: st.DrawFn, max_prompt: int = 2_000_000) -> dict[str, Any]:
    prompt = draw(st.integers(0, max_prompt))
    cached = draw(st.integers(0, prompt))
    written = draw(st.integers(0, prompt - cached))
    completion = draw(st.integers(0, 500_000))
    reasoning = draw(st.integers(0, completion))
    return {"prompt_tokens": prompt, "cached_tokens": cached, "cache_write_tokens": written,
            "completion_tokens": completion, "reasoning_tokens": reasoning}  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(model=st.sampled_from(MODELS), call=calls(), batch=st.booleans())
def test_cost_is_never_negative(model: str, call: dict[str, Any], batch: bool) -> None:
    c = call_cost(model, batch=batch, on=ON, table=TABLE, **call)
    assert c.usd >= 0
    assert (
        c.input_usd
        + c.cached_input_usd
        + c.cache_write_usd
        + c.output_usd
        + c.reasoning_usd
        + (c.request_usd + c.batch_discount_usd)
        == c.usd
    )


@settings(max_examples=150, deadline=None)
@given(model=st.sampled_from(MODELS), call=calls(max_prompt=20_000), k=st.integers(1, 5))
def test_cost_is_linear_in_tokens(model: str, call: dict[str, Any], k: int) -> None:
    # Within one rate tier (prompts kept under every long-context threshold) the token cost
    # scales exactly; a per-request fee stays one fee.
    one = call_cost(model, on=ON, table=TABLE, **call)
    scaled = call_cost(model, on=ON, table=TABLE, **{n: v * k for n, v in call.items()})
    assert scaled.usd - scaled.request_usd == (one.usd - one.request_usd) * k
    assert scaled.request_usd == one.request_usd


@settings(max_examples=100, deadline=None)
@given(model=st.sampled_from(MODELS), a=calls(max_prompt=40_000), b=calls(max_prompt=40_000))
def test_cost_adds_up_over_calls(model: str, a: dict[str, Any], b: dict[str, Any]) -> None:
    both = {n: a[n] + b[n] for n in a}
    one = call_cost(model, on=ON, table=TABLE, **both)
    parts = (
        call_cost(model, on=ON, table=TABLE, **a).usd
        + call_cost(model, on=ON, table=TABLE, **b).usd
    )
    assert one.usd + one.request_usd == parts  # two requests pay the fee twice


# --- the real embedded model ---------------------------------------------------------------------


@pytest.mark.model
def test_a_real_local_completion_is_priced_at_its_deliberate_zero(local_backend: object) -> None:
    from cotplan.backends.local import LocalBackend

    assert isinstance(local_backend, LocalBackend)
    prompt = "Q: What is 2 + 3?\nA:"
    done = local_backend.generate(prompt, max_tokens=8)
    assert done.model.startswith("smollm2-135m-instruct@")
    c = cost_of_completion(done, on=ON)
    assert c.model == "smollm2-135m-instruct"
    assert c.usd == 0
    assert c.prompt_tokens == done.usage.prompt_tokens > 0
    assert c.output_tokens == done.usage.completion_tokens
    # Before a call, the prompt is counted by the model's own tokenizer.
    before = cost_of_text(local_backend.model, prompt, 8, tokenizer=local_backend, on=ON)
    assert before.prompt_tokens == done.usage.prompt_tokens
    assert before.usd == 0
