"""The chart dispatch is an explicit table, and every entry in it still resolves."""

from __future__ import annotations

import importlib

import pytest

from cotplan.charts import CHARTS, chart
from cotplan.pricing import ParametricTokens, Workload, project_costs


@pytest.mark.parametrize(("result", "drawer"), list(CHARTS.items()), ids=lambda x: ".".join(x))
def test_every_table_entry_names_a_class_and_a_chart(
    result: tuple[str, str], drawer: tuple[str, str]
) -> None:
    module, name = result
    if module.startswith("cotplan.research.lab."):
        pytest.importorskip("torch")
    assert isinstance(getattr(importlib.import_module(module), name), type)
    area, function = drawer
    assert callable(getattr(importlib.import_module(area), function))


def test_a_cost_projection_is_drawn_by_its_entry() -> None:
    tokens = ParametricTokens(100, 10, 50, 5)
    projection = project_costs(
        "gpt-6.1-terra", Workload(queries_per_day=100, horizon_months=2), tokens, draws=200
    )
    drawn = chart(projection).to_dict()
    assert drawn["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
