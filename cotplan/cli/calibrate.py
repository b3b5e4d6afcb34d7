"""`cotplan calibrate`: answer items at several reasoning budgets and save the calibration table.

Every option is checked before the first (maybe paid) request; the estimate of what the run
takes is `cotplan.workflow.preview_calibration`'s, the run `cotplan.planner.calibrate`'s, the
table `cotplan.render.calibration`'s. The batch path is `cotplan.cli.calibrate_batch`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from cotplan.cli.options import (
    BACKEND_SPEC,
    BASE_URL,
    CONCURRENCY,
    CONNECTION,
    COUNT,
    FAMILY,
    MAX_CONCURRENCY,
    MAX_COUNT,
    SHOW_PROGRESS,
    SIZES,
    TASKS_FILE,
    check_backend,
    check_budgets,
    check_int,
    check_item_source,
    check_out,
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
from cotplan.errors import InputError
from cotplan.render.calibration import print_calibration
from cotplan.validation import check_call, require_ints, trusting

__all__ = ["calibrate"]

# fmt: off
CALIBRATE = {
    "family": FAMILY,
    "tasks": TASKS_FILE,
    "n": SIZES,
    "count": COUNT,
    "seed": opt(int, 0, "Seed of the generated items."),
    "budgets": opt(str, "auto", "Reasoning budgets: 'auto' (a grid from 0 to about the 95th "
                   "percentile of the model's own uncapped thinking, measured by each item's "
                   "first request), comma-separated numbers, or 'paper'."),
    "backend": BACKEND_SPEC,
    "base_url": BASE_URL,
    "concurrency": CONCURRENCY,
    "answer_tokens": opt(int, 16, "Cap of the answer phase."),
    "out": opt(Path | None, None, "Report folder (default reports/<time>-<random>/)."),
    "progress": SHOW_PROGRESS,
    **CONNECTION,
    "batch": opt(bool, False, "Submit the requests through the endpoint's Batch API."),
    "batch_file": opt(bool, False, "Write batch files for an executor (vLLM's run-batch)."),
    "batch_output": opt(list[Path] | None, None, "An executor's output file to read back."),
    "status": opt(Path | None, None, "Show where a report folder's batches stand."),
    "uncapped_tokens": opt(int | None, None, "Cap of each item's uncapped run (--budgets auto). "
                           "Default 16384, or 4096 on the embedded and lab models, whose runs "
                           "on 2 cores take minutes at that length."),
    "eps": opt(float | None, None, "With --budgets auto: add budgets where the error crosses "
               "this target and certify there (answers only; the thinking comes from the same "
               "runs)."),
    "yes": opt(bool, False, "Do not ask before paid requests.", "--yes", "-y"),
}
# fmt: on


@takes(CALIBRATE)
def calibrate(**o: Any) -> None:
    """Answer items at several reasoning budgets and save the calibration table."""
    from cotplan.cli import calibrate_batch
    from cotplan.workflow import build_items, default_uncapped

    if o["status"] is not None:  # the batch path (docs/batch.md)
        calibrate_batch.show_status(o["status"])
        return
    batched = o["batch"] or o["batch_file"] or bool(o["batch_output"])
    backend, base_url, out, eps = o["backend"], o["base_url"], o["out"], o["eps"]
    sizes = require_ints(o["n"], "n")
    check_item_source(o["family"], o["tasks"], sizes)
    check_timeouts(o["timeout"], o["max_retries"])
    check_protocol(o["protocol"])
    check_int(o["seed"], "seed", low=0)
    grid = check_budgets(o["budgets"])
    _check_run(o["count"], o["concurrency"], o["answer_tokens"], out, backend=backend,
               base_url=base_url)  # fmt: skip
    cap = o["uncapped_tokens"]
    cap = cap if cap is not None else default_uncapped(backend)
    _check_grid(grid, cap, eps, batched=batched)
    items = build_items(o["family"], o["tasks"], sizes, o["count"], o["seed"], backend=backend)
    options = connect_options(backend, o["timeout"], o["max_retries"], o["protocol"])
    if batched:
        calibrate_batch.calibrate_in_batches(
            backend=backend, base_url=base_url, options=options, items=items, grid=grid,
            answer_tokens=o["answer_tokens"], uncapped_tokens=cap, out=out, submit=o["batch"],
            write_files=o["batch_file"], outputs=o["batch_output"] or [], yes=o["yes"],
        )  # fmt: skip
        return
    run = {"concurrency": o["concurrency"], "progress": o["progress"], "eps": eps}
    _calibrate(
        items, grid, backend=backend, base_url=base_url, options=options, cap=cap,
        answer_tokens=o["answer_tokens"], out=out, yes=o["yes"], run=run,
    )  # fmt: skip


def _check_run(
    count: int,
    concurrency: int | None,
    answer_tokens: int,
    out: Path | None,
    *,
    backend: str,
    base_url: str | None,
) -> None:
    check_int(count, "count", high=MAX_COUNT)
    check_int(concurrency, "concurrency", high=MAX_CONCURRENCY)
    from cotplan.planner.calibrate import calibrate as run_calibration

    # the library's own declaration, checked here before a model starts, trusted after
    check_call(run_calibration, answer_tokens=answer_tokens)
    check_out(out)
    check_backend(backend, base_url)


def _check_grid(grid: list[int] | str, cap: int, eps: float | None, *, batched: bool) -> None:
    from cotplan.planner.calibrate import calibrate as run_calibration

    check_call(run_calibration, uncapped_tokens=cap, eps=eps)
    if eps is not None and grid != "auto":
        raise InputError("--eps refines the auto grid: use it with --budgets auto", field="eps")
    if batched and eps is not None:
        # The batch path sizes the auto grid from a first round of uncapped runs, but does not
        # refine it (that needs answers the grid's round has not returned).
        raise InputError("--eps is not available on the batch path", field="eps")


def _calibrate(
    items: Any,
    grid: Any,
    *,
    backend: str,
    base_url: str | None,
    options: dict[str, Any],
    cap: int,
    answer_tokens: int,
    out: Path | None,
    yes: bool,
    run: dict[str, Any],
) -> None:
    from cotplan.backends import connect
    from cotplan.planner.calibrate import calibrate as run_calibration
    from cotplan.workflow import preview_calibration

    with (
        start_report(out, command="calibrate") as report,
        connect(backend, base_url=base_url, **options) as model,
    ):
        console.print(f"model {model.model} ({mode_and_protocol(model)})")
        preview = preview_calibration(
            model, items, grid, backend=backend, base_url=base_url,
            uncapped_tokens=cap, answer_tokens=answer_tokens,
        )  # fmt: skip
        for line in preview.estimate.lines():
            console.print(line)
        question = f"{backend} may charge for these requests. Start?"
        if preview.paid and not yes and not typer.confirm(question, default=False):
            console.print("not started: no requests sent")
            raise typer.Exit(1)
        if run.get("concurrency") is None:  # the server's own number, where it says one
            from cotplan.planner.batch_concurrency import server_concurrency

            run = {**run, "concurrency": server_concurrency(model)}
        with noted_in_tables(), trusting():  # checked above, before the model started
            result = run_calibration(
                model, items, grid, answer_tokens=answer_tokens, uncapped_tokens=cap, **run
            )
        result.to_csv(report.path / "calibration.csv")
        print_calibration(console, result)
        folder = finish_report(report)
    page = add_report_page(folder, command="calibrate")
    console.print(f"wrote {folder / 'calibration.csv'}" + (f", {page.name}" if page else ""))
