"""A calibration answered through batch files: the same table as a live run, at batch prices.

`calibrate_batch(backend, items, budgets, folder=...)` builds the calibration a live
`calibrate` builds, row for row, but sends its requests as batch files (OpenAI's Batch API
through the `openai` SDK, or files an executor such as vLLM's ``run-batch`` runs) instead of
one at a time.

How the requests are found. The live code itself is run, unchanged (`budgeted_answers` for
each item, as `calibrate` calls it), over a backend that sends nothing: each request it makes
is the exact request the live client would send (`OpenAICompatibleBackend`'s own request
fields); one already answered in the report folder is answered from there (parsed and checked
as a live answer is), one not yet answered joins the next batch and gets a stand-in answer so
that the item's other requests are found too. A request built from a stand-in (an answer phase
that continues a reasoning run not yet back) is not a real request: it waits for the next
round. So a hidden-reasoning calibration is one round (one request per item and budget, plus
a second where a cap ate the whole reply), visible thinking two (the reasoning runs, then the
forced answers at every budget, cut from the one run as the live path does). When every
request has its answer, the live code runs once more over the answers alone and its answers
are the calibration.

Resumable. The batch files, the provider's ids and every answer live under
``<folder>/batch/`` (`cotplan.planner.batch_state`); running the same call again after a
kill picks up the batches already submitted and the answers already received, and submits
only requests that are in no open batch and have no answer: none twice. Failed requests (the
error file, a line that fails the live checks, a batch that expired) go into a follow-up
batch; after `max_attempts` failed batch attempts a request is sent live. None is dropped.

Cost. Before a submission, `CostEstimate` gives the most it can cost at live and at batch
rates (every prompt counted, every cap spent); `confirm` may refuse it. The calibration's
`cost_usd` is at the model's batch rates (`batch_priced`), and `BatchSpend` has the spend at
both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from cotplan.backends.base import Backend
from cotplan.backends.keys import scrub_secrets
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.responses import OpenAIResponsesBackend
from cotplan.errors import CapabilityError, CotplanError, InputError
from cotplan.generate.budgeted import BudgetedAnswer, CoTPrompt, Mode
from cotplan.planner.auto_grid import UNCAPPED_TOKENS, ThinkingProfile
from cotplan.planner.batch_collect import BatchBackend, Collector, drive, measure
from cotplan.planner.batch_costs import (
    BatchSpend,
    CostEstimate,
    batch_priced,
    estimate_cost,
    spend_of,
)
from cotplan.planner.batch_format import BatchRequest
from cotplan.planner.batch_rounds import (
    BatchService,
    Say,
    adopt,
    read_files,
    submit,
)
from cotplan.planner.batch_rounds import wait as wait_for_batches
from cotplan.planner.batch_state import BatchFolder, BatchStatus
from cotplan.planner.budget_grids import Budgets, grid_for
from cotplan.planner.calibrate import (
    AUTO_PILOT,
    Calibration,
    CostUnknownWarning,
    Tally,
    calibration_frame,
    calibration_notes,
    check_items,
)
from cotplan.tasks.item import TaskItem

__all__ = [
    "BatchCalibration",
    "BatchDeclinedError",
    "BatchService",
    "BatchSpend",
    "CostEstimate",
    "batch_priced",
    "batch_status",
    "calibrate_batch",
    "service_for",
]


class BatchDeclinedError(CotplanError):
    """The expected cost was shown and the submission refused: nothing was sent."""


@dataclass(frozen=True)
class BatchCalibration:
    """Where a batch calibration stands: `calibration` once every answer is in (None while
    batches are open or files wait for an executor), `waiting` the input files an executor
    must run (file mode), `estimates` the cost shown before each submission, `spend` what the
    answers cost, `status` the folder's batches."""

    calibration: Calibration | None
    status: BatchStatus
    waiting: tuple[Path, ...] = ()
    estimates: tuple[CostEstimate, ...] = ()
    spend: BatchSpend | None = None
    submitted: int = 0
    sent_live: int = 0

    @property
    def done(self) -> bool:
        return self.calibration is not None

    def to_frame(self) -> pd.DataFrame:
        """The calibration's table when done, else the batches' status."""
        if self.calibration is not None:
            return self.calibration.to_frame()
        return self.status.to_frame()


def batch_status(folder: str | Path) -> BatchStatus:
    """Where the batches of a report folder stand, as last seen (no request is sent)."""
    state = BatchFolder(folder)
    if not state.exists:
        raise InputError(f"{folder} holds no batch calibration", field="status")
    return state.status()


