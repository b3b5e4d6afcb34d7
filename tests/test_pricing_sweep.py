"""Every genai-prices price, priced by cotplan and by genai-prices' own `calc_price` arithmetic.

The sweep (`cotplan.pricing.sweep`) draws a seeded sample of calls for every dated price of
every model in genai-prices 0.2.3's bundled data: plain, cached, cache-write, reasoning, at and
above the long-context threshold, batch on every price, flex and priority where listed, inside
each time-of-day window. Both sides are exact decimals, so the tolerance is zero: a case agrees
only when the totals are equal. `benchmarks/price_sweep.py` prints the same sweep, grouped by
reason (benchmarks/results/price_sweep.txt, cited by docs/costs.md).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from cotplan.pricing import price_table
from cotplan.pricing.sweep import EXPLAINED, sweep


# About 2 CPU s of pricing (the transcript's figure), but 7-12 s of wall time on a loaded
# machine: over the 5 s limit of conftest.py.
@pytest.mark.slow
def test_every_genai_price_agrees_or_differs_for_an_explained_reason() -> None:
    result = sweep(seed=0)
    shapes = {c.shape for c in result.cases}
    assert {"plain", "cached", "cache-write", "reasoning", "long-context", "batch", "flex",
            "priority", "time of day 1"} <= shapes  # fmt: skip
    assert len({(c.provider, c.model) for c in result.cases}) >= 2_000
    unexplained = [
        f"{c.provider}/{c.model} {c.shape} at {c.when}: {c.ours} vs {c.theirs} ({c.reason})"
        for c in result.unexplained
    ]
    assert not unexplained, "\n".join(unexplained[:20])
    # The explained reasons stay few and rare: each is a rule, not a catch-all.
    assert len(result.disagreements) <= len(result.cases) // 100
    assert {c.reason for c in result.disagreements} <= set(EXPLAINED)
    # cotplan's own rows take genai-prices' flex and priority prices (pricing/carried.py).
    own = {(r.provider, r.model) for r in price_table().own_rows}
    tiered = [
        c for c in result.cases if c.tier in ("flex", "priority") and (c.provider, c.model) in own
    ]
    assert len(tiered) >= 8
    assert all(c.agrees for c in tiered)


def test_the_sweep_catches_a_wrong_price(tmp_path: Path) -> None:
    # A price file that misprices Perplexity's sonar output (genai-prices: $1 per million).
    wrong = tmp_path / "prices.csv"
    wrong.write_text(
        "provider,model,input_per_mtok,cached_input_per_mtok,output_per_mtok,reasoning_billing,"
        "batch_discount,as_of,source_url\n"
        "perplexity,sonar,1,1,1.5,in_completion,0,2026-11-01,https://example.com/wrong\n"
    )
    result = sweep(seed=1, only=["perplexity"], table=price_table(wrong))
    bad = [c for c in result.unexplained if c.model == "sonar"]
    assert bad, "a wrong output rate must show as an unexplained disagreement"
    assert all(c.ours is not None and c.ours != c.theirs for c in bad)
    assert all(c.when.date() <= date(2026, 12, 31) for c in result.cases)
