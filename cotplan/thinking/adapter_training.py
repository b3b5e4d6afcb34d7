"""`train_thinking`: the embedded thinking model's adapter trained as `cotplan models
train-thinking` trains it, in one call: the options checked (before torch loads), the preset's
settings with the given ones over them, training, and installing the result when asked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cotplan.errors import InputError
from cotplan.validation import require_choice, require_int, require_positive

__all__ = ["ThinkingTraining", "thinking_settings", "train_thinking"]


@dataclass(frozen=True)
class ThinkingTraining:
    """The training's report (`TrainReport`) and where the adapter was installed (or None)."""

    report: Any
    installed: Path | None = None


def _rechecks(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    if not (low.isdigit() and high.isdigit() and 0 <= int(low) <= int(high)):
        raise InputError(f"must read FEWEST-MOST, e.g. 2-3, got {text!r}", field="rechecks")
    return int(low), int(high)


def thinking_settings(
    preset: str = "short",
    *,
    seed: int = 0,
    examples: int | None = None,
    learning_rate: float | None = None,
    rechecks: str = "1-3",
) -> Any:
    """The `ThinkingSettings` of `preset` with the given values over its own; `rechecks` is
    FEWEST-MOST, the re-checks after the settled answer."""
    from cotplan.thinking.data import PRESETS, ThinkingSettings

    require_choice(preset, "preset", PRESETS)
    chosen: dict[str, Any] = {**PRESETS[preset], "seed": seed}
    if learning_rate is not None:
        chosen["learning_rate"] = learning_rate
    chosen["rechecks"] = _rechecks(rechecks)
    if examples is not None:
        chosen["examples"] = examples
    return ThinkingSettings(**chosen)


def train_thinking(
    out: Path,
    *,
    preset: str = "short",
    examples: int | None = None,
    seed: int = 0,
    max_seconds: float | None = None,
    resume: Path | None = None,
    learning_rate: float | None = None,
    rechecks: str = "1-3",
    install: bool = False,
    checkpoint_every: int | None = None,
    device: str = "cpu",
    log: Callable[[str], None] = print,
) -> ThinkingTraining:
    """Train the adapter of `preset` ('short', 'long', or the long adapter's later stages
    'long-focus' and 'long-curriculum', from `resume`) into `out` on `device` ('cpu', 'cuda'
    or 'auto'); `install` also makes it the shipped adapter."""
    from cotplan.thinking.data import PRESETS, RESUMING_PRESETS
    from cotplan.thinking.train import check_device, check_out, install_adapter, train_adapter

    require_choice(preset, "preset", PRESETS)
    if checkpoint_every is not None:
        require_int(checkpoint_every, "checkpoint_every", low=1)
    _rechecks(rechecks)
    if preset in RESUMING_PRESETS and resume is None:
        raise InputError(
            f"the {preset!r} stage trains further an earlier long adapter: give --resume DIR",
            field="resume",
        )
    if resume is not None and not (resume / "peft").is_dir():
        raise InputError(f"no trained adapter (peft/) in {resume}", field="resume")
    if max_seconds is not None:
        require_positive(max_seconds, "max_seconds")
    check_out(out)
    device = check_device(device)
    settings = thinking_settings(preset, seed=seed, examples=examples,
                                 learning_rate=learning_rate, rechecks=rechecks)  # fmt: skip
    report = train_adapter(settings, out, log=log, max_seconds=max_seconds, resume=resume,
                           checkpoint_every=checkpoint_every, device=device)  # fmt: skip
    if not install:
        return ThinkingTraining(report)
    earlier = (resume,) if resume is not None else ()
    name = "thinking-long" if preset.startswith("long") else "thinking"
    return ThinkingTraining(report, install_adapter(out, earlier, adapter=name))
