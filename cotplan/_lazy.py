"""Public names that load on first use (PEP 562), for a package's `__init__`.

    __getattr__, __dir__ = lazy_names(__name__, _PUBLIC, __all__)

`_PUBLIC` maps each name to the module that defines it. The first `package.NAME` (or
`from package import NAME`) imports that module and keeps the value in the package, so later
lookups are plain attribute reads. A public name must not also be a submodule's name: the
import system would set the submodule there the first time it is imported.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, public: Mapping[str, str], names: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module-level `__getattr__` and `__dir__`."""

    def getattr_(name: str) -> Any:
        module = public.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return getattr_, dir_
