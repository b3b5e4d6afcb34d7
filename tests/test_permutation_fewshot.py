"""Few-shot prompts, example files, choice validation, token boundaries and the built-in tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cotplan.errors import InputError
from cotplan.permutation.fewshot import (
    Example,
    FewShotTemplate,
    as_examples,
    check_choices,
    load_examples,
)
from cotplan.permutation.fewshot_tasks import FEWSHOT_FAMILIES, make_fewshot_tasks
from cotplan.permutation.scoring import count_pieces, server_pieces

EXAMPLES = (Example("I loved it", "positive"), Example("dull {braces}", "negative"))


def test_default_template_ends_before_the_answer_and_keeps_the_space_for_it() -> None:
    template = FewShotTemplate()
    prompt = template.prompt(EXAMPLES, "great day")
    assert prompt == (
        "Input: I loved it\nOutput: positive\n\nInput: dull {braces}\nOutput: negative\n\n"
        "Input: great day\nOutput:"
    )
    assert template.answer_prefix == " "
    assert template.terminator == "\n\n"


def test_custom_template_header_and_terminator() -> None:
    template = FewShotTemplate(example="Q: {input}\nA:\t{output}.", separator="\n", header="H\n")
    assert template.prompt(EXAMPLES[:1], "q") == "H\nQ: I loved it\nA:\tpositive.\nQ: q\nA:"
    assert template.answer_prefix == "\t"
    assert template.terminator == "."


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"example": "Input: {input}"}, r"`template.example`: must contain \{input\} and"),
        ({"example": "{output} then {input}"}, r"must put \{input\} before \{output\}"),
        ({"separator": ""}, r"`separator`: must not be empty"),
        ({"header": 3}, r"`template.header`: must be a string"),
    ],
)
def test_bad_templates_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        FewShotTemplate(**kwargs)  # type: ignore[arg-type]


def test_examples_come_from_pairs_dicts_or_examples() -> None:
    got = as_examples([("a", " x "), {"input": "b", "output": "y"}, Example("c", "z")])
    assert got == (Example("a", "x"), Example("b", "y"), Example("c", "z"))


@pytest.mark.parametrize(
    ("examples", "match"),
    [
        ([("a", "x")], r"`examples`: need at least two examples to reorder, got 1"),
        ([], r"need at least two examples"),
        ([("a", "x"), ("", "y")], r"`examples\[1\].input`: must be a non-empty string"),
        ([("a", "x"), ("b", "  ")], r"`examples\[1\].output`: must be a non-empty string"),
        ([("a", "x"), {"input": "b"}], r"`examples\[1\]`: needs `input` and `output`"),
        ([("a", "x"), 7], r"`examples\[1\]`: must be an Example"),
        ("ab", r"`examples`: must be a list of examples"),
    ],
)
def test_bad_examples_are_named(examples: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        as_examples(examples)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("choices", "match"),
    [
        (["yes"], r"`choices`: need at least two candidates"),
        (["yes", "yes"], r"contain 'yes' twice"),
        (["yes", " yes"], r"contain 'yes' twice"),
        (["yes", ""], r"must be non-empty strings, got '' at 1"),
        (["yes", None], r"must be non-empty strings, got None"),
        ("yes", r"must be a list of strings"),
    ],
)
def test_bad_choices_are_named(choices: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        check_choices(choices)


def test_choices_are_stripped() -> None:
    assert check_choices([" yes", "no "]) == ("yes", "no")


def test_load_examples_from_jsonl_json_csv_and_tsv(tmp_path: Path) -> None:
    rows = [{"input": "great", "output": "positive"}, {"input": "bad, sad", "output": "negative"}]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    (tmp_path / "a.json").write_text(json.dumps(rows))
    (tmp_path / "a.csv").write_text('input,output\ngreat,positive\n"bad, sad",negative\n')
    (tmp_path / "a.tsv").write_text("output\tinput\npositive\tgreat\nnegative\tbad, sad\n")
    expected = (Example("great", "positive"), Example("bad, sad", "negative"))
    for name in ("a.jsonl", "a.json", "a.csv", "a.tsv"):
        assert load_examples(tmp_path / name) == expected


def test_example_file_errors_name_the_file_and_line(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"input": "a", "output": "x"}\n{"input": "b", \n')
    with pytest.raises(InputError, match=r"bad.jsonl, line 2, `examples`: not valid JSON"):
        load_examples(bad_json)
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"input": "a", "output": "x"}\n{"input": "b"}\n')
    with pytest.raises(InputError, match=r"line 2, `examples`: needs `input` and `output`"):
        load_examples(missing)
    empty_output = tmp_path / "e.csv"
    empty_output.write_text("input,output\na,x\nb,\n")
    with pytest.raises(InputError, match=r"e.csv, line 3, `examples.output`: must be a non-empty"):
        load_examples(empty_output)
    header = tmp_path / "h.csv"
    header.write_text("text,label\na,x\n")
    with pytest.raises(InputError, match=r"line 1, `examples`: needs a header with `input`"):
        load_examples(header)
    one = tmp_path / "one.jsonl"
    one.write_text('{"input": "a", "output": "x"}\n')
    with pytest.raises(InputError, match=r"need at least two examples to reorder, found 1"):
        load_examples(one)
    with pytest.raises(InputError, match=r"no such file"):
        load_examples(tmp_path / "nope.jsonl")
    (tmp_path / "x.txt").write_text("a")
    with pytest.raises(InputError, match=r"unknown example file type '.txt'"):
        load_examples(tmp_path / "x.txt")


class _ToyTokenizer:
    """Greedy longest match over a small vocabulary; every character is also a token."""

    def __init__(self, vocab: list[str]) -> None:
        self.vocab = sorted(vocab, key=len, reverse=True)
        self.ids: dict[str, int] = {}

    def __call__(self, text: str) -> list[int]:
        out, i = [], 0
        while i < len(text):
            piece = next((v for v in self.vocab if text.startswith(v, i)), text[i])
            out.append(self.ids.setdefault(piece, len(self.ids)))
            i += len(piece)
        return out


def test_server_pieces_find_token_boundaries_in_context() -> None:
    tokenize = _ToyTokenizer(["Output:", " New", " York", " positive"])
    assert server_pieces(tokenize, "Output:", " New York", "New York") == (" New", " York")
    assert server_pieces(tokenize, "Output:", " positive", "positive") == (" positive",)
    assert server_pieces(tokenize, "Output:", " Nx", "Nx") == (" ", "N", "x")


def test_server_pieces_refuse_a_choice_that_merges_with_the_prompt() -> None:
    tokenize = _ToyTokenizer(["Output", ":p", "pos"])
    with pytest.raises(InputError, match=r"'pos' merges with the end of the prompt"):
        server_pieces(tokenize, "Output:", "pos", "pos")


def test_count_pieces_take_the_longest_single_token_prefix() -> None:
    vocab = {" New", " York", " Ne"}

    def count(text: str) -> int:
        return 1 if text in vocab or len(text) == 1 else 2

    assert count_pieces(count, " New York") == (" New", " York")


def test_builtin_fewshot_tasks_are_seeded_balanced_and_exact() -> None:
    for family, labels in FEWSHOT_FAMILIES.items():
        items = make_fewshot_tasks(family, n_examples=4, count=20, seed=3)
        assert items == make_fewshot_tasks(family, n_examples=4, count=20, seed=3)
        assert items != make_fewshot_tasks(family, n_examples=4, count=20, seed=4)
        for item in items:
            outputs = [e.output for e in item.examples]
            assert sorted(outputs) == sorted([labels[0], labels[1]] * 2)
            assert item.answer in labels
            assert item.query not in {e.input for e in item.examples}
    parity = make_fewshot_tasks("parity", count=50, seed=0)
    assert all((int(i.query) % 2 == 0) == (i.answer == "even") for i in parity)
    assert {i.answer for i in parity} == {"even", "odd"}
    with pytest.raises(InputError, match=r"`family`: unknown few-shot family 'colour'"):
        make_fewshot_tasks("colour")
    with pytest.raises(InputError, match=r"`n_examples`: must be an integer between 2 and 12"):
        make_fewshot_tasks("parity", n_examples=1)
