"""The full runs' stored results (``benchmarks/results``), as the notebooks show them beside
their quick runs.

`full_run_rows(["martingale", "debias"])` gives the full reproduction's rows for those
experiments with their intervals, the verdict the run printed and the verdict today's rules
give from the same numbers (`benchmarks/report_verdicts.py` wrote them to
``report_verdicts_full_local.csv``). `stored_table(name)` reads any stored CSV. Both look in
`folder` when given (a reproduction of one's own), else in the repository's
``benchmarks/results`` found from the working folder upwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from cotplan.errors import InputError

__all__ = ["VERDICTS_FILE", "full_run_rows", "results_file", "stored_table"]

VERDICTS_FILE = "report_verdicts_full_local.csv"
_SUBFOLDERS = ("", "experiments_csv")


def results_file(name: str, folder: str | Path | None = None) -> Path:
    """The stored file `name`: in `folder` when given, else under the nearest
    ``benchmarks/results`` (or its ``experiments_csv``) from the working folder upwards."""
    if folder is not None:
        path = Path(folder).expanduser() / name
        if not path.is_file():
            raise InputError(f"no {name} in {folder}", field="folder")
        return path
    for base in (Path.cwd(), *Path.cwd().parents):
        for sub in _SUBFOLDERS:
            candidate = base / "benchmarks" / "results" / sub / name
            if candidate.is_file():
                return candidate
    raise InputError(f"no stored {name} under benchmarks/results", field="name")


def stored_table(name: str, folder: str | Path | None = None) -> pd.DataFrame:
    """A stored CSV as a frame (empty cells stay empty strings, not NaN)."""
    return pd.read_csv(results_file(name, folder), keep_default_na=False)


def full_run_rows(experiments: Sequence[str], folder: str | Path | None = None) -> pd.DataFrame:
    """The full run's rows for `experiments`: claim, interval, the printed verdict and today's."""
    rows = stored_table(VERDICTS_FILE, folder)
    mine = rows[rows["experiment"].isin(list(experiments))]
    if mine.empty:
        known = ", ".join(sorted(set(rows["experiment"])))
        raise InputError(f"no rows for {list(experiments)} (known: {known})", field="experiments")
    columns = ["experiment", "claim", "interval", "verdict", "new_verdict"]
    return mine[columns].rename(columns={"verdict": "printed", "new_verdict": "today"})
