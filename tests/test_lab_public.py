"""`cotplan.research.lab` exports the lab's names lazily: importing it does not import torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

import cotplan.research.lab


def test_importing_the_lab_does_not_import_torch() -> None:
    code = "import sys, cotplan, cotplan.research.lab, cotplan.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", cotplan.research.lab.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    pytest.importorskip("torch")
    assert getattr(cotplan.research.lab, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = cotplan.research.lab.nope  # type: ignore[attr-defined]
