"""A rule in the plan that gives a call its size from what the call carries.

Traffic carries prompts, not item sizes. An operator who knows how the two go together writes
the rule once into the plan (`SavedPlan.with_size_rule`, or the ``size_rule`` record of
plan.json), and every call without a size of its own gets one from it:

    {"by": "prompt_tokens", "steps": [[200, 4], [400, 8]]}

reads: a prompt of up to 200 tokens is an item of size 4, up to 400 of size 8; a longer one
has no size (it gets the plan's pooled or largest certified cap, with a note). ``by`` is
``prompt_chars`` (the characters of the chat's messages) or ``prompt_tokens``, estimated from
them at 4 characters a token (the request has not been tokenized when the size is needed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cotplan.errors import InputError

__all__ = ["SIZE_RULE_MEASURES", "SizeRule"]

SIZE_RULE_MEASURES = ("prompt_tokens", "prompt_chars")


@dataclass(frozen=True)
class SizeRule:
    """`steps`: (the measure's upper bound, the size n) in increasing order of bound."""

    by: Literal["prompt_tokens", "prompt_chars"]
    steps: tuple[tuple[float, float], ...]

    @classmethod
    def from_record(cls, record: object, field: str = "size_rule") -> SizeRule:
        """The rule of a plan.json record (or a dict given in code), checked, naming `field`."""
        if not isinstance(record, Mapping):
            raise InputError(f"must be a record with `by` and `steps`, got {record!r}", field=field)
        by = record.get("by")
        if by not in SIZE_RULE_MEASURES:
            raise InputError(
                f"must be one of {', '.join(SIZE_RULE_MEASURES)}, got {by!r}", field=f"{field}.by"
            )
        raw = record.get("steps")
        if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
            raise InputError("must be a non-empty list of [bound, n]", field=f"{field}.steps")
        steps: list[tuple[float, float]] = []
        for i, step in enumerate(raw):
            ok = isinstance(step, Sequence) and not isinstance(step, str) and len(step) == 2
            values = list(step) if ok else []
            if not ok or not all(
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and math.isfinite(v)
                and v > 0
                for v in values
            ):
                raise InputError(
                    f"step {i} must be [bound, n] with two positive numbers, got {step!r}",
                    field=f"{field}.steps",
                )
            if steps and values[0] <= steps[-1][0]:
                raise InputError(
                    f"step {i}'s bound must exceed the one before it", field=f"{field}.steps"
                )
            steps.append((float(values[0]), float(values[1])))
        return cls(by=by, steps=tuple(steps))

    def to_record(self) -> dict[str, Any]:
        return {"by": self.by, "steps": [list(step) for step in self.steps]}

    def measure(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """The call's measure: its messages' characters, or tokens estimated from them."""
        chars = sum(len(m["content"]) for m in messages if isinstance(m.get("content"), str))
        return chars if self.by == "prompt_chars" else -(-chars // 4)

    def size(self, messages: Sequence[Mapping[str, Any]]) -> float | None:
        """The size of a call with `messages` (None: beyond the rule's last step)."""
        value = self.measure(messages)
        for bound, n in self.steps:
            if value <= bound:
                return n
        return None
