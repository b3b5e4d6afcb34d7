"""Tables behind the planner charts, and the charts themselves (rendered offline to SVG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cotplan.charts.planner import budget_chart, calibration_chart
from cotplan.errors import InfeasibleTargetError
from cotplan.planner import BudgetPlanner


def _frame(seed: int, *, flat: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for n in (4, 16):
        for i in range(15):
            for k in (0, 8, 32, 96):
                error = 0.4 if flat else 0.15 + 0.85 * np.exp(-k / (3 * n**0.5))
                rows.append({"item": f"{n}-{i}", "n": n, "k": k, "correct": rng.random() > error})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def planner() -> BudgetPlanner:
    return BudgetPlanner(n_bootstrap=40).fit(_frame(0))


def test_observed_errors_pool_the_calibration(planner: BudgetPlanner) -> None:
    observed = planner.observed_errors()
    assert list(observed.columns) == ["n", "k", "answers", "wrong", "error"]
    assert len(observed) == 8
    assert observed["answers"].sum() == 120
    frame = _frame(0)
    cell = frame[(frame.n == 4) & (frame.k == 0)]
    row = observed[(observed.n == 4) & (observed.k == 0)]
    assert int(row["wrong"].iloc[0]) == int((~cell["correct"]).sum())


def test_error_curve_has_bands_around_the_fit(planner: BudgetPlanner) -> None:
    curve = planner.error_curve()
    assert set(curve["n"]) == {4.0, 16.0}
    assert len(curve) == 202
    assert (curve["low"] <= curve["error"] + 1e-9).all()
    assert (curve["error"] <= curve["high"] + 1e-9).all()
    custom = planner.error_curve(sizes=[8], budgets=[0, 10])
    assert list(custom["k"]) == [0, 10]


def test_budget_table_one_row_per_size(planner: BudgetPlanner) -> None:
    table = planner.budget_table([4, 8, 16], 0.3)
    assert list(table["n"]) == [4, 8, 16]
    assert table["k_star"].is_monotonic_increasing
    with pytest.raises(InfeasibleTargetError):
        planner.budget_table([4], eps=0.01)


def test_charts_render_offline(planner: BudgetPlanner, tmp_path: Path) -> None:
    cal = calibration_chart(planner)
    spec = cal.to_dict()
    assert len(spec["layer"]) == 3  # band, line, observed points
    assert "reasoning helps" in " ".join(spec["title"]["subtitle"])
    models = {
        row.get("model")
        for rows in budget_chart(planner, eps=0.3).to_dict()["datasets"].values()
        for row in rows
    }
    assert {"fit", "cap (certified / scaled)", "α = 1/2 fit", "least-squares c"} <= models
    target = tmp_path / "calibration.svg"
    cal.save(str(target))
    assert target.read_text().startswith("<svg")


def test_budget_chart_says_why_when_the_target_is_unattainable(tmp_path: Path) -> None:
    flat = BudgetPlanner(n_bootstrap=20).fit(_frame(1, flat=True))
    assert flat.status_ == "no_benefit"
    chart = budget_chart(flat, eps=0.1)
    subtitle = " ".join(chart.to_dict()["title"]["subtitle"])
    assert "unattainable" in subtitle
    spec = calibration_chart(flat).to_dict()
    assert "no measurable benefit" in " ".join(spec["title"]["subtitle"])
