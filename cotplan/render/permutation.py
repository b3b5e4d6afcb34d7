"""A permutation-averaged answer at a terminal (`cotplan answer`): the choices' probabilities
with their intervals, and the same as one JSON object for `--json`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from cotplan.permutation.average import AnswerDistribution

__all__ = ["answer_json", "print_answer"]


def _number(value: float) -> str:
    return (
        "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
    )


def answer_json(result: AnswerDistribution) -> dict[str, Any]:
    """What `cotplan answer --json` prints: every field of the result, NaN as null."""

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
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "cost_usd": None if result.cost_usd is None else str(result.cost_usd),
        "model": result.model,
        "k": result.k,
        "orderings": result.orderings.tolist(),
        "per_ordering": result.per_ordering.tolist(),
        "notes": list(result.notes),
    }


def print_answer(console: Console, result: AnswerDistribution, default_choices: bool) -> None:
    """The answer, each choice's probability with its interval and spread over orderings,
    then the orderings, the interval's method, the calls and what they cost."""
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
    console.print(table)
    cost = "no price" if result.cost_usd is None else f"${float(result.cost_usd):.6f}"
    console.print(
        f"{result.m} of at most {result.m_max} {result.schedule} orderings (seed {result.seed}; "
        f"{escape(result.stop_reason)}); method {result.method}; mean covered mass "
        f"{result.mean_covered_mass:.3f}",
        highlight=False,
    )
    console.print(
        f"interval: {escape(result.interval_description)}; sd/var: spread of one ordering's "
        "probability over orderings",
        highlight=False,
    )
    console.print(
        f"{result.calls} calls ({result.cached_calls} from the cache), "
        f"{result.usage.prompt_tokens} prompt + {result.usage.completion_tokens} completion "
        f"tokens, {cost} ({escape(result.model)})",
        highlight=False,
    )
    if default_choices:
        console.print("choices: the distinct outputs of the examples (use --choice to set them)")
    for note in result.notes:
        console.print(f"note: {escape(note)}", highlight=False)
