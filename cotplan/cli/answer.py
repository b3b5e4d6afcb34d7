"""`cotplan answer`: one query, answered by averaging over orderings of few-shot examples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cotplan.cli.calibrate import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MaxRetriesOption,
    TimeoutOption,
)
from cotplan.errors import InputError
from cotplan.render.usage import usage_phrase

__all__ = ["register"]

_console = Console()

Opt = typer.Option

BACKEND_HELP = (
    "'local' (the embedded model), 'local:PATH', 'openai:MODEL', or a model name with --base-url "
    "(any OpenAI-compatible server)."
)


def _unescape(text: str | None) -> str | None:
    """Turn the two-character sequences \\n and \\t typed in a shell into real ones."""
    if text is None:
        return None
    return text.replace("\\n", "\n").replace("\\t", "\t")


def _number(value: float) -> str:
    return (
        "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
    )


def _as_json(result: Any) -> dict[str, Any]:
    def clean(value: float) -> float | None:
        return None if math.isnan(value) else value

    return {
        "query": result.query,
        "answer": result.answer,
        "probs": result.probs,
        "ci": {c: [clean(i.low), clean(i.high)] for c, i in result.ci.items()},
        "confidence": result.confidence,
        "interval_method": result.interval_method,
        "sd_over_orderings": {c: clean(v) for c, v in result.sd.items()},
        "var_over_orderings": {c: clean(v) for c, v in result.variance.items()},
        "se": {c: clean(v) for c, v in result.se.items()},
        "method": result.method,
        "schedule": result.schedule,
        "seed": result.seed,
        "m": result.m,
        "m_max": result.m_max,
        "stop_reason": result.stop_reason,
        "mean_covered_mass": result.mean_covered_mass,
        "missing": result.missing,
        "calls": result.calls,
        "cached_calls": result.cached_calls,
        "prompt_tokens": result.usage.known("prompt_tokens"),
        "completion_tokens": result.usage.known("completion_tokens"),
        "cost_usd": None if result.cost_usd is None else str(result.cost_usd),
        "model": result.model,
        "k": result.k,
        "orderings": result.orderings.tolist(),
        "per_ordering": result.per_ordering.tolist(),
        "notes": list(result.notes),
    }


def _print(result: Any, default_choices: bool) -> None:
    table = Table(
        title=f"{escape(result.query)} -> [bold]{escape(result.answer)}[/]",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    level = f"{result.confidence:.0%}"
    for column, justify in (
        ("choice", "left"),
        ("prob", "right"),
        (f"{level} interval", "right"),
        ("sd over orderings", "right"),
        ("var over orderings", "right"),
        ("missing", "right"),
    ):
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for choice in result.choices:
        interval = result.ci[choice]
        shown = "" if math.isnan(interval.low) else f"{interval.low:.3f}-{interval.high:.3f}"
        marker = " *" if choice == result.answer else ""
        table.add_row(
            escape(choice) + marker,
            _number(result.probs[choice]),
            shown,
            _number(result.sd[choice]),
            _number(result.variance[choice]),
            str(result.missing[choice]),
        )
    _console.print(table)
    cost = "no price" if result.cost_usd is None else f"${float(result.cost_usd):.6f}"
    _console.print(
        f"{result.m} of at most {result.m_max} {result.schedule} orderings (seed {result.seed}; "
        f"{escape(result.stop_reason)}); method {result.method}; mean covered mass "
        f"{result.mean_covered_mass:.3f}",
        highlight=False,
    )
    _console.print(
        f"interval: {escape(result.interval_description)}; sd/var: spread of one ordering's "
        "probability over orderings",
        highlight=False,
    )
    _console.print(
        f"{result.calls} calls ({result.cached_calls} from the cache), "
        f"{usage_phrase(result.usage)}, {cost} ({escape(result.model)})",
        highlight=False,
    )
    if default_choices:
        _console.print("choices: the distinct outputs of the examples (use --choice to set them)")
    for note in result.notes:
        _console.print(f"note: {escape(note)}", highlight=False)


def _load_examples(load: Any, path: Path) -> Any:
    """`load(path)`, with the reader's own failures (not UTF-8, a number past Python's digit
    limit, nesting past the stack, a CSV field past csv's limit) as one line naming the file."""
    import csv

    try:
        return load(path)
    except InputError:
        raise
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})", field="examples", source=str(path)
        ) from exc
    except (ValueError, RecursionError, csv.Error) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:120]
        raise InputError(f"cannot be read ({reason})", field="examples", source=str(path)) from exc


