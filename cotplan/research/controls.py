"""The reproduction's controls, as rows: does each instrument read what it must where the
answer is known?

- **Debias control** (`cotplan.research.experiments.debias_control`): exact Bayes has no
  positional bias, so its position R² must stay at or below 0.1 on at least 95% of seeds, in
  the nested and the independent design.
- **Planted √n law** (`cotplan.research.lab.reasoning.planted`): a family built so that
  k* ∝ √n·log(1/ε); the pipeline's n-exponent interval must hold 1/2 and exclude 1.
- **Planted linear law** (the negative control): the same family with k* ∝ n must read "not
  reproduced".
- **The premise** on the planted √n family: the theorem's premise on B's shape per size
  (`cotplan.research.lab.reasoning.premise`); the law's verdict is only read where it does not
  fail.

`run_controls("quick")` runs them small (seconds; the planner's fit left out), `"full"` at the
benchmarks' scale (`benchmarks/debias_control.py`, `benchmarks/planted_control.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.io import write_csv
from cotplan.research.experiments.debias_control import DebiasControl, debias_control

__all__ = ["CONTROL_PRESETS", "Controls", "run_controls"]

#: Per preset: debias seeds, planted items per size, planted seeds, whether the planner fits.
CONTROL_PRESETS: dict[str, dict[str, Any]] = {
    "quick": {"debias_seeds": 3, "items": 600, "seeds": (0,), "planner": False},
    "full": {"debias_seeds": 12, "items": 1000, "seeds": (0, 1, 2), "planner": True},
}
#: (label, the planted error exponent, its constant): k* ∝ n^(2 · exponent).
_LAWS = (("√n", 0.25, 0.6), ("linear", 0.5, 1.5))
_EPS = (0.2, 0.1, 0.05)


@dataclass(frozen=True)
class Controls:
    """Each control's row (`to_frame()`), the debias control's per-seed R², the premise."""

    preset: str
    rows: pd.DataFrame = field(repr=False)
    debias: DebiasControl = field(repr=False)
    premise: pd.DataFrame = field(repr=False)

    @property
    def passed(self) -> bool:
        return bool(self.rows["passes"].all())

    def to_frame(self) -> pd.DataFrame:
        return self.rows.copy()

    def summary(self) -> str:
        lines = [
            f"{r.control}: {r.measured} -> {'passes' if r.passes else 'FAILS'} ({r.expected})"
            for r in self.rows.itertuples()
        ]
        return "\n".join(lines)

    def save(self, folder: str | Path) -> list[Path]:
        out = Path(folder).expanduser()
        out.mkdir(parents=True, exist_ok=True)
        return [
            write_csv(self.rows, out / "controls.csv"),
            write_csv(self.debias.to_frame(), out / "controls_debias.csv"),
            write_csv(self.premise, out / "controls_premise.csv"),
        ]


def run_controls(preset: str = "quick") -> Controls:
    """Run every control at `preset`'s scale (`CONTROL_PRESETS`); no model is called."""
    from cotplan.research.lab.reasoning.planted import PLANTED_SIZES, planted_control

    if preset not in CONTROL_PRESETS:
        raise InputError(
            f"must be one of {', '.join(CONTROL_PRESETS)}, got {preset!r}", field="preset"
        )
    settings = CONTROL_PRESETS[preset]
    debias = debias_control(range(settings["debias_seeds"]))
    rows: list[dict[str, Any]] = [
        {
            "control": "debias: exact Bayes position R²",
            "expected": "≤ 0.1 on ≥ 95% of seeds, both designs",
            "measured": debias.summary(),
            "verdict": "",
            "passes": debias.passed,
        }
    ]
    premise_rows = []
    for label, exponent, c in _LAWS:
        for seed in settings["seeds"]:
            control = planted_control(
                PLANTED_SIZES,
                settings["items"],
                eps=0.1,
                eps_grid=_EPS,
                exponent=exponent,
                c=c,
                planner=settings["planner"],
                planner_bootstrap=30,
                seed=seed,
            )
            interval = control.exponent
            if label == "√n":
                expected = "interval holds 1/2 and excludes 1"
                passes = interval is not None and 0.5 in interval and interval.high < 1
                premise_rows += [
                    {"seed": seed, **row} for row in control.premise.to_dict("records")
                ]
            else:
                expected = "'not reproduced'"
                passes = control.verdict == "not reproduced"
            rows.append(
                {
                    "control": f"planted {label} law, seed {seed}",
                    "expected": expected,
                    "measured": control.summary(),
                    "verdict": control.verdict,
                    "passes": bool(passes),
                }
            )
    premise = pd.DataFrame(premise_rows)
    fails = premise[premise["premise"] == "fails"] if not premise.empty else premise
    rows.append(
        {
            "control": "the premise on the planted √n family",
            "expected": "does not fail at any size",
            "measured": ", ".join(
                f"n = {r['n']}: {r['premise']}" for r in premise.to_dict("records")
            ),
            "verdict": "",
            "passes": fails.empty,
        }
    )
    return Controls(preset, pd.DataFrame(rows), debias, premise)
