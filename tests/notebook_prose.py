"""Which numbers a notebook's prose cites that its outputs do not show.

The suite checks every notebook as it executes it (conftest.py wraps nbmake's run: a notebook
whose prose cites a number none of its outputs shows fails like one whose cell raised);
tests/test_notebook_prose_numbers.py tests the checker itself.
A notebook's prose may cite only numbers its outputs show (or that it says come from elsewhere).

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

"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

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
