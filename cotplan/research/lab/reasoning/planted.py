"""A planted √n positive control for the k* pipeline: calibration to verdict on a known law.

No lab family here can show k* ∝ √n unless built to (docs/lab-reasoning.md): one step per input
makes k* ∝ n, and the lamp is scale-invariant. This family is built to. An item is n votes drawn
from a coin with bias 1/2 ± δ, δ = c · n^(−1/4); the question is which way the coin leans (the
generating coin's side, not the votes' majority). The trace writes the votes one step at a time,
three tokens a step like every lab trace, with the running count of votes for "1". A reader
that has written j votes answers by their majority (a tie: a fair coin), so its error is about
Φ(−2δ√j) = Φ(−2c·√(j/√n)): a function of j/√n alone. Reaching a fixed error takes j ∝ √n
votes, and since Φ(−z) ≈ e^(−z²/2), j ∝ √n · log(1/ε): the theorem's law, planted.

The reader is exact (the Bayes answer from what the trace wrote; it never reads an unwritten
vote), so the control has no training: it checks what turns answers into a verdict, the
calibration frame (item, n, k, correct), the empirical k*(n, ε) (`empirical_budgets`), the
item-bootstrap exponent (`study_exponents`), the premise test on the error curves
(`calibration_premise`), the planner's α (`BudgetPlanner`) and the two-sided exponent rule
(`exponent_verdict`). A pipeline that cannot recover α = 1/2 here cannot be trusted to say "not
reproduced" on a model. `exponent = 0.5` plants the linear law instead (δ ∝ n^(−1/2), j ∝ n):
the negative control, which must read "not reproduced".

    control = planted_control()          # sizes 16..256, 200 items each
    control.verdict, control.exponent    # ('reproduced', Interval(...)) — see the tests
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.intervals import Interval
from cotplan.planner.fit import BudgetPlanner
from cotplan.research.experiments.verdicts import OUTSIDE_PREMISE, Verdict
from cotplan.research.lab.reasoning.exponent import exponent_verdict
from cotplan.research.lab.reasoning.report import calibration_premise
from cotplan.research.lab.reasoning.study import empirical_budgets, study_exponents
from cotplan.research.lab.reasoning.tasks import STEP_TOKENS

__all__ = ["PLANTED_SIZES", "PlantedControl", "planted_calibration", "planted_control"]

#: Sizes wide enough that √n spans a factor of 4 (the lab models stop at 24 or 64 inputs; the
#: exact reader has no such limit).
PLANTED_SIZES: tuple[int, ...] = (16, 32, 64, 128, 256)


def planted_calibration(
    sizes: Sequence[int] = PLANTED_SIZES,
    items: int = 200,
    *,
    c: float = 0.6,
    exponent: float = 0.25,
    seed: int = 0,
) -> pd.DataFrame:
    """The calibration frame (item, n, k, correct) of the exact reader on the planted family:
    every item answered at every step boundary k = 0, 3, …, 3n (module docstring). Every
    step, not `study_grid`'s stride: at n = 256 a stride of 13 tokens rounds k* up by as much as
    13%, a bias of about 0.04 in the exponent that the control would wrongly charge the
    pipeline with."""
    if not sizes or min(sizes) < 1:
        raise InputError(f"must be positive sizes, got {list(sizes)}", field="sizes")
    if items < 2:
        raise InputError(f"must be >= 2, got {items}", field="items")
    frames = []
    for n in sorted({int(s) for s in sizes}):
        rng = np.random.default_rng(np.random.SeedSequence([seed, 48, n]))
        delta = min(c * n ** (-exponent), 0.49)
        truth = rng.integers(0, 2, size=items)
        p = np.where(truth == 1, 0.5 + delta, 0.5 - delta)
        votes = (rng.random((items, n)) < p[:, None]).astype(int)
        ties = rng.integers(0, 2, size=(items, n + 1))
        counts = np.concatenate([np.zeros((items, 1), dtype=int), np.cumsum(votes, axis=1)], 1)
        written = np.arange(n + 1)  # complete steps written at budget k = 3 · written
        answer = np.where(
            2 * counts > written, 1, np.where(2 * counts < written, 0, ties)
        )  # items × (n + 1)
        correct = answer == truth[:, None]
        frames.append(
            pd.DataFrame(
                {
                    "item": np.repeat([f"planted-{n}-{i}" for i in range(items)], n + 1),
                    "n": n,
                    "k": np.tile(STEP_TOKENS * written, items),
                    "correct": correct.ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class PlantedControl:
    """The pipeline's reading of the planted law (module docstring). Frames are pandas."""

    planted_exponent: float
    eps: float
    calibration: pd.DataFrame = field(repr=False)
    empirical: pd.DataFrame = field(repr=False)
    exponents: pd.DataFrame = field(repr=False)
    premise: pd.DataFrame = field(repr=False)
    beta: float
    exponent: Interval | None
    verdict: Verdict
    planner_alpha: float
    planner_alpha_interval: Interval | None

    @property
    def planted_k_exponent(self) -> float:
        """The n-exponent of k* the construction plants: 2 · `planted_exponent`."""
        return 2.0 * self.planted_exponent

    def to_frame(self) -> pd.DataFrame:
        """The empirical k*(n, ε) the exponent was read from."""
        return self.empirical.copy()

    def summary(self) -> str:
        interval = "" if self.exponent is None else f" {self.exponent}"
        alpha = "" if self.planner_alpha_interval is None else f" {self.planner_alpha_interval}"
        planner = (
            f"planner's α {self.planner_alpha:.2f}{alpha}"
            if math.isfinite(self.planner_alpha)
            else "planner not fitted"
        )
        return (
            f"planted k* ∝ n^{self.planted_k_exponent:g}: read n^{self.beta:.2f}{interval} at "
            f"ε = {self.eps:g} ({self.verdict}); {planner}"
        )


