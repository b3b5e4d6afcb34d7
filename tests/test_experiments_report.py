"""The reproduction report: rows for every headline claim, verdicts, markdown, saved files."""

from __future__ import annotations

import math

import pytest

from cotplan.errors import InputError
from cotplan.research.experiments.predictors import Recency, laplace
from cotplan.research.experiments.report import (
    PRESETS,
    cot_example_rows,
    planned_predictions,
    reproduction_report,
)
from cotplan.research.experiments.verdicts import VERDICTS


def test_cot_worked_example_arithmetic() -> None:
    row = cot_example_rows()[0]
    assert row.measured == pytest.approx(math.sqrt(500 / 18) * math.log2(10))
    assert row.measured_text == "17.5 (log2) / 12.1 (ln)"
    assert row.verdict == "not a model claim"  # the paper's arithmetic, not a model's
    assert row.holds is False


def test_planned_predictions_match_the_presets() -> None:
    quick = PRESETS["quick"]
    assert planned_predictions("martingale", quick["martingale"]) == 10 * 32
    assert planned_predictions("martingale", {**quick["martingale"], "design": "independent"}) == (
        10 * 16 * 2
    )
    assert planned_predictions("order", quick["order"]) == 64
    assert planned_predictions("entropy", quick["entropy"]) == 8 * 40
    # T3: 2 n x 2 contexts per n x 12 steps.
    assert planned_predictions("falck", quick["falck"]) == 8 * (10 + 20) + 8 * 12 * 2 * 2
    # The paper's grid: as many predictions as the paper's API calls (19,000).
    assert planned_predictions("martingale", PRESETS["full"]["martingale"]) == 100 * 190


def test_report_on_a_recency_biased_predictor(tmp_path) -> None:  # type: ignore[no-untyped-def]
    stages: list[tuple[str, int]] = []

    def stage(name: str, total: int) -> None:
        stages.append((name, total))

    report = reproduction_report(Recency(0.9), "quick", stage=stage)
    frame = report.to_frame()
    assert set(frame["experiment"]) == {"martingale", "debias", "order", "entropy", "falck", "cot"}
    assert set(frame["verdict"]) <= set(VERDICTS)
    # A planted predictor is no model: none of its rows reproduces a claim about models.
    assert report.model_claims()["reproduced"] == 0
    assert "planted effect" in report.capability()
    assert frame["why"].str.len().min() > 10
    assert [s for s, _ in stages] == ["martingale", "debias", "order", "entropy", "falck"]
    markdown = report.to_markdown()
    assert "| martingale | coefficient A of log n/n | 0.182 ± 0.021 |" in markdown
    assert "Total model requests: 0." in markdown
    files = report.save(tmp_path)
    assert (tmp_path / "report.md").exists()
    assert len(files) > 15


def test_report_subset_and_validation() -> None:
    report = reproduction_report(laplace(), "quick", experiments=["order"])
    assert set(report.to_frame()["experiment"]) == {"order", "cot"}
    with pytest.raises(InputError, match="`preset`: must be one of"):
        reproduction_report(laplace(), "huge")
    with pytest.raises(InputError, match="`experiments`: unknown"):
        reproduction_report(laplace(), "quick", experiments=["tarot"])


@pytest.mark.slow
def test_the_report_can_test_the_cot_law_on_a_lab_model() -> None:
    pytest.importorskip("torch")
    from cotplan.research.experiments import laplace
    from cotplan.research.reproduction import reproduction_report

    report = reproduction_report(
        laplace(), "quick", experiments=("order",), cot_lab=("parity",), cot_lab_preset="tiny"
    )
    lab = report.to_frame().query("experiment == 'cot-lab'")
    assert len(lab) >= 2
    assert lab["claim"].str.contains("lab-parity").all()
