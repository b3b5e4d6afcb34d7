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

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import pandas as pd

from cotplan.backends.base import (
    Backend,
    Completion,
    NextTokenProbs,
    Prompt,
    Usage,
    validate_prompt,
)
from cotplan.backends.cache import canonical_key, endpoint_namespace
from cotplan.backends.keys import scrub_secrets
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.parsing import parse_completion
from cotplan.errors import CapabilityError, CotplanError, InputError
from cotplan.generate.budgeted import BudgetedAnswer, CoTPrompt, Mode, budgeted_answers
from cotplan.io import parse_json
from cotplan.planner.batch_format import BatchRequest, read_output, request_lines
from cotplan.planner.batch_providers import Poll, check_endpoints
from cotplan.planner.batch_state import TERMINAL, BatchEntry, BatchFolder, BatchStatus
from cotplan.planner.calibrate import (
    Budgets,
    Calibration,
    CostUnknownWarning,
    _budgets_for,
    _check_items,
    _notes,
    calibration_frame,
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
]

#: The text of a stand-in answer. Invisible separators around it make it a string no model
#: writes, so a request that carries it is known to be built from an answer not yet received.
PENDING_TEXT = "\u2063cotplan: answer pending in a batch\u2063"


class BatchService(Protocol):
    """What submits batch files and fetches their results (`OpenAIBatches`)."""

    kind: str

    def upload(self, name: str, text: str) -> str: ...
    def create(self, input_file_id: str, endpoint: str, token: str) -> str: ...
    def find(self, input_file_id: str) -> str | None: ...
    def poll(self, batch_id: str) -> Poll: ...
    def content(self, file_id: str) -> bytes: ...


class BatchDeclinedError(CotplanError):
    """The expected cost was shown and the submission refused: nothing was sent."""


# -- costs ----------------------------------------------------------------------------------------


def _usd(model: str, prompt: int, completion: int, reasoning: int, *, batch: bool) -> float:
    from cotplan.pricing import call_cost

    try:
        cost = call_cost(
            model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            reasoning_tokens=reasoning,
            batch=batch,
        )
    except InputError:
        return math.nan
    return float(cost.usd)


@dataclass(frozen=True)
class CostEstimate:
    """The most a submission can cost: every prompt counted, every request spending its whole
    cap. `live_usd` and `batch_usd` are NaN where the model has no price."""

    model: str
    requests: int
    prompt_tokens: int
    max_output_tokens: int
    live_usd: float
    batch_usd: float

    @property
    def priced(self) -> bool:
        return not math.isnan(self.live_usd)

    def __str__(self) -> str:
        head = (
            f"{self.requests:,} requests to {self.model}: {self.prompt_tokens:,} prompt tokens, "
            f"at most {self.max_output_tokens:,} output tokens"
        )
        if not self.priced:
            return f"{head}; no price known for {self.model}"
        saved = self.live_usd - self.batch_usd
        return (
            f"{head}; at most USD {self.batch_usd:.4f} at batch rates "
            f"(USD {self.live_usd:.4f} live: USD {saved:.4f} saved)"
        )

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([vars(self)])


def _prompt_tokens(backend: Backend, params: Mapping[str, Any]) -> int:
    if "prompt" in params:
        text = str(params["prompt"])
    else:
        text = "\n".join(str(m.get("content") or "") for m in params.get("messages", []))
    try:
        return backend.count_tokens(text)
    except InputError:
        return math.ceil(len(text) / 4)  # no tokenizer known: about four characters a token


def _cap(params: Mapping[str, Any]) -> int:
    for name in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def estimate_cost(backend: Backend, requests: Sequence[BatchRequest]) -> CostEstimate:
    """The most `requests` can cost at live and at batch rates."""
    prompt = output = 0
    live = batch = 0.0
    for request in requests:
        p, c = _prompt_tokens(backend, request.params), _cap(request.params)
        prompt, output = prompt + p, output + c
        live += _usd(backend.model, p, c, 0, batch=False)
        batch += _usd(backend.model, p, c, 0, batch=True)
    return CostEstimate(backend.model, len(requests), prompt, output, live, batch)


