"""How a lab study is reported: the law in words and the rows of the reproduction report.

`study_report_rows` turns finished `LabStudy` records into `ReportRow`s (experiment "cot-lab");
`law_sentence` is the one-line reading of the empirical k* that `LabStudy.law` holds. Nothing
here runs a model: `cotplan.research.lab.reasoning.study` runs the study and calls these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from cotplan.intervals import Interval
from cotplan.io import write_csv
from cotplan.planner.fit import BudgetPlanner
from cotplan.planner.run import wilson_interval
from cotplan.research.experiments.verdicts import (
    COTPLAN_CHECK,
    NOT_TESTABLE,
    OUTSIDE_PREMISE,
    ReportRow,
)
from cotplan.research.lab.reasoning.exponent import EXPONENT_MARGIN, exponent_verdict
from cotplan.research.lab.reasoning.premise import premise_test
from cotplan.research.lab.reasoning.settings import StudySettings
from cotplan.research.lab.reasoning.tasks import STEP_TOKENS

__all__ = [
    "EXPONENT_MARGIN",
    "LabStudy",
    "calibration_premise",
    "exponent_verdict",
    "premise_words",
    "study_report_rows",
]


@dataclass(frozen=True)
class LabStudy:
    """One family's study (see the module docstring). Frames are pandas DataFrames."""

    family: str
    model: str
    settings: StudySettings
    train_meta: Mapping[str, Any]
    calibration: pd.DataFrame = field(repr=False)
    grid: pd.DataFrame = field(repr=False)
    constants: pd.DataFrame = field(repr=False)
    laws: pd.DataFrame = field(repr=False)
    empirical: pd.DataFrame = field(repr=False)
    exponents: pd.DataFrame = field(repr=False)
    oracle: pd.DataFrame = field(repr=False)
    plan: pd.DataFrame = field(repr=False)
    heldout: pd.DataFrame = field(repr=False)
    heldout_answers: pd.DataFrame = field(repr=False)
    planner: BudgetPlanner = field(repr=False)
    verdict: str = ""
    law: str = ""
    seconds: float = 0.0

    def to_frame(self) -> pd.DataFrame:
        """The error grid: n, k, answers, error with its Wilson interval, the blind
        reference, and the planner's fitted error."""
        return self.grid.copy()

    def constants_frame(self) -> pd.DataFrame:
        return self.constants.copy()

    def law_frame(self) -> pd.DataFrame:
        """k*(n, ε) observed beside the planner's, the mechanism's (3n + 2) and √n scaling."""
        return self.empirical.copy()

    def oracle_frame(self) -> pd.DataFrame:
        return self.oracle.copy()

    def summary(self) -> str:
        return "\n".join(
            [
                f"{self.family} ({self.model}): {self.verdict}",
                f"law: {self.law}",
            ]
        )

    def report_rows(self) -> list[ReportRow]:
        return study_report_rows([self])

    def oracle_summary(self) -> pd.DataFrame:
        """Per size: the mean oracle budget (the smallest budget that answered an item right),
        the mean stable budget (from which every larger one was right), the share of items no
        budget answered right, and the full trace (3n + 2) for scale."""
        grouped = self.oracle.groupby("n")
        return pd.DataFrame(
            {
                "items": grouped["item"].size(),
                "oracle_k": grouped["oracle_k"].mean(),
                "stable_k": grouped["stable_k"].mean(),
                "never_right": grouped["oracle_k"].apply(lambda s: float(s.isna().mean())),
                "trace_tokens": STEP_TOKENS * grouped["n"].first() + 2,
            }
        ).reset_index()

    def save(
        self, folder: str | Path, *, draw: Callable[[Any], Mapping[str, Any]] | None = None
    ) -> list[Path]:
        """Write every table as CSV (private, atomic) into `folder`, and each chart `draw`
        returns (file name -> chart) as PNG beside them; returns the paths written.
        `cotplan.charts.save(study, folder)` passes the study's charts."""
        out = Path(folder).expanduser()
        out.mkdir(parents=True, exist_ok=True)
        tables = {
            "calibration.csv": self.calibration,
            "grid.csv": self.grid,
            "constants.csv": self.constants,
            "laws.csv": self.laws,
            "law.csv": self.empirical,
            "exponents.csv": self.exponents,
            "oracle.csv": self.oracle,
            "oracle_summary.csv": self.oracle_summary(),
            "plan.csv": self.plan,
            "heldout.csv": self.heldout,
            "heldout_answers.csv": self.heldout_answers,
            "report.csv": pd.DataFrame([r.as_dict() for r in self.report_rows()]),
        }
        written = [write_csv(frame, out / name) for name, frame in tables.items()]
        if draw is not None:
            for name, drawn in draw(self).items():
                drawn.save(str(out / name))
                written.append(out / name)
        return written


def _headline_exponent(exponents: pd.DataFrame) -> pd.Series | None:
    """The exponent row to quote: the smallest ε that every size reached (else the smallest
    reached at two sizes or more); None when there is none."""
    usable = exponents[np.isfinite(exponents["beta"])].sort_values("eps")
    if usable.empty:
        return None
    everywhere = usable[usable["sizes_reached"] == usable["sizes_reached"].max()]
    row: pd.Series = everywhere.iloc[0]
    return row