def service_for(backend: BatchBackend) -> BatchService:
    """The batch API of the backend's endpoint: Anthropic's Message Batches for a model under
    the ``anthropic`` budget rules (through the `anthropic` SDK, at the same host and key),
    Gemini's Batch Mode for a Gemini model (through the `google-genai` SDK, likewise), else
    OpenAI's Batch API through the backend's own `openai` client (chat completions or
    Responses, as the backend sends them)."""
    if isinstance(backend, OpenAIResponsesBackend):
        from cotplan.planner.batch_providers import OpenAIBatches

        return OpenAIBatches(backend._client)
    if backend.provider == "google" or backend.budget_rule.startswith("gemini"):
        from cotplan.planner.batch_gemini import GeminiBatches

        client = backend._client
        return GeminiBatches(base_url=str(client.base_url), api_key=client.api_key)
    if backend.provider == "anthropic" or backend.budget_rule.startswith("anthropic"):
        from cotplan.planner.batch_anthropic import AnthropicBatches

        client = backend._client
        return AnthropicBatches(base_url=str(client.base_url), api_key=client.api_key)
    from cotplan.planner.batch_providers import OpenAIBatches

    return OpenAIBatches(backend._client)


def calibrate_batch(
    backend: Backend,
    items: Iterable[TaskItem],
    budgets: Budgets = None,
    *,
    folder: str | Path,
    service: BatchService | None = None,
    outputs: Sequence[str | Path] = (),
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    prompt: CoTPrompt | None = None,
    confirm: Callable[[CostEstimate], bool] | None = None,
    say: Say | None = None,
    poll_s: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
    max_attempts: int = 3,
    wait: bool = True,
    uncapped_tokens: int = UNCAPPED_TOKENS,
    pilot: int = AUTO_PILOT,
) -> BatchCalibration:
    """`calibrate` through batch files (see the module docstring).

    `folder` is the report folder (its ``batch/`` holds the state; give the same one to
    resume). `service` submits the files (`OpenAIBatches`); without one the files are written
    for an executor (``vllm run-batch -i FILE -o FILE.output.jsonl``, beside the input, or any
    path given in `outputs`), and the call returns `waiting` for them: call again once they
    ran. `confirm` sees the expected cost before each submission and may refuse it
    (`BatchDeclinedError`). `say` receives progress lines. `wait` False returns after
    submitting instead of polling until the batches end. `budgets` "auto" (or None, the
    default) sizes the grid as `calibrate` does, from a first round of uncapped runs
    (`uncapped_tokens`, each size's first `pilot` items) before the budget round.
    """
    if not isinstance(backend, OpenAICompatibleBackend | OpenAIResponsesBackend):
        raise CapabilityError(
            "batch calibration needs an OpenAI-compatible or Responses backend, got "
            f"{type(backend).__name__}"
        )
    chosen = check_items(items)
    # The auto grid (the default, as for `calibrate`): a first round of uncapped runs (each
    # size's first `pilot` items) sizes it, then the budget round is written.
    auto = budgets is None or (isinstance(budgets, str) and budgets == "auto")
    grid = None if auto else grid_for(budgets)
    tell = say or (lambda line: None)
    state = BatchFolder(folder)
    where = scrub_secrets(backend.base_url or "https://api.openai.com/v1")
    state.bind(backend.model, where)

    answering = _Answering(
        backend, chosen, grid, uncapped_tokens, pilot, answer_tokens, mode, prompt
    )
    estimates: list[CostEstimate] = []
    submitted = sent_live = 0
    pending_outputs = [Path(p) for p in outputs]
    while True:
        collector = Collector(backend, state.results())
        answers, profiles = answering.run(collector)
        if answers is not None:
            return _finish(
                backend,
                state,
                chosen,
                answers,
                collector,
                profiles=profiles,
                estimates=estimates,
                submitted=submitted,
                sent_live=sent_live,
            )
        wanted = collector.wanted
        # Outputs an executor wrote (named, or beside their input) are read first.
        read_files(state, collector, pending_outputs, tell)
        pending_outputs = []
        received = state.results()
        if any(cid in received for cid in wanted):
            continue
        open_ids = {cid for entry in state.entries if entry.open for cid in state.input_ids(entry)}
        failures = state.failure_counts()
        new = [r for cid, r in wanted.items() if cid not in open_ids]
        live = [r for r in new if failures.get(r.custom_id, 0) >= max_attempts]
        if live:
            tell(f"sending {len(live)} request(s) live after {max_attempts} failed batch tries")
            fresh = {r.custom_id: _send_live(backend, r) for r in live}
            state.add_results(fresh)
            collector.record(fresh)
            sent_live += len(live)
            continue
        if new:
            estimate = estimate_cost(backend, new)
            estimates.append(estimate)
            tell(f"expected cost: {estimate}")
            # Files for an executor cost nothing until someone runs them: only a submission asks.
            if service is not None and confirm is not None and not confirm(estimate):
                raise BatchDeclinedError("the batch was not submitted: nothing was sent")
            submit(state, service, new, tell)
            submitted += len(new)
        if service is None:
            waiting = tuple(state.path / e.file for e in state.entries if e.open)
            for path in waiting:
                tell(
                    f"run {path} (e.g. `vllm run-batch -i {path} -o "
                    f"{path.with_suffix('.output.jsonl')} --model {backend.model}`), then "
                    "run this again"
                )
            return BatchCalibration(
                None, state.status(), waiting, tuple(estimates), None, submitted, sent_live
            )
        adopt(state, service)
        if not wait:
            return BatchCalibration(
                None, state.status(), (), tuple(estimates), None, submitted, sent_live
            )
        wait_for_batches(state, service, collector, tell, poll_s=poll_s, sleep=sleep)


