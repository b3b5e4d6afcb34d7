"""A permutation-averaged answer as a person asks for it: an examples file, a query, maybe
candidate answers, and the averaging options typed at a shell, checked before any call.

`prepare_answer` reads the examples (a reader's own failure becomes one `InputError` naming the
file), takes the examples' distinct outputs as the candidates when none are given, turns the
``\\n`` and ``\\t`` typed in a shell into real ones in the template, and checks every option,
drawing the orderings once so that their options fail here too. `AnswerRequest.arguments` is
what `permutation_average` takes besides the backend.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.permutation.fewshot import Example, FewShotTemplate, load_examples
from cotplan.permutation.schedules import check_schedule, make_orderings
from cotplan.validation import MAX_BUDGET, require_folder_target, require_int, require_unit

__all__ = ["CHART_SUFFIXES", "MAX_M", "AnswerRequest", "check_chart", "prepare_answer"]

#: What an orderings chart may be saved as.
CHART_SUFFIXES = (".png", ".svg", ".html")

#: The most orderings one answer may ask for.
MAX_M = 100_000
#: The most samples per ordering.
MAX_SAMPLES = 1000


@dataclass(frozen=True)
class AnswerRequest:
    """A checked request: the examples, the query, the candidates (`default_choices`: taken
    from the examples' outputs), the template and the averaging options."""

    examples: tuple[Example, ...]
    query: str
    choices: tuple[str, ...]
    default_choices: bool
    template: FewShotTemplate
    options: tuple[tuple[str, Any], ...]

    def arguments(self) -> dict[str, Any]:
        """`permutation_average`'s arguments after the backend."""
        return {
            "examples": self.examples,
            "query": self.query,
            "choices": list(self.choices),
            "template": self.template,
            **dict(self.options),
        }

    def to_frame(self) -> pd.DataFrame:
        """The examples, one a row (input, output)."""
        return pd.DataFrame([{"input": e.input, "output": e.output} for e in self.examples])


def _unescape(text: str | None) -> str | None:
    """Turn the two-character sequences \\n and \\t typed in a shell into real ones."""
    if text is None:
        return None
    return text.replace("\\n", "\n").replace("\\t", "\t")


def _read(path: Path) -> tuple[Example, ...]:
    """`load_examples(path)`, with the reader's own failures (not UTF-8, a number past Python's
    digit limit, nesting past the stack, a CSV field past csv's limit) as one line naming the
    file."""
    try:
        return load_examples(path)
    except InputError:
        raise
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})", field="examples", source=str(path)
        ) from exc
    except (ValueError, RecursionError, csv.Error) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:120]
        raise InputError(f"cannot be read ({reason})", field="examples", source=str(path)) from exc


def _check_choices(query: str, choices: list[str]) -> None:
    if not query.strip():
        raise InputError("must not be empty", field="query")
    for candidate in choices:
        if not candidate.strip():
            raise InputError("must not be empty", field="choice")
    # Outer spaces are the template's business: " a" and "a" are one choice.
    if choices and len({c.strip() for c in choices}) != len(choices):
        raise InputError(f"must be distinct, got {choices!r}", field="choice")


def _check_numbers(options: dict[str, Any]) -> None:
    require_int(options["m"], "m", low=1, high=MAX_M)
    require_int(options["seed"], "seed", low=0)
    require_int(options["samples"], "samples", low=1, high=MAX_SAMPLES)
    temperature = options["temperature"]
    if math.isnan(temperature) or not 0.0 < temperature <= 2.0:
        raise InputError(f"must be in (0, 2], got {temperature!r}", field="temperature")
    if options["target_width"] is not None:
        require_unit(options["target_width"], "target_width", closed_high=True)
    require_unit(options["confidence"], "confidence")
    if options["k"] is not None:
        require_int(options["k"], "k", low=0, high=MAX_BUDGET)


def prepare_answer(
    examples: str | Path,
    query: str,
    choices: list[str] | None = None,
    *,
    template: str | None = None,
    separator: str | None = None,
    header: str | None = None,
    **options: Any,
) -> AnswerRequest:
    """Read and check an answer's inputs (see the module docstring). `options` are
    `permutation_average`'s: m, schedule, seed, bands, method, samples, temperature,
    target_width, stop_when_settled, confidence and k, all required."""
    loaded = _read(Path(examples))
    default_choices = not choices
    chosen = list(choices) if choices else list(dict.fromkeys(e.output for e in loaded))
    if default_choices and len(chosen) < 2:
        raise InputError(
            f"the examples show only one output ({chosen[0]!r}); pass candidates with --choice",
            field="choices",
        )
    defaults = FewShotTemplate()
    fewshot = FewShotTemplate(
        example=_unescape(template) or defaults.example,
        separator=_unescape(separator) or defaults.separator,
        header=_unescape(header) or "",
    )
    if options["method"] not in ("auto", "logprobs", "sampled"):
        raise InputError(
            f"must be auto, logprobs or sampled, got {options['method']!r}", field="method"
        )
    _check_choices(query, chosen)
    _check_numbers(options)
    # The orderings are drawn before any call, so their options fail here too.
    schedule = check_schedule(options["schedule"])
    make_orderings(
        len(loaded), options["m"], schedule, seed=options["seed"], bands=options["bands"]
    )
    return AnswerRequest(
        loaded, query, tuple(chosen), default_choices, fewshot, tuple(sorted(options.items()))
    )


def check_chart(chart: Path | None) -> None:
    """`chart` (None: no chart) is a file name with a chart suffix, in a folder we could write."""
    if chart is None:
        return
    if chart.suffix.lower() not in CHART_SUFFIXES:
        raise InputError(
            f"must end in {', '.join(CHART_SUFFIXES)}, got {chart.name!r}", field="chart"
        )
    if chart.is_dir():
        raise InputError(f"{chart} is a folder", field="chart")
    require_folder_target(chart.parent, "chart")
