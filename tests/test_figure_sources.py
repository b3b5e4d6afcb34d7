"""Every registered figure the docs quote is read back from its stored source (issue 48).

`docs/figure_sources.csv` lists, per quoted figure: the doc, the exact quote (whitespace
normalised), the stored source under benchmarks/results, an optional anchor (`after`: the source
is read from its first match on) and a regular expression whose groups are the figures. The
numbers in the quote must equal the source's, each rounded to as many decimals as the quote
prints (`scale` turns a share into a percentage). A figure edited in the doc, a source rewritten
by a new run, or a quote that no longer appears fails the suite.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "docs" / "figure_sources.csv"
_NUMBER = re.compile(r"(?<![\w.])[+\-−]?\d+(?:\.\d+)?")


def _rows() -> list[dict[str, str]]:
    with REGISTRY.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _numbers(text: str) -> list[str]:
    return [m.replace("−", "-").lstrip("+") for m in _NUMBER.findall(text)]


def _decimals(token: str) -> int:
    return len(token.split(".")[1]) if "." in token else 0


def matches(quoted: list[str], stored: list[float]) -> bool:
    """Each quoted number equals its stored one rounded to the quote's decimals (as multisets:
    a quote may list them in another order than the source prints them)."""
    if len(quoted) != len(stored):
        return False
    pairs = zip(sorted(quoted, key=float), sorted(stored), strict=True)
    return all(abs(round(s, _decimals(q)) - float(q)) < 1e-9 for q, s in pairs)


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['doc']}: {r['quote'][:40]}")
def test_each_quoted_figure_is_its_stored_sources(row: dict[str, str]) -> None:
    doc = _normal((ROOT / row["doc"]).read_text(encoding="utf-8"))
    assert _normal(row["quote"]) in doc, f"quote no longer in {row['doc']}"
    text = (ROOT / row["source"]).read_text(encoding="utf-8")
    if row["after"]:
        anchor = re.search(row["after"], text)
        assert anchor is not None, f"anchor {row['after']!r} not in {row['source']}"
        text = text[anchor.end() :]
    quoted = _numbers(row["quote"])
    found: list[float] = []
    for match in re.finditer(row["pattern"], text):
        found += [float(g) for g in match.groups() if g is not None]
        if len(found) >= len(quoted):
            break
    scale = float(row["scale"] or 1)
    stored = [value * scale for value in found[: len(quoted)]]
    assert matches(quoted, stored), f"{row['doc']} quotes {quoted}, {row['source']} has {stored}"


def test_the_check_catches_a_stale_figure() -> None:
    # The figure issue 48 found: sums' error 0.54 where the stored grid says 0.34.
    assert matches(["0.34", "4"], [4.0, 0.34])
    assert not matches(["0.54", "4"], [4.0, 0.34])
    assert not matches(["1.11"], [1.01])
    assert matches(["-19.7", "2.7"], [-19.7, 2.74])
