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
from rich.console import Console
from rich.table import Table

from cotplan.cli.report_folders import finish_report, start_report
from cotplan.errors import CapabilityError, InputError

if TYPE_CHECKING:
    from cotplan.planner.batch import CostEstimate
    from cotplan.planner.calibrate import Calibration
    from cotplan.tasks import TaskItem

__all__ = ["calibrate_in_batches", "show_status"]

console = Console()


def show_status(folder: Path) -> None:
    """Print where a report folder's batches stand, as last seen (nothing is sent)."""
    from cotplan.planner.batch import batch_status

    status = batch_status(folder)
    table = Table(title=f"Batches of {status.model} in {folder}")
    frame = status.to_frame()
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*(str(value) for value in row))
    console.print(table)
    console.print(
        f"{status.answered} answers received; {status.failed} failed request(s) waiting to be "
        f"asked again; {status.in_flight} request(s) in batches not yet read back; last seen "
        f"{status.updated or 'never'} (rerun the calibrate command to poll and resume)"
    )


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
    show: Callable[[Calibration], None],
) -> None:
    """The batch path of `cotplan calibrate` (`submit`: through the provider's Batch API;
    otherwise files for an executor, read back from `outputs` or beside their inputs)."""
    from cotplan.backends import connect
    from cotplan.backends.openai_compat import OpenAICompatibleBackend
    from cotplan.backends.responses import OpenAIResponsesBackend
    from cotplan.planner.auto_grid import UNCAPPED_TOKENS
    from cotplan.planner.batch import calibrate_batch, service_for

    if submit and write_files:
        raise InputError("give one of --batch and --batch-file", field="batch")
    if out is None:
        raise InputError(
            "give --out DIR: the batches' state lives there, and the same command run again "
            "picks them up from it",
            field="out",
        )
    with connect(backend, base_url=base_url, **options) as model:
        if not isinstance(model, OpenAICompatibleBackend | OpenAIResponsesBackend):
            raise CapabilityError(f"{backend} cannot be calibrated in batches")
        service = None
        if submit:
            if getattr(model, "provider", None) == "llama.cpp" and base_url is None:
                raise InputError(
                    "the embedded model has no batch API: use --batch-file to write the "
                    "requests for an executor",
                    field="batch",
                )
            service = service_for(model)
        console.print(f"model {model.model}; batch state in {out / 'batch'}")
        result = calibrate_batch(
            model,
            items,
            grid,
            folder=out,
            service=service,
            outputs=outputs,
            answer_tokens=answer_tokens,
            confirm=_confirm(yes),
            uncapped_tokens=uncapped_tokens or UNCAPPED_TOKENS,
            say=console.print,
        )
    if result.calibration is None:
        console.print(
            f"{result.status.answered} answers so far; {result.status.in_flight} request(s) "
            "wait in the files above: run the same command again once they have run"
        )
        return
    with start_report(out, command="calibrate") as report:
        result.calibration.to_csv(report.path / "calibration.csv")
        show(result.calibration)
        if result.spend is not None:
            console.print(str(result.spend))
        folder = finish_report(report)
    console.print(f"wrote {folder / 'calibration.csv'}")
