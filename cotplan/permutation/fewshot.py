"""Few-shot prompts: examples, the template that formats them, and example files.

A prompt is the template's `header`, the examples in some order joined by `separator`, then
the query formatted like an example up to where its output would go:

    Input: I loved it          <- example, rendered with FewShotTemplate.example
    Output: positive
                               <- separator ("\\n\\n")
    Input: terrible film
    Output: negative

    Input: what a great day    <- the query
    Output:                    <- the prompt ends here; the answer is the continuation

The spaces between ``Output:`` and ``{output}`` are not part of the prompt: they are the
`answer_prefix` every candidate is scored with (" positive"), because tokenizers such as
SmolLM2's and GPT's attach a leading space to the word ("positive" and " positive" are different
tokens). Text after ``{output}`` in the template is the answer's `terminator`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cotplan.errors import InputError
from cotplan.io import parse_json

__all__ = [
    "DEFAULT_TEMPLATE",
    "Example",
    "FewShotTemplate",
    "as_examples",
    "check_choices",
    "load_examples",
]


@dataclass(frozen=True)
class Example:
    """One demonstration: an input and the output the prompt shows for it."""

    input: str
    output: str


@dataclass(frozen=True)
class FewShotTemplate:
    """How examples and the query become one text prompt.

    `example` must contain ``{input}`` once and, after it, ``{output}`` once; nothing else in
    it is interpreted (braces in the inputs are safe). `header` (an instruction, say) goes
    before the first example.
    """

    example: str = "Input: {input}\nOutput: {output}"
    separator: str = "\n\n"
    header: str = ""

    def __post_init__(self) -> None:
        for name, value in (
            ("example", self.example),
            ("separator", self.separator),
            ("header", self.header),
        ):
            if not isinstance(value, str):
                raise InputError(f"must be a string, got {value!r}", field=f"template.{name}")
        if self.example.count("{input}") != 1 or self.example.count("{output}") != 1:
            raise InputError(
                f"must contain {{input}} and {{output}} exactly once each, got {self.example!r}",
                field="template.example",
            )
        if self.example.index("{input}") > self.example.index("{output}"):
            raise InputError(
                f"must put {{input}} before {{output}}, got {self.example!r}",
                field="template.example",
            )
        if not self.separator:
            raise InputError("must not be empty (examples would run together)", field="separator")

    def _split(self) -> tuple[str, str, str]:
        before, after = self.example.split("{output}")
        stem = before.rstrip(" \t")
        return stem, before[len(stem) :], after

    @property
    def answer_prefix(self) -> str:
        """The spaces between the query's stem and the answer (scored with the answer)."""
        return self._split()[1]

    @property
    def terminator(self) -> str:
        """What ends an answer: the template's text after {output}, else the separator."""
        return self._split()[2] or self.separator

    def render_example(self, example: Example) -> str:
        return self.example.replace("{output}", example.output).replace("{input}", example.input)

    def render_query(self, query: str) -> str:
        return self._split()[0].replace("{input}", query)

    def prompt(self, examples: Sequence[Example], query: str) -> str:
        """The full prompt for `examples` in the given order, ending where the answer starts."""
        blocks = [self.render_example(e) for e in examples]
        blocks.append(self.render_query(query))
        return self.header + self.separator.join(blocks)


DEFAULT_TEMPLATE = FewShotTemplate()


def _text(value: object, name: str, *, line: int | None = None, source: str | None = None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"must be a non-empty string, got {value!r}", field=name, line=line, source=source
        )
    return value


def _one(
    item: object, index: int, *, line: int | None = None, source: str | None = None
) -> Example:
    where = "examples" if line is not None else f"examples[{index}]"
    if isinstance(item, Example):
        pair: tuple[object, object] = (item.input, item.output)
    elif isinstance(item, Mapping):
        if "input" not in item or "output" not in item:
            raise InputError(
                f"needs `input` and `output`, got keys {sorted(map(str, item))}",
                field=where,
                line=line,
                source=source,
            )
        pair = (item["input"], item["output"])
    elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
        pair = (item[0], item[1])
    else:
        raise InputError(
            f"must be an Example, an (input, output) pair or a dict, got {item!r}",
            field=where,
            line=line,
            source=source,
        )
    return Example(
        _text(pair[0], f"{where}.input", line=line, source=source),
        _text(pair[1], f"{where}.output", line=line, source=source).strip(),
    )


