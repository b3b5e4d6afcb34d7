"""CITATION.cff and the BibTeX in docs/experiments.md name cotplan's version and the paper."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_citation_file_names_cotplan_and_the_paper() -> None:
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert (cff["title"], cff["type"], cff["license"]) == ("cotplan", "software", "Apache-2.0")
    assert str(cff["version"]) == _version()
    assert cff["authors"]
    (paper,) = cff["references"]
    assert paper["title"] == "LLMs are Bayesian, in Expectation, not in Realization"
    assert paper["authors"][0]["family-names"] == "Chlon"
    assert "2507.11768" in paper["url"]
    assert {i["value"] for i in paper["identifiers"]} >= {"10.48550/arXiv.2507.11768"}


def test_the_docs_bibtex_matches_the_citation_file() -> None:
    text = (ROOT / "docs" / "experiments.md").read_text()
    block = re.search(r"```bibtex\n(.*?)```", text, re.S)
    assert block is not None
    bib = block.group(1)
    assert re.search(r"@software\{cotplan,", bib)
    assert re.search(r"version\s*=\s*\{" + re.escape(_version()) + r"\}", bib)
    assert re.search(r"@misc\{chlon2025bayesian,", bib)
    assert re.search(r"eprint\s*=\s*\{2507\.11768\}", bib)