@dataclass(frozen=True)
class BatchSpend:
    """What the answers cost: requests paid (answers the call cache held cost nothing), USD at
    the batch rates paid and at live rates for the same tokens (NaN: unpriced, or a call whose
    usage cannot be trusted)."""

    requests: int
    cache_hits: int
    batch_usd: float
    live_usd: float

    def __str__(self) -> str:
        if math.isnan(self.batch_usd):
            usd = "price unknown"
        else:
            usd = (
                f"USD {self.batch_usd:.4f} at batch rates (USD {self.live_usd:.4f} at live "
                f"rates: USD {self.live_usd - self.batch_usd:.4f} saved)"
            )
        return f"batch spend: {self.requests:,} requests, {self.cache_hits:,} from the cache; {usd}"


def _spend(completions: Iterable[Completion]) -> BatchSpend:
    from cotplan.pricing import cost_of_completion

    chosen = list(completions)
    paid = [c for c in chosen if not c.from_cache]
    hits = len(chosen) - len(paid)
    live = batch = 0.0
    for completion in paid:
        try:
            live += float(cost_of_completion(completion).usd)
            batch += float(cost_of_completion(completion, batch=True).usd)
        except InputError:
            live = batch = math.nan
    return BatchSpend(len(paid), hits, batch, live)


def batch_priced(frame: pd.DataFrame) -> pd.DataFrame:
    """A calibration frame with `cost_usd` at the model's batch rates.

    Each row's list price is scaled by its own batch-to-list ratio (its prompt, reasoning and
    answer tokens priced both ways), so a price table with batch prices per token type prices
    each row's mix; unpriced rows stay NaN."""
    out = frame.copy()
    for index, row in out.iterrows():
        cost = float(row["cost_usd"])
        if not math.isfinite(cost) or cost == 0.0:
            continue
        counts = (
            int(row["prompt_tokens"]),
            int(row["reasoning_tokens"]) + int(row["answer_tokens"]),
            int(row["reasoning_tokens"]),
        )
        live = _usd(str(row["model"]), *counts, batch=False)
        batch = _usd(str(row["model"]), *counts, batch=True)
        out.loc[index, "cost_usd"] = cost * batch / live if live > 0 else math.nan
    return out


# -- the backend that sends nothing ---------------------------------------------------------------


