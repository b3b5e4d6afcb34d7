"""CoT policies for a spend projection: how far reasoning tokens are clipped on each call.

`Uncapped`, `FixedCap(k)` and `PlannerCap(k*)`, and `cap_policy`, which reads the shorthand that
`project_costs` accepts (None, an int cap, a planner's k*).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

from cotplan.errors import InputError
from cotplan.pricing.workload import non_negative

__all__ = ["CotPolicy", "FixedCap", "PlannerCap", "Uncapped"]


@dataclass(frozen=True)
class Uncapped:
    """Reasoning runs as long as the model wants."""

    @property
    def cap(self) -> float | None:
        return None

    @property
    def label(self) -> str:
        return "uncapped"


@dataclass(frozen=True)
class FixedCap:
    """Reasoning tokens are clipped at `k` per call (the visible answer is unchanged)."""

    k: int

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, Real) or self.k != int(self.k):
            raise InputError(f"must be a whole number of tokens, got {self.k!r}", field="k")
        if self.k < 0:
            raise InputError(f"must not be negative, got {self.k!r}", field="k")

    @property
    def cap(self) -> float | None:
        return float(self.k)

    @property
    def label(self) -> str:
        return f"cap {int(self.k)}"


@dataclass(frozen=True)
class PlannerCap:
    """Reasoning clipped at a planner's k*: a number, or any object with `budget(n, eps)`."""

    planner: Any
    n: int | None = None
    eps: float | None = None
    k: float = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.planner, Real) and not isinstance(self.planner, bool):
            k = non_negative(self.planner, "planner")
        elif callable(getattr(self.planner, "budget", None)):
            if self.n is None or self.eps is None:
                raise InputError("a planner needs `n` and `eps` to compute its budget", field="n")
            # BudgetPlanner.budget returns a `Budget` record; float() gives its k*.
            k = non_negative(float(self.planner.budget(self.n, self.eps)), "planner.budget(n, eps)")
        else:
            raise InputError(
                "must be a number or an object with a budget(n, eps) method", field="planner"
            )
        object.__setattr__(self, "k", float(math.ceil(k)))

    @property
    def cap(self) -> float | None:
        return self.k

    @property
    def label(self) -> str:
        return f"planner k*={int(self.k)}"


CotPolicy = Uncapped | FixedCap | PlannerCap


def cap_policy(value: Any) -> CotPolicy:
    if value is None or value == "uncapped":
        return Uncapped()
    if isinstance(value, Uncapped | FixedCap | PlannerCap):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        number = float(value)
        return FixedCap(int(number)) if number == int(number) else PlannerCap(number)
    raise InputError(
        "must be None, an int cap, Uncapped(), FixedCap(k) or PlannerCap(...)", field="policy"
    )
