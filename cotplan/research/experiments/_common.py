"""Records shared by all experiments: run accounting, controls, saving."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.io import write_csv
from cotplan.research.experiments.predictors import BackendPredictor, Predictor
from cotplan.research.experiments.verdicts import ReportRow, as_control

__all__ = [
    "Drawer",
    "RunInfo",
    "Snapshot",
    "ensure_folder",
    "finish_rows",
    "predictor_kind",
    "run_info",
    "snapshot",
]

Drawer = Callable[[Any], Any]
"""Draws a result's chart (`cotplan.charts.chart`); results import no charts."""


@dataclass(frozen=True)
class RunInfo:
    """What a run cost: requests to the model, predictions read, wall time, covered mass."""

    predictor: str
    exact: bool
    requests: int
    predictions: int
    cache_hits: int
    mean_covered_mass: float
    missing_candidates: int
    wall_s: float
    #: Attempts the client repeated after a failure (5xx, 429, timeout, dropped or cut reply).
    retries: int = 0
    #: "model", or what else the predictor is ("an exact reference", "a planted effect").
    kind: str = "model"

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Snapshot:
    """A predictor's counters at the start of a run (see `run_info`)."""

    requests: int
    cache_hits: int
    predictions: int
    missing: int
    started: float
    retries: int = 0


def _retries(predictor: Predictor) -> int:
    stats = getattr(getattr(predictor, "backend", None), "stats", None)
    return int(getattr(stats, "retries", 0)) if stats is not None else 0


def snapshot(predictor: Predictor) -> Snapshot:
    """Remember the counters now, so `run_info` reports only this run's share."""
    if isinstance(predictor, BackendPredictor):
        return Snapshot(
            predictor.requests_made,
            predictor.cache_hits,
            predictor.predictions,
            predictor.missing_candidates,
            time.perf_counter(),
            _retries(predictor),
        )
    return Snapshot(0, 0, 0, 0, time.perf_counter())


def run_info(predictor: Predictor, before: Snapshot) -> RunInfo:
    """Accounting for one experiment run on `predictor` since `before`."""
    wall = time.perf_counter() - before.started
    if isinstance(predictor, BackendPredictor):
        return RunInfo(
            predictor.name,
            False,
            predictor.requests_made - before.requests,
            predictor.predictions - before.predictions,
            predictor.cache_hits - before.cache_hits,
            predictor.covered_mass_since(before.predictions),
            predictor.missing_candidates - before.missing,
            wall,
            _retries(predictor) - before.retries,
        )
    return RunInfo(
        predictor.name,
        predictor.exact,
        0,
        0,
        0,
        float("nan"),
        0,
        wall,
        kind=predictor_kind(predictor),
    )


def predictor_kind(predictor: Predictor) -> str:
    """ "model" for anything that runs a network; otherwise what the predictor is instead."""
    if not predictor.exact:
        return "model"
    return "an exact reference" if predictor.exchangeable else "a planted effect"


def finish_rows(rows: list[ReportRow], run: RunInfo) -> list[ReportRow]:
    """A result's rows as the report shows them: controls when the predictor is no model."""
    if run.kind == "model":
        return rows
    return as_control(rows, run.predictor, run.kind)


def ensure_folder(folder: str | Path) -> Path:
    path = Path(folder).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def save_outputs(
    folder: str | Path,
    tables: Sequence[tuple[str, pd.DataFrame]],
    chart: Callable[[], Any] | None,
    chart_name: str,
) -> list[Path]:
    """Write each (file name, frame) as CSV, then `chart()` as PNG unless `chart` is None."""
    out = ensure_folder(folder)
    written = []
    for name, frame in tables:
        write_csv(frame, out / name)
        written.append(out / name)
    if chart is not None:
        chart().save(str(out / chart_name))
        written.append(out / chart_name)
    return written
