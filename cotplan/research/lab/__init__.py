"""The lab: small transformers trained on CPU, where the mechanism is known.

Needs the `lab` extra (``pip install 'cotplan[lab]'``, torch 2.13.0 CPU build). Importing
`cotplan.research.lab` does not import torch: the names below load their module on first use.

- `cotplan.research.lab.transformer`: a decoder-only transformer whose only switch is the positional
  encoding (none, learned, sinusoidal, rope, alibi).
- `cotplan.research.lab.store`: trained weights and their config in the cotplan user folder, keyed
  by everything that shaped them, so the next use loads instead of training.
- The positional-encoding lab (docs/lab.md): `train` a model on Beta-Bernoulli sequences,
  use it as a `Predictor` in every experiment, and run `pe_ablation` over the encodings.
- `cotplan.research.lab.reasoning`: lab reasoning models where a scratchpad is necessary, served as
  a `Backend` (``connect("lab:parity")``) to test the k* law (docs/lab-reasoning.md).
"""

from __future__ import annotations

import importlib
from typing import Any

from cotplan.backends.base import Backend
from cotplan.backends.registry import ConnectRequest, register_provider
from cotplan.research.experiments.predictors import Predictor
from cotplan.research.experiments.specs import PredictorRequest, register_predictor
from cotplan.research.lab._torch import require_torch, torch_available

_LAZY = {
    "train": "pe_trainer",
    "LabModel": "pe_trainer",
    "PETrainSettings": "pe_trainer",
    "TrainSettings": "pe_trainer",
    "TrainReport": "pe_trainer",
    "EvalPoint": "pe_trainer",
    "PE_LAB_PRESETS": "pe_trainer",
    "bayes_loss_curve": "pe_trainer",
    "from_spec": "pe_trainer",
    "default_threads": "pe_trainer",
    "torch_threads": "pe_trainer",
    "TransformerPredictor": "predictor",
    "BOS": "predictor",
    "pe_ablation": "ablation",
    "PEAblationResult": "ablation",
    "ABLATION_PRESETS": "ablation",
    "Variant": "ablation",
    "V2_NAMES": "ablation",
    "TinyTransformer": "transformer",
    "TransformerConfig": "transformer",
    "POSITIONAL_ENCODINGS": "transformer",
}

__all__ = [
    "ABLATION_PRESETS",
    "BOS",
    "PE_LAB_PRESETS",
    "POSITIONAL_ENCODINGS",
    "V2_NAMES",
    "EvalPoint",
    "LabModel",
    "PEAblationResult",
    "PETrainSettings",
    "TinyTransformer",
    "TrainReport",
    "TrainSettings",
    "TransformerConfig",
    "TransformerPredictor",
    "Variant",
    "bayes_loss_curve",
    "default_threads",
    "from_spec",
    "pe_ablation",
    "require_torch",
    "torch_available",
    "torch_threads",
    "train",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cotplan.research.lab' has no attribute {name!r}")
    require_torch()
    value = getattr(importlib.import_module(f"cotplan.research.lab.{module}"), name)
    globals()[name] = value
    return value


def _lab_provider(request: ConnectRequest) -> Backend:
    """``connect("lab:FAMILY")``: the lab registers its reasoning models as a provider."""
    from cotplan.research.lab.reasoning.backend import lab_backend  # lazy: imports torch

    return lab_backend(request.name, **request.options)


register_provider("lab", _lab_provider, usage="lab:FAMILY")


def _pe_predictor(request: PredictorRequest) -> Predictor:
    """``open_predictor("pe:PE[:states][:quick]")``: a positional-encoding lab model (trained on
    first use, then loaded), with a progress stage for its training steps."""
    require_torch()
    from cotplan.research.lab.pe_trainer import PE_LAB_PRESETS, from_spec

    preset = "quick" if ":quick" in request.spec.lower() else "full"
    steps = int(PE_LAB_PRESETS[preset]["steps"])
    progress = request.stage(f"train {request.spec}", steps) if request.stage else None
    return from_spec(request.spec, progress=progress)


register_predictor("pe", _pe_predictor, usage="pe:PE[:states|:tokens][:quick|:full]")
