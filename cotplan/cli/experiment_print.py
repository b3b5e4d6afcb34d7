"""What `cotplan experiment ...` prints: progress bars, the table against the paper with each
verdict in its colour, a run's accounting, and each experiment's own details."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cotplan.intervals import compact as fmt
from cotplan.research.experiments._common import RunInfo

__all__ = [
    "VERDICT_COLOURS",
    "console",
    "entropy_details",
    "entropy_notes",
    "falck_details",
    "martingale_details",
    "order_details",
    "print_ablation",
    "print_rows",
    "print_run",
    "print_spread",
    "progress",
]

console = Console()


@contextlib.contextmanager
def progress() -> Iterator[Callable[[str, int], Callable[[int], None] | None]]:
    """A stage factory for the library: one progress bar per stage with predictions to read."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:

        def stage(name: str, total: int) -> Callable[[int], None] | None:
            if total <= 0:
                return None
            task = bar.add_task(name, total=total)
            return lambda done: bar.advance(task, done)

        yield stage


#: How each verdict of `cotplan.research.experiments.verdicts` is shown.
VERDICT_COLOURS = {
    "reproduced": "green",
    "not reproduced": "red",
    "not comparable (model)": "blue",
    "not comparable (scale)": "blue",
    "not testable": "yellow",
    "follows from averaging": "magenta",
    "not a model claim": "cyan",
    "cotplan check": "cyan",
}


def print_rows(frame: Any, title: str) -> None:
    table = Table(title=title, show_lines=False)
    for column in ("claim", "paper", "measured", "interval", "limit", "verdict"):
        table.add_column(column, overflow="fold")
    for row in frame.itertuples():
        colour = VERDICT_COLOURS.get(row.verdict, "yellow")
        flag = " ⚠" if row.breaks_limit else ""
        outcome = {"yes": ": holds", "no": ": fails"}.get(str(getattr(row, "holds", "")), "")
        table.add_row(
            escape(row.claim),
            escape(row.paper),
            escape(str(row.measured)),
            escape(str(row.interval)),
            escape(row.limit),
            f"[{colour}]{row.verdict}{outcome}{flag}[/]",
        )
    console.print(table)


def print_run(run: RunInfo) -> None:
    if run.exact:
        console.print(f"{run.predictor}: exact reference, no model requests ({run.wall_s:.1f} s)")
        return
    console.print(
        f"{escape(run.predictor)}: {run.requests} model requests, {run.cache_hits} cache hits, "
        f"{run.predictions} predictions in {run.wall_s:.1f} s; mean covered mass "
        f"{fmt(run.mean_covered_mass)}"
        + (f"; {run.missing_candidates} with a candidate missing" if run.missing_candidates else "")
        + (f"; {run.retries} retries after failures" if run.retries else "")
    )


def martingale_details(result: Any) -> None:
    fits = result.fits_frame()
    console.print(
        fits[["predictor", "form", "A", "A_low", "A_high", "B", "r2", "adj_r2"]].to_string(
            index=False
        )
    )


def order_details(result: Any) -> None:
    console.print(result.to_frame().to_string(index=False))


def entropy_details(result: Any) -> None:
    from cotplan.research.experiments import laplace_threshold_table

    console.print(result.first_n_frame().to_string(index=False))
    console.print("Laplace, exact, per p (first n at 99% efficiency):")
    console.print(laplace_threshold_table().to_string(index=False))
    limit = result.limit
    console.print(
        f"Bayes mixture under a uniform prior (the best any predictor can do in expectation): "
        f"efficiency {limit['efficiency_at_n']:.4f} at n = 20, 99% first at n = "
        f"{fmt(limit['first_n'])}"
    )
    if result.efficiency_20_ci is not None:
        console.print(
            f"{escape(result.predictor)}: efficiency {result.efficiency_20:.4f} "
            f"{result.efficiency_20_ci} at n = 20; per-step excess exponent "
            f"{fmt(result.excess_exponent)} {result.excess_exponent_ci}"
        )


def entropy_notes(result: Any) -> None:
    for flag in result.flags:
        console.print(f"[red]limit broken:[/] {escape(flag)}")


def falck_details(result: Any) -> None:
    from cotplan.research.experiments.falck_reference import printed_side_by_side

    console.print("T1 and T2 per setting, bayes_icl's definition beside cotplan's exact band:")
    console.print(escape(printed_side_by_side(result.to_frame()).to_string(index=False)))
    console.print(f"T3 per n, the median over {result.contexts} context(s):")
    console.print(escape(result.t3.to_string(index=False)))


def print_spread(spread: Any) -> None:
    """The ablation across training seeds: each seed's variance at each t, and the spread."""
    console.print("Variance over orderings of P(1 | t/2 ones among t bits) across training seeds:")
    table = spread.spread()
    columns = ["model", "t", *[c for c in table.columns if c.startswith("variance_seed")]]
    columns += ["geometric_mean", "min", "max", "fold", "v2_variance"]
    console.print(table[columns].to_string(index=False, float_format=lambda v: f"{v:.3g}"))


def print_ablation(result: Any) -> None:
    """One ablation: training losses beside Bayes, variance over orderings, the gap fits."""
    training = result.training[
        [
            "model",
            "heldout_loss",
            "bayes_heldout_loss",
            "excess",
            "excess_se",
            "bayes_loss",
            "constant_loss",
            "steps_per_s",
            "s_within_0.001",
            "s_settled_0.001",
            "from_store",
        ]
    ]
    console.print("Held-out loss per bit (nats) beside the Bayes predictor's on the same bits:")
    console.print(training.to_string(index=False))
    console.print("Variance over orderings of P(1 | t/2 ones among t bits), float64:")
    wide = result.order.pivot(index="model", columns="t", values="variance")
    console.print(wide.reindex(list(result.labels)).to_string(float_format=lambda v: f"{v:.3g}"))
    console.print(
        result.martingale[
            ["model", "A", "A_low", "A_high", "B", "adj_r2", "mean_excess", "vs_none", "ref_A"]
        ].to_string(index=False)
    )
