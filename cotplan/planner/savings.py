"""What a plan's caps save, read off its own calibration (before any held-out run).

For each calibrated size with a cap, the calibration answered at a grid of budgets up to its
largest, `top`. Under the cap a call spends at most what the calibration spent at the
smallest calibrated budget at or above the cap (`at`): the saving against always allowing
`top` is measured there, so it is a lower bound of the saving (a cap between two grid points
spends no more than the grid point above it). Where the calibration records no reasoning
token counts, the budgets themselves stand in (a cap bounds what is spent, so the share is
again a bound). `cotplan run` measures the saving on held-out items against a stated
uncapped budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

__all__ = ["CalibrationSavings", "calibration_savings"]


@dataclass(frozen=True)
class CalibrationSavings:
    """The caps' saving in calibration: per size (`rows`) and over all capped sizes, each size
    weighted equally (`share`: 1 − spend under the caps / spend at the largest budgets).

    `measured` is True when the calibration recorded reasoning tokens (else the budgets stand
    in for them). `accuracy_at` / `accuracy_top` are the mean accuracies at the two budgets.
    """

    share: float
    tokens_at: float
    tokens_top: float
    accuracy_at: float
    accuracy_top: float
    measured: bool
    rows: tuple[dict[str, float], ...]

    @property
    def sentence(self) -> str:
        """The saving in one sentence."""
        if not self.rows:
            return "no calibrated size has a cap to compare"
        tops = sorted({int(r["top"]) for r in self.rows})
        top = ", ".join(map(str, tops))
        if not self.share > 0:
            return (
                "none in calibration: the caps allow as much as the largest calibrated "
                f"budget (k = {top})"
            )
        if not self.measured:
            return (
                f"the caps allow {self.tokens_at:.0f} reasoning tokens a query where the largest "
                f"calibrated budget allows {self.tokens_top:.0f} ({self.share:.0%} less; the "
                "calibration recorded no token counts to measure the spend)"
            )
        return (
            f"at least {self.share:.0%} of the reasoning tokens spent at the largest "
            f"calibrated budget (k = {top}): {self.tokens_at:.0f} instead of "
            f"{self.tokens_top:.0f} a query, accuracy {self.accuracy_at:.2f} instead of "
            f"{self.accuracy_top:.2f} (in calibration)"
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per capped size: n, cap, at, top, tokens_at, tokens_top, accuracy_at,
        accuracy_top."""
        return pd.DataFrame(list(self.rows))


def calibration_savings(frame: pd.DataFrame, caps: Mapping[int, int]) -> CalibrationSavings | None:
    """The saving of `caps` (size → cap in tokens) measured on a calibration frame (columns
    n, k, correct, and reasoning_tokens where recorded); None when no capped size was
    calibrated."""
    measured = "reasoning_tokens" in frame.columns and frame["reasoning_tokens"].notna().any()
    rows: list[dict[str, float]] = []
    for n, cap in sorted(caps.items()):
        at_size = frame[frame["n"] == n]
        if at_size.empty:
            continue
        budgets = sorted(int(k) for k in at_size["k"].unique())
        top = budgets[-1]
        at = next((k for k in budgets if k >= cap), top)

        def spent(k: int, rows_at: pd.DataFrame = at_size) -> float:
            chosen = rows_at[rows_at["k"] == k]
            if measured:
                return float(chosen["reasoning_tokens"].mean())
            return float(k)

        def accuracy(k: int, rows_at: pd.DataFrame = at_size) -> float:
            return float(rows_at[rows_at["k"] == k]["correct"].astype(float).mean())

        rows.append(
            {
                "n": float(n),
                "cap": float(cap),
                "at": float(at),
                "top": float(top),
                "tokens_at": spent(at) if measured else float(min(cap, top)),
                "tokens_top": spent(top),
                "accuracy_at": accuracy(at),
                "accuracy_top": accuracy(top),
            }
        )
    if not rows:
        return None
    table = pd.DataFrame(rows)
    tokens_top = float(table["tokens_top"].mean())
    tokens_at = float(table["tokens_at"].mean())
    share = 1 - tokens_at / tokens_top if tokens_top > 0 else math.nan
    return CalibrationSavings(
        share=max(share, 0.0) if math.isfinite(share) else share,
        tokens_at=tokens_at,
        tokens_top=tokens_top,
        accuracy_at=float(table["accuracy_at"].mean()),
        accuracy_top=float(table["accuracy_top"].mean()),
        measured=bool(measured),
        rows=tuple(rows),
    )