class _Collector(Backend):
    """Runs the live code's requests against answers already received (see the module
    docstring): answers what it can, collects what it cannot, stands in for the rest."""

    def __init__(self, inner: OpenAICompatibleBackend, answered: Mapping[str, dict[str, Any]]):
        self.inner = inner
        for name in (
            "model",
            "supports_logprobs",
            "max_top_logprobs",
            "default_concurrency",
            "text_completions",
            "reasoning",
            "budget_rule",
            "provider",
            "base_url",
            "supports_tokenize",
            "protocol",
        ):
            setattr(self, name, getattr(inner, name))
        self.supports_prompt_logprobs = False
        self.answered = answered
        self.wanted: dict[str, BatchRequest] = {}
        # By custom_id: a request several budgets share (hidden reasoning's answer asked for
        # alone) is one request in a batch, paid once, where a live run sends it each time.
        self.used: dict[str, Completion] = {}
        self.incomplete = False

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def tokenize(self, text: str) -> list[int]:
        return self.inner.tokenize(text)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise CapabilityError("a batch calibration asks for generations only")

    def _stand_in(self) -> Completion:
        self.incomplete = True
        return Completion(text=PENDING_TEXT, finish_reason="stop", model=self.model, usage=_ZERO)

    def _cache_key(self, request: BatchRequest) -> str:
        # The live client's own key (`OpenAICompatibleBackend._call`), so each replays the other.
        namespace = endpoint_namespace(self.inner.cache_namespace)
        return canonical_key(
            {"ns": namespace, "op": request.operation, "params": dict(request.params)}
        )

    def generate(
        self,
        prompt: Prompt,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        logprobs: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> Completion:
        validate_prompt(prompt)
        operation, params = self.inner._request_params(
            prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            seed=seed,
            logprobs=logprobs,
            extra=extra,
        )
        if PENDING_TEXT in json.dumps(params, ensure_ascii=False):
            return self._stand_in()  # built from an answer not yet received: no real request
        request = BatchRequest(operation, params)
        body = self.answered.get(request.custom_id)
        cached = False
        if body is None and self.inner.cache is not None:
            hit = self.inner._replay(self.inner.cache, self._cache_key(request), operation, params)
            if hit is not None:
                body, cached = hit["response"], True
        if body is None:
            self.wanted[request.custom_id] = request
            return self._stand_in()
        completion = parse_completion(
            body, model=self.model, latency_s=math.nan, from_cache=cached, params=params
        )
        self.used[request.custom_id] = completion
        return completion

    def record(self, answers: Mapping[str, dict[str, Any]]) -> None:
        """Put fresh answers in the live client's call cache too, so a live run replays them."""
        cache = self.inner.cache
        if cache is None:
            return
        for custom_id, body in answers.items():
            request = self.wanted.get(custom_id)
            if request is not None:
                cache.put(
                    self._cache_key(request),
                    model=self.model,
                    operation=request.operation,
                    request=dict(request.params),
                    response={"response": body, "latency_s": 0.0},
                )


_ZERO = Usage()


# -- the result -----------------------------------------------------------------------------------


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


# -- the run --------------------------------------------------------------------------------------

Say = Callable[[str], None]


def _drive(
    collector: _Collector,
    items: Sequence[TaskItem],
    budgets_of: Callable[[TaskItem], list[int]],
    *,
    answer_tokens: int,
    mode: Mode | Literal["auto"],
    prompt: CoTPrompt | None,
) -> list[BudgetedAnswer] | None:
    """The live answers of every item (as `calibrate` asks for them), or None while some wait."""
    out: list[BudgetedAnswer] = []
    complete = True
    for item in items:
        collector.incomplete = False
        try:
            answers = budgeted_answers(
                collector,
                item,
                budgets_of(item),
                answer_tokens=answer_tokens,
                mode=mode,
                prompt=prompt,
            )
        except CotplanError:
            if not collector.incomplete:
                raise
            answers = []  # a stand-in the live code could not read: the real answer will do
        if collector.incomplete:
            complete = False
        else:
            out.extend(answers)
    return out if complete else None


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
) -> BatchCalibration:
    """`calibrate` through batch files (see the module docstring).

    `folder` is the report folder (its ``batch/`` holds the state; give the same one to
    resume). `service` submits the files (`OpenAIBatches`); without one the files are written
    for an executor (``vllm run-batch -i FILE -o FILE.output.jsonl``, beside the input, or any
    path given in `outputs`), and the call returns `waiting` for them: call again once they
    ran. `confirm` sees the expected cost before each submission and may refuse it
    (`BatchDeclinedError`). `say` receives progress lines. `wait` False returns after
    submitting instead of polling until the batches end.
    """
    if not isinstance(backend, OpenAICompatibleBackend):
        raise CapabilityError(
            f"batch calibration needs an OpenAI-compatible backend, got {type(backend).__name__}"
        )
    chosen = _check_items(items)
    grid = _budgets_for(budgets)
    tell = say or (lambda line: None)
    state = BatchFolder(folder)
    where = scrub_secrets(backend.base_url or "https://api.openai.com/v1")
    state.bind(backend.model, where)

    def budgets_of(item: TaskItem) -> list[int]:
        if item.n is not None:
            return grid(item.n)
        from cotplan.tasks.size import item_size

        return grid(item_size(item, counter=backend.count_tokens))

    estimates: list[CostEstimate] = []
    submitted = sent_live = 0
    pending_outputs = [Path(p) for p in outputs]
    while True:
        collector = _Collector(backend, state.results())
        answers = _drive(
            collector, chosen, budgets_of, answer_tokens=answer_tokens, mode=mode, prompt=prompt
        )
        if answers is not None:
            return _finish(
                backend, state, chosen, answers, collector, estimates, submitted, sent_live
            )
        wanted = collector.wanted
        # Outputs an executor wrote (named, or beside their input) are read first.
        _read_files(state, collector, pending_outputs, tell)
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
            fresh = {r.custom_id: backend._call(r.operation, dict(r.params))[0] for r in live}
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
            _submit(state, service, new, tell)
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
        _adopt(state, service)
        if not wait:
            return BatchCalibration(
                None, state.status(), (), tuple(estimates), None, submitted, sent_live
            )
        _wait(state, service, collector, tell, poll_s, sleep)


