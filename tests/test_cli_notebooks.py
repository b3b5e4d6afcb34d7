"""`cotplan notebooks` opens JupyterLab; `cotplan lab`, its earlier name, still works, unlisted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.cli.notebooks import jupyterlab_command

runner = CliRunner()


def test_the_help_lists_notebooks_and_not_the_old_name() -> None:
    listing = runner.invoke(app, ["--help"], terminal_width=100).output
    assert re.search(r"│ notebooks +Open JupyterLab", listing)
    assert not re.search(r"│ lab\b", listing)


@pytest.mark.parametrize("name", ["notebooks", "lab"])
def test_both_names_run_the_same_command(name: str) -> None:
    shown = runner.invoke(app, [name, "--help"], terminal_width=100)
    assert shown.exit_code == 0, shown.output
    assert "Open JupyterLab on the notebooks" in shown.output


def test_jupyterlab_listens_on_loopback_only(tmp_path: Path) -> None:
    pytest.importorskip("jupyterlab")
    command = jupyterlab_command(tmp_path, 8890, open_browser=False)
    assert command[2:4] == ["jupyter", "lab"]
    assert "--ip=127.0.0.1" in command
    assert "--port=8890" in command
    assert "--no-browser" in command
