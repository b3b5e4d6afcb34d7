"""The full reproduction's stored debias figures are what today's code computes from the stored
data (issue 48): a value a stored report carries that today's estimator would not give from the
same curve is stale, and fails here.

`tests/test_figure_sources.py` checks that the docs quote the stored files; this checks the
stored files against the code. The debias rows of `benchmarks/results/reproduce_full_local.md`
(its experiments-martingale step) carry two kinds of figures:

- the control, exact Bayes on the same sequences: its gaps need no model (Laplace on the full
  grid's seed-0 nested sequences), so today's position R² is recomputed here;
- the model's own: the harmonics' share, the variance change and the position R² before and
  after, recomputed from the step's stored per-sequence gaps
  (`experiments_csv/martingale_per_sequence_full_local.csv`) without a model, where they are
  stored.

A printed figure that is not today's must be listed in the report's "Stale figures" table with
today's value (which must then be today's), or, where the data to recompute it is not stored,
as "not recomputed": a stale figure nobody flagged fails, and so does a wrong correction.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_figure_sources import matches

from cotplan.research.experiments.debias import positional_debias
from cotplan.research.experiments.debias_control import debias_control
from cotplan.research.experiments.martingale import read_gaps

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
REPORT = RESULTS / "reproduce_full_local.md"
GAPS = RESULTS / "experiments_csv" / "martingale_per_sequence_full_local.csv"
_NUMBER = r"(-?[\d.]+(?:e-?\d+)?)"
#: The figures whose reading changed after the full run (the position R², read in units of the
#: gaps' noise since): printed before, they are stale unless shown to be today's.
READING_CHANGED = frozenset({"control R²", "R² before", "R² after"})


def martingale_section(text: str) -> str:
    """The experiments-martingale step's part of a reproduction report."""
    start = text.index("## experiments-martingale")
    return text[start : text.index("\n## ", start + 1)]


def debias_figures(section: str) -> dict[str, str]:
    """The debias rows' printed figures, by name, as printed."""
    found = {}
    control = re.findall(r"control: exact Bayes on the same sequences gives period [\d.]+ "
                         rf"\(p = [\d.]+\), position R² {_NUMBER}", section)  # fmt: skip
    if len(set(control)) != 1:
        raise AssertionError(f"the debias rows disagree on the control: {control}")
    found["control R²"] = control[0]
    cells = {}
    for line in section.splitlines():
        parts = [p.strip() for p in line.split(" | ")]
        if len(parts) > 3 and parts[0] == "| debias":
            cells[parts[1]] = parts
    explained = next(v for k, v in cells.items() if k.startswith("the harmonics explain"))
    variance = next(v for k, v in cells.items() if k.startswith("subtracting the harmonics"))
    r2 = next(v for k, v in cells.items() if k.startswith("R² of position"))
    found["explained"], found["variance change"] = explained[3], variance[3]
    before, after = re.fullmatch(rf"{_NUMBER} -> {_NUMBER}", r2[3]).groups()  # type: ignore[union-attr]
    found["R² before"], found["R² after"] = before, after
    return found


def todays_figures() -> dict[str, float | None]:
    """The same figures as today's code computes them from the stored data (no model); None
    where the data is not stored."""
    control = debias_control([0], designs=("nested",)).r2_before[0][0]
    today: dict[str, float | None] = dict.fromkeys(
        ("explained", "variance change", "R² before", "R² after")
    )
    today["control R²"] = control
    if GAPS.is_file():
        model = positional_debias(read_gaps(GAPS), n_boot=0, n_permutations=0)
        today["explained"], today["variance change"] = model.explained, model.variance_change
        today["R² before"], today["R² after"] = model.r2_before, model.r2_after
    return today


def stale_table(text: str) -> dict[str, tuple[str, str]]:
    """The report's "Stale figures" table: figure -> (printed, today as printed)."""
    rows: dict[str, tuple[str, str]] = {}
    inside = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:3] == ["figure", "printed", "today"]:
            inside = True
        elif inside and line.startswith("|") and not set(line) <= {"|", "-", " "}:
            rows[cells[0]] = (cells[1], cells[2])
        elif inside and not line.startswith("|"):
            break
    return rows


def unflagged(text: str, today: dict[str, float | None]) -> list[str]:
    """Printed figures that are neither today's nor flagged (with today's value, or as not
    recomputed where the data is not stored), and flags whose correction is not today's."""
    printed = debias_figures(martingale_section(text))
    flagged = stale_table(text)
    problems = []
    for name, value in printed.items():
        now = today[name]
        if now is not None and matches([value], [now]):
            if name in flagged:
                problems.append(f"{name}: flagged stale but printed {value} is today's")
            continue
        if now is None and name not in READING_CHANGED and name not in flagged:
            continue  # nothing stored to recompute it from, and its reading did not change
        if name not in flagged or flagged[name][0] != value:
            problems.append(f"{name}: printed {value}, today {now}, not flagged")
        elif now is None and flagged[name][1] != "not recomputed":
            problems.append(f"{name}: nothing to recompute it from, yet flagged {flagged[name]}")
        elif now is not None and not matches([flagged[name][1]], [now]):
            problems.append(f"{name}: flagged today {flagged[name][1]}, but today is {now:.4g}")
    return problems


@pytest.fixture(scope="module")
def today() -> dict[str, float | None]:
    return todays_figures()


def test_the_full_runs_debias_figures_are_todays_or_flagged_stale(
    today: dict[str, float | None],
) -> None:
    text = REPORT.read_text(encoding="utf-8")
    assert set(debias_figures(martingale_section(text))) == set(today)
    assert unflagged(text, today) == []


def test_an_unflagged_or_wrongly_corrected_stale_figure_is_caught(
    today: dict[str, float | None],
) -> None:
    text = REPORT.read_text(encoding="utf-8")
    # The report without its Stale figures table: the old estimator's 0.483 goes unflagged.
    start = text.index("| figure | printed | today |")
    end = text.index("\n\n", start)
    bare = text[:start] + text[end:]
    caught = {p.split(":")[0] for p in unflagged(bare, today)}
    assert "control R²" in caught
    if today["R² before"] is None:  # not recomputable: an unflagged old reading is caught too
        assert {"R² before", "R² after"} <= caught
    # A correction that is not today's value is caught too.
    wrong = text.replace("| control R² | 0.483 | 0.0122 |", "| control R² | 0.483 | 0.05 |")
    assert wrong != text
    assert any("flagged today 0.05" in p for p in unflagged(wrong, today))