CHART_SUFFIXES = (".png", ".svg", ".html")
MAX_M = 100_000


def _check_options(
    *,
    query: str,
    choices: list[str] | None,
    m: int,
    seed: int,
    samples: int,
    temperature: float,
    target_width: float | None,
    confidence: float,
    k: int | None,
    chart: Path | None,
    backend: str,
    base_url: str | None,
) -> None:
    """Every option of `cotplan answer`, before the model is started or called."""
    from cotplan.cli.calibrate import (
        MAX_BUDGET,
        check_backend,
        check_int,
        check_out,
        check_probability,
    )

    if not query.strip():
        raise InputError("must not be empty", field="query")
    for candidate in choices or ():
        if not candidate.strip():
            raise InputError("must not be empty", field="choice")
    # Outer spaces are the template's business: " a" and "a" are one choice.
    if choices and len({c.strip() for c in choices}) != len(choices):
        raise InputError(f"must be distinct, got {choices!r}", field="choice")
    check_int(m, "m", high=MAX_M)
    check_int(seed, "seed", low=0)
    check_int(samples, "samples", high=1000)
    if math.isnan(temperature) or not 0.0 < temperature <= 2.0:
        raise InputError(f"must be in (0, 2], got {temperature!r}", field="temperature")
    check_probability(target_width, "target_width", closed_high=True)
    check_probability(confidence, "confidence")
    check_int(k, "k", low=0, high=MAX_BUDGET)
    if chart is not None:
        if chart.suffix.lower() not in CHART_SUFFIXES:
            raise InputError(
                f"must end in {', '.join(CHART_SUFFIXES)}, got {chart.name!r}", field="chart"
            )
        if chart.is_dir():
            raise InputError(f"{chart} is a folder", field="chart")
        check_out(chart.parent, field="chart")
    check_backend(backend, base_url)


