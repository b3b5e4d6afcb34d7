"""Lab weights that ship with cotplan: trained once, loaded instead of training again.

The trained weights of the presets cotplan uses by default live in the package folder
``cotplan/research/lab/reasoning/weights/`` as ``<family>-<preset>.pt`` (the state dict) beside
``<family>-<preset>.json``: the store key of the settings they were trained with (a hash of
every training setting, the data format and the vocabulary, as in `cotplan.research.lab.store`),
those settings, the SHA-256 of the ``.pt`` file and what training measured.

`shipped_state(settings, preset)` returns the state dict when a file for the family and preset
exists and still fits:

- its key differs from the key of today's settings (the code, data format or vocabulary moved
  on since it was trained): the file is **stale**; a `StaleWeightsWarning` says so and None is
  returned, so `load_or_train` falls back to the user folder or trains;
- its bytes do not match the recorded SHA-256: the file is damaged, a `ModelFileError`;
- the settings ask for another training seed than the file's (the files are seed 0's): not
  stale, another model; None is returned without a warning.

`ship(model, preset, folder)` writes the pair (``cotplan kstar-lab train --export DIR``).
"""

from __future__ import annotations

import hashlib
import io
import json
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

from cotplan.errors import InputError, ModelFileError
from cotplan.io import write_bytes, write_text
from cotplan.research.lab._torch import require_torch

__all__ = [
    "ShippedWeights",
    "StaleWeightsWarning",
    "ship",
    "shipped_dir",
    "shipped_state",
    "shipped_weights",
]


class StaleWeightsWarning(UserWarning):
    """Shipped weights were trained with other settings than today's: they are not used."""


def shipped_dir() -> Path:
    """The package folder of the shipped weights."""
    return Path(str(resources.files("cotplan.research.lab.reasoning").joinpath("weights")))


class ShippedWeights:
    """One shipped model's record: its files, key, settings and training measurements."""

    def __init__(self, weights: Path, record: dict[str, Any]) -> None:
        self.weights = weights
        self.record = record

    @property
    def key(self) -> str:
        return str(self.record.get("key", ""))

    @property
    def sha256(self) -> str:
        return str(self.record.get("sha256", ""))

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.record.get("settings", {}))

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self.record.get("meta", {}))


def _stem(family: str, preset: str) -> str:
    return f"{family}-{preset}"


def shipped_weights(family: str, preset: str, folder: Path | None = None) -> ShippedWeights | None:
    """The record of `family`'s shipped `preset` weights, or None when none ship."""
    root = folder or shipped_dir()
    record_path = root / f"{_stem(family, preset)}.json"
    if not record_path.is_file():
        return None
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"cannot read {record_path.name}: {exc}") from exc
    return ShippedWeights(root / f"{_stem(family, preset)}.pt", record)


def shipped_state(
    settings: Any, preset: str, folder: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(state dict, training meta) of the shipped weights for `settings` (a `TrainSettings`
    built from `preset`), or None when none ship or they are stale (with a warning)."""
    from cotplan.research.lab.store import model_key

    shipped = shipped_weights(settings.family, preset, folder)
    if shipped is None or settings.seed != shipped.settings.get("seed", 0):
        return None
    key = model_key(settings.to_dict())
    if shipped.key != key:
        warnings.warn(
            f"the shipped {settings.family} {preset!r} weights were trained with other settings "
            f"(key {shipped.key[:12]}, today's {key[:12]}): not used; the model is loaded from "
            "the user folder or trained",
            StaleWeightsWarning,
            stacklevel=3,
        )
        return None
    try:
        blob = shipped.weights.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read {shipped.weights.name}: {exc}") from exc
    digest = hashlib.sha256(blob).hexdigest()
    if digest != shipped.sha256:
        raise ModelFileError(
            f"{shipped.weights.name} fails its checksum (SHA-256 {digest[:12]}…, recorded "
            f"{shipped.sha256[:12]}…): the file is damaged; reinstall cotplan"
        )
    torch = require_torch()
    try:
        state = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
    except (ValueError, RuntimeError) as exc:  # pragma: no cover - checksum passed
        raise ModelFileError(f"cannot load {shipped.weights.name}: {exc}") from exc
    return dict(state), shipped.meta


def ship(model: Any, preset: str, folder: Path | None = None) -> Path:
    """Write `model` (a `LabReasoningModel` trained with `preset`) as shipped weights into
    `folder` (default: the package folder); returns the ``.pt`` path."""
    from cotplan.research.lab.reasoning.settings import settings_for

    if not isinstance(preset, str):
        raise InputError(f"must be a preset name, got {preset!r}", field="preset")
    if model.settings.seed != 0:
        # One file per family and preset: the shipped weights are the default seed's.
        raise InputError(
            f"only seed 0's weights ship, this model has seed {model.settings.seed}", field="seed"
        )
    if settings_for(model.family, preset) != model.settings:
        raise InputError(
            f"the model was not trained with the {preset!r} preset's settings", field="preset"
        )
    torch = require_torch()
    root = folder or shipped_dir()
    buffer = io.BytesIO()
    torch.save({k: v.contiguous() for k, v in model.network.state_dict().items()}, buffer)
    blob = buffer.getvalue()
    stem = _stem(model.family, preset)
    write_bytes(root / f"{stem}.pt", blob, private=False)
    record = {
        "family": model.family,
        "preset": preset,
        "key": model.key,
        "sha256": hashlib.sha256(blob).hexdigest(),
        "torch": str(torch.__version__),
        "settings": model.settings.to_dict(),
        "meta": model.meta,
    }
    write_text(
        root / f"{stem}.json", json.dumps(record, indent=2, sort_keys=True) + "\n", private=False
    )
    return root / f"{stem}.pt"
