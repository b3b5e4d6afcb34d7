"""The house's own rules that no linter checks: what one module may take from another.

A name with a leading underscore is its module's own business. Code that another module needs
is public in its module (or moved), so that reading a module tells what the rest of the package
relies on.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cotplan

PACKAGE = Path(cotplan.__file__).parent


def test_no_module_imports_another_modules_underscore_names() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cotplan"):
                found += [
                    f"{path.relative_to(PACKAGE.parent)}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert found == [], "make these public in their module, or move the code:\n" + "\n".join(found)
