"""`cotplan calibrate --batch`, `--batch-file` and `--status`: the command's batch path.

`cotplan calibrate` checks its options and builds its items, then hands them here: the batch
calibration itself is `cotplan.planner.batch.calibrate_batch`; this module connects, prints the
expected cost (and asks, for a priced model, unless --yes), the progress and the result, and
writes the calibration table into the report folder the batches' state lives in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cotplan.cli.options import console
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.errors import InputError
from cotplan.render.calibration import print_batch_status, print_calibration

if TYPE_CHECKING:
    from cotplan.planner.batch import CostEstimate
    from cotplan.tasks import TaskItem

__all__ = ["calibrate_in_batches", "show_status"]


def show_status(folder: Path) -> None:
    """Print where a report folder's batches stand, as last seen (nothing is sent)."""
    from cotplan.planner.batch import batch_status

    print_batch_status(console, batch_status(folder), folder)


def _confirm(yes: bool) -> Callable[[CostEstimate], bool]:
    def confirm(estimate: CostEstimate) -> bool:
        if yes or not estimate.priced or estimate.live_usd == 0.0:
            return True
        return typer.confirm(
            f"submit {estimate.requests:,} requests to {estimate.model} at batch rates?",
            default=False,
        )

    return confirm


def calibrate_in_batches(
    *,
    backend: str,
    base_url: str | None,
    options: dict[str, Any],
    items: Sequence[TaskItem],
    grid: Any,
    answer_tokens: int,
    uncapped_tokens: int | None = None,
    out: Path | None,
    submit: bool,
    write_files: bool = False,
    outputs: Sequence[Path],
    yes: bool,
) -> None:
    """The batch path of `cotplan calibrate` (`submit`: through the provider's Batch API;
    otherwise files for an executor, read back from `outputs` or beside their inputs)."""
    from cotplan.backends import connect
    from cotplan.planner.auto_grid import UNCAPPED_TOKENS
    from cotplan.planner.batch import calibrate_batch
    from cotplan.planner.batch_service import batch_service

    if submit and write_files:
        raise InputError("give one of --batch and --batch-file", field="batch")
    if out is None:
        raise InputError(
            "give --out DIR: the batches' state lives there, and the same command run again "
            "picks them up from it",
            field="out",
        )
    with connect(backend, base_url=base_url, **options) as model:
        service = batch_service(model, submit=submit, spec=backend, base_url=base_url)
        console.print(f"model {model.model}; batch state in {out / 'batch'}")
        result = calibrate_batch(
            model, items, grid, folder=out, service=service, outputs=outputs,
            answer_tokens=answer_tokens, confirm=_confirm(yes), say=console.print,
            uncapped_tokens=uncapped_tokens or UNCAPPED_TOKENS,
        )  # fmt: skip
    if result.calibration is None:
        console.print(
            f"{result.status.answered} answers so far; {result.status.in_flight} request(s) "
            "wait in the files above: run the same command again once they have run"
        )
        return
    with start_report(out, command="calibrate") as report:
        result.calibration.to_csv(report.path / "calibration.csv")
        print_calibration(console, result.calibration)
        if result.spend is not None:
            console.print(str(result.spend))
        folder = finish_report(report)
    console.print(f"wrote {folder / 'calibration.csv'}")