@dataclass(frozen=True)
class _Answering:
    """One pass of the live code over the answers received: with the auto grid (`grid` None)
    first its measurement (each size's first `pilot` items uncapped), then every item at its
    budgets; (None, profiles) while requests wait."""

    backend: BatchBackend
    items: list[TaskItem]
    grid: Callable[[int], Sequence[int]] | None
    uncapped_tokens: int
    pilot: int
    answer_tokens: int
    mode: Mode | Literal["auto"]
    prompt: CoTPrompt | None

    def size_of(self, item: TaskItem) -> int:
        if item.n is not None:
            return item.n
        from cotplan.tasks.size import item_size

        return item_size(item, counter=self.backend.count_tokens)

    def run(
        self, collector: Collector
    ) -> tuple[list[BudgetedAnswer] | None, list[ThinkingProfile]]:
        options: dict[str, Any] = {
            "answer_tokens": self.answer_tokens,
            "mode": self.mode,
            "prompt": self.prompt,
        }
        profiles: list[ThinkingProfile] = []
        if self.grid is None:
            measured = measure(
                collector,
                self.items,
                self.size_of,
                uncapped_tokens=self.uncapped_tokens,
                pilot=self.pilot,
                **options,
            )
            if measured is None:
                return None, []
            profiles = measured
        by_n = {p.n: list(p.budgets) for p in profiles}
        grid = self.grid

        def budgets_of(item: TaskItem) -> list[int]:
            n = self.size_of(item)
            return list(grid(n)) if grid is not None else by_n[n]

        run_tokens = self.uncapped_tokens if grid is None else None
        answers = drive(collector, self.items, budgets_of, run_tokens=run_tokens, **options)
        return answers, profiles


def _send_live(backend: BatchBackend, request: BatchRequest) -> dict[str, Any]:
    """One request sent live by the backend's own client (after its batch tries failed)."""
    if isinstance(backend, OpenAIResponsesBackend):
        from cotplan.backends.responses import parse_response

        raw = backend._send(dict(request.params), backend.stats.attempts)
        parse_response(raw, model=backend.model)  # checked as the live client checks it
        return raw
    return backend._call(request.operation, dict(request.params))[0]


def _finish(
    backend: BatchBackend,
    state: BatchFolder,
    items: Sequence[TaskItem],
    answers: list[BudgetedAnswer],
    collector: Collector,
    *,
    profiles: list[ThinkingProfile],
    estimates: list[CostEstimate],
    submitted: int,
    sent_live: int,
) -> BatchCalibration:
    import warnings

    frame = batch_priced(calibration_frame(answers, items, provider=backend.provider or ""))
    tally = Tally()
    tally.add(answers)
    notes = [p.describe() for p in profiles] + calibration_notes(tally, items)
    for note in notes:
        if note.startswith("no price"):
            warnings.warn(CostUnknownWarning(note), stacklevel=3)
    batches = len(state.entries)
    notes.append(
        f"answered through {batches} batch file(s), priced at batch rates; a batch does not "
        "time its requests, so latency_s is blank"
    )
    spend = spend_of(collector.used.values())
    calibration = Calibration(
        frame=frame,
        model=answers[0].model if answers else backend.model,
        requests=spend.requests,
        cache_hits=spend.cache_hits,
        notes=tuple(notes),
        answers=tuple(answers),
        thinking=tuple(profiles),
    )
    return BatchCalibration(
        calibration, state.status(), (), tuple(estimates), spend, submitted, sent_live
    )
