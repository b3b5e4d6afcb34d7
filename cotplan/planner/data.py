"""The calibration as the planner reads it: validated rows, pooled (n, k) cells, checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from cotplan.errors import InputError
from cotplan.intervals import Interval, percentile_interval
from cotplan.planner.records import LOG_BASES, LogBase

__all__: list[str] = []

# The paper law's α is searched in [0, ALPHA_MAX]; the evidence reports an α at that edge.
ALPHA_MAX = 2.0


@dataclass(frozen=True)
class Cells:
    """Calibration pooled by (n, k): successes and trials per cell (weights allowed)."""

    n: NDArray[np.float64]
    k: NDArray[np.float64]
    logn: NDArray[np.float64]
    successes: NDArray[np.float64]
    trials: NDArray[np.float64]


@dataclass(frozen=True)
class Data:
    item: NDArray[np.intp]  # item index per row
    n: NDArray[np.float64]
    k: NDArray[np.float64]
    y: NDArray[np.float64]
    cell: NDArray[np.intp]  # (n, k) cell index per row
    cell_n: NDArray[np.float64]
    cell_k: NDArray[np.float64]
    n_items: int


def check_log_base(value: object) -> LogBase:
    key = str(value).strip().lower()
    if key in {"2.0", "10.0"}:
        key = key[:-2]
    if key not in LOG_BASES:
        raise InputError(f"must be 'e', '2' or '10', got {value!r}", field="log_base")
    return cast(LogBase, key)


def validate_frame(raw_frame: object) -> Data:
    if isinstance(raw_frame, pd.DataFrame):
        frame = raw_frame
    else:
        try:
            frame = pd.DataFrame(cast(Any, raw_frame))
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"must be a DataFrame (or records) with columns item, n, k, correct: {exc}",
                field="calibration",
            ) from exc
    missing = [c for c in ("item", "n", "k", "correct") if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)}; a calibration frame needs "
            "item, n, k, correct",
            field="calibration",
        )
    if "no_answer" in frame.columns:
        # An empty answer (content null) says nothing about the budget: not a wrong answer.
        frame = frame[~frame["no_answer"].fillna(False).astype(bool)].reset_index(drop=True)
    if len(frame) == 0:
        raise InputError("has no rows", field="calibration")

    def rows_where(mask: NDArray[np.bool_]) -> str:
        bad = list(np.flatnonzero(mask)[:5])
        more = "" if mask.sum() <= 5 else f" and {int(mask.sum()) - 5} more"
        return f"row(s) {', '.join(map(str, bad))}{more}"

    if frame["item"].isna().any():
        raise InputError(f"missing in {rows_where(frame['item'].isna().to_numpy())}", field="item")
    arrays: dict[str, NDArray[np.float64]] = {}
    for name, low in (("n", 1.0), ("k", 0.0)):
        raw = frame[name]
        if raw.dtype == bool:
            raise InputError("must hold integers, not booleans", field=name)
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(values) | (values != np.round(values)) | (values < low)
        if bad.any():
            what = "positive integers" if name == "n" else "non-negative integers"
            raise InputError(f"must hold {what}; bad {rows_where(bad)}", field=name)
        arrays[name] = values
    raw_y = frame["correct"]
    y = pd.to_numeric(raw_y.astype(object), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    bad_y = ~np.isin(y, (0.0, 1.0))
    if bad_y.any():
        raise InputError(
            f"must hold True/False or 1/0 (drop failed calls first); bad {rows_where(bad_y)}",
            field="correct",
        )
    item_codes = _item_codes(frame["item"].to_numpy())
    pairs = pd.MultiIndex.from_arrays([arrays["n"], arrays["k"]])
    cell_codes, cell_index = pd.factorize(pairs, sort=True)
    cell_n = np.array([p[0] for p in cell_index], dtype=float)
    cell_k = np.array([p[1] for p in cell_index], dtype=float)
    return Data(
        item=item_codes.astype(np.intp),
        n=arrays["n"],
        k=arrays["k"],
        y=y,
        cell=cell_codes.astype(np.intp),
        cell_n=cell_n,
        cell_k=cell_k,
        n_items=int(item_codes.max()) + 1,
    )


def _item_codes(items: NDArray[Any]) -> NDArray[np.intp]:
    """Item codes 0..m-1 in the items' sorted order, not their order of appearance: every
    seeded draw over items (bootstrap weights, cross-validation folds) picks items by code, so
    codes by appearance made a seeded interval depend on the calibration's row order. Sorted by
    type, then text with its numbers by value ("it2" before "it10", the order generated ids
    are written in), so that mixed labels (1 and "1") stay two items and never fail to sort."""
    codes, uniques = pd.factorize(items, sort=False)
    order = sorted(range(len(uniques)), key=lambda i: _natural(uniques[i]))
    rank = np.empty(len(uniques), dtype=np.intp)
    rank[order] = np.arange(len(uniques), dtype=np.intp)
    return rank[codes]


def _natural(label: object) -> tuple[str, tuple[tuple[int, str], ...]]:
    # Digit runs compare by length, then digits: numeric order without int() of a huge run.
    parts = re.split(r"(\d+)", str(label))
    key = tuple((1, f"{len(part):08d}{part}") if part.isdigit() else (0, part) for part in parts)
    return type(label).__name__, key


def pooled_cells(data: Data, weights: NDArray[np.float64] | None = None) -> Cells:
    w = np.ones_like(data.y) if weights is None else weights
    size = len(data.cell_n)
    trials = np.bincount(data.cell, weights=w, minlength=size).astype(float)
    successes = np.bincount(data.cell, weights=w * data.y, minlength=size).astype(float)
    keep = trials > 0
    return Cells(
        n=data.cell_n[keep],
        k=data.cell_k[keep],
        logn=np.log(data.cell_n[keep]),
        successes=successes[keep],
        trials=trials[keep],
    )


def subset(data: Data, rows: NDArray[np.bool_]) -> Data:
    """The calibration restricted to `rows` (cells and item codes renumbered)."""
    item_codes = _item_codes(data.item[rows])
    pairs = pd.MultiIndex.from_arrays([data.n[rows], data.k[rows]])
    cell_codes, cell_index = pd.factorize(pairs, sort=True)
    return Data(
        item=item_codes.astype(np.intp),
        n=data.n[rows],
        k=data.k[rows],
        y=data.y[rows],
        cell=cell_codes.astype(np.intp),
        cell_n=np.array([c[0] for c in cell_index], dtype=float),
        cell_k=np.array([c[1] for c in cell_index], dtype=float),
        n_items=int(item_codes.max()) + 1,
    )


def percentile_value(values: NDArray[np.float64], confidence: float) -> Interval:
    """Percentile interval that tolerates infinite draws (no interpolation across them)."""
    return percentile_interval(values, confidence, keep_infinite=True)
