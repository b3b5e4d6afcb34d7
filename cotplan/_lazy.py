"""A package face whose public names are written once, and load on first use (PEP 562).

    if TYPE_CHECKING:
        from cotplan.backends.base import Backend, Usage
        ...
    __getattr__, __dir__, __all__ = lazy_face(__name__, __file__)

The `if TYPE_CHECKING:` block of the package's `__init__.py` lists `from MODULE import NAME`
lines: type checkers and editors read them as the package's interface (mypy is told that these
imports are re-exports), and `lazy_face` reads the same lines from the source to learn which
module defines each name, so that the list is not written again as a mapping and an `__all__`
(the idea of Scientific Python's SPEC 1 lazy loading, without a separate stub file). The first
`package.NAME` (or `from package import NAME`) imports that module and keeps the value in the
package, so later lookups are plain attribute reads and `import package` pays for none of them
(openai, scipy and pandas load only when a name that needs them is used). A public name must not
also be a submodule's name: the import system would set the submodule there the first time it is
imported.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["face_names", "lazy_face"]


def face_names(init_file: Path) -> dict[str, str]:
    """Each name imported under `if TYPE_CHECKING:` in a package's `__init__.py` -> its module."""
    tree = ast.parse(init_file.read_text(encoding="utf-8"), filename=str(init_file))
    names: dict[str, str] = {}
    for block in tree.body:
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING":
            for node in block.body:
                if isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        names[alias.asname or alias.name] = node.module
    return names


def lazy_face(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The package's module-level `__getattr__`, `__dir__` and `__all__`, from its face."""
    public = face_names(Path(init_file))
    names = sorted(public)

    def getattr_(name: str) -> Any:
        module = public.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return getattr_, dir_, names
