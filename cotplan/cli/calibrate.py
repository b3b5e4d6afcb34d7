"""`cotplan calibrate`: answer items at several reasoning budgets and save the calibration table.

Every option is checked before the first (maybe paid) request; the estimate of what the run
takes is `cotplan.workflow.preview_calibration`'s, the run `cotplan.planner.calibrate`'s, the
table `cotplan.render.calibration`'s. The batch path is `cotplan.cli.calibrate_batch`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cotplan.cli.options import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    MAX_CONCURRENCY,
    MAX_COUNT,
    BackendSpec,
    BaseUrl,
    Concurrency,
    Count,
    Family,
    MaxRetriesOption,
    ProtocolOption,
    ShowProgress,
    Sizes,
    TasksFile,
    TimeoutOption,
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
    parse_ints,
)
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.errors import InputError
from cotplan.render.calibration import print_calibration
from cotplan.validation import check_call, trusting

__all__ = ["calibrate"]

Budgets = Annotated[
    str,
    typer.Option(
        help="Reasoning budgets: 'auto' (a grid from 0 to about the 95th percentile of the "
        "model's own uncapped thinking, measured by each item's first request), "
        "comma-separated numbers, or 'paper'."
    ),
]
UncappedTokens = Annotated[
    int | None,
    typer.Option(
        help="Cap of each item's uncapped run (--budgets auto). Default 16384, or 4096 on "
        "the embedded and lab models, whose runs on 2 cores take minutes at that length."
    ),
]
Eps = Annotated[
    float | None,
    typer.Option(
        help="With --budgets auto: add budgets where the error crosses this target and "
        "certify there (answers only; the thinking comes from the same runs)."
    ),
]
Out = Annotated[Path | None, typer.Option(help="Report folder (default reports/<time>-<random>/).")]
Batch = Annotated[bool, typer.Option(help="Submit the requests through the endpoint's Batch API.")]
BatchFile = Annotated[
    bool, typer.Option(help="Write batch files for an executor (vLLM's run-batch).")
]
BatchOutput = Annotated[
    list[Path] | None, typer.Option(help="An executor's output file to read back.")
]
Status = Annotated[Path | None, typer.Option(help="Show where a report folder's batches stand.")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before paid requests.")]


def calibrate(
    *,
    family: Family = None,
    tasks: TasksFile = None,
    n: Sizes = None,
    count: Count = 12,
    seed: Annotated[int, typer.Option(help="Seed of the generated items.")] = 0,
    budgets: Budgets = "auto",
    backend: BackendSpec = "local",
    base_url: BaseUrl = None,
    concurrency: Concurrency = None,
    answer_tokens: Annotated[int, typer.Option(help="Cap of the answer phase.")] = 16,
    out: Out = None,
    progress: ShowProgress = True,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    protocol: ProtocolOption = "auto",
    batch: Batch = False,
    batch_file: BatchFile = False,
    batch_output: BatchOutput = None,
    status: Status = None,
    uncapped_tokens: UncappedTokens = None,
    eps: Eps = None,
    yes: Yes = False,
) -> None:
    """Answer items at several reasoning budgets and save the calibration table."""
    from cotplan.cli import calibrate_batch
    from cotplan.workflow import build_items, default_uncapped

    if status is not None:  # the batch path (docs/batch.md)
        calibrate_batch.show_status(status)
        return
    batched = batch or batch_file or bool(batch_output)
    sizes = parse_ints(n, "n")
    check_item_source(family, tasks, sizes)
    check_timeouts(timeout, max_retries)
    check_protocol(protocol)
    check_int(seed, "seed", low=0)
    grid = check_budgets(budgets)
    _check_run(count, concurrency, answer_tokens, out, backend=backend, base_url=base_url)
    cap = uncapped_tokens if uncapped_tokens is not None else default_uncapped(backend)
    _check_grid(grid, cap, eps, batched=batched)
    items = build_items(family, tasks, sizes, count, seed, backend=backend)
    options = connect_options(backend, timeout, max_retries, protocol)
    if batched:
        calibrate_batch.calibrate_in_batches(
            backend=backend, base_url=base_url, options=options, items=items, grid=grid,
            answer_tokens=answer_tokens, uncapped_tokens=cap, out=out, submit=batch,
            write_files=batch_file,
            outputs=batch_output or [], yes=yes,
        )  # fmt: skip
        return
    run = {"concurrency": concurrency, "progress": progress, "eps": eps}
    _calibrate(
        items, grid, backend=backend, base_url=base_url, options=options, cap=cap,
        answer_tokens=answer_tokens, out=out, yes=yes, run=run,
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
