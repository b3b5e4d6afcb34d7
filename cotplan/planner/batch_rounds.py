"""The rounds of a batch calibration: batch files submitted and their ids written down
(`submit`), batches a killed run left unrecorded found again (`adopt`), open batches polled
until they end (`wait`), and finished batches' and executors' output files read into the report
folder (`harvest`, `read_files`). `cotplan.planner.batch.calibrate_batch` runs them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from cotplan.io import parse_json
from cotplan.planner.batch_collect import Collector
from cotplan.planner.batch_format import (
    MAX_REQUESTS_PER_FILE,
    BatchRequest,
    read_output,
    request_lines,
)
from cotplan.planner.batch_providers import Poll, check_endpoints
from cotplan.planner.batch_state import TERMINAL, BatchEntry, BatchFolder

__all__ = ["BatchService", "Say", "adopt", "harvest", "read_files", "submit", "wait"]

Say = Callable[[str], None]


class BatchService(Protocol):
    """What submits batch files and fetches their results (`OpenAIBatches`,
    `AnthropicBatches`, `GeminiBatches`). `text` is the input file's: a service with no
    upload sends it."""

    kind: str

    def upload(self, name: str, text: str) -> str: ...
    def create(self, input_file_id: str, endpoint: str, token: str, *, text: str) -> str: ...
    def find(self, input_file_id: str, *, text: str) -> str | None: ...
    def poll(self, batch_id: str) -> Poll: ...
    def content(self, file_id: str) -> bytes: ...


def submit(
    state: BatchFolder, service: BatchService | None, requests: list[BatchRequest], tell: Say
) -> None:
    """Write the requests into batch files (one endpoint and at most 50,000 requests each) and
    submit them, writing every id down as soon as it is known."""
    by_url: dict[str, list[BatchRequest]] = {}
    for request in requests:
        by_url.setdefault(request.url, []).append(request)
    # A service may take fewer requests a batch than a file holds (Gemini's inline limit).
    size = min(MAX_REQUESTS_PER_FILE, getattr(service, "max_requests", MAX_REQUESTS_PER_FILE))
    for url, group in sorted(by_url.items()):
        for start in range(0, len(group), size):
            chunk = group[start : start + size]
            kind = service.kind if service is not None else "file"
            entry = state.new_entry(request_lines(chunk), len(chunk), kind)
            if service is None:
                continue
            entry.input_file_id = service.upload(entry.file, state.input_text(entry))
            entry.status = "uploaded"
            state.save()
            endpoint = check_endpoints([r.url for r in chunk])
            entry.id = service.create(
                entry.input_file_id, endpoint, state.token, text=state.input_text(entry)
            )
            entry.status = "validating"
            entry.submitted_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            state.save()
            tell(f"submitted {entry.name} ({len(chunk)} requests to {url}) as batch {entry.id}")


def adopt(state: BatchFolder, service: BatchService) -> None:
    """Find the batches a killed run created but never wrote down; create those it never did."""
    for entry in state.entries:
        if entry.kind == "file" or entry.id is not None or not entry.open:
            continue
        if entry.input_file_id is None:
            entry.input_file_id = service.upload(entry.file, state.input_text(entry))
            state.save()
        text = state.input_text(entry)
        found = service.find(entry.input_file_id, text=text)
        if found is None:
            endpoint = _endpoint_of(state, entry)
            found = service.create(entry.input_file_id, endpoint, state.token, text=text)
        entry.id = found
        entry.status = "validating"
        state.save()


def _endpoint_of(state: BatchFolder, entry: BatchEntry) -> str:
    """The endpoint of a batch file's requests (its first line says; one file, one endpoint)."""
    first = state.input_text(entry).splitlines()[0]
    line = parse_json(first, source=str(state.path / entry.file))
    return check_endpoints([str(line.get("url", ""))] if isinstance(line, dict) else [])


def wait(
    state: BatchFolder,
    service: BatchService,
    collector: Collector,
    tell: Say,
    *,
    poll_s: float,
    sleep: Callable[[float], None],
) -> None:
    """Poll the open batches until each ends, reading each one's results as it does."""
    shown: dict[str, tuple[str, int, int]] = {}
    while True:
        still_open = False
        for entry in state.entries:
            if entry.kind == "file" or not entry.open or entry.id is None:
                continue
            poll = service.poll(entry.id)
            entry.status, entry.completed, entry.failed = poll.status, poll.completed, poll.failed
            entry.output_file_id, entry.error_file_id = poll.output_file_id, poll.error_file_id
            now = (poll.status, poll.completed, poll.failed)
            if shown.get(entry.name) != now:
                shown[entry.name] = now
                total = poll.total or entry.requests
                tell(
                    f"{entry.name} ({entry.id}): {poll.status}, {poll.completed}/{total} done, "
                    f"{poll.failed} failed"
                )
            if poll.status in TERMINAL:
                harvest(state, entry, service, collector, tell)
            else:
                still_open = True
            state.save()
        if not still_open:
            return
        sleep(poll_s)


def harvest(
    state: BatchFolder,
    entry: BatchEntry,
    service: BatchService,
    collector: Collector,
    tell: Say,
) -> None:
    """Read a finished batch's output and error files into the folder; every request of it
    that has no answer is a failure, to be asked for again."""
    requests = collector.wanted
    answers: dict[str, dict[str, Any]] = {}
    failures: dict[str, str] = {}
    for file_id in (entry.output_file_id, entry.error_file_id):
        if not file_id:
            continue
        read = read_output(service.content(file_id), requests, source=f"{entry.name} {file_id}")
        answers.update(read.answers)
        for cid, why in read.failures.items():
            if cid not in answers:
                failures[cid] = why
    for cid in state.input_ids(entry):
        if cid not in answers and cid not in failures and cid in requests:
            failures[cid] = f"the batch ended {entry.status} without answering it"
    state.add_results(answers)
    collector.record(answers)
    state.add_failures(failures, entry.id or entry.name)
    entry.harvested = True
    if failures:
        tell(f"{entry.name}: {len(failures)} request(s) failed; they go into a follow-up batch")


def read_files(state: BatchFolder, collector: Collector, named: list[Path], tell: Say) -> None:
    """Read executors' output files: those named, and any ``input-NNN.output.jsonl`` beside an
    input still open."""
    requests = collector.wanted
    for entry in state.entries:
        if entry.kind != "file" or not entry.open:
            continue
        beside = state.path / f"{entry.name}.output.jsonl"
        sources = [p for p in named if p.exists()] + ([beside] if beside.exists() else [])
        ids = set(state.input_ids(entry))
        answers: dict[str, dict[str, Any]] = {}
        failures: dict[str, str] = {}
        seen = False
        for path in sources:
            read = read_output(path.read_bytes(), requests, source=str(path))
            mine = {k: v for k, v in read.answers.items() if k in ids}
            seen = seen or bool(mine) or any(k in ids for k in read.failures)
            answers.update(mine)
            failures.update({k: v for k, v in read.failures.items() if k in ids})
        if not seen:
            continue
        for cid in ids:
            if cid not in answers and cid not in failures and cid in requests:
                failures[cid] = "missing from the executor's output"
        for cid in answers:
            failures.pop(cid, None)
        state.add_results(answers)
        collector.record(answers)
        state.add_failures(failures, entry.name)
        entry.harvested, entry.status = True, "completed"
        entry.completed, entry.failed = len(answers), len(failures)
        state.save()
        tell(f"read {entry.name}'s output: {len(answers)} answers, {len(failures)} failed")
