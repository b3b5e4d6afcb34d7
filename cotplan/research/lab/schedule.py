"""The learning-rate schedule every lab model trains with (no torch needed)."""

from __future__ import annotations

import math

__all__ = ["warmup_cosine"]


def warmup_cosine(step: int, *, warmup: int, steps: int, floor: float) -> float:
    """Factor on the peak rate: linear warm-up over `warmup` steps, then cosine decay to
    `floor` at `steps` (and `floor` after)."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))