def _submit(
    state: BatchFolder, service: BatchService | None, requests: list[BatchRequest], tell: Say
) -> None:
    """Write the requests into batch files (one endpoint and at most 50,000 requests each) and
    submit them, writing every id down as soon as it is known."""
    by_url: dict[str, list[BatchRequest]] = {}
    for request in requests:
        by_url.setdefault(request.url, []).append(request)
    from cotplan.planner.batch_format import MAX_REQUESTS_PER_FILE

    for url, group in sorted(by_url.items()):
        for start in range(0, len(group), MAX_REQUESTS_PER_FILE):
            chunk = group[start : start + MAX_REQUESTS_PER_FILE]
            kind = service.kind if service is not None else "file"
            entry = state.new_entry(request_lines(chunk), len(chunk), kind)
            if service is None:
                continue
            entry.input_file_id = service.upload(entry.file, state.input_text(entry))
            entry.status = "uploaded"
            state.save()
            endpoint = check_endpoints([r.url for r in chunk])
            entry.id = service.create(entry.input_file_id, endpoint, state.token)
            entry.status = "validating"
            entry.submitted_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            state.save()
            tell(f"submitted {entry.name} ({len(chunk)} requests to {url}) as batch {entry.id}")


def _adopt(state: BatchFolder, service: BatchService) -> None:
    """Find the batches a killed run created but never wrote down; create those it never did."""
    for entry in state.entries:
        if entry.kind == "file" or entry.id is not None or not entry.open:
            continue
        if entry.input_file_id is None:
            entry.input_file_id = service.upload(entry.file, state.input_text(entry))
            state.save()
        found = service.find(entry.input_file_id)
        if found is None:
            found = service.create(entry.input_file_id, _endpoint_of(state, entry), state.token)
        entry.id = found
        entry.status = "validating"
        state.save()


def _endpoint_of(state: BatchFolder, entry: BatchEntry) -> str:
    """The endpoint of a batch file's requests (its first line says; one file, one endpoint)."""
    first = state.input_text(entry).splitlines()[0]
    line = parse_json(first, source=str(state.path / entry.file))
    return check_endpoints([str(line.get("url", ""))] if isinstance(line, dict) else [])


def _wait(
    state: BatchFolder,
    service: BatchService,
    collector: _Collector,
    tell: Say,
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
                _harvest(state, entry, service, collector, tell)
            else:
                still_open = True
            state.save()
        if not still_open:
            return
        sleep(poll_s)


def _harvest(
    state: BatchFolder,
    entry: BatchEntry,
    service: BatchService,
    collector: _Collector,
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


def _read_files(state: BatchFolder, collector: _Collector, named: list[Path], tell: Say) -> None:
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


def _finish(
    backend: OpenAICompatibleBackend,
    state: BatchFolder,
    items: Sequence[TaskItem],
    answers: list[BudgetedAnswer],
    collector: _Collector,
    estimates: list[CostEstimate],
    submitted: int,
    sent_live: int,
) -> BatchCalibration:
    import warnings

    frame = batch_priced(calibration_frame(answers, items, provider=backend.provider or ""))
    notes = _notes(answers, items)
    for note in notes:
        if note.startswith("no price"):
            warnings.warn(CostUnknownWarning(note), stacklevel=3)
    batches = len(state.entries)
    notes.append(
        f"answered through {batches} batch file(s), priced at batch rates; a batch does not "
        "time its requests, so latency_s is blank"
    )
    spend = _spend(collector.used.values())
    calibration = Calibration(
        frame=frame,
        model=answers[0].model if answers else backend.model,
        requests=spend.requests,
        cache_hits=spend.cache_hits,
        notes=tuple(notes),
        answers=tuple(answers),
    )
    return BatchCalibration(
        calibration, state.status(), (), tuple(estimates), spend, submitted, sent_live
    )
