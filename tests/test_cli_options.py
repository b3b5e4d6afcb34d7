"""The option checks commands run before any call (`cotplan.cli.options`): what they accept.

What they refuse is in tests/test_bad_input.py (through the real CLI); here, that good options
still pass, so a check cannot quietly refuse what `connect` and the commands accept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cotplan.cli.options import (
    MAX_BUDGET,
    check_backend,
    check_budgets,
    check_int,
    check_out,
    check_probability,
)
from cotplan.errors import InputError


@pytest.mark.parametrize(
    ("spec", "base_url"),
    [
        ("local", None),
        ("local:smollm2-135m-instruct", None),
        ("openai:gpt-4o-mini", None),
        ("openai:my-model", "http://127.0.0.1:8000/v1"),
        ("my-model", "https://gateway.example/v1"),
        ("lab:parity", None),
        ("lab:lab-parity", None),
    ],
)
def test_good_backend_specs_pass_without_starting_anything(spec: str, base_url: str | None) -> None:
    check_backend(spec, base_url)


def test_a_gguf_file_passes(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(64))
    check_backend(f"local:{model}")


@pytest.mark.parametrize(
    ("text", "grid"),
    [("paper", "paper"), (" paper ", "paper"), ("0", [0]), ("0, 8,32", [0, 8, 32]),
     (str(MAX_BUDGET), [MAX_BUDGET])],
)  # fmt: skip
def test_budget_grids(text: str, grid: list[int] | str) -> None:
    assert check_budgets(text) == grid


@pytest.mark.parametrize("text", ["", " , ", "8,,16", "4.5", "1e9", "-1", str(MAX_BUDGET + 1)])
def test_bad_budget_grids_name_the_option(text: str) -> None:
    with pytest.raises(InputError, match="`budgets`"):
        check_budgets(text)


def test_whole_numbers_in_range() -> None:
    check_int(None, "count")
    check_int(1, "count", high=1)
    # The words of `cotplan.validation.require_int`: one set of checks, one set of messages.
    with pytest.raises(InputError, match=r"`count`: must be an integer between 1 and 5, got 6"):
        check_int(6, "count", high=5)
    with pytest.raises(InputError, match=r"`seed`: must be an integer >= 0, got -1"):
        check_int(-1, "seed", low=0)
    with pytest.raises(InputError, match="`count`: must be an integer"):
        check_int(True, "count")


def test_probabilities() -> None:
    check_probability(0.5, "confidence")
    check_probability(1.0, "target_width", closed_high=True)
    for bad in (0.0, 1.0, float("nan"), -0.1):
        with pytest.raises(InputError, match="`confidence`"):
            check_probability(bad, "confidence")


def test_report_folders(tmp_path: Path) -> None:
    check_out(None)
    check_out(tmp_path)
    check_out(tmp_path / "new" / "deeper")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"`out`: .* exists and is not a folder"):
        check_out(tmp_path / "file")
    with pytest.raises(InputError, match="`out`: cannot create"):
        check_out(tmp_path / "file" / "below")