def no_law(empirical: pd.DataFrame) -> str:
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


def law_sentence(exponents: pd.DataFrame, empirical: pd.DataFrame, grid: pd.DataFrame) -> str:
    row = _headline_exponent(exponents)
    if row is None:
        return no_law(empirical)
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


def calibration_premise(calibration: pd.DataFrame) -> pd.DataFrame:
    """The theorem's premise on the 0/1 error curve, per size, from a study's calibration frame
    (item, n, k, correct): `cotplan.research.lab.reasoning.premise.premise_test` on items × budgets.
    One row per size: n, premise ("holds", "fails", "not testable"), reason."""
    rows = []
    for n, mine in calibration.groupby("n"):
        wide = mine.pivot_table(index="item", columns="k", values="correct", aggfunc="mean")
        wide = wide.sort_index(axis=1)
        result = premise_test(wide.columns.to_numpy(dtype=float), 1.0 - wide.to_numpy(float))
        rows.append({"n": int(cast(int, n)), "premise": result.verdict, "reason": result.reason})
    return pd.DataFrame(rows, columns=["n", "premise", "reason"])


def premise_words(premise: pd.DataFrame) -> str:
    """E.g. "the premise on the 0/1 error fails at n = 4, 8; holds at n = 16"."""
    groups = []
    for word in ("fails", "holds", "not testable"):
        sizes = [str(int(n)) for n in premise[premise["premise"] == word]["n"]]
        if sizes:
            groups.append(f"{word} at n = {', '.join(sizes)}")
    return "the theorem's premise (B falls fastest first) on the 0/1 error " + "; ".join(groups)


def heldout_check(plan: pd.DataFrame, eps: float) -> tuple[bool | None, str]:
    """Whether the planned k* meets ε on held-out items, by each size's Wilson interval: met
    when every upper end is ≤ ε, missed when some lower end is > ε, else undecided (None)."""
    lows, highs = [], []
    for items, right in zip(plan["heldout_items"], plan["heldout_right"], strict=True):
        interval = wilson_interval(int(items - right), int(items))
        lows.append(interval.low)
        highs.append(interval.high)
    if any(low > eps for low in lows):
        return False, "some size's held-out error interval lies wholly above ε"
    if all(high <= eps for high in highs):
        return True, "every size's held-out error interval lies at or below ε"
    return None, (
        "held-out items cannot tell: some size's 95% Wilson interval straddles ε "
        f"(highest upper end {max(highs):.2f}); more held-out items would decide"
    )


def study_report_rows(studies: Iterable[LabStudy]) -> list[ReportRow]:
    """Rows for the reproduction report (`ReportRow`s, experiment "cot-lab"): per family, the
    n-exponent of the empirical k* against the paper's 1/2, the planner's α, and whether the
    planned k* met ε on held-out items."""
    rows: list[ReportRow] = []
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
                    no_law(study.empirical),
                    measured_text="—",
                )
            )
        else:
            interval = (
                Interval(float(row["low"]), float(row["high"]))
                if math.isfinite(row["low"])
                else None
            )
            verdict, rule = exponent_verdict(interval)
            premise = calibration_premise(study.calibration)
            rule = f"{rule}; {premise_words(premise)}; one training seed, so the interval is "
            rule += "over items only"
            if (premise["premise"] == "fails").any():
                verdict = OUTSIDE_PREMISE
            rows.append(
                ReportRow(
                    "cot-lab",
                    f"k* = Θ(√n·log(1/ε)) on {study.family} (lab model, ε = {row['eps']:g})",
                    "n-exponent 1/2 (theorem, not validated)",
                    float(row["beta"]),
                    interval,
                    "mechanism: full trace = 3n + 2 tokens (exponent 1)",
                    verdict,
                    f"{study.law}; {rule}",
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
                else no_law(study.empirical)
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
            verdict, rule = exponent_verdict(interval)
            if interval.high - interval.low == 0.0:
                # Every resample landed on the same α, which a tiny calibration does at a bound.
                verdict = NOT_TESTABLE
                rule = f"every resample gave the same α (a fit at its bound); {rule}"
            elif (calibration_premise(study.calibration)["premise"] == "fails").any():
                verdict = OUTSIDE_PREMISE
                rule = f"{rule}; {premise_words(calibration_premise(study.calibration))}"
            rows.append(
                ReportRow(
                    "cot-lab",
                    f"planner's α on {study.family} (lab model)",
                    "α = 1/2",
                    float(a["estimate"]),
                    interval if math.isfinite(a["low"]) else None,
                    "α ∈ [0, 2] by the planner's bounds",
                    verdict,
                    f"{study.verdict}; {rule}",
                )
            )
        plan = study.plan
        if len(plan):
            met, settled = heldout_check(plan, study.settings.eps)
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
                    + _savings_text(study)
                    + f"; {settled}",
                    measured_text=f"worst held-out error {worst:.2f}",
                    holds=met,
                )
            )
    return rows
