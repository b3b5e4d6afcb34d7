"""How a lab study is reported: the law in words and the rows of the reproduction report.

`study_report_rows` turns finished `LabStudy` records into `ReportRow`s (experiment "cot-lab");
`_law_sentence` is the one-line reading of the empirical k* that `LabStudy.law` holds. Nothing
here runs a model: `cotplan.lab.reasoning.study` runs the study and calls these.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cotplan.lab.reasoning.tasks import STEP_TOKENS

if TYPE_CHECKING:
    from cotplan.lab.reasoning.study import LabStudy

__all__ = ["study_report_rows"]


def _headline_exponent(exponents: pd.DataFrame) -> pd.Series | None:
    """The exponent row to quote: the smallest ε that every size reached (else the smallest
    reached at two sizes or more); None when there is none."""
    usable = exponents[np.isfinite(exponents["beta"])].sort_values("eps")
    if usable.empty:
        return None
    everywhere = usable[usable["sizes_reached"] == usable["sizes_reached"].max()]
    row: pd.Series = everywhere.iloc[0]
    return row


def _no_law(empirical: pd.DataFrame) -> str:
    """Why no exponent can be read off the empirical k* (none reached two sizes)."""
    finite = empirical[np.isfinite(empirical["k"])]
    if len(finite) and (finite["k"] == 0).all() and len(finite) == len(empirical):
        return (
            "no reasoning needed: the error is at or below every target without any "
            f"(k* = 0 at every size and every ε ≥ {empirical['eps'].min():g})"
        )
    if len(finite) and (finite["k"] == 0).all():
        return (
            "the targets are met without reasoning at some sizes and never at the others: no "
            "law can be read off"
        )
    return "the error reached the targets at fewer than two sizes: no law can be read off"


def _law_sentence(exponents: pd.DataFrame, empirical: pd.DataFrame, grid: pd.DataFrame) -> str:
    row = _headline_exponent(exponents)
    if row is None:
        return _no_law(empirical)
    beta, low, high = float(row["beta"]), float(row["low"]), float(row["high"])
    interval = f"[{low:.2f}, {high:.2f}]" if math.isfinite(low) else "(no interval)"
    parts = [f"k*(n) grows as n^{beta:.2f} {interval} at ε = {row['eps']:g}"]
    if math.isfinite(low):
        if low <= 0.5 <= high:
            parts.append("consistent with √n")
        else:
            parts.append("not √n")
        if low <= 1.0 <= high:
            parts.append("consistent with linear growth (a fixed number of tokens per input)")
    a, b = float(row["per_input"]), float(row["offset"])
    if math.isfinite(a):
        a_low, a_high = float(row["per_input_low"]), float(row["per_input_high"])
        spread = f" [{a_low:.2f}, {a_high:.2f}]" if math.isfinite(a_low) else ""
        parts.append(
            f"as a straight line k* ≈ {a:.2f}·n {'+' if b >= 0 else '−'} {abs(b):.1f} "
            f"({a:.2f}{spread} tokens per input; the trace writes {STEP_TOKENS})"
        )
    top = int(empirical["n"].max())
    at_top = empirical[(empirical["n"] == top) & np.isfinite(empirical["k"])].sort_values("eps")
    if len(at_top) >= 2:
        small, large = at_top.iloc[0], at_top.iloc[-1]
        observed = float(small["k"]) / float(large["k"]) if large["k"] > 0 else math.inf
        predicted = math.log(1 / small["eps"]) / math.log(1 / large["eps"])
        parts.append(
            f"at n = {top}, k* for ε = {small['eps']:g} is {observed:.2f}× that for "
            f"ε = {large['eps']:g} (log(1/ε) predicts {predicted:.2f}×)"
        )
    base = grid[grid["k"] == 0].set_index("n")["error"]
    full = grid.loc[grid.groupby("n")["k"].idxmax()].set_index("n")["error"]
    parts.append(
        "error without reasoning "
        + ", ".join(f"{base[n]:.2f}" for n in base.index)
        + " and with the full trace "
        + ", ".join(f"{full[n]:.2f}" for n in full.index)
        + f" (n = {', '.join(str(int(n)) for n in base.index)})"
    )
    return "; ".join(parts)


def _savings_text(study: LabStudy) -> str:
    table = study.heldout.set_index("policy")
    planned = [p for p in table.index if p.startswith("planned")]
    if not planned or "oracle (per item)" not in table.index:
        return ""
    ours, oracle = table.loc[planned[0]], table.loc["oracle (per item)"]
    return (
        f"; reasoning tokens saved against uncapped: planned {ours['tokens_saved']:.0%}, "
        f"per-item oracle {oracle['tokens_saved']:.0%}"
    )


def study_report_rows(studies: Iterable[LabStudy]) -> list[Any]:
    """Rows for the reproduction report (`ReportRow`s, experiment "cot-lab"): per family, the
    n-exponent of the empirical k* against the paper's 1/2, the planner's α, and whether the
    planned k* met ε on held-out items."""
    from cotplan.experiments._common import (
        NOT_REPRODUCED,
        NOT_TESTABLE,
        REPRODUCED,
        Interval,
        ReportRow,
    )
    from cotplan.experiments.verdicts import COTPLAN_CHECK

    rows: list[Any] = []
    for study in studies:
        row = _headline_exponent(study.exponents)
        if row is None:
            rows.append(
                ReportRow(
                    "cot-lab",
                    f"k* = Θ(√n·log(1/ε)) on {study.family} (lab model)",
                    "α = 1/2 (theorem, not validated)",
                    None,
                    None,
                    "mechanism: full trace = 3n + 2 tokens",
                    NOT_TESTABLE,
                    _no_law(study.empirical),
                    measured_text="—",
                )
            )
        else:
            interval = (
                Interval(float(row["low"]), float(row["high"]))
                if math.isfinite(row["low"])
                else None
            )
            holds = interval is not None and 0.5 in interval
            rows.append(
                ReportRow(
                    "cot-lab",
                    f"k* = Θ(√n·log(1/ε)) on {study.family} (lab model, ε = {row['eps']:g})",
                    "n-exponent 1/2 (theorem, not validated)",
                    float(row["beta"]),
                    interval,
                    "mechanism: full trace = 3n + 2 tokens (exponent 1)",
                    REPRODUCED if holds else NOT_REPRODUCED,
                    study.law,
                    measured_text=(
                        f"n-exponent of the observed k*: {row['beta']:.2f}; "
                        f"{row['per_input']:.2f} tokens per input"
                    ),
                )
            )
        alpha = study.constants[
            (study.constants["model"] == "fit") & (study.constants["parameter"] == "alpha")
        ]
        if study.planner.status_ != "helps" or _headline_exponent(study.exponents) is None:
            reason = (
                f"the planner credits reasoning with no effect ({study.planner.status_})"
                if study.planner.status_ != "helps"
                else _no_law(study.empirical)
            )
            rows.append(
                ReportRow(
                    "cot-lab",
                    f"planner's α on {study.family} (lab model)",
                    "α = 1/2",
                    None,
                    None,
                    "α ∈ [0, 2] by the planner's bounds",
                    NOT_TESTABLE,
                    f"{reason}; planner: {study.verdict}",
                    measured_text="—",
                )
            )
        elif len(alpha):
            a = alpha.iloc[0]
            interval = Interval(float(a["low"]), float(a["high"]))
            if not 0.0 < interval.high - interval.low < 1.0:
                # An interval this wide (or NaN) says nothing about α; one of zero width means
                # every resample landed on the same α, which a tiny calibration does at a bound.
                verdict = NOT_TESTABLE
            else:
                verdict = REPRODUCED if 0.5 in interval else NOT_REPRODUCED
            rows.append(
                ReportRow(
                    "cot-lab",
                    f"planner's α on {study.family} (lab model)",
                    "α = 1/2",
                    float(a["estimate"]),
                    interval if math.isfinite(a["low"]) else None,
                    "α ∈ [0, 2] by the planner's bounds",
                    verdict,
                    study.verdict,
                )
            )
        plan = study.plan
        if len(plan):
            met = bool(np.all(plan["heldout_error"] <= study.settings.eps + 1e-12))
            worst = float(plan["heldout_error"].max())
            rows.append(
                ReportRow(
                    "cot-lab",
                    f"planned k* meets ε = {study.settings.eps:g} on held-out {study.family} items",
                    "(cotplan's own check)",
                    worst,
                    None,
                    f"ε = {study.settings.eps:g}",
                    COTPLAN_CHECK,
                    "held-out error at the planned cap per n: "
                    + ", ".join(
                        f"n = {n}: {error:.2f} at k = {tokens}"
                        for n, error, tokens in zip(
                            plan["n"], plan["heldout_error"], plan["tokens"], strict=True
                        )
                    )
                    + _savings_text(study),
                    measured_text=f"worst held-out error {worst:.2f}",
                    holds=met,
                )
            )
    return rows
