"""The notebook prose checker (tests/notebook_prose.py), tested on small synthetic notebooks,
and its allowlist kept honest.

The check itself runs on every notebook as the suite executes it (conftest.py wraps nbmake's
run); the last test here shows that it does, on a small notebook.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from notebook_prose import ALLOWED, NOTEBOOKS, cited_numbers, unshown

# nbformat's functions carry no annotations; these names give them one.
_read: Callable[..., Any] = nbformat.read
_new_notebook: Callable[..., Any] = nbformat.v4.new_notebook
_new_markdown: Callable[..., Any] = nbformat.v4.new_markdown_cell
_new_code: Callable[..., Any] = nbformat.v4.new_code_cell
_new_output: Callable[..., Any] = nbformat.v4.new_output


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


@pytest.mark.slow
def test_the_suite_fails_an_executed_notebook_whose_prose_its_outputs_do_not_show(
    tmp_path: Path,
) -> None:
    from nbmake.nb_run import NotebookRun

    # Starting a kernel installs Python's own Ctrl-C handler in this process: put back the one
    # the test found, so that no later test inherits another.
    handler = signal.getsignal(signal.SIGINT)
    path = tmp_path / "wrong_prose.ipynb"
    nb = _new_notebook()
    nb.cells = [_new_markdown("The mean came out at 0.777."), _new_code("print(0.5)")]
    try:
        nbformat.write(nb, str(path))
        result = NotebookRun(path, 120).execute()  # as nbmake runs each notebook in the suite
        assert result.error is not None
        assert "0.777" in result.error.trace
        nb.cells[0].source = "The mean came out at 0.5."
        nbformat.write(nb, str(path))
        assert NotebookRun(path, 120).execute().error is None
    finally:
        signal.signal(signal.SIGINT, handler)