def as_examples(examples: Iterable[object]) -> tuple[Example, ...]:
    """Examples from `Example`s, (input, output) pairs or dicts; at least two are needed."""
    if isinstance(examples, str | bytes) or not isinstance(examples, Iterable):
        raise InputError(f"must be a list of examples, got {examples!r}", field="examples")
    out = tuple(_one(item, i) for i, item in enumerate(examples))
    if len(out) < 2:
        raise InputError(f"need at least two examples to reorder, got {len(out)}", field="examples")
    return out


def check_choices(choices: object) -> tuple[str, ...]:
    """At least two distinct, non-empty answer candidates, stripped of outer whitespace.

    Outer whitespace is the template's business (`FewShotTemplate.answer_prefix`), so
    ``" positive"`` and ``"positive"`` name the same choice and count as a duplicate.
    """
    if isinstance(choices, str) or not isinstance(choices, Iterable):
        raise InputError(f"must be a list of strings, got {choices!r}", field="choices")
    out: list[str] = []
    for i, choice in enumerate(choices):
        if not isinstance(choice, str) or not choice.strip():
            raise InputError(f"must be non-empty strings, got {choice!r} at {i}", field="choices")
        if choice.strip() in out:
            raise InputError(f"contain {choice.strip()!r} twice", field="choices")
        out.append(choice.strip())
    if len(out) < 2:
        raise InputError(f"need at least two candidates, got {out!r}", field="choices")
    return tuple(out)


def _parsed(text: str, source: str, line: int | None) -> Any:
    """`parse_json`, its errors naming the `examples` field as this reader's always have."""
    try:
        return parse_json(text, source=source, line=line)
    except InputError as exc:
        where = ", ".join(part for part in (exc.source, exc.line and f"line {exc.line}") if part)
        detail = str(exc).removeprefix(f"{where}: ")
        raise InputError(detail, field="examples", line=exc.line, source=source) from None


def load_examples(path: str | Path) -> tuple[Example, ...]:
    """Examples from a file: JSONL or JSON (``{"input", "output"}`` objects) or CSV/TSV.

    CSV and TSV files need a header row with ``input`` and ``output`` columns. Errors name
    the file and the (1-based) line.
    """
    source = str(path)
    file = Path(path)
    if not file.is_file():
        raise InputError("no such file", field="examples", source=source)
    suffix = file.suffix.lower()
    text = file.read_text(encoding="utf-8")
    rows: list[tuple[int, Any]] = []
    if suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            # The untrusted-JSON reader: a key given twice (the last would win), nesting past
            # its limit or a number past Python's are one error naming the file and line.
            rows.append((number, _parsed(line, source, number)))
    elif suffix == ".json":
        data = _parsed(text, source, None)
        if not isinstance(data, list):
            raise InputError("must hold a JSON list of examples", field="examples", source=source)
        rows = [(0, item) for item in data]
    elif suffix in {".csv", ".tsv"}:
        reader = csv.DictReader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ",")
        columns = set(reader.fieldnames or ())
        if not {"input", "output"} <= columns:
            raise InputError(
                f"needs a header with `input` and `output` columns, got {sorted(columns)}",
                field="examples",
                line=1,
                source=source,
            )
        rows = [(number, row) for number, row in enumerate(reader, start=2)]
    else:
        raise InputError(
            f"unknown example file type {suffix!r}: use .jsonl, .json, .csv or .tsv",
            field="examples",
            source=source,
        )
    examples = tuple(
        _one(item, i, line=number or None, source=source) for i, (number, item) in enumerate(rows)
    )
    if len(examples) < 2:
        raise InputError(
            f"need at least two examples to reorder, found {len(examples)}",
            field="examples",
            source=source,
        )
    return examples
