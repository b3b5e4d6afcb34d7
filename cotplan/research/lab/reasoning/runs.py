"""The `cotplan kstar-lab` commands' work as library calls: every option checked first
(`prepare_*`, before a model is loaded or trained), then `.run()`. Rendering is
`cotplan.research.render`'s.

- `prepare_training`: train a family's model now (or only time a few steps), export its weights.
- `prepare_studies`: the study of `cotplan.research.lab.reasoning.study` per family.
- `prepare_law`: the law on the paper's terms (`cotplan.research.lab.reasoning.logloss`).
- `shipped_weights`: the weights that ship, one row each.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.validation import require_int

if TYPE_CHECKING:
    from cotplan.research.lab.reasoning.settings import TrainSettings

__all__ = [
    "LabStudies",
    "LabTraining",
    "LawRun",
    "TrainedLab",
    "TrainingEstimate",
    "prepare_law",
    "prepare_studies",
    "prepare_training",
    "shipped_weights",
    "study_rows",
]


def _check_threads(threads: int) -> None:
    require_int(threads, "threads", low=1, high=256)


def _set_threads(threads: int) -> None:
    from cotplan.research.lab._torch import require_torch

    require_torch().set_num_threads(max(1, threads))


def _check_folder(path: Path | None, field: str) -> None:
    """A folder to write into: no NUL byte, and neither it nor a parent is a file."""
    if path is None:
        return
    text = str(path)
    if "\x00" in text or not text.strip():
        raise InputError(f"is not a usable folder name: {text!r}", field=field)
    target = path.expanduser()
    for candidate in (target, *target.parents):
        if candidate.exists() and not candidate.is_dir():
            raise InputError(f"{candidate} is a file, not a folder", field=field)


def _parse_ints(text: str, field: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise InputError(
            f"must be whole numbers separated by commas, got {text!r}", field=field
        ) from exc
    if not values or any(v < 1 for v in values):
        raise InputError(f"must be whole numbers ≥ 1, got {text!r}", field=field)
    return values


def _trained_sizes(text: str, settings: TrainSettings, field: str) -> list[int]:
    """Sizes parsed from `text` that the model trained with `settings` was trained on."""
    sizes = _parse_ints(text, field)
    outside = [n for n in sizes if not settings.n_min <= n <= settings.n_max]
    if outside:
        raise InputError(
            f"sizes {outside} are outside what this preset's model is trained on "
            f"({settings.n_min}..{settings.n_max})",
            field=field,
        )
    return sizes


def _parse_eps(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise InputError(f"must be numbers separated by commas, got {text!r}", field="eps") from exc
    if not values or any(not 0 < v < 1 for v in values):
        raise InputError(f"targets must be in (0, 1), got {text!r}", field="eps")
    return values


@dataclass(frozen=True)
class TrainingEstimate:
    """How long training would take: `per_step` seconds over `steps` timed steps."""

    settings: Any
    preset: str
    threads: int
    steps: int
    per_step: float


@dataclass(frozen=True)
class TrainedLab:
    """A model trained now, where its weights were exported (or None), and the seconds taken."""

    model: Any
    exported: Path | None
    seconds: float


@dataclass(frozen=True)
class LabTraining:
    """Training of one family's model, its options checked."""

    settings: Any
    preset: str
    seed: int = 0
    threads: int = 1
    export: Path | None = None
    estimate: int = 0
    check_sizes: tuple[int, ...] | None = None

    def run(
        self, progress: Callable[[int, float], None] | None = None
    ) -> TrainingEstimate | TrainedLab:
        """Train (saved in the user folder; `progress(step, loss)` as it goes), or only time
        `estimate` steps."""
        from cotplan.research.lab.reasoning.shipped import ship
        from cotplan.research.lab.reasoning.train import load_or_train, time_training

        _set_threads(self.threads)
        started = time.perf_counter()
        if self.estimate:
            per_step = time_training(self.settings, self.estimate)
            return TrainingEstimate(self.settings, self.preset, self.threads, self.estimate,
                                    per_step)  # fmt: skip
        checks = None if self.check_sizes is None else list(self.check_sizes)
        model = load_or_train(self.settings.family, self.preset, seed=self.seed, retrain=True,
                              progress=progress, check_sizes=checks)  # fmt: skip
        exported = None
        if self.export is not None:
            exported = ship(model, self.preset, self.export.expanduser())
        return TrainedLab(model, exported, time.perf_counter() - started)


def prepare_training(
    family: str,
    *,
    preset: str = "standard",
    seed: int = 0,
    threads: int = 1,
    export: Path | None = None,
    estimate: int = 0,
    check_sizes: str = "",
) -> LabTraining:
    """Training of `family`'s model at `preset` and training `seed`, every option checked:
    only seed 0's weights ship (`export`); `check_sizes` must be trained sizes."""
    from cotplan.research.lab.reasoning.train import settings_for

    settings = settings_for(family, preset, seed=seed)  # validates the family, preset, seed
    if export is not None and settings.seed != 0:
        raise InputError(f"only seed 0's weights ship; drop --export for seed {seed}", field="seed")
    checks = _trained_sizes(check_sizes, settings, "check_sizes") if check_sizes.strip() else None
    _check_threads(threads)
    _check_folder(export, "export")
    require_int(estimate, "estimate", low=0, high=10_000)
    return LabTraining(settings, preset, seed, threads, export, estimate,
                       None if checks is None else tuple(checks))  # fmt: skip


