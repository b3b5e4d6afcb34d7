"""`cotplan demo`: the main job, end to end: calibrate -> plan -> run -> projected cost.

On a built-in task family and the embedded thinking model by default (SmolLM2 with cotplan's
adapter, thinking in `<think>` and over-thinking as reasoning models do): `cotplan.workflow`'s
`demo_setup` and `run_demo` do the work, `cotplan.render.demo` prints each step as it
finishes, and every table is also written to a report folder (CSV and PNG).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cotplan.cli.options import (
    BASE_URL,
    CONNECTION,
    check_at_least,
    check_probability,
    check_protocol,
    check_timeouts,
    connect_options,
    console,
    mode_and_protocol,
    noted_in_tables,
    opt,
    takes,
)
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.io import write_csv
from cotplan.render.demo import print_demo_costs, print_demo_setup, print_demo_step
from cotplan.workflow import FULL, QUICK, WHAT_IF_MODEL, save_demo_step

if TYPE_CHECKING:
    from cotplan.workflow import Demo

__all__ = ["demo"]

# fmt: off
DEMO = {
    "backend": opt(str, "local:thinking", "'local:thinking' (the embedded thinking model), "
                   "'local' (plain SmolLM2), 'local:PATH', 'lab:parity-overthink' or "
                   "'openai:MODEL'."),
    "base_url": BASE_URL,
    "family": opt(str | None, None, "Task family (default: the demo's measured choice)."),
    "quick": opt(bool, False, "Fewer items and budgets: about a minute."),
    "eps": opt(float | None, None, "Target error rate (default: chosen from the fit)."),
    "queries_per_day": opt(float, 10_000, "Workload for the cost projection."),
    "what_if": opt(str, WHAT_IF_MODEL, "API model whose prices the what-if projection uses."),
    "count": opt(int | None, None, "Calibration items per size (default: the preset's)."),
    "held_out": opt(int | None, None, "Held-out items per size (default: the preset's)."),
    "seed": opt(int, 0, "Seed of the calibration items."),
    "out": opt(Path | None, None, "Report folder (default reports/demo-<time>-<random>/)."),
    "progress": opt(bool, True, "Show progress bars."),
    **CONNECTION,
    "details": opt(bool, False, "Also print the statistics of each step.", "--details"),
}
# fmt: on


@takes(DEMO)
def demo(**o: Any) -> None:
    """Calibrate, plan and run on a built-in task, then project the cost."""
    from cotplan.backends import connect
    from cotplan.workflow import demo_setup, run_demo

    # Every option is checked before the model starts.
    eps, per_day, what_if, backend = o["eps"], o["queries_per_day"], o["what_if"], o["backend"]
    _check(eps, per_day, o["count"], o["held_out"])
    check_timeouts(o["timeout"], o["max_retries"])
    check_protocol(o["protocol"])
    started = time.perf_counter()
    _check_model(what_if)
    setup = demo_setup(
        o["family"], backend=backend, preset=QUICK if o["quick"] else FULL, count=o["count"],
        held_out=o["held_out"], seed=o["seed"],
    )  # fmt: skip
    report = start_report(o["out"], kind="demo", command="demo")
    staging = report.path  # every step writes here; moved into place together at the end
    console.print(f"[bold]cotplan demo:[/] {setup.family} ({setup.description})")
    options = connect_options(backend, o["timeout"], o["max_retries"], o["protocol"])
    with report, connect(backend, base_url=o["base_url"], **options) as model:
        print_demo_setup(console, setup, model.model, mode_and_protocol(model))
        console.rule("1. calibrate")
        with noted_in_tables():
            finished = run_demo(
                model, setup, eps=eps, queries_per_day=per_day, what_if=what_if,
                progress=o["progress"], on_step=_on_step(staging, eps=eps, details=o["details"]),
            )  # fmt: skip
        assert finished.costs is not None
        write_csv(finished.costs, staging / "costs.csv")
        folder = finish_report(report)
    page = add_report_page(folder, command="demo")
    print_demo_costs(console, finished.costs, per_day, what_if)
    console.rule()
    console.print(
        f"report folder: {folder} ({page.name + ', ' if page else ''}calibration.csv, "
        "constants.csv, plan.csv, run.csv, comparison.csv, costs.csv, *.png); finished in "
        f"{time.perf_counter() - started:.0f} s"
    )


def _check(
    eps: float | None, queries_per_day: float, count: int | None, held_out: int | None
) -> None:
    check_probability(eps, "eps")
    check_at_least(queries_per_day, "queries_per_day", 0)
    check_at_least(count, "count", 1)
    check_at_least(held_out, "held_out", 1)


def _check_model(what_if: str) -> None:
    from cotplan.pricing import price_table

    price_table().resolve(what_if)  # fail before any model call on a typo


def _on_step(folder: Path, *, eps: float | None, details: bool) -> Callable[[str, Demo], None]:
    """What the demo does as each step finishes: save its files, print its answer."""

    def step(name: str, done: Demo) -> None:
        save_demo_step(name, done, folder)
        print_demo_step(console, name, done, eps=eps, details=details)

    return step
