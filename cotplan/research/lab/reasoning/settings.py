"""What shapes a trained lab model (`TrainSettings`, its presets, `settings_for`) and what a study
measures (`StudySettings`, `STUDY_PRESETS`).

Training (`train`) and the shipped weights (`shipped`) both read these; neither imports the other
for them.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from cotplan.errors import InputError
from cotplan.research.lab.reasoning.data import Mix
from cotplan.research.lab.reasoning.tasks import get_lab_family
from cotplan.research.lab.reasoning.tokenizer import LabTokenizer, default_tokenizer
from cotplan.validation import require_int

__all__ = [
    "DATA_FORMAT",
    "FAMILY_PRESETS",
    "PRESETS",
    "STUDY_PRESETS",
    "StudySettings",
    "TrainSettings",
    "settings_for",
]

#: Bumped whenever the sequences a model is trained on change: older weights are not reused.
DATA_FORMAT = 3


@dataclass(frozen=True)
class TrainSettings:
    """Everything that shapes a trained lab model (its store key is a hash of these)."""

    family: str
    n_min: int = 1
    n_max: int = 24
    steps: int = 3000
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01
    mix: Mix = field(default_factory=Mix)
    pe: str = "rope"
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    seed: int = 0
    #: A preset of the same family whose trained weights training starts from ("" = random):
    #: the curriculum that lets a wide model extend a standard one instead of starting over.
    init: str = ""
    #: Every batch draws one size (less padding: a mixed batch is padded to its longest row).
    bucket: bool = False

    def __post_init__(self) -> None:
        info = get_lab_family(self.family)
        object.__setattr__(self, "family", info.name)
        for name in ("n_min", "n_max", "steps", "batch_size", "warmup", "seed"):
            value = getattr(self, name)
            low = 0 if name in ("warmup", "seed") else 1
            # Stored as a plain int: the settings' store key is a hash of their JSON.
            object.__setattr__(self, name, require_int(value, name, low=low))
        if not info.n_min <= self.n_min <= self.n_max <= info.n_max:
            raise InputError(
                f"must satisfy {info.n_min} ≤ n_min ≤ n_max ≤ {info.n_max}, got "
                f"{self.n_min}..{self.n_max}",
                field="n_max",
            )
        if self.init and self.init not in PRESETS:
            raise InputError(
                f"unknown preset {self.init!r}; choose from {', '.join(PRESETS)}", field="init"
            )
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise InputError(f"must be a positive number, got {self.lr!r}", field="lr")

    @property
    def max_len(self) -> int:
        # <bos>, header, start cup, 2n labelled inputs, Reasoning:, the trace, Answer:, answer.
        return 2 * self.n_max + 8 + get_lab_family(self.family).max_trace(self.n_max)

    def model_config(self, tokenizer: LabTokenizer) -> Any:
        from cotplan.research.lab.transformer import TransformerConfig

        return TransformerConfig(
            vocab_size=tokenizer.vocab_size,
            max_len=self.max_len,
            pe=self.pe,  # type: ignore[arg-type]
            attend_to="states",
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_ff=self.d_ff,
        )

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        # Settings added after weights shipped enter the key only when set, so the keys of the
        # presets that do not use them (and their shipped files) stay as they were.
        for name in ("init", "bucket"):
            if not data[name]:
                del data[name]
        data["format"] = DATA_FORMAT
        data["vocab"] = default_tokenizer().fingerprint
        return data

    def replace(self, **changes: Any) -> TrainSettings:
        return dataclasses.replace(self, **changes)


#: Training presets by name; `load_or_train(family, preset)` fills in the family.
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {"n_min": 2, "n_max": 5, "steps": 600, "batch_size": 32, "d_model": 32, "d_ff": 128},
    "quick": {"n_min": 1, "n_max": 8, "steps": 1500, "batch_size": 32},
    "standard": {"n_min": 1, "n_max": 16, "steps": 4000, "batch_size": 32},
    # Sizes where the theorem's domain ε ∈ [max(n^−1/4, 1/V), 1/2] is wider than a point
    # (n > 16): only families that allow n = 64 (the lamp). It starts from the standard model
    # (a curriculum: sizes 1-16 first, then 1-64) and draws one size per batch. It writes its
    # trace exactly up to n = 32; beyond, it goes wrong at particular position labels ([35]
    # first, whatever n). From random weights, 3,000 steps did not learn n = 64; from the
    # standard model 3,500, 12,000 and 20,000 steps did not either (docs/lab-reasoning.md).
    "wide": {
        "n_min": 1,
        "n_max": 64,
        "steps": 12000,
        "batch_size": 32,
        "lr": 2e-3,
        "init": "standard",
        "bucket": True,
    },
    # The lamp solved to n = 64, by a curriculum whose stages move their sizes up and then mix
    # every size back in. A size drawn uniformly from 1-64 shows a late label such as [60] in
    # few batches, and the wall where traces go wrong moved up with each stage that drew only
    # late sizes: step 35 after "wide", 57-61 after "wide-late", none at n = 64 after
    # "wide-top". Those two stages forget how to answer at small n; "long" mixes it back.
    # Only "long" ships; training it trains the stages it starts from when they are missing.
    "wide-late": {
        "n_min": 33,
        "n_max": 64,
        "steps": 10000,
        "batch_size": 32,
        "lr": 2e-3,
        "init": "wide",
        "bucket": True,
    },
    "wide-top": {
        "n_min": 49,
        "n_max": 64,
        "steps": 6000,
        "batch_size": 32,
        "lr": 2e-3,
        "init": "wide-late",
        "bucket": True,
    },
    "long": {
        "n_min": 1,
        "n_max": 64,
        "steps": 3000,
        "batch_size": 32,
        "lr": 5e-4,
        "init": "wide-top",
        "bucket": True,
    },
}

#: Where a family's preset departs from `PRESETS`: a family that needs other sizes or more
#: steps keeps the preset's name.
FAMILY_PRESETS: dict[tuple[str, str], dict[str, Any]] = {
    # The blocks trace has ceil(n / ceil(√n)) steps: sizes to 25 give 1 to 5 steps, so k* can
    # be read over n = 9 to 25 (3 to 5 steps). Its steps count a block's ones, which took
    # longer to learn than a per-input step: in trial runs, 3,000 steps on sizes 1-36 wrote
    # the trace exactly 0.56 of the time at n = 4 and 0.05 at n = 36 (the blocks' counts were
    # the wrong tokens), 6,000 on sizes 1-25 solved n ≤ 9 but not 16 (docs/lab-reasoning.md).
    ("lab-blocks", "standard"): {
        "n_min": 1,
        "n_max": 25,
        "steps": 15000,
        "batch_size": 32,
        "bucket": True,
    },
}


def settings_for(
    family: str, preset: str | TrainSettings = "standard", *, seed: int | None = None
) -> TrainSettings:
    """The `TrainSettings` of a preset name (or the settings themselves, checked).

    `seed` is the training seed (`TrainSettings.seed`); None keeps the preset's (0) or the
    settings' own. It is part of the store key, so each seed's model is stored apart, and a
    curriculum preset trains its start stage with the same seed (`train.load_or_train`).
    """
    if seed is not None:
        seed = require_int(seed, "seed", low=0)
    if isinstance(preset, TrainSettings):
        if get_lab_family(family).name != preset.family:
            raise InputError(f"settings are for {preset.family}, not {family}", field="settings")
        return preset if seed is None or seed == preset.seed else preset.replace(seed=seed)
    if preset not in PRESETS:
        raise InputError(
            f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}", field="preset"
        )
    name = get_lab_family(family).name
    values = {**PRESETS[preset], **FAMILY_PRESETS.get((name, preset), {})}
    if seed is not None:
        values["seed"] = seed
    return TrainSettings(family=name, **values)


@dataclass(frozen=True)
class StudySettings:
    """What one study measures. `train` is a training preset name or `TrainSettings`."""

    sizes: tuple[int, ...] = (4, 6, 8, 12, 16)
    items: int = 120
    held_out: int = 40
    eps: float = 0.1
    eps_grid: tuple[float, ...] = (0.3, 0.2, 0.1, 0.05)
    caps: tuple[int, ...] = (8, 16, 32)
    max_points: int = 60
    n_bootstrap: int = 200
    train: str | TrainSettings = "standard"
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.sizes or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.sizes
        ):
            raise InputError(f"must be positive integers, got {self.sizes!r}", field="sizes")
        for name in ("items", "held_out", "max_points"):
            require_int(getattr(self, name), name, low=1)
        for eps in (self.eps, *self.eps_grid):
            if not 0 < eps < 1:
                raise InputError(f"targets must be in (0, 1), got {eps!r}", field="eps")


#: Study presets: "tiny" (seconds; tests and the notebook's quick run), "quick" (a minute or
#: two), "standard" (the numbers in docs/lab.md).
STUDY_PRESETS: dict[str, StudySettings] = {
    "tiny": StudySettings(
        sizes=(3, 4, 5),
        items=16,
        held_out=12,
        eps=0.1,
        caps=(6, 12),
        n_bootstrap=40,
        train="tiny",
    ),
    "quick": StudySettings(
        sizes=(4, 6, 8), items=48, held_out=24, caps=(6, 12, 24), n_bootstrap=100, train="quick"
    ),
    "standard": StudySettings(),
}
