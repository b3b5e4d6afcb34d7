"""The full runs' stored results the notebooks show: found from any folder inside the
repository, read with their intervals and both verdicts, or from a folder of one's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from cotplan.errors import InputError
from cotplan.research.stored import full_run_rows, results_file, stored_table

ROOT = Path(__file__).resolve().parents[1]


def test_rows_come_with_intervals_and_both_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT / "notebooks")  # where the notebooks run
    rows = full_run_rows(["martingale", "debias"])
    assert list(rows.columns) == ["experiment", "claim", "interval", "printed", "today"]
    assert set(rows["experiment"]) == {"martingale", "debias"}
    r2 = rows[rows["claim"].str.startswith("R² of position")].iloc[0]
    # today: the rerun's before-interval lies wholly below the paper's 0.202 ± 0.05
    assert (r2["printed"], r2["today"]) == ("not comparable (model)", "not comparable (model)")
    assert results_file("debias_summary_full_local.csv").parent.name == "experiments_csv"


def test_a_folder_of_ones_own_is_read_and_a_missing_file_named(tmp_path: Path) -> None:
    (tmp_path / "pe_ablation_vs_paper.csv").write_text("claim,verdict\nx,reproduced\n")
    assert stored_table("pe_ablation_vs_paper.csv", tmp_path).iloc[0]["verdict"] == "reproduced"
    with pytest.raises(InputError, match=r"no report_verdicts_full_local\.csv"):
        full_run_rows(["entropy"], tmp_path)
    with pytest.raises(InputError, match="known: "):
        full_run_rows(["no-such-experiment"])