def planted_control(
    sizes: Sequence[int] = PLANTED_SIZES,
    items: int = 200,
    *,
    eps: float = 0.1,
    eps_grid: Sequence[float] = (0.3, 0.2, 0.1, 0.05),
    exponent: float = 0.25,
    c: float = 0.6,
    n_bootstrap: int = 200,
    planner_bootstrap: int = 50,
    planner: bool = True,
    seed: int = 0,
) -> PlantedControl:
    """Run the planted family through calibration, the empirical k*, its item-bootstrap
    exponent, the premise test, the planner (unless `planner` is False: it takes most of the
    time) and the exponent rule; read at `eps`."""
    grid = sorted({*eps_grid, eps}, reverse=True)
    frame = planted_calibration(sizes, items, c=c, exponent=exponent, seed=seed)
    empirical = empirical_budgets(frame, grid)
    exponents = study_exponents(frame, grid, n_bootstrap, seed)
    row = exponents[exponents["eps"] == eps].iloc[0]
    finite = math.isfinite(row["low"]) and math.isfinite(row["high"])
    interval = Interval(float(row["low"]), float(row["high"])) if finite else None
    verdict, _ = exponent_verdict(interval)
    premise = calibration_premise(frame)
    if (premise["premise"] == "fails").any():
        verdict = OUTSIDE_PREMISE
    alpha, alpha_interval = math.nan, None
    if planner:
        fitted = BudgetPlanner(n_bootstrap=planner_bootstrap, random_state=seed).fit(frame)
        alpha, alpha_interval = float(fitted.alpha_), fitted.intervals_.get("alpha")
    return PlantedControl(
        planted_exponent=exponent,
        eps=eps,
        calibration=frame,
        empirical=empirical,
        exponents=exponents,
        premise=premise,
        beta=float(row["beta"]),
        exponent=interval,
        verdict=verdict,
        planner_alpha=alpha,
        planner_alpha_interval=alpha_interval,
    )
