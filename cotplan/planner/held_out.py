"""What a saved plan is checked on before it runs: held-out items it never saw, sizes within its
reach, and a model and protocol it was made for.

`choose_held_out` keeps the items a plan may be judged on: each size is asked of `plan.cap`
first (a size beyond the plan's reach is refused, naming it, before any model starts), and any
item whose id or prompt the plan's calibration answered is dropped. `binding_notes` and
`started_notes` refuse a plan made for another model or reasoning protocol, before and after the
backend starts, or say what `allow_other_model` lets through. `calibrated_caps` and
`plan_savings` are what a new plan saves on its own calibration.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from cotplan.errors import InputError

if TYPE_CHECKING:
    from cotplan.backends.base import Backend
    from cotplan.planner.plan_result import PlanResult
    from cotplan.planner.saved_plan import SavedPlan
    from cotplan.planner.savings import CalibrationSavings
    from cotplan.tasks import TaskItem

__all__ = [
    "HeldOut",
    "binding_notes",
    "calibrated_caps",
    "choose_held_out",
    "plan_savings",
    "started_notes",
]


@dataclass(frozen=True)
class HeldOut:
    """The items a plan is run on and the sizes it is judged at; `dropped` items were left out
    because the plan's calibration had answered them."""

    items: tuple[TaskItem, ...]
    sizes: tuple[int, ...]
    dropped: int = 0

    @property
    def note(self) -> str:
        """What was dropped, in one line ("" when nothing was)."""
        if not self.dropped:
            return ""
        return f"dropped {self.dropped} held-out item(s) seen in calibration"

    def to_frame(self) -> pd.DataFrame:
        """One row per kept item: its id and size."""
        return pd.DataFrame(
            [{"item": item.id, "n": item.n} for item in self.items], columns=["item", "n"]
        )


def choose_held_out(
    plan: SavedPlan, items: Iterable[TaskItem], *, sizes: Sequence[int] | None = None
) -> HeldOut:
    """The items of `items` that `plan` may be judged on, at `sizes` (None: the items' own
    sizes, as a task file gives them; an item without `n` is sized by the model's tokenizer
    once it runs). Each size must be within the plan's reach (`InputError` from `plan.cap`);
    items the plan's calibration answered (by id or prompt) are dropped."""
    from cotplan.planner.calibrate import load_calibration
    from cotplan.tasks import drop_seen

    kept = list(items)
    if sizes is None:
        sizes = sorted({item.n for item in kept if item.n is not None})
    for size in sizes:
        plan.cap(size)
    dropped = 0
    if Path(plan.calibration).is_file():
        calibrated = load_calibration(plan.calibration).frame["item"].astype(str)
        kept, dropped = drop_seen(kept, calibrated)
    return HeldOut(tuple(kept), tuple(int(n) for n in sizes), dropped)


def binding_notes(
    plan: SavedPlan,
    *,
    backend: str,
    base_url: str | None = None,
    protocol: str = "auto",
    allow_other_model: bool = False,
) -> list[str]:
    """Refuse `plan` on a backend spec made for another model or protocol (`InputError`,
    before anything starts); the notes to show when `allow_other_model` lets one through."""
    from cotplan.planner.binding import (
        backend_model,
        check_plan_model,
        check_plan_protocol,
        planned_protocol,
    )

    model_note = check_plan_model(
        plan, backend=backend, base_url=base_url, allow_other_model=allow_other_model
    )
    chosen = planned_protocol(protocol, backend_model(backend, base_url))
    protocol_note = check_plan_protocol(plan, chosen, allow_other_model=allow_other_model)
    return [note for note in (model_note, protocol_note) if note]


def started_notes(
    plan: SavedPlan, model: Backend, *, allow_other_model: bool = False, said: Iterable[str] = ()
) -> list[str]:
    """The binding checked again on the started backend, which knows its name and protocol
    (a spec cannot name every model: plugins, lab weights); notes in `said` (what
    `binding_notes` gave before it started) are not repeated."""
    from cotplan.generate.protocols import protocol_for
    from cotplan.planner.binding import check_plan_model, check_plan_protocol

    notes = [
        check_plan_model(plan, model.model, allow_other_model=allow_other_model),
        check_plan_protocol(plan, protocol_for(model), allow_other_model=allow_other_model),
    ]
    already = set(said)
    return [note for note in notes if note and note not in already]


def calibrated_caps(plan: SavedPlan, sizes: Iterable[int]) -> dict[int, int]:
    """`plan.cap(n)` in tokens at each of `sizes` that has one (a refused size is left out)."""
    caps = {}
    for n in sorted({int(size) for size in sizes}):
        try:
            caps[n] = plan.cap(n).tokens
        except InputError:
            continue
    return caps


def plan_savings(result: PlanResult) -> tuple[dict[int, int], CalibrationSavings | None]:
    """A new plan's caps at its calibrated sizes and what they save on its own calibration
    (None when no capped size was calibrated)."""
    from cotplan.planner.savings import calibration_savings

    caps = calibrated_caps(result.plan, result.calibration["n"])
    return caps, calibration_savings(result.calibration, caps)
