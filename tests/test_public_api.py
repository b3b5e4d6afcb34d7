"""The public surface: every exported name exists, every module declares `__all__`, and the
package imports without pulling in the slow chart library."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

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
        spec = importlib.util.find_spec(module.name)
        assert spec is not None, module.name
        assert spec.origin is not None, module.name
        # Read, not imported: the lab's torch modules count too where torch is not loaded.
        tree = ast.parse(Path(spec.origin).read_text())
        assigned = {
            name.id
            for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            # a package face assigns `__getattr__, __dir__, __all__` at once (cotplan._lazy)
            for name in (target.elts if isinstance(target, ast.Tuple) else [target])
            if isinstance(name, ast.Name)
        }
        if "__all__" not in assigned:
            undeclared.append(module.name)
    assert undeclared == []


def test_every_module_imports() -> None:
    torch_missing = importlib.util.find_spec("torch") is None
    for module in pkgutil.walk_packages(cotplan.__path__, "cotplan."):
        if module.name.endswith("__main__") or module.name.endswith("._serve"):
            continue
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as exc:
            # Without the lab extra (or in a --fast run, see conftest.py) the lab's torch
            # modules cannot load; everything else must.
            if exc.name != "torch" or not (torch_missing or "--fast" in exc.msg):
                raise


def test_importing_cotplan_does_not_import_altair() -> None:
    # altair takes seconds to import; charts load it only when drawn.
    code = "import sys, cotplan; print('altair' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_commands_start_without_the_clients_and_the_statistics() -> None:
    # Each of these takes a second or more to import; a bad option (and `import cotplan`) must
    # not wait for them. The public names load them on first use.
    code = (
        "import sys, cotplan, cotplan.cli\n"
        "heavy = ('openai', 'scipy', 'altair', 'torch')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "cotplan.BudgetPlanner\n"
        "print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.split("\n")
    assert lines[0] == "[]", f"imported at start: {lines[0]}"
    assert lines[1] == "True"  # the lazy name still gives the real class, with what it needs


def test_every_public_name_resolves_to_what_its_module_defines() -> None:
    import importlib

    import cotplan
    import cotplan.backends
    import cotplan.research.experiments
    from cotplan._lazy import face_names

    for package in (cotplan, cotplan.backends, cotplan.research.experiments):
        public = face_names(Path(package.__file__ or ""))
        assert public, package.__name__
        assert package.__all__ == sorted(public)  # derived from the face: each name written once
        for name in package.__all__:
            module = importlib.import_module(public[name])
            assert getattr(package, name) is getattr(module, name), f"{package.__name__}.{name}"
