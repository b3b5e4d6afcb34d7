"""What every experiment's result shares: its tables decide what it saves and how it reads
beside the paper.

A result names its CSV tables once (`tables()`, the paper comparison among them) and its rows
for the reproduction report (`paper_rows()`); `versus_paper()` and `save(folder)` follow from
those two, so no result repeats them. Its chart is drawn elsewhere (`cotplan.charts`): `save`
only writes the chart a caller's `draw` returns, under the result's `chart_file`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import partial
from pathlib import Path
from typing import ClassVar

import pandas as pd

from cotplan.research.experiments._common import Drawer, save_outputs
from cotplan.research.experiments.verdicts import ReportRow, rows_frame

__all__ = ["ExperimentResult"]


class ExperimentResult(ABC):
    """The base of the experiments' results (and the lab's ablation): see the module docstring.

    `chart_file` is the PNG's name when a chart is drawn; empty for a result whose charts are
    its parts' (their own `save` writes them).
    """

    chart_file: ClassVar[str] = ""

    @abstractmethod
    def paper_rows(self) -> list[ReportRow]:
        """The result's rows of the reproduction report."""

    @abstractmethod
    def tables(self) -> list[tuple[str, pd.DataFrame]]:
        """Every table `save` writes, as (CSV file name, frame), in the order written."""

    def versus_paper(self) -> pd.DataFrame:
        """The paper's numbers beside the measured ones: one row per claim."""
        return rows_frame(self.paper_rows())

    def save(self, folder: str | Path, *, draw: Drawer | None = None) -> list[Path]:
        """Write `tables()` as CSV into `folder` and, when `draw` is given, the chart it draws
        as `chart_file`; returns the paths written."""
        chart = partial(draw, self) if draw is not None and self.chart_file else None
        return save_outputs(folder, self.tables(), chart, self.chart_file)
