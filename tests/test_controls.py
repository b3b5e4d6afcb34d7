"""`cotplan kstar controls` (the reproduction's controls step) at the quick preset: every
control passes, its tables are written, and an unknown preset is refused."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.errors import InputError
from cotplan.research.controls import run_controls

runner = CliRunner()


@pytest.mark.slow
def test_the_quick_controls_pass_through_the_command(tmp_path: Path) -> None:
    result = runner.invoke(app, ["kstar", "controls", "--preset", "quick", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(tmp_path / "controls.csv")
    assert list(rows["control"]) == [
        "debias: exact Bayes position R²",
        "planted √n law, seed 0",
        "planted linear law, seed 0",
        "the premise on the planted √n family",
    ]
    assert rows["passes"].all()
    assert rows.loc[2, "verdict"] == "not reproduced"
    assert len(pd.read_csv(tmp_path / "controls_debias.csv")) == 6  # 3 seeds x 2 designs
    assert set(pd.read_csv(tmp_path / "controls_premise.csv")["n"]) == {16, 32, 64, 128, 256}
    assert "FAILS" not in result.output


def test_an_unknown_preset_is_refused() -> None:
    with pytest.raises(InputError, match="`preset`"):
        run_controls("medium")
