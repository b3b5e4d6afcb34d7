"""A notebook's prose may cite only numbers its outputs show (or that it says come from elsewhere).

The checker reads the numbers in a notebook's markdown cells and looks for each among the
numbers its code cells' outputs show as text (stream, ``text/plain``, a rendered table's
``text/html``, ``text/markdown``) and the literals of its code cells (an input the prose
describes, such as ``n_observed=200``, is shown by the code that sets it: change one and the
prose that cites it fails); charts' data are not text a reader sees. An output may show
more digits than the prose: 0.564 matches 0.5643 (rounded or cut at the prose's last digit), a
percentage matches its fraction (99% matches 0.99), signs are ignored (a fall of 0.698 matches
-0.698).

What is cited:

- decimals (0.564, 3.7e-16, the 1.07 of n^1.07), percentages (99%), the ends of intervals
  ([0.91, 1.30]) and integers above 20 (n = 64, 120 items, 19,000);

what is not:

- integers up to 20 (counts, small sizes, section and list numbers, fractions such as 1/2),
  years (1900-2100), dates, numbers glued to letters (SmolLM2-135M, gpt-4o, P90, float32, v1,
  e0), numbers after a section or theorem mark (§5.3, Theorem 4.5), and anything in code
  (inline or fenced) or in a link's address;
- numbers the sentence attributes to the paper: after "the paper ... reports/claims",
  "the paper's" or "v1's"/"v2's" in the same sentence (the convention the prose already
  follows: "The paper (v1 §5.3) reports that GPT-3 reaches 99% ...");
- a number in `ALLOWED` for its notebook, each with the reason it need not be in the outputs
  (a transcript of a longer run, a formula worked out in the text).

The notebooks are kept without outputs (scripts/sync-notebooks writes the .ipynb from the
jupytext .py, and the suite executes them with nbmake, in memory), so the per-notebook check
runs on outputs where a notebook has them: the stored notebook when it was saved executed, or
an executed copy of the same name in the folder named by ``COTPLAN_EXECUTED_NOTEBOOKS``, e.g.
after ``.venv/bin/jupyter nbconvert --to notebook --execute --output-dir DIR
notebooks/*.ipynb`` (its outputs are read beside the notebook's current prose, so a prose fix
needs no new run; a copy of other code fails). A notebook with neither is skipped with that
instruction. The checker itself is tested here on small synthetic notebooks, and runs in
milliseconds: nothing executes.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import nbformat
import pytest

# nbformat's functions carry no annotations; these names give them one.
_read: Callable[..., Any] = nbformat.read
_new_notebook: Callable[..., Any] = nbformat.v4.new_notebook
_new_markdown: Callable[..., Any] = nbformat.v4.new_markdown_cell
_new_code: Callable[..., Any] = nbformat.v4.new_code_cell
_new_output: Callable[..., Any] = nbformat.v4.new_output

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
EXECUTED_ENV = "COTPLAN_EXECUTED_NOTEBOOKS"

#: Numbers a notebook's prose cites that its outputs need not show, by notebook and by the
#: number as the prose writes it, each with its reason.
ALLOWED: dict[str, dict[str, str]] = {
    "06_positional_encoding_lab.ipynb": {
        "1.92e-8": "the standard deviation of v2's 3.7e-16, worked out in the text (docs/lab.md)",
        "5.96e-8": "one float32 step at 0.5, 2^-24, worked out in the text (docs/lab.md)",
    },
    "07_lab_reasoning_model.ipynb": {
        "0.42": "the domain's lower end at n = 32, 32^(-1/4), from the formula in the text",
        "0.354": "the domain's lower end at n = 64, 64^(-1/4), from the formula in the text",
        "120": "the full run's item count: benchmarks/results/kstar_lab_law_lamp_long.txt",
        "1.07": "the full run's n-exponent at ε = 0.5: kstar_lab_law_lamp_long.txt",
        "0.91": "its interval's low end: kstar_lab_law_lamp_long.txt",
        "1.30": "its interval's high end: kstar_lab_law_lamp_long.txt",
    },
}

# -- reading numbers -------------------------------------------------------------------------

_MINUS = "−"  # the typeset minus sign
_NUMBER = (
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 19,000 or 1,234.5
    r"|\d+(?:\.\d+)?(?:[eE][-−+]?\d+)?"  # 0.564, 3.7e-16, 64
)
#: A number in prose: not glued to a letter, digit, dot, section mark or underscore on the left
#: (v1, e0, P90, §5.3, x_1), nor to a letter or digit on the right (135M, 3n, float32 is left).
_PROSE_NUMBER = re.compile(rf"(?<![\w.§])({_NUMBER})(%?)(?![\w])")
#: A number in an output: any run of digits that reads as one (tables glue little to them).
_OUTPUT_NUMBER = re.compile(rf"({_NUMBER})(%?)")
#: A numeric literal in Python source (1_500, 0.25, 1e-3).
_CODE_NUMBER = re.compile(r"(?<![\w.])(\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w])")
_CODE_FENCE = re.compile(r"```.*?```|~~~.*?~~~", re.S)
_INLINE_CODE = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_SECTION_MARK = re.compile(
    r"(?:§|\b(?:Theorem|Lemma|Proposition|Corollary|Section|section|Eq\.))\s*$"
)
_HEADING_NUMBER = re.compile(r"^(#+\s*)\d+(?:\.\d+)*\.?\s", re.M)
#: Marks of a number taken from the paper, looked for earlier in the same sentence.
_PAPER = re.compile(
    r"\bthe paper\b.*?\b(?:reports?|reported|claims?|claimed|quotes?|gives?|finds?|found)\b"
    r"|\bpaper['’]s\b|\bv[12]['’]s\b",
    re.I | re.S,
)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n\s*\n")


@dataclass(frozen=True)
class Cited:
    """A number the prose cites: as written, its value, its resolution, and where it stands."""

    text: str
    value: float
    resolution: float  # one unit of its last digit (0.001 for 0.564)
    percent: bool
    cell: int
    context: str

    def shown_by(self, shown: float) -> bool:
        """Whether an output value shows this number (more digits allowed: rounded or cut)."""
        target = abs(self.value)
        candidates = [abs(shown)]
        if self.percent:
            candidates.append(abs(shown) * 100.0)  # 99% shown as 0.99
        slack = 1e-9 * target  # float noise only: 1e-32 must not match 0
        for value in candidates:
            if abs(value - target) <= self.resolution / 2 + slack:  # rounded
                return True
            if target - slack <= value < target + self.resolution:  # cut
                return True
        return False


def _parse(text: str) -> float:
    return float(text.replace(",", "").replace(_MINUS, "-"))


def _resolution(text: str) -> float:
    mantissa, _, exponent = text.replace(",", "").lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (-decimals + (int(exponent.replace(_MINUS, "-")) if exponent else 0))


def _plain_prose(source: str) -> str:
    """Markdown with code, link addresses, URLs, dates and heading numbers blanked out (kept
    the same length, so sentence positions hold)."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    text = source
    for pattern in (_CODE_FENCE, _INLINE_CODE, _LINK_TARGET, _URL, _DATE):
        text = pattern.sub(blank, text)
    return _HEADING_NUMBER.sub(lambda m: m.group(1) + blank(m)[len(m.group(1)) :], text)


