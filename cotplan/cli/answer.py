"""`cotplan answer`: one query, answered by averaging over orderings of few-shot examples.

`cotplan.permutation.request.prepare_answer` reads and checks the inputs before the model starts,
`permutation_average` answers, `cotplan.render.permutation` prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from cotplan.cli.options import (
    MAX_RETRIES_OPTION,
    REQUIRED,
    TIMEOUT,
    arg,
    check_backend,
    check_timeouts,
    connect_options,
    opt,
    takes,
)
from cotplan.render.permutation import answer_json, print_answer

__all__ = ["answer"]

_console = Console()

# fmt: off
#: `prepare_answer`'s options, with the connection's and the output's among them.
ANSWER = {
    "examples": arg(Path, REQUIRED, "Examples file: .jsonl/.json ({input, output}) or "
                    ".csv/.tsv."),
    "query": opt(str, REQUIRED, "The input to answer.", "--query", "-q"),
    "choices": opt(list[str] | None, None, "A candidate answer (repeat; default: the examples' "
                   "distinct outputs).", "--choice", "-c"),
    "m": opt(int, 20, "Orderings (the most, with --target-width/--settle).", "--m"),
    "schedule": opt(str, "balanced", "random, banded or balanced (Latin-square cycles).",
                    "--schedule"),
    "seed": opt(int, 0, "Seed of the orderings (and samples).", "--seed"),
    "bands": opt(int | None, None, "Number of bands (schedule banded).", "--bands"),
    "backend": opt(str, "local", "'local' (the embedded model), 'local:PATH', 'openai:MODEL', "
                   "or a model name with --base-url (any OpenAI-compatible server).",
                   "--backend", "-b"),
    "base_url": opt(str | None, None, "Endpoint of an OpenAI-compatible server.", "--base-url"),
    "template": opt(str | None, None, "Example template with {input} and {output}; \\n for a "
                    "newline (default 'Input: {input}\\nOutput: {output}').", "--template"),
    "separator": opt(str | None, None, "Between examples (default \\n\\n).", "--separator"),
    "header": opt(str | None, None, "Text before the examples.", "--header"),
    "method": opt(str, "auto", "auto, logprobs or sampled (no logprobs: answer counts).",
                  "--method"),
    "samples": opt(int, 8, "Samples per ordering (sampled).", "--samples"),
    "temperature": opt(float, 1.0, "Sampling temperature (sampled).", "--temperature"),
    "target_width": opt(float | None, None, "Stop once the leader's interval is this narrow.",
                        "--target-width"),
    "stop_when_settled": opt(bool, False, "Stop once the leader's interval clears the others'.",
                             "--settle"),
    "confidence": opt(float, 0.95, "Interval level.", "--confidence"),
    "k": opt(int | None, None, "Budgeted CoT: reason at most K tokens per ordering, then "
             "answer.", "--k"),
    "as_json": opt(bool, False, "Print one JSON object instead.", "--json"),
    "chart": opt(Path | None, None, "Save the orderings chart (.png/.svg/.html).", "--chart"),
    "timeout": TIMEOUT,
    "max_retries": MAX_RETRIES_OPTION,
}
# fmt: on


@takes(ANSWER)
def answer(**options: Any) -> None:
    """Answer --query from the few-shot EXAMPLES, averaged over orderings of the examples."""
    from cotplan.backends.registry import connect
    from cotplan.permutation.average import permutation_average
    from cotplan.permutation.request import check_chart, prepare_answer

    own = ("backend", "base_url", "chart", "timeout", "max_retries", "as_json")
    backend, base_url, chart, timeout, max_retries, as_json = map(options.pop, own)
    request = prepare_answer(**options)
    check_chart(chart)
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
