"""A plan made from a calibration file, and what a plan folder holds: the one place that decides.

`plan_from_calibration(path, eps, ...)` checks every option, reads and checks the calibration,
fits the `BudgetPlanner`, certifies ε once at every calibrated size, plans k* for the sizes
asked and builds the deployable `SavedPlan`. The `PlanResult` it returns holds all of it;
`PlanResult.save(folder)` writes the plan folder:

| file | what |
|---|---|
| plan.json | the `SavedPlan` (for `cotplan run`, `cotplan.capped`, `cotplan serve`) |
| plan.csv | k* per size asked, with its interval and cap |
| constants.csv | the fitted constants with their intervals |
| laws.csv | the error laws by held-out log-likelihood (when compared) |
| certified.csv | the certified budget per calibrated size (when any size was calibrated) |
| exit.json | the certified early exit (`exit="certified"`, where the calibration certifies one) |
| calibration.png, budget.png | the charts, when a drawer is given (`cotplan.charts.save`) |

With `exit="certified"` the early exit is certified on the same calibration frame after the
plan, the plan's certified caps as its ceilings (`cotplan.planner.exit_plan`); where the
calibration cannot certify one, `exit_note` says why and no exit.json is written.

Only files actually written are returned: a chart that does not render is left out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import pandas as pd

from cotplan.errors import InputError
from cotplan.io import write_csv
from cotplan.io.reports import save_chart
from cotplan.planner.calibrate import load_calibration
from cotplan.planner.early_exit import FAMILIES, Family
from cotplan.planner.exit_plan import (
    DEFAULT_PROBE_EVERY,
    EXIT_CHOICES,
    ExitPlan,
    exit_from_calibration,
)
from cotplan.planner.fit import BudgetPlanner
from cotplan.planner.records import Budget, CertifiedBudget
from cotplan.planner.saved_plan import DEFAULT_REACH, SavedPlan
from cotplan.validation import (
    REACH,
    SHARE,
    require_choice,
    require_int,
    validate_params,
)

__all__ = ["MAX_BOOTSTRAP", "PlanResult", "plan_from_calibration"]

#: Bootstrap resamples: beyond this a fit runs for hours and its intervals gain nothing.
MAX_BOOTSTRAP = 100_000
#: The largest bootstrap seed (numpy seeds are unsigned 32- or 64-bit; a plan's is small).
MAX_SEED = 2**32 - 1

#: Draws a result's chart (`cotplan.charts.chart`); the planner itself imports no charts.
Drawer = Callable[[Any], Any]


@dataclass(frozen=True)
class PlanResult:
    """A plan for one ε made from a calibration: the fitted planner, k* for the sizes asked,
    the certified budget at each calibrated size (computed once, for every use), and the
    deployable plan. `save(folder)` writes the plan folder (see the module doc)."""

    planner: BudgetPlanner
    eps: float
    budgets: tuple[Budget, ...]
    certificates: tuple[CertifiedBudget, ...]
    plan: SavedPlan
    calibration: pd.DataFrame
    exit: ExitPlan | None = None
    exit_note: str = ""

    def exit_lines(self) -> list[str]:
        """The certified early exit per size in words (none when no exit plan was made)."""
        if self.exit is None:
            return []
        return [
            f"certified exit at n = {n}: {rule.rule.name} (probe every {rule.every}, "
            f"ceiling {rule.ceiling})"
            for n, rule in sorted(self.exit.sizes.items())
        ]

    def to_frame(self) -> pd.DataFrame:
        """k* per size asked (plan.csv); `tokens` is the cap the plan deploys there
        (`plan.cap(n)`, the one number printed and applied), blank where it refuses one."""
        frame = pd.concat([b.to_frame() for b in self.budgets], ignore_index=True)
        frame["tokens"] = [self._deployed(float(n)) for n in frame["n"]]
        return frame

    def _deployed(self, n: float) -> float:
        try:
            return float(self.plan.cap(n).tokens)
        except InputError:
            return float("nan")

    def certified_frame(self) -> pd.DataFrame:
        """The certified budget per calibrated size for ε (certified.csv)."""
        return pd.concat([c.to_frame() for c in self.certificates], ignore_index=True)

    def tables(self) -> list[tuple[str, pd.DataFrame]]:
        """The plan folder's tables by file name, the ones this fit has data for."""
        out = [("plan.csv", self.to_frame())]
        out.append(("constants.csv", self.planner.report().to_frame()))
        if self.planner.laws_ is not None:
            out.append(("laws.csv", self.planner.laws_.to_frame()))
        if self.certificates:
            out.append(("certified.csv", self.certified_frame()))
        return out

    def save(self, folder: str | os.PathLike[str], *, draw: Drawer | None = None) -> list[Path]:
        """Write the plan folder into `folder`; plan.json first in the returned list. With
        `draw` (`cotplan.charts.chart`) the charts too: the calibration's fit (drawn from the
        planner) and, where reasoning helps, k* by size (drawn from this result)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        written = [self.plan.save(out / "plan.json")]
        written += [write_csv(frame, out / name) for name, frame in self.tables()]
        if self.exit is not None:
            written.append(self.exit.save(out / "exit.json"))
        if draw is None:
            return written
        charts: list[tuple[Any, str]] = [(self.planner, "calibration.png")]
        if self.planner.status_ == "helps":
            charts.append((self, "budget.png"))
        for part, name in charts:
            path = save_chart(draw(part), out / name)
            written += [path] if path is not None else []
        return written


@validate_params(eps=SHARE, reach=REACH)
def plan_from_calibration(
    calibration: str | os.PathLike[str],
    eps: float,
    *,
    sizes: Sequence[int] = (),
    law: str = "auto",
    delta: float = 0.05,
    log_base: str = "e",
    alpha: str | float = "fit",
    n_bootstrap: int = 200,
    seed: int = 0,
    reach: float = DEFAULT_REACH,
    exit: str = "none",
    probe_every: int = DEFAULT_PROBE_EVERY,
    exit_family: str = "auto",
) -> PlanResult:
    """Plan for target error `eps` from a calibration CSV (see the module doc).

    `sizes` are the sizes to plan k* for (default: the calibrated ones); `law` is "auto"
    (chosen on held-out items) or one of `LAW_NAMES`; `delta` is 1 − the certificates'
    confidence; `alpha` is "fit" or a fixed exponent; `reach` how far `plan.cap(n)` scales
    beyond the calibrated sizes; `exit` "none" or "certified" (an early exit probing every
    `probe_every` thinking tokens, certified after the plan; see the module doc), its rules
    from the chain `exit_family` (`cotplan.planner.early_exit.FAMILIES`). Every option
    is checked before the file is read, and the file before anything is fitted; raises
    `InputError` naming the option (or the file, line and column), `InfeasibleTargetError`
    when ε cannot be reached at a size asked.
    """
    n_bootstrap = require_int(n_bootstrap, "bootstrap", low=0, high=MAX_BOOTSTRAP)
    seed = require_int(seed, "seed", low=0, high=MAX_SEED)
    asked = [require_int(n, "n", low=1) for n in sizes]
    require_choice(exit, "exit", EXIT_CHOICES)
    probe_every = require_int(probe_every, "probe_every", low=1)
    family = cast(Family, require_choice(exit_family, "exit_family", FAMILIES))
    if family != "auto" and exit != "certified":
        raise InputError("is read only with --exit certified", field="exit_family")
    alpha_value = _alpha(alpha)
    planner = BudgetPlanner(
        law,
        delta=delta,
        log_base=log_base,
        alpha=alpha_value,
        n_bootstrap=n_bootstrap,
        random_state=seed,
    )
    planner.check_params()  # δ, the law, the log base: before the file is read, and only here
    loaded = load_calibration(calibration)  # names a missing file, a folder, a bad line
    source = Path(calibration)
    planner.fit(loaded.frame)
    certified = planner.certified_
    certificates = (
        tuple(certified.at(n, eps) for n in certified.sizes) if certified is not None else ()
    )
    budgets = tuple(planner.budget(n, eps) for n in asked or planner.sizes_)
    plan = SavedPlan.from_planner(
        planner,
        budgets,
        eps,
        str(source.resolve()),
        frame=loaded.frame,
        reach=reach,
        certificates=certificates,
    )
    exit_plan, exit_note = None, ""
    if exit == "certified":
        ceilings = {c.n: c.k for c in certificates if c.k is not None}
        exit_plan, exit_note = exit_from_calibration(
            loaded.frame,
            ceilings,
            eps,
            delta=delta,
            model=plan.model or "",
            every=probe_every,
            family=family,
        )
    return PlanResult(
        planner=planner,
        eps=eps,
        budgets=budgets,
        certificates=certificates,
        plan=plan,
        calibration=loaded.frame,
        exit=exit_plan,
        exit_note=exit_note,
    )


def _alpha(alpha: str | float) -> float | Literal["fit"]:
    """'fit', or a fixed exponent given as a number or as its text (its range is the
    planner's to check)."""
    if alpha == "fit":
        return "fit"
    try:
        return float(alpha)
    except (TypeError, ValueError):
        raise InputError(f"must be 'fit' or a number, got {alpha!r}", field="alpha") from None