def _sentence_start(text: str, position: int) -> int:
    start = 0
    for match in _SENTENCE_END.finditer(text, 0, position):
        start = match.end()
    return start


def cited_numbers(source: str, cell: int = 0) -> list[Cited]:
    """The numbers a markdown cell cites that the outputs should show (see the module)."""
    text = _plain_prose(source)
    found: list[Cited] = []
    for match in _PROSE_NUMBER.finditer(text):
        number, percent = match.group(1), bool(match.group(2))
        value = _parse(number)
        before = text[: match.start()]
        if _SECTION_MARK.search(before):
            continue
        integer = not percent and "." not in number and "e" not in number.lower()
        if integer and (value <= 20 or 1900 <= value <= 2100):
            continue
        sentence = text[_sentence_start(text, match.start()) : match.start()]
        if _PAPER.search(sentence):
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        context = source[line_start : line_end if line_end >= 0 else len(source)].strip()
        found.append(
            Cited(
                number + ("%" if percent else ""),
                value,
                _resolution(number),
                percent,
                cell,
                context,
            )
        )
    return found


def _output_text(output: Any) -> str:
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    if output.get("output_type") == "error":
        return ""
    data = output.get("data", {})
    parts = [str(data.get(kind, "")) for kind in ("text/plain", "text/markdown")]
    html = data.get("text/html")
    if html:
        parts.append(unescape(re.sub(r"<[^>]+>", " ", str(html))))
    return "\n".join(parts)