def register(app: typer.Typer) -> None:
    """Add `cotplan answer` to the top-level app."""

    @app.command("answer")
    def answer(
        *,
        examples: Annotated[
            Path, typer.Argument(help="Examples file: .jsonl/.json ({input, output}) or .csv/.tsv.")
        ],
        query: Annotated[str, Opt("--query", "-q", help="The input to answer.")],
        choice: Annotated[
            list[str] | None,
            Opt(
                "--choice",
                "-c",
                help="A candidate answer (repeat; default: the examples' distinct outputs).",
            ),
        ] = None,
        m: Annotated[
            int, Opt("--m", help="Orderings (the most, with --target-width/--settle).")
        ] = 20,
        schedule: Annotated[
            str, Opt("--schedule", help="random, banded or balanced (Latin-square cycles).")
        ] = "balanced",
        seed: Annotated[int, Opt("--seed", help="Seed of the orderings (and samples).")] = 0,
        bands: Annotated[
            int | None, Opt("--bands", help="Number of bands (schedule banded).")
        ] = None,
        backend: Annotated[str, Opt("--backend", "-b", help=BACKEND_HELP)] = "local",
        base_url: Annotated[
            str | None, Opt("--base-url", help="Endpoint of an OpenAI-compatible server.")
        ] = None,
        template: Annotated[
            str | None,
            Opt(
                "--template",
                help="Example template with {input} and {output}; \\n for a "
                "newline (default 'Input: {input}\\nOutput: {output}').",
            ),
        ] = None,
        separator: Annotated[
            str | None, Opt("--separator", help="Between examples (default \\n\\n).")
        ] = None,
        header: Annotated[str | None, Opt("--header", help="Text before the examples.")] = None,
        method: Annotated[
            str, Opt("--method", help="auto, logprobs or sampled (no logprobs: answer counts).")
        ] = "auto",
        samples: Annotated[int, Opt("--samples", help="Samples per ordering (sampled).")] = 8,
        temperature: Annotated[
            float, Opt("--temperature", help="Sampling temperature (sampled).")
        ] = 1.0,
        target_width: Annotated[
            float | None,
            Opt("--target-width", help="Stop once the leader's interval is this narrow."),
        ] = None,
        settle: Annotated[
            bool, Opt("--settle", help="Stop once the leader's interval clears the others'.")
        ] = False,
        confidence: Annotated[float, Opt("--confidence", help="Interval level.")] = 0.95,
        k: Annotated[
            int | None,
            Opt("--k", help="Budgeted CoT: reason at most K tokens per ordering, then answer."),
        ] = None,
        as_json: Annotated[bool, Opt("--json", help="Print one JSON object instead.")] = False,
        chart: Annotated[
            Path | None, Opt("--chart", help="Save the orderings chart (.png/.svg/.html).")
        ] = None,
        timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
        max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    ) -> None:
        """Answer --query from the few-shot EXAMPLES, averaged over orderings of the examples."""
        from cotplan.backends.registry import connect
        from cotplan.cli.calibrate import check_timeouts, connect_options
        from cotplan.permutation.average import permutation_average
        from cotplan.permutation.fewshot import FewShotTemplate, load_examples
        from cotplan.permutation.schedules import check_schedule, make_orderings

        loaded = _load_examples(load_examples, examples)
        default_choices = not choice
        choices = list(choice) if choice else list(dict.fromkeys(e.output for e in loaded))
        if default_choices and len(choices) < 2:
            raise InputError(
                f"the examples show only one output ({choices[0]!r}); pass candidates with "
                "--choice",
                field="choices",
            )
        defaults = FewShotTemplate()
        fewshot = FewShotTemplate(
            example=_unescape(template) or defaults.example,
            separator=_unescape(separator) or defaults.separator,
            header=_unescape(header) or "",
        )
        if method not in ("auto", "logprobs", "sampled"):
            raise InputError(f"must be auto, logprobs or sampled, got {method!r}", field="method")
        _check_options(
            query=query,
            choices=choices,
            m=m,
            seed=seed,
            samples=samples,
            temperature=temperature,
            target_width=target_width,
            confidence=confidence,
            k=k,
            chart=chart,
            backend=backend,
            base_url=base_url,
        )
        # The orderings are drawn before any call, so their options fail here too.
        make_orderings(len(loaded), m, check_schedule(schedule), seed=seed, bands=bands)
        check_timeouts(timeout, max_retries)
        options = connect_options(backend, timeout, max_retries)
        with connect(backend, base_url=base_url, **options) as model:
            result = permutation_average(
                model,
                loaded,
                query,
                choices,
                m=m,
                schedule=schedule,  # type: ignore[arg-type]
                seed=seed,
                bands=bands,
                template=fewshot,
                method=method,  # type: ignore[arg-type]
                samples=samples,
                temperature=temperature,
                target_width=target_width,
                stop_when_settled=settle,
                confidence=confidence,
                k=k,
            )
        if chart is not None:
            from cotplan.charts.costs import save_chart
            from cotplan.charts.permutation import orderings_chart

            save_chart(orderings_chart(result), chart)
        if as_json:
            typer.echo(json.dumps(_as_json(result), indent=2))
            return
        _print(result, default_choices)
        if chart is not None:
            _console.print(f"saved {escape(str(chart))}")
