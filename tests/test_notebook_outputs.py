"""Notebooks are committed with their outputs (tests/notebook_outputs.py): each committed
output belongs to the notebook's current cells and holds no machine path or timing; the
comparison the full suite makes with a fresh run (conftest.py, around nbmake) is tested here on
small synthetic notebooks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from notebook_outputs import (
    KEY,
    NOTEBOOKS,
    ROOT,
    clean,
    has_outputs,
    scrub,
    sources_sha256,
    stale_cell,
)

_new_notebook: Callable[..., Any] = nbformat.v4.new_notebook
_new_code: Callable[..., Any] = nbformat.v4.new_code_cell
_new_markdown: Callable[..., Any] = nbformat.v4.new_markdown_cell
_new_output: Callable[..., Any] = nbformat.v4.new_output

NOTEBOOK_FILES = sorted(NOTEBOOKS.glob("*.ipynb"))
#: Notebooks still committed without outputs. `scripts/execute-notebooks` (run over all of
#: them once the notebooks' edits are in) fills them; then this set is emptied, and every
#: notebook must keep its outputs.
PENDING: set[str] = set()


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.name)
def test_committed_outputs_belong_to_the_current_cells(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    if path.name in PENDING:
        assert not has_outputs(notebook), (
            f"{path.name} now has outputs: remove it from PENDING in this test"
        )
        return
    assert has_outputs(notebook), f"{path.name} has no outputs: run scripts/execute-notebooks"
    recorded = notebook.metadata.get(KEY, {}).get("sources_sha256")
    assert recorded == sources_sha256(notebook), (
        f"{path.name}'s cells changed after its outputs were made: run "
        f"scripts/execute-notebooks {path.name}"
    )
    for cell in notebook.cells:
        assert "execution" not in cell.metadata, "timings in the committed notebook"
    text = path.read_text(encoding="utf-8")
    assert str(ROOT) not in text
    assert scrub(text) == text, "machine paths in the committed outputs"


def test_pending_names_only_notebooks_that_exist() -> None:
    assert {p.name for p in NOTEBOOK_FILES} >= PENDING


def _executed(*texts: str, path: str = "") -> Any:
    notebook = _new_notebook()
    notebook.cells = [_new_markdown("# title"), _new_code("print(x)"), _new_code("x")]
    notebook.cells[1].outputs = [_new_output("stream", name="stdout", text=texts[0] + path)]
    notebook.cells[1].metadata["execution"] = {"iopub.status.busy": "2026-12-05T14:00:00Z"}
    notebook.cells[1].execution_count = 7
    notebook.cells[2].outputs = [
        _new_output("execute_result", data={"text/plain": texts[1]}, execution_count=8)
    ]
    notebook.cells[2].execution_count = 8
    return notebook


def test_clean_drops_timings_and_machine_paths_and_records_the_sources() -> None:
    notebook = clean(_executed("saved 57%\n", "0.25", path=f"wrote {ROOT}/reports/x\n"))
    first, second = notebook.cells[1], notebook.cells[2]
    assert "execution" not in first.metadata
    assert (first.execution_count, second.execution_count) == (1, 2)
    assert second.outputs[0]["execution_count"] == 2
    assert first.outputs[0]["text"] == "saved 57%\nwrote <repo>/reports/x\n"
    assert notebook.metadata[KEY]["sources_sha256"] == sources_sha256(notebook)
    assert scrub("/tmp/pytest-of-me/x1/report.html done") == "<tmp> done"


def test_a_changed_text_output_is_stale_and_a_tagged_cell_is_not_compared() -> None:
    committed = clean(_executed("saved 57%\n", "0.25"))
    assert stale_cell(committed, clean(_executed("saved 57%\n", "0.25"))) is None
    assert stale_cell(committed, clean(_executed("saved 58%\n", "0.25"))) == 1
    assert stale_cell(committed, clean(_executed("saved 57%\n", "0.26"))) == 2
    # Durations and report folders' names differ between runs of the same code.
    timed = clean(_executed("finished in 12 s: reports/demo-20261205-140000-a1b2c3\n", "0.25"))
    again = clean(_executed("finished in 9.5 s: reports/demo-20261206-090000-ffee00\n", "0.25"))
    assert stale_cell(timed, again) is None
    # So do counts that depend on what the call cache already held.
    timed = clean(
        _executed("model requests used: 0; 12 requests, 3 answered by the call cache\n", "0.25")
    )
    again = clean(
        _executed("model requests used: 317; 40 requests, 0 answered by the call cache\n", "0.25")
    )
    assert stale_cell(timed, again) is None
    committed.cells[1].metadata["tags"] = ["nondeterministic"]
    assert stale_cell(committed, clean(_executed("finished in 9 s\n", "0.25"))) is None
    # A notebook committed without outputs is the test above's to report, not a stale one.
    bare = _executed("", "")
    for cell in bare.cells[1:]:
        cell.outputs = []
    assert stale_cell(bare, committed) is None


def test_the_suite_fails_a_notebook_whose_committed_outputs_are_stale(tmp_path: Path) -> None:
    import signal

    from nbmake.nb_run import NotebookRun

    # Starting a kernel installs Python's own Ctrl-C handler: put back the one the test found.
    handler = signal.getsignal(signal.SIGINT)
    path = tmp_path / "stale.ipynb"
    notebook = _new_notebook()
    notebook.cells = [_new_code("print(0.5)")]
    notebook.cells[0].outputs = [_new_output("stream", name="stdout", text="0.4\n")]
    try:
        nbformat.write(clean(notebook), str(path))
        result = NotebookRun(path, 120).execute()  # as nbmake runs each notebook in the suite
        assert result.error is not None
        assert "committed outputs are stale" in result.error.summary
        assert "committed: 0.4\nfresh run: 0.5" in result.error.trace
        notebook.cells[0].outputs[0]["text"] = "0.5\n"
        nbformat.write(clean(notebook), str(path))
        assert NotebookRun(path, 120).execute().error is None
    finally:
        signal.signal(signal.SIGINT, handler)