def shown_numbers(nb: Any) -> list[float]:
    """Every number the code cells show as text: their outputs (percentages also as
    fractions) and the literals of their source (the inputs the prose may describe)."""
    values: list[float] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for literal in _CODE_NUMBER.findall(cell.source):
            values.append(float(literal.replace("_", "")))
        for output in cell.get("outputs", []):
            for match in _OUTPUT_NUMBER.finditer(_output_text(output)):
                number = match.group(1)
                # "19,000" is a number, "[100,200]" two: keep both readings.
                readings = [number, *number.split(",")] if "," in number else [number]
                for reading in readings:
                    value = _parse(reading)
                    if math.isfinite(value):
                        values.append(value)
                        if match.group(2):
                            values.append(value / 100.0)
    return values


def has_outputs(nb: Any) -> bool:
    return any(cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")


def unshown(nb: Any, allowed: dict[str, str] | None = None) -> list[Cited]:
    """The numbers `nb`'s prose cites that none of its outputs shows, less the `allowed`."""
    shown = shown_numbers(nb)
    allowed = allowed or {}
    missing: list[Cited] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for cited in cited_numbers(cell.source, index):
            if cited.text in allowed:
                continue
            if not any(cited.shown_by(value) for value in shown):
                missing.append(cited)
    return missing


# -- the checker on synthetic notebooks ------------------------------------------------------


def _notebook(prose: str, *outputs: Any) -> Any:
    nb = _new_notebook()
    nb.cells = [_new_markdown(prose), _new_code("run()")]
    nb.cells[1].outputs = list(outputs)
    return nb


def _stream(text: str) -> Any:
    return _new_output("stream", name="stdout", text=text)


def _result(plain: str = "", html: str = "") -> Any:
    data = {"text/plain": plain} | ({"text/html": html} if html else {})
    return _new_output("execute_result", data=data, execution_count=1)


def test_a_number_the_outputs_do_not_show_is_found() -> None:
    nb = _notebook("The model reaches 0.564 at n = 64.", _stream("efficiency 0.5712 at n = 64\n"))
    missing = unshown(nb)
    assert [c.text for c in missing] == ["0.564"]
    assert missing[0].cell == 0
    assert "reaches 0.564" in missing[0].context


def test_more_digits_in_the_output_match_rounded_or_cut() -> None:
    for shown in ("0.5643", "0.56449", "0.5638", "0.564", "-0.564"):
        assert not unshown(_notebook("It gives 0.564.", _stream(shown))), shown
    assert unshown(_notebook("It gives 0.564.", _stream("0.5656")))
    assert unshown(_notebook("It gives 0.5643.", _stream("0.564"))), "fewer digits shown"


def test_tiny_numbers_are_matched_on_their_own_scale() -> None:
    assert unshown(_notebook("The variance is about 1e-32.", _stream("3.0970e-33 0.0000e+00")))
    assert not unshown(_notebook("The variance is 3.1e-33.", _stream("3.0970e-33")))


def test_percentages_intervals_and_big_integers_are_cited() -> None:
    prose = "99% of the mass; A = 0.33 [0.21, 0.43]; 19,000 requests; 120 items; 3.7e-16."
    assert [c.text for c in cited_numbers(prose)] == [
        "99%",
        "0.33",
        "0.21",
        "0.43",
        "19,000",
        "120",
        "3.7e-16",
    ]
    shown = _result(
        plain="share 0.99\nA 0.334 (0.215, 0.425)\nrequests 19000 items 120",
        html="<td>3.7e-16</td>",
    )
    assert not unshown(_notebook(prose, shown))
    assert [c.text for c in unshown(_notebook(prose, _stream("0.99 0.334 120")))] == [
        "0.21",
        "0.43",
        "19,000",
        "3.7e-16",
    ]


def test_what_is_not_a_cited_number() -> None:
    prose = (
        "## 7. Section seven\n"
        "In 2024, on 2026-11-29, the v1 §5.3 claim and Theorem 4.5 hold for SmolLM2-135M,\n"
        "gpt-4o, P90, float32 and e0; 3n + 2 tokens, 1/2, n = 16, 10 items.\n"
        "`k = 0.25` in code, a [link](https://example.org/v0.99/page) and\n"
        "```\nx = 123.456\n```\n"
    )
    assert cited_numbers(prose) == []


def test_numbers_the_sentence_gives_to_the_paper_are_skipped() -> None:
    prose = (
        "The paper (v1 §5.3) reports that GPT-3 reaches 99% within 20 examples, while "
        "Laplace needs more than 100. The paper's spread falls as m^-0.48. v2's value of "
        "3.7e-16 is rounding. We measure 0.71 here."
    )
    assert [c.text for c in cited_numbers(prose)] == ["0.71"]


def test_exponents_and_signed_numbers_are_cited() -> None:
    prose = "k* grows like n^1.85 against n^1.07; the excess is −0.698 [−1.673, −0.326]."
    assert [c.text for c in cited_numbers(prose)] == ["1.85", "1.07", "0.698", "1.673", "0.326"]


def test_an_input_set_in_the_code_is_shown() -> None:
    nb = _notebook("Measured on 200 calls.", _stream("mean 1.5"))
    assert unshown(nb)
    nb.cells[1].source = "tokens = Tokens(1_500, n_observed=200)"
    assert not unshown(nb)
    nb.cells[1].source = "tokens = Tokens(1_500, n_observed=300)"
    assert [c.text for c in unshown(nb)] == ["200"]


def test_the_allowlist_exempts_a_number() -> None:
    nb = _notebook("The full run gives 1.07.", _stream("nothing"))
    assert unshown(nb)
    assert not unshown(nb, {"1.07": "a transcript"})


def test_charts_and_errors_are_not_shown_text() -> None:
    chart = _new_output(
        "display_data", data={"application/vnd.vegalite.v5+json": {"values": [0.564]}}
    )
    assert unshown(_notebook("It gives 0.564.", chart))


# -- the notebooks ---------------------------------------------------------------------------

NOTEBOOK_FILES = sorted(NOTEBOOKS.glob("*.ipynb"))


def _executed(path: Path) -> Any | None:
    """The notebook with outputs: as stored, or its prose beside the outputs of an executed copy
    of the same code (outputs follow from the code, so a prose edit needs no new run)."""
    nb = _read(path, as_version=4)
    if has_outputs(nb):
        return nb
    folder = os.environ.get(EXECUTED_ENV)
    if not folder or not (Path(folder) / path.name).exists():
        return None
    copy = _read(Path(folder) / path.name, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    ran = [c for c in copy.cells if c.cell_type == "code"]
    if [c.source for c in ran] != code:
        pytest.fail(f"{folder}/{path.name} ran other code than {path.name}: execute it again")
    for cell, executed in zip((c for c in nb.cells if c.cell_type == "code"), ran, strict=True):
        cell.outputs = executed.get("outputs", [])
    return nb if has_outputs(nb) else None


def test_the_allowlist_names_notebooks_and_numbers_that_exist() -> None:
    names = {p.name for p in NOTEBOOK_FILES}
    for notebook, numbers in ALLOWED.items():
        assert notebook in names, notebook
        nb = _read(NOTEBOOKS / notebook, as_version=4)
        cited = {
            c.text
            for i, cell in enumerate(nb.cells)
            if cell.cell_type == "markdown"
            for c in cited_numbers(cell.source, i)
        }
        for number, reason in numbers.items():
            assert reason.strip(), f"{notebook}: {number} needs a reason"
            assert number in cited, f"{notebook}: {number} is no longer cited; drop it"


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.name)
def test_prose_cites_only_numbers_the_outputs_show(path: Path) -> None:
    nb = _executed(path)
    if nb is None:
        pytest.skip(
            f"{path.name} is stored without outputs; set {EXECUTED_ENV} to a folder of "
            "executed copies (jupyter nbconvert --to notebook --execute --output-dir DIR)"
        )
    missing = unshown(nb, ALLOWED.get(path.name))
    assert not missing, "\n".join(
        f"{path.name} cell {c.cell}: {c.text} is not in any output: {c.context}" for c in missing
    )
