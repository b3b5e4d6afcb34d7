"""`cotplan kstar study`: options checked before anything connects, the protocol written before
the first request, the gold answer's log-probability read from prompt scoring (a double), and
one short end-to-end run on the long-thinking embedded model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cotplan.cli import app
from cotplan.errors import InputError
from cotplan.research.lab.reasoning.kstar_served import (
    check_protocol,
    gold_logprob,
    kstar_items,
    length_word,
)

runner = CliRunner()


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (["--sizes", "8"], "sizes"),
        (["--sizes", "8,x"], "sizes"),
        (["--items", "2"], "items"),
        (["--seeds", "0"], "seeds"),
        (["--eps", "0.5,1.5"], "eps"),
        (["--budget-points", "2"], "budget_points"),
        (["--measure", "guess"], "measure"),
    ],
)
def test_options_are_checked_before_connecting(
    tmp_path: Path, options: list[str], field: str
) -> None:
    # An unreachable server: a check that ran after connecting would fail on it instead.
    argv = ["kstar", "study", "--backend", "openai:m", "--base-url", "http://127.0.0.1:9"]
    result = runner.invoke(app, [*argv, "--out", str(tmp_path / "r"), *options])
    assert isinstance(result.exception, InputError)
    assert f"`{field}`" in str(result.exception)
    assert not (tmp_path / "r").exists()


def test_protocol_defaults_are_the_preregistered_ones() -> None:
    protocol = check_protocol("openai:m")
    assert protocol.sizes == (8, 16, 32, 64, 128, 256)
    assert protocol.items == 200
    assert protocol.seeds == 3
    assert protocol.budgets(256)[-1] == 16 * 256
    assert protocol.requests() == 3 * 200 * sum(
        1 + len(protocol.budgets(n)) for n in (8, 16, 32, 64, 128, 256)
    )
    assert any("outside the theorem's premise" in rule for rule in protocol.rules)


def test_items_are_plain_sums_reproducible_by_seed() -> None:
    first, again = kstar_items(8, 3, seed=1), kstar_items(8, 3, seed=1)
    assert [i.prompt for i in first] == [i.prompt for i in again]
    assert kstar_items(8, 3, seed=2)[0].prompt != first[0].prompt
    digits = first[0].prompt.split(": ")[1].split(".")[0].split(", ")
    assert len(digits) == 8
    assert int(first[0].answer) == sum(map(int, digits))


def test_gold_logprob_sums_the_tokens_after_the_prefix() -> None:
    prefix = "Q? Answer:"
    rows = [
        ("", {}),
        ("Q", {"Q": -3.0}),
        ("?", {"?": -1.0}),
        (" Answer", {" Answer": -0.5}),
        (":", {":": -0.1}),
        (" 4", {" 4": -0.2, " 5": -2.0}),
        ("2", {"2": -0.3}),
    ]
    assert gold_logprob(rows, prefix) == pytest.approx(-0.5)
    with pytest.raises(InputError, match="no log-probability"):
        gold_logprob([*rows[:-1], ("2", {"3": -0.1})], prefix)
    with pytest.raises(InputError, match="nothing after the prefix"):
        gold_logprob(rows[:5], prefix)


def test_length_word_tells_trace_length_from_information() -> None:
    assert length_word(0.9, 1.1, 1.0).startswith("trace-length law")
    assert length_word(0.45, 0.55, 1.0).startswith("information law")
    assert length_word(0.3, 1.1, 1.0).startswith("cannot tell")
    assert length_word(math.nan, 1.0, 1.0).startswith("cannot tell")
    # No estimate (k* not reached at a size): a degenerate interval near δ decides nothing.
    assert length_word(0.0, 0.0, 0.08).startswith("trace-length law")
    assert length_word(0.0, 0.0, 0.08, beta=math.nan).startswith("cannot tell")


@pytest.mark.model
@pytest.mark.slow
def test_study_end_to_end_on_the_long_thinker(tmp_path: Path, cotplan_home: Path) -> None:
    out = tmp_path / "kstar"
    argv = ["kstar", "study", "--backend", "local:thinking-long", "--out", str(out)]
    small = ["--sizes", "2,4", "--items", "5", "--seeds", "1", "--budget-points", "3"]
    caps = ["--min-tokens", "32", "--tokens-per-input", "8", "--eps", "0.5,0.3"]
    result = runner.invoke(app, [*argv, *small, *caps])
    assert result.exit_code == 0, result.output
    protocol = json.loads((out / "protocol.json").read_text(encoding="utf-8"))
    assert protocol["measure_used"] == "accuracy"  # the embedded server scores no prompts
    assert protocol["sizes"] == [2, 4]
    assert protocol["budgets"]["2"] == [0, 16, 32]
    for name in (
        "logloss_answers.csv",
        "logloss_premise.csv",
        "kstar_lengths.csv",
        "kstar_report.md",
    ):
        assert (out / name).exists(), name
    assert "forced answer's 0/1 error" in result.output
    assert "the theorem's premise" in result.output
    assert "k* ∝ L^" in result.output


def test_the_measure_is_b_only_where_a_text_prompt_can_be_scored() -> None:
    from cotplan import connect
    from cotplan.research.lab.reasoning.kstar_served import resolve_measure

    url = "http://127.0.0.1:9/v1"  # never called: choosing the measure sends nothing
    scored = connect("openai:Qwen3-8B", base_url=url, prompt_logprobs=True, cache=None)
    plain = connect("openai:Qwen3-8B", base_url=url, cache=None)
    unknown = connect("openai:my-model", base_url=url, prompt_logprobs=True, cache=None)
    auto, forced = check_protocol("openai:m"), check_protocol("openai:m", measure="logprob")
    assert resolve_measure(auto, scored) == "logprob"
    assert resolve_measure(auto, plain) == "accuracy"  # the server was not said to score
    assert resolve_measure(auto, unknown) == "accuracy"  # no template: no exact text to score
    with pytest.raises(InputError, match="`measure`"):
        resolve_measure(forced, unknown)
    assert resolve_measure(check_protocol("openai:m", measure="accuracy"), scored) == "accuracy"
