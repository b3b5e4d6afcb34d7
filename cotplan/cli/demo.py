"""`cotplan demo`: the main job, end to end: calibrate -> plan -> run -> projected cost.

On a built-in task family and the embedded thinking model by default (SmolLM2 with cotplan's
adapter, thinking in `<think>` and over-thinking as reasoning models do): answer items at a grid of
reasoning budgets, fit the budget model, plan k* for a target error, apply the plan on
held-out items next to uncapped reasoning, and project the monthly cost of both policies for a
stated workload. Every table is also written to a report folder (CSV and PNG).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cotplan.cli.calibrate import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MaxRetriesOption,
    ProtocolOption,
    TimeoutOption,
    check_protocol,
)
from cotplan.cli.glance import law_sentence, print_budget_caps, print_costs, print_run_glance
from cotplan.cli.plan import (
    check_at_least,
    check_unit,
    console,
    mode_and_protocol,
    print_budgets,
    print_calibration,
    print_certified,
    print_comparison,
    print_report,
    save_chart,
)
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.io import write_csv
from cotplan.workflow import (
    DEMO_FALLBACK_FAMILY,
    FULL,
    QUICK,
    WHAT_IF_MODEL,
    DemoPreset,
    demo_family,
)

if TYPE_CHECKING:
    import pandas as pd

    from cotplan.workflow import Demo

# The preset and family names are re-exported: they lived here before `cotplan.workflow`.
__all__ = ["DEMO_FALLBACK_FAMILY", "FULL", "QUICK", "DemoPreset", "demo", "demo_family", "register"]


def _print_costs(costs: pd.DataFrame, queries_per_day: float, what_if: str) -> None:
    print_costs(console, costs, queries_per_day)
    console.print(
        f"what-if: the same token counts priced at {what_if} (one call per query: the question "
        "in, reasoning and answer out); the embedded model itself costs nothing per token."
    )


def _show_step(step: str, result: Demo, eps: float | None, folder: Path, details: bool) -> None:
    """Print and save what `run_demo` just finished: the answer of each step, and with
    `details` the statistics behind it."""
    from cotplan.charts import chart
    from cotplan.charts.planner import budget_chart, calibration_chart

    if step == "calibrate" and result.calibration is not None:
        result.calibration.to_csv(folder / "calibration.csv")
        print_calibration(result.calibration)
        console.rule("2. plan")
    elif step == "plan" and result.planner is not None:
        planner = result.planner
        if eps is None:
            console.print(f"target: {result.target_reason}")
        shown = result.planned
        if shown:
            print_budget_caps(console, shown, result.target)
        else:
            console.print(f"plan: k* = 0 at every size ({planner.verdict_})")
        console.print(f"[bold]Law:[/] {law_sentence(planner)}")
        if details:
            print_report(planner)
            print_certified(planner, result.target)
            if shown:
                print_budgets(shown, result.target)
        write_csv(planner.report().to_frame(), folder / "constants.csv")
        if shown:
            import pandas as pd

            write_csv(pd.concat([b.to_frame() for b in shown]), folder / "plan.csv")
            save_chart(budget_chart(planner, eps=result.target), folder / "budget.png")
        save_chart(calibration_chart(planner), folder / "calibration.png")
        console.rule("3. run the plan on held-out items")
    elif step == "run" and result.run is not None:
        print_run_glance(console, result.run)
        if details:
            print_comparison(result.run)
        write_csv(result.run.frame, folder / "run.csv")
        write_csv(result.run.comparison, folder / "comparison.csv")
        save_chart(chart(result.run), folder / "comparison.png")
        console.rule("4. projected cost")


def demo(
    *,
    backend: Annotated[
        str,
        typer.Option(
            help="'local:thinking' (the embedded thinking model), 'local' (plain "
            "SmolLM2), 'local:PATH', 'lab:parity-overthink' or 'openai:MODEL'."
        ),
    ] = "local:thinking",
    base_url: Annotated[str | None, typer.Option(help="An OpenAI-compatible endpoint.")] = None,
    family: Annotated[
        str | None, typer.Option(help="Task family (default: the demo's measured choice).")
    ] = None,
    quick: Annotated[bool, typer.Option(help="Fewer items and budgets: about a minute.")] = False,
    eps: Annotated[
        float | None, typer.Option(help="Target error rate (default: chosen from the fit).")
    ] = None,
    queries_per_day: Annotated[
        float, typer.Option(help="Workload for the cost projection.")
    ] = 10_000,
    what_if: Annotated[
        str, typer.Option(help="API model whose prices the what-if projection uses.")
    ] = WHAT_IF_MODEL,
    count: Annotated[
        int | None, typer.Option(help="Calibration items per size (default: the preset's).")
    ] = None,
    held_out: Annotated[
        int | None, typer.Option(help="Held-out items per size (default: the preset's).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the calibration items.")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Report folder (default reports/demo-<time>-<random>/).")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    protocol: ProtocolOption = "auto",
    details: Annotated[
        bool, typer.Option("--details", help="Also print the statistics of each step.")
    ] = False,
) -> None:
    """Calibrate, plan and run on a built-in task, then project the cost."""
    # Every option is checked before the model starts.
    if eps is not None:
        check_unit(eps, "eps")
    check_at_least(queries_per_day, "queries_per_day", 0)
    check_at_least(count, "count", 1)
    check_at_least(held_out, "held_out", 1)
    from cotplan.backends import connect
    from cotplan.cli.calibrate import check_timeouts, connect_options
    from cotplan.pricing import price_table
    from cotplan.workflow import demo_setup, run_demo

    check_timeouts(timeout, max_retries)
    check_protocol(protocol)

    started = time.perf_counter()
    price_table().resolve(what_if)  # fail before any model call on a typo
    setup = demo_setup(
        family,
        backend=backend,
        preset=QUICK if quick else FULL,
        count=count,
        held_out=held_out,
        seed=seed,
    )
    report = start_report(out, kind="demo", command="demo")
    staging = report.path  # every step writes here; moved into place together at the end
    preset = setup.preset
    console.print(f"[bold]cotplan demo:[/] {setup.family} ({setup.description})")
    options = connect_options(backend, timeout, max_retries, protocol)
    with report, connect(backend, base_url=base_url, **options) as model:
        console.print(
            f"model {model.model} ({mode_and_protocol(model)}); sizes n = "
            f"{', '.join(map(str, setup.sizes))} ({setup.n_meaning}); "
            f"{len(setup.items)} calibration items at budgets "
            + "; ".join(_grid_words(preset.grid(n), n) for n in setup.sizes)
            + (" (the paper's grid, [0, 10√n])" if preset.budgets is None else "")
            + f"; {len(setup.held_out)} held-out items"
        )
        console.rule("1. calibrate")
        finished = run_demo(
            model,
            setup,
            eps=eps,
            queries_per_day=queries_per_day,
            what_if=what_if,
            progress=progress,
            on_step=lambda step, done: _show_step(step, done, eps, staging, details),
        )
        assert finished.costs is not None
        write_csv(finished.costs, staging / "costs.csv")
        folder = finish_report(report)
    page = add_report_page(folder, command="demo")
    _print_costs(finished.costs, queries_per_day, what_if)
    console.rule()
    console.print(
        f"report folder: {folder} ({page.name + ', ' if page else ''}calibration.csv, "
        "constants.csv, plan.csv, run.csv, comparison.csv, costs.csv, *.png); finished in "
        f"{time.perf_counter() - started:.0f} s"
    )


def _grid_words(grid: list[int], n: int) -> str:
    """A budget grid in a few words: listed when short, its range and size when long."""
    if len(grid) <= 6:
        return f"k = {', '.join(map(str, grid))} (n = {n})"
    return f"{len(grid)} from k = {grid[0]} to {grid[-1]} (n = {n})"


def register(app: typer.Typer) -> None:
    """Add `cotplan demo` to the top-level app."""
    app.command()(demo)
