"""Notebooks committed with their outputs, so a reader on a code host sees the results and the
charts without running anything; and the checks that keep those outputs current.

`python tests/notebook_outputs.py [NOTEBOOK.ipynb ...]` (what `scripts/execute-notebooks` runs)
executes each notebook (all of notebooks/ by default) top to bottom in its folder, as CI does,
and writes it back with its outputs made deterministic (`clean`):

- no timings: cell `execution` metadata is dropped, and execution counts renumbered 1, 2, ...;
- no machine paths: the repository's folder, the home folder and temporary folders in any
  text output are written as `<repo>`, `~` and `<tmp>`;
- the cells' sources' SHA-256 in the notebook's metadata (`cotplan.sources_sha256`), so a
  notebook whose cells were edited after its outputs were made is known to be stale without
  running it.

Two checks use this module: tests/test_notebook_outputs.py (fast: committed outputs belong to
the current cells, hold no machine paths or timings) and conftest.py, which wraps nbmake's
execution of every notebook in the full suite: a notebook whose fresh text outputs differ from
the committed ones fails there, naming the first cell that changed. Durations, timestamps and
report folders' random names are masked before comparing (`steady`); a cell whose output cannot
repeat otherwise carries the tag `nondeterministic` and is not compared; images are not
compared either (the numbers they draw are in the text outputs).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from itertools import zip_longest
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: The metadata key under which the sources' hash is kept.
KEY = "cotplan"
#: The tag of a cell whose output is not compared with a fresh run.
NONDETERMINISTIC = "nondeterministic"
#: Output kinds compared with a fresh run: what a reader reads as text.
TEXT_KINDS = ("text/plain", "text/html", "text/markdown")


def sources_sha256(notebook: Any) -> str:
    """The hash of a notebook's cells (type and source, in order): what its outputs depend on
    besides the code they call."""
    digest = hashlib.sha256()
    for cell in notebook.cells:
        digest.update(cell.cell_type.encode())
        digest.update(b"\0")
        digest.update(cell.source.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _path_patterns() -> list[tuple[re.Pattern[str], str]]:
    home = str(Path.home())
    temps = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/private/tmp"}
    patterns = [(re.compile(re.escape(str(ROOT))), "<repo>")]
    patterns += [(re.compile(re.escape(t) + r"(/[^\s'\"<>)]*)?"), "<tmp>") for t in sorted(temps)]
    if home not in ("/", ""):
        patterns.append((re.compile(re.escape(home) + r"(?=/|\b)"), "~"))
    return patterns


def scrub(text: str) -> str:
    """`text` with machine paths replaced (see the module doc)."""
    for pattern, replacement in _path_patterns():
        text = pattern.sub(replacement, text)
    return text


def clean(notebook: Any) -> Any:
    """The notebook with deterministic outputs and the sources' hash (see the module doc)."""
    count = 0
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        count += 1
        cell.execution_count = count if cell.outputs else None
        for output in cell.outputs:
            if "execution_count" in output:
                output["execution_count"] = cell.execution_count
            output.get("metadata", {}).pop("transient", None)
            if output.get("output_type") == "stream":
                output["text"] = scrub(output["text"])
            for kind, value in output.get("data", {}).items():
                if kind.startswith("text/") or kind == "image/svg+xml":
                    output["data"][kind] = scrub(value)
    notebook.metadata.pop("widgets", None)
    notebook.metadata[KEY] = {"sources_sha256": sources_sha256(notebook)}
    return notebook


def text_outputs(notebook: Any) -> list[tuple[int, list[str]]]:
    """Per compared code cell (index, its text outputs), machine paths scrubbed."""
    shown = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or NONDETERMINISTIC in cell.metadata.get("tags", []):
            continue
        texts = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                texts.append(scrub(output["text"]))
            elif output.get("output_type") == "error":
                texts.append(f"{output.get('ename')}: {output.get('evalue')}")
            for kind in TEXT_KINDS:
                value = output.get("data", {}).get(kind)
                if value is not None:
                    texts.append(scrub(value if isinstance(value, str) else "".join(value)))
        shown.append((index, texts))
    return shown


#: What differs between two runs of the same code and is no result: wall-clock durations, a
#: report folder's time-and-random name, a timestamp, an object's address, request counts.
_VOLATILE = (
    (re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b"), "<folder>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)? ?(s|ms|seconds|minutes)\b"), "<duration>"),
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "<address>"),
    # Counts of model requests depend on what the call cache already held, not on the code.
    (re.compile(r"(requests used:? )\d+"), r"\1<count>"),
    (re.compile(r"\b\d+ (requests?|answered by the call cache|cache hits?)\b"), r"<count> \1"),
)


def steady(text: str) -> str:
    """`text` with what differs between two runs of the same code replaced (`_VOLATILE`)."""
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def has_outputs(notebook: Any) -> bool:
    return any(c.cell_type == "code" and c.get("outputs") for c in notebook.cells)


def stale_cell(committed: Any, fresh: Any) -> int | None:
    """The first cell whose committed text outputs differ from a fresh run's; None when they
    agree (or when nothing was committed: that is the fast test's to report)."""
    if not has_outputs(committed):
        return None
    fresh_cells = {i: [steady(t) for t in texts] for i, texts in text_outputs(fresh)}
    for index, texts in text_outputs(committed):
        if fresh_cells.get(index) != [steady(t) for t in texts]:
            return index
    return None


def stale_detail(committed: Any, fresh: Any, cell: int) -> str:
    """The first line of `cell`'s text that a fresh run shows differently, both ways."""
    old = "\n".join(steady(t) for t in dict(text_outputs(committed)).get(cell, []))
    new = "\n".join(steady(t) for t in dict(text_outputs(fresh)).get(cell, []))
    for was, now in zip_longest(old.splitlines(), new.splitlines(), fillvalue=""):
        if was != now:
            return f"committed: {was.strip()}\nfresh run: {now.strip()}"
    return ""


def execute(path: Path, timeout: int = 1200) -> Any:
    """Run the notebook at `path` in its own folder (as nbmake does) and return it cleaned."""
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return clean(notebook)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(NOTEBOOKS.glob("*.ipynb"))
    for path in paths:
        print(f"executing {path.name} ...", flush=True)
        notebook = execute(path.resolve())
        text = nbformat.writes(notebook, version=4)
        # jupytext and nbformat agree on this layout; a final newline keeps diffs quiet.
        path.write_text(json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {path} with its outputs", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    raise SystemExit(main(sys.argv[1:]))
