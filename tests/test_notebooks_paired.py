"""Each notebook is kept twice: a jupytext percent `.py` (what reviews read) and its `.ipynb`
(what JupyterLab and CI run). They must hold the same cells."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SOURCES = sorted(NOTEBOOKS.glob("*.py"))


def test_there_are_notebooks() -> None:
    assert len(SOURCES) >= 1


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_ipynb_matches_its_percent_source(source: Path) -> None:
    paired = source.with_suffix(".ipynb")
    assert paired.exists(), f"run: .venv/bin/jupytext --to ipynb {source}"
    expected = [(c.cell_type, c.source) for c in jupytext.read(source).cells]
    actual = [(c.cell_type, c.source) for c in nbformat.read(paired, as_version=4).cells]
    assert actual == expected, f"out of sync: .venv/bin/jupytext --to ipynb {source}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_notebook_has_a_parameters_cell(source: Path) -> None:
    cells = jupytext.read(source).cells
    assert any("parameters" in c.metadata.get("tags", []) for c in cells)