@dataclass(frozen=True)
class LabStudies:
    """The k* study of each family in `names` with its study settings, options checked."""

    names: tuple[str, ...]
    settings: dict[str, Any]
    threads: int = 1

    def studies(self) -> Iterator[Any]:
        """Each family's `LabStudy`, in turn (models trained on first use)."""
        from cotplan.research.lab.reasoning.study import reasoning_study

        _set_threads(self.threads)
        for name in self.names:
            yield reasoning_study(name, self.settings[name])


def study_rows(studies: Sequence[Any]) -> pd.DataFrame:
    """The reproduction report's rows of the studies: the k* law on lab models."""
    from cotplan.research.lab.reasoning.study import study_report_rows

    return pd.DataFrame([r.as_dict() for r in study_report_rows(studies)])


def prepare_studies(
    families: Sequence[str] | None = None,
    *,
    preset: str = "standard",
    seed: int = 0,
    threads: int = 1,
    out: Path | None = None,
) -> LabStudies:
    """The studies of `families` (default: all) at `preset`, the models at training `seed`;
    every size the preset studies must be one its model is trained on."""
    from cotplan.research.lab.reasoning.study import STUDY_PRESETS
    from cotplan.research.lab.reasoning.tasks import get_lab_family, lab_families
    from cotplan.research.lab.reasoning.train import settings_for

    names = [get_lab_family(f).name for f in (families or list(lab_families))]
    if preset not in STUDY_PRESETS:
        raise InputError(
            f"unknown preset {preset!r}; choose from {', '.join(STUDY_PRESETS)}", field="preset"
        )
    chosen = STUDY_PRESETS[preset]
    settings = {}
    for name in names:
        trained = settings_for(name, chosen.train, seed=seed)
        settings[name] = dataclasses.replace(chosen, train=trained)
        outside = [n for n in chosen.sizes if not trained.n_min <= n <= trained.n_max]
        if outside:
            raise InputError(
                f"sizes {outside} are outside what {name}'s {preset} model is trained on",
                field="preset",
            )
    _check_threads(threads)
    _check_folder(out, "out")
    return LabStudies(tuple(names), settings, threads)


@dataclass(frozen=True)
class LawRun:
    """The law on the paper's terms for one family's model, its options checked."""

    settings: Any
    preset: str
    seed: int
    sizes: tuple[int, ...]
    items: int
    eps: tuple[float, ...]
    bootstrap: int
    threads: int = 1

    def run(self) -> Any:
        """The `LogLossStudy`: B(k), its relative gap, the premise, k*(n, ε), the exponents."""
        from cotplan.research.lab.reasoning.backend import LabBackend
        from cotplan.research.lab.reasoning.logloss import logloss_study

        _set_threads(self.threads)
        backend = LabBackend.for_family(self.settings.family, self.preset, seed=self.seed)
        return logloss_study(backend, sizes=list(self.sizes), items=self.items,
                             eps_grid=list(self.eps), n_bootstrap=self.bootstrap)  # fmt: skip


def prepare_law(
    family: str,
    *,
    sizes: str = "4,8,16",
    items: int = 120,
    eps: str = "0.5,0.4,0.3,0.2,0.1,0.05",
    preset: str = "standard",
    seed: int = 0,
    bootstrap: int = 200,
    out: Path | None = None,
    threads: int = 1,
) -> LawRun:
    """The law's study of `family` at the comma-separated `sizes` and relative targets `eps`."""
    from cotplan.research.lab.reasoning.train import settings_for

    settings = settings_for(family, preset, seed=seed)
    ns = _trained_sizes(sizes, settings, "sizes")
    targets = _parse_eps(eps)
    require_int(items, "items", low=1, high=100_000)
    require_int(bootstrap, "bootstrap", low=0, high=100_000)
    _check_threads(threads)
    _check_folder(out, "out")
    return LawRun(settings, preset, seed, tuple(ns), items, tuple(targets), bootstrap, threads)


def shipped_weights() -> tuple[str, list[dict[str, Any]]]:
    """The folder of the weights that ship, and each one's record (family, preset, key,
    sha256, meta) with ``fits``: whether it still fits the code that trains it."""
    import json

    from cotplan.research.lab.reasoning.shipped import shipped_dir, shipped_state
    from cotplan.research.lab.reasoning.train import settings_for

    records = []
    for record_path in sorted(shipped_dir().glob("*.json")):
        record = json.loads(record_path.read_text(encoding="utf-8"))
        family, preset = str(record["family"]), str(record["preset"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            record["fits"] = shipped_state(settings_for(family, preset), preset) is not None
        records.append(record)
    return shipped_dir().name, records
