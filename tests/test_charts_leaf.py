"""Charts are a leaf: they draw results handed to them, and results write charts only when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from cotplan import charts
from cotplan.errors import InputError
from cotplan.research.experiments.order import ORDER_QUICK, order_variance
from cotplan.research.experiments.predictors import Recency


def test_save_writes_the_chart_beside_the_tables(tmp_path: Path) -> None:
    result = order_variance(Recency(0.9), **ORDER_QUICK)
    plain = {p.name for p in result.save(tmp_path / "plain")}
    drawn = {p.name for p in charts.save(result, tmp_path / "drawn")}
    assert "order.png" not in plain
    assert drawn == plain | {"order.png"}
    assert (tmp_path / "drawn" / "order.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {p.name for p in charts.save(result, tmp_path / "off", charts=False)} == plain


def test_chart_refuses_what_it_cannot_draw() -> None:
    with pytest.raises(InputError, match="`result` has no chart here: a dict"):
        charts.chart({})
