"""The public surface: every exported name exists, every module declares `__all__`, and the
package imports without pulling in the slow chart library."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import cotplan


def test_every_exported_name_exists() -> None:
    missing = [name for name in cotplan.__all__ if not hasattr(cotplan, name)]
    assert missing == []
    assert len(set(cotplan.__all__)) == len(cotplan.__all__)


def test_every_module_declares_all() -> None:
    undeclared = []
    for module in pkgutil.walk_packages(cotplan.__path__, "cotplan."):
        if module.name.endswith("__main__") or module.name.endswith("._serve"):
            continue
        loaded = importlib.import_module(module.name)
        if not hasattr(loaded, "__all__"):
            undeclared.append(module.name)
    assert undeclared == []


def test_importing_cotplan_does_not_import_altair() -> None:
    # altair takes seconds to import; charts load it only when drawn.
    code = "import sys, cotplan; print('altair' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
