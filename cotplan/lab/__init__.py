"""The lab: small transformers trained on CPU, where the mechanism is known.

Needs the `lab` extra (``pip install 'cotplan[lab]'``, torch 2.13.0 CPU build). Importing
`cotplan.lab` does not import torch; the modules below do.

- `cotplan.lab.transformer`: a decoder-only transformer whose only switch is the positional
  encoding (none, learned, sinusoidal, rope, alibi).
- `cotplan.lab.store`: trained weights and their config in the cotplan user folder, keyed by
  everything that shaped them, so the next use loads instead of training.
"""

from __future__ import annotations

from cotplan.lab._torch import require_torch, torch_available

__all__ = ["require_torch", "torch_available"]
