"""`cotplan answer` through typer, against the shared embedded server (as an OpenAI endpoint)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cotplan.backends.local import LocalModel
from cotplan.cli.answer import answer
from cotplan.errors import InputError

runner = CliRunner()
app = typer.Typer()


@app.callback()
def _root() -> None:
    """Keep `answer` a subcommand, as it is under the real `cotplan` app."""


app.command("answer")(answer)

EXAMPLES = [
    {"input": "The movie was wonderful.", "output": "positive"},
    {"input": "The meal was awful.", "output": "negative"},
    {"input": "The trip was lovely.", "output": "positive"},
    {"input": "The show was boring.", "output": "negative"},
]


@pytest.fixture
def examples_file(tmp_path: Path) -> Path:
    path = tmp_path / "examples.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in EXAMPLES) + "\n", encoding="utf-8")
    return path


@pytest.mark.model
def test_answer_prints_the_average_and_its_interval(
    local_model: LocalModel, examples_file: Path
) -> None:
    args = ["answer", str(examples_file), "--query", "The party was great.", "--m", "4",
            "--backend", local_model.model_id, "--base-url", local_model.base_url]  # fmt: skip
    result = runner.invoke(app, args, env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "positive" in result.output
    assert "negative" in result.output
    assert "95% interval" in result.output
    assert "4 of at most 4 balanced orderings" in result.output
    assert "choices: the distinct outputs of the examples" in result.output
    # Through a plain OpenAI-compatible endpoint cotplan has no tokenizer for this model.
    assert "each choice is taken as one token" in result.output
    png = examples_file.parent / "orderings.png"
    as_json = runner.invoke(app, [*args, "--json", "--chart", str(png)])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert data["m"] == 4
    assert data["calls"] == 4
    assert set(data["probs"]) == {"positive", "negative"}
    assert sum(data["probs"].values()) == pytest.approx(1.0)
    assert data["answer"] in ("positive", "negative")
    assert len(data["orderings"]) == 4
    assert data["cached_calls"] == 4  # the same requests again, answered by the call cache
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_single_example_is_refused_before_any_model_starts(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(EXAMPLES[0]) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["answer", str(path), "--query", "x"])
    assert isinstance(result.exception, InputError)
    assert "need at least two examples to reorder" in str(result.exception)


def test_one_distinct_output_needs_explicit_choices(tmp_path: Path) -> None:
    path = tmp_path / "same.jsonl"
    rows = [{"input": "a", "output": "yes"}, {"input": "b", "output": "yes"}]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["answer", str(path), "--query", "x"])
    assert isinstance(result.exception, InputError)
    assert "pass candidates with --choice" in str(result.exception)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["answer", str(tmp_path / "nope.csv"), "--query", "x"])
    assert isinstance(result.exception, InputError)
    assert "nope.csv" in str(result.exception)


def test_the_real_cli_turns_bad_input_into_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cotplan.cli import main

    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(EXAMPLES[0]) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["answer", str(path), "--query", "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert "need at least two examples to reorder, found 1" in err
