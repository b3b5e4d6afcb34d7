"""`cotplan answer`: one query, answered by averaging over orderings of few-shot examples.

`cotplan.permutation.request.prepare_answer` reads and checks the inputs before the model starts,
`permutation_average` answers, `cotplan.render.permutation` prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.cli.options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MaxRetriesOption,
    TimeoutOption,
    check_backend,
    check_out,
    check_timeouts,
    connect_options,
)
from cotplan.errors import InputError
from cotplan.render.permutation import answer_json, print_answer

__all__ = ["answer"]

_console = Console()
Opt = typer.Option
CHART_SUFFIXES = (".png", ".svg", ".html")

Examples = Annotated[
    Path, typer.Argument(help="Examples file: .jsonl/.json ({input, output}) or .csv/.tsv.")
]
Query = Annotated[str, Opt("--query", "-q", help="The input to answer.")]
Choice = Annotated[
    list[str] | None,
    Opt(
        "--choice",
        "-c",
        help="A candidate answer (repeat; default: the examples' distinct outputs).",
    ),
]
M = Annotated[int, Opt("--m", help="Orderings (the most, with --target-width/--settle).")]
ScheduleName = Annotated[
    str, Opt("--schedule", help="random, banded or balanced (Latin-square cycles).")
]
Bands = Annotated[int | None, Opt("--bands", help="Number of bands (schedule banded).")]
Backend = Annotated[
    str,
    Opt(
        "--backend",
        "-b",
        help="'local' (the embedded model), 'local:PATH', 'openai:MODEL', or a model name with "
        "--base-url (any OpenAI-compatible server).",
    ),
]
BaseUrl = Annotated[str | None, Opt("--base-url", help="Endpoint of an OpenAI-compatible server.")]
Template = Annotated[
    str | None,
    Opt(
        "--template",
        help="Example template with {input} and {output}; \\n for a "
        "newline (default 'Input: {input}\\nOutput: {output}').",
    ),
]
Separator = Annotated[str | None, Opt("--separator", help="Between examples (default \\n\\n).")]
Header = Annotated[str | None, Opt("--header", help="Text before the examples.")]
Method = Annotated[
    str, Opt("--method", help="auto, logprobs or sampled (no logprobs: answer counts).")
]
TargetWidth = Annotated[
    float | None, Opt("--target-width", help="Stop once the leader's interval is this narrow.")
]
Settle = Annotated[
    bool, Opt("--settle", help="Stop once the leader's interval clears the others'.")
]
K = Annotated[
    int | None, Opt("--k", help="Budgeted CoT: reason at most K tokens per ordering, then answer.")
]
Chart = Annotated[Path | None, Opt("--chart", help="Save the orderings chart (.png/.svg/.html).")]


def answer(
    *,
    examples: Examples,
    query: Query,
    choice: Choice = None,
    m: M = 20,
    schedule: ScheduleName = "balanced",
    seed: Annotated[int, Opt("--seed", help="Seed of the orderings (and samples).")] = 0,
    bands: Bands = None,
    backend: Backend = "local",
    base_url: BaseUrl = None,
    template: Template = None,
    separator: Separator = None,
    header: Header = None,
    method: Method = "auto",
    samples: Annotated[int, Opt("--samples", help="Samples per ordering (sampled).")] = 8,
    temperature: Annotated[
        float, Opt("--temperature", help="Sampling temperature (sampled).")
    ] = 1.0,
    target_width: TargetWidth = None,
    settle: Settle = False,
    confidence: Annotated[float, Opt("--confidence", help="Interval level.")] = 0.95,
    k: K = None,
    as_json: Annotated[bool, Opt("--json", help="Print one JSON object instead.")] = False,
    chart: Chart = None,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
) -> None:
    """Answer --query from the few-shot EXAMPLES, averaged over orderings of the examples."""
    from cotplan.backends.registry import connect
    from cotplan.permutation.average import permutation_average
    from cotplan.permutation.request import prepare_answer

    request = prepare_answer(
        examples, query, choice, template=template, separator=separator, header=header, m=m,
        schedule=schedule, seed=seed, bands=bands, method=method, samples=samples,
        temperature=temperature, target_width=target_width, stop_when_settled=settle,
        confidence=confidence, k=k,
    )  # fmt: skip
    _check_chart(chart)
    check_backend(backend, base_url)
    check_timeouts(timeout, max_retries)
    with connect(
        backend, base_url=base_url, **connect_options(backend, timeout, max_retries)
    ) as model:
        result = permutation_average(model, **request.arguments())
    if chart is not None:
        from cotplan.charts.costs import save_chart
        from cotplan.charts.permutation import orderings_chart

        save_chart(orderings_chart(result), chart)
    if as_json:
        typer.echo(json.dumps(answer_json(result), indent=2))
        return
    print_answer(_console, result, request.default_choices)
    if chart is not None:
        _console.print(f"saved {escape(str(chart))}")


def _check_chart(chart: Path | None) -> None:
    """`--chart`: a file name with a chart suffix, in a folder we could write."""
    if chart is None:
        return
    if chart.suffix.lower() not in CHART_SUFFIXES:
        raise InputError(
            f"must end in {', '.join(CHART_SUFFIXES)}, got {chart.name!r}", field="chart"
        )
    if chart.is_dir():
        raise InputError(f"{chart} is a folder", field="chart")
    check_out(chart.parent, field="chart")
