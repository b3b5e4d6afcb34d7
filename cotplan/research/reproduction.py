"""The reproduction report with the lab's rows: the paper's experiments and the lab k* study.

`cotplan.research.experiments.reproduction_report` runs the paper's experiments on a predictor. The
lab's reasoning models (`cotplan.research.lab.reasoning`) test the CoT-length claim where the
mechanism is known; their rows join the report here, in the one module above both, so the
experiments never import the lab.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from cotplan.errors import InputError
from cotplan.research.experiments.predictors import Predictor
from cotplan.research.experiments.report import EXPERIMENTS, ReproductionReport, StageFn
from cotplan.research.experiments.report import reproduction_report as _experiments_report
from cotplan.research.experiments.verdicts import COTPLAN_CHECK, REPRODUCED, ReportRow

__all__ = ["check_lab_options", "reproduction_report"]


def reproduction_report(
    predictor: Predictor,
    preset: str = "quick",
    seed: int = 0,
    *,
    experiments: Sequence[str] = EXPERIMENTS,
    overrides: dict[str, dict[str, Any]] | None = None,
    stage: StageFn | None = None,
    cot_lab: Sequence[str] = (),
    cot_lab_preset: str = "quick",
) -> ReproductionReport:
    """`cotplan.research.experiments.reproduction_report`, then the lab's k* rows for `cot_lab`.

    `cot_lab` names lab reasoning families (``parity``, ``sum``, ``state``, ``bits``) whose k*
    study (`cotplan.research.lab.reasoning`, the `lab` extra; models trained on first use with
    `cot_lab_preset`) adds rows that test the CoT-length claim where the mechanism is known.
    """
    report = _experiments_report(
        predictor, preset, seed, experiments=experiments, overrides=overrides, stage=stage
    )
    if not cot_lab:
        return report
    from cotplan.research.lab.reasoning.study import lab_report_rows  # lazy: imports torch

    lab_rows = [own_check(row) for row in lab_report_rows(list(cot_lab), cot_lab_preset)]
    return replace(report, rows=(*report.rows, *lab_rows))


def check_lab_options(families: Sequence[str], preset: str) -> None:
    """Check `cot_lab` families and `cot_lab_preset` by the lab's own tables (no torch needed)."""
    from cotplan.research.lab.reasoning.study import STUDY_PRESETS
    from cotplan.research.lab.reasoning.tasks import get_lab_family

    if preset not in STUDY_PRESETS:
        raise InputError(
            f"must be one of {', '.join(STUDY_PRESETS)}, got {preset!r}", field="cot_lab_preset"
        )
    if not families:
        raise InputError("names no family (e.g. parity,state)", field="cot_lab")
    for family in families:
        try:
            get_lab_family(family)
        except InputError as exc:
            raise InputError(str(exc).removeprefix("`family`: "), field="cot_lab") from exc


def own_check(row: ReportRow) -> ReportRow:
    """A row whose paper column says it is cotplan's own check carries that verdict."""
    if "cotplan's own check" not in row.paper or row.verdict == COTPLAN_CHECK:
        return row
    return replace(row, verdict=COTPLAN_CHECK, holds=row.verdict == REPRODUCED)
