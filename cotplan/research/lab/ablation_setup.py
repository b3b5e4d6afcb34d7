"""What the positional-encoding ablation compares, and its checked evaluation settings.

`ablation_variants` names the models (one per encoding, plus the ordinary decoder without one);
`plan_ablation` turns a preset and its overrides into an `AblationPlan`, checking every number
before any model trains. `cotplan.research.lab.ablation` runs the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cotplan.errors import InputError
from cotplan.research.experiments.predictors import ProgressFn
from cotplan.research.lab.pe_trainer import PE_LAB_PRESETS
from cotplan.research.lab.transformer import POSITIONAL_ENCODINGS, AttendTo

__all__ = [
    "ABLATION_PRESETS",
    "V2_NAMES",
    "AblationPlan",
    "StageFn",
    "Variant",
    "ablation_variants",
    "plan_ablation",
]

#: The v2 table's names for our encodings (`V2_ORDER_VARIANCE` keys).
V2_NAMES: dict[str, str] = {
    "none": "none",
    "learned": "learned absolute",
    "sinusoidal": "sinusoidal",
    "rope": "RoPE",
    "alibi": "ALiBi",
}

#: Evaluation settings per preset; ``train`` names the `PE_LAB_PRESETS` entry.
ABLATION_PRESETS: dict[str, dict[str, Any]] = {
    "quick": {
        "train": "quick",
        "ts": (20, 40, 60),
        "n_orderings": 200,
        "n_sequences": 20,
        "n_boot": 500,
    },
    "full": {
        "train": "full",
        "ts": (20, 50, 100, 150, 198),
        "n_orderings": 1000,
        "n_sequences": 100,
        "n_boot": 2000,
    },
}

#: Called once per stage with (stage name, units planned); returns the progress callback.
StageFn = Callable[[str, int], ProgressFn | None]


@dataclass(frozen=True)
class Variant:
    """One model of the ablation: an encoding and how attention reads the past."""

    pe: str
    attend_to: AttendTo

    @property
    def label(self) -> str:
        return self.pe if self.attend_to == "tokens" else f"{self.pe} (ordinary decoder)"


def ablation_variants(
    encodings: Sequence[str], attend_to: AttendTo, ordinary_none: bool
) -> tuple[Variant, ...]:
    """The models an ablation compares, checked: one per encoding (duplicates dropped), plus
    the ordinary decoder without an encoding when `ordinary_none` (tokens only)."""
    chosen = list(dict.fromkeys(encodings))
    if not chosen:
        raise InputError("must name at least one encoding", field="encodings")
    unknown = [pe for pe in chosen if pe not in POSITIONAL_ENCODINGS]
    if unknown:
        raise InputError(
            f"unknown {unknown}; choose from {', '.join(POSITIONAL_ENCODINGS)}", field="encodings"
        )
    if attend_to not in ("tokens", "states"):
        raise InputError(f"must be 'states' or 'tokens'; got {attend_to!r}", field="attend_to")
    out = [Variant(pe, attend_to) for pe in chosen]
    if ordinary_none and attend_to == "tokens":
        out.append(Variant("none", "states"))
    return tuple(out)


@dataclass(frozen=True)
class AblationPlan:
    """A preset with its overrides applied and checked: what to train and what to measure.

    `train_preset` names the `PE_LAB_PRESETS` entry, `steps` the training steps (for progress),
    `grid` the martingale positions (every even n from 10 up to the longest prefix, at most 198).
    """

    preset: str
    train_preset: str
    variants: tuple[Variant, ...]
    ts: tuple[int, ...]
    n_orderings: int
    n_sequences: int
    n_boot: int
    steps: int
    grid: tuple[int, ...]


def plan_ablation(
    preset: str,
    *,
    encodings: Sequence[str],
    attend_to: AttendTo,
    ordinary_none: bool,
    ts: Sequence[int] | None = None,
    n_orderings: int | None = None,
    n_sequences: int | None = None,
    n_boot: int | None = None,
    train_overrides: Mapping[str, Any],
) -> AblationPlan:
    """The `preset`'s evaluation with the given overrides, checked before anything trains."""
    if preset not in ABLATION_PRESETS:
        raise InputError(
            f"must be one of {sorted(ABLATION_PRESETS)}, got {preset!r}", field="preset"
        )
    params = dict(ABLATION_PRESETS[preset])
    chosen_ts = tuple(int(t) for t in (ts if ts is not None else params["ts"]))
    orderings = int(n_orderings if n_orderings is not None else params["n_orderings"])
    sequences = int(n_sequences if n_sequences is not None else params["n_sequences"])
    boots = int(n_boot if n_boot is not None else params["n_boot"])
    variants = ablation_variants(encodings, attend_to, ordinary_none)
    trained = PE_LAB_PRESETS[params["train"]]
    seq_len = int(train_overrides.get("seq_len", trained["seq_len"]))
    longest = seq_len - 1
    if not chosen_ts or any(t < 2 or t % 2 or t > longest for t in chosen_ts):
        raise InputError(
            f"each must be even and lie in 2..{longest} (the longest prefix the models score), "
            f"got {list(chosen_ts)}",
            field="ts",
        )
    if orderings < 3:
        raise InputError(f"must be >= 3, got {orderings}", field="n_orderings")
    if sequences < 2:
        raise InputError(f"must be >= 2, got {sequences}", field="n_sequences")
    if boots < 100:
        raise InputError(f"must be >= 100, got {boots}", field="n_boot")
    grid = tuple(range(10, min(198, longest + 1) + 1, 2))
    if len(grid) < 3:
        raise InputError(f"must be >= 14 for a martingale grid, got {seq_len}", field="seq_len")
    return AblationPlan(
        preset=preset,
        train_preset=params["train"],
        variants=variants,
        ts=chosen_ts,
        n_orderings=orderings,
        n_sequences=sequences,
        n_boot=boots,
        steps=int(train_overrides.get("steps", trained["steps"])),
        grid=grid,
    )
