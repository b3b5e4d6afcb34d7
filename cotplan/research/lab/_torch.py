"""The lab's one door to torch: a clear cotplan error when the `lab` extra is missing."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from cotplan.errors import ConfigError

__all__ = ["require_torch", "torch_available"]

_INSTALL_HINT = "pip install 'cotplan[lab]' (torch 2.13.0, CPU build)"


def torch_available() -> bool:
    """Whether the `lab` extra (torch) is installed."""
    return importlib.util.find_spec("torch") is not None


def require_torch() -> ModuleType:
    """The torch module, or a `ConfigError` that says how to install it."""
    if not torch_available():
        raise ConfigError(f"the lab needs torch: {_INSTALL_HINT}")
    import torch

    return torch
