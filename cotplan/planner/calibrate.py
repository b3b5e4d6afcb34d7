"""Calibration runs: answer every item at every budget of a grid, into one tidy frame.

`calibrate(backend, items, budgets)` answers each item with `budgeted_answer` at each budget
(budgets sharing one greedy reasoning run where the backend allows, see
`cotplan.generate.budgeted`), with bounded concurrency (`backend.map`) and a progress bar. Every
request goes through the backend's call cache, so a run that was killed resumes where it
stopped: the answers already recorded are replayed, not paid for again.

The budget grid. The default, `budgets="auto"`, sizes the grid from the model's own thinking
(`cotplan.planner.auto_grid`): the first request per item is its uncapped run (capped only at
`uncapped_tokens`), the runs of the first `pilot` items of each size give that size a geometric
grid from 0 to about the 95th percentile of their thinking, and every item's one run then
serves every budget (for hidden thinking, the pilot is separate requests). With `eps`, the grid
is refined where the error crosses ε (`cotplan.planner.refine`), again from the same runs.
`budget_grids.default_budgets()` is 0 plus powers of two up to 128. `paper_budgets(n)` is
the paper's Algorithm 1: about 20 · ln n log-spaced budgets in [0, 10 √n] (the paper writes
"log"; the natural log is used here, and the integer rounding merges the smallest ones), and
`budgets="paper"` uses it for each item's own size. A given grid whose top cut the thinking of
more than 5% of the items gets a `GridShortWarning` that says so with the numbers.

Cost. For visible thinking the calibration generates each item's thinking once (one run, cut
at every budget) plus one short answer per budget. `calibrate_to_file` writes the rows to a CSV
as items finish and holds none of them, so its memory does not grow with the items.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from cotplan.backends.base import Backend, Completion
from cotplan.errors import InputError
from cotplan.generate.budget_setup import budget_setup
from cotplan.generate.budgeted import (
    BudgetedAnswer,
    CoTPrompt,
    Mode,
    budgeted_answer,
    budgeted_answers,
    shares_one_run,
    thinking_length,
    thinking_run,
)
from cotplan.io import write_csv
from cotplan.planner.auto_grid import (
    UNCAPPED_TOKENS,
    GridShortWarning,
    ThinkingProfile,
    short_grid_note,
    thinking_profile,
)
from cotplan.planner.budget_grids import Budgets, grid_for
from cotplan.planner.calibration_file import check_calibration_frame, record_lines
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import size_source
from cotplan.validation import (
    BUDGET,
    CAP,
    COUNT,
    SHARE,
    validate_params,
)

__all__ = [
    "CALIBRATION_COLUMNS",
    "Calibration",
    "CalibrationFile",
    "CostUnknownWarning",
    "GridShortWarning",
    "calibrate",
    "calibrate_to_file",
    "calibration_spend",
    "load_calibration",
]

#: Columns of a calibration frame, in order. `item, n, k, correct` are what the planner needs.
CALIBRATION_COLUMNS = (
    "item",
    "family",
    "n",
    "size_source",
    "k",
    "correct",
    "expected",
    "extracted",
    "prompt_tokens",
    "question_tokens",
    "reasoning_tokens",
    "answer_tokens",
    "cost_usd",
    "latency_s",
    "truncated",
    "forced",
    "cap_held",
    "overrun",
    "answer_prob",
    "from_cache",
    "calls",
    "model",
    "mode",
    "protocol",
    "answer_lost",
    "no_answer",
    "usage_trusted",
    "provider",
)

#: What a calibration CSV written before a column existed meant by its absence.
COLUMN_DEFAULTS: dict[str, bool | str] = {
    "answer_lost": False,
    "no_answer": False,
    "usage_trusted": True,
    "provider": "",
}


#: Items of each size whose uncapped runs size the auto grid.
AUTO_PILOT = 32


def calibration_spend(frame: pd.DataFrame) -> dict[str, float]:
    """What a calibration cost: answers, items, tokens by kind, and USD (NaN when unpriced).

    Calibration is spend too: with hidden reasoning every (item, budget) is its own request,
    so a 41-budget grid costs 41 answers an item (see `cotplan.planner.adaptive`)."""

    def total(column: str) -> float:
        if column not in frame.columns:
            return math.nan
        values = pd.to_numeric(frame[column], errors="coerce")
        return float(values.sum()) if values.notna().all() else math.nan

    return {
        "answers": float(len(frame)),
        "items": float(frame["item"].nunique()) if "item" in frame.columns else math.nan,
        "prompt_tokens": total("prompt_tokens"),
        "reasoning_tokens": total("reasoning_tokens"),
        "answer_tokens": total("answer_tokens"),
        "cost_usd": total("cost_usd"),
    }


class CostUnknownWarning(UserWarning):
    """A calibration's model has no price: its costs are NaN (the run itself is fine)."""


@dataclass(frozen=True)
class Calibration:
    """A calibration run: one row per (item, budget) answer.

    `frame` has the columns of `CALIBRATION_COLUMNS` (item, family, n, k, correct, token counts,
    cost, latency, ...); `BudgetPlanner().fit(calibration.frame)` plans from it. `requests`
    and `cache_hits` are what the run cost the endpoint (a resumed run shows hits, not
    requests), `retries` the attempts the client repeated after failures, `notes` anything the
    run wants the reader to know (prices missing, sizes taken from prompt lengths).
    """

    frame: pd.DataFrame
    model: str
    requests: int = 0
    cache_hits: int = 0
    notes: tuple[str, ...] = ()
    retries: int = 0
    answers: tuple[BudgetedAnswer, ...] = field(default=(), repr=False, compare=False)
    #: What the auto grid measured at each size, and the grid it built (empty for a given grid).
    thinking: tuple[ThinkingProfile, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The answer table (a copy)."""
        return self.frame.copy()

    @property
    def budgets(self) -> list[int]:
        return sorted(int(k) for k in self.frame["k"].unique())

    @property
    def sizes(self) -> list[int]:
        return sorted(int(n) for n in self.frame["n"].unique())

    def accuracy(self) -> pd.DataFrame:
        """Accuracy by size (rows) and budget (columns)."""
        return self.frame.pivot_table(index="n", columns="k", values="correct", aggfunc="mean")

    def summary(self) -> pd.DataFrame:
        """Per (n, k): answers, accuracy, mean reasoning/answer tokens, truncated share, cost."""
        grouped = self.frame.groupby(["n", "k"])
        return pd.DataFrame(
            {
                "answers": grouped["correct"].size(),
                "accuracy": grouped["correct"].mean(),
                "reasoning_tokens": grouped["reasoning_tokens"].mean(),
                "answer_tokens": grouped["answer_tokens"].mean(),
                "truncated": grouped["truncated"].mean(),
                "cost_usd": grouped["cost_usd"].sum(min_count=1),
            }
        ).reset_index()

    def to_csv(self, path: str | os.PathLike[str]) -> Path:
        """Write the frame as CSV (creating the folder, replacing the file whole, mode 0600:
        it holds the model's answers); returns the path."""
        return write_csv(self.frame, path)


def load_calibration(path: str | os.PathLike[str]) -> Calibration:
    """Read a calibration CSV written by `Calibration.to_csv` (or any CSV with at least the
    columns item, n, k, correct)."""
    source = Path(path)
    if not source.exists():
        raise InputError(f"no such file: {source}", field="calibration")
    if source.is_dir():
        raise InputError(
            f"{source} is a folder; give the calibration.csv in it", field="calibration"
        )
    try:
        frame = pd.read_csv(source)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(
            f"not a readable CSV: {exc}", field="calibration", source=str(source)
        ) from exc
    missing = [c for c in ("item", "n", "k", "correct") if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)}; a calibration needs item, n, k, correct",
            field="calibration",
            source=str(source),
        )
    # Every row checked here, naming its file line, before a fit or a model sees any of it.
    check_calibration_frame(frame, str(source), record_lines(source))
    frame["item"] = frame["item"].astype(str)
    for column, default in COLUMN_DEFAULTS.items():
        if column not in frame.columns:
            frame[column] = default
    model = str(frame["model"].iloc[0]) if "model" in frame.columns and len(frame) else ""
    return Calibration(frame=frame, model=model)


def _progress(enabled: bool) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        disable=not enabled,
        transient=False,
    )


def answer_items(
    backend: Backend,
    items: Sequence[TaskItem],
    budgets_of: Callable[[TaskItem], list[int]],
    *,
    description: str,
    concurrency: int | None,
    progress: bool,
    answer_tokens: int,
    mode: Mode | Literal["auto"],
    prompt: CoTPrompt | None,
    run_tokens: int | None = None,
    runs: dict[str, Completion] | None = None,
    sink: Callable[[list[BudgetedAnswer]], None] | None = None,
    chunk: int = 0,
) -> list[BudgetedAnswer]:
    """Answer each item at its budgets, concurrently, with a progress bar (shared with
    `cotplan.planner.run`).

    `run_tokens` is the cap of each item's one reasoning run (default: its largest budget) and
    `runs` the runs already made (taken out as they are used). With `sink`, answers go there a
    `chunk` of items at a time and none are kept (an empty list comes back)."""
    # Imported here: the SDK is not loaded until requests are sent.
    from cotplan.planner.in_flight import async_requests

    kept = runs if runs is not None else {}
    # The requests go through one shared async client, at most the server's slots at once.
    with _progress(progress) as bar, async_requests(backend, concurrency) as concurrency:
        task = bar.add_task(description, total=len(items))

        def one(item: TaskItem) -> list[BudgetedAnswer]:
            answers = budgeted_answers(
                backend,
                item,
                budgets_of(item),
                answer_tokens=answer_tokens,
                mode=mode,
                prompt=prompt,
                run_tokens=run_tokens,
                run=kept.pop(item.id, None),
            )
            bar.advance(task)
            return answers

        if sink is None:
            results = backend.map(one, items, concurrency=concurrency)
            return [a for answers in results for a in answers]
        size = chunk or max(64, 8 * (concurrency or backend.default_concurrency))
        for start in range(0, len(items), size):
            results = backend.map(one, items[start : start + size], concurrency=concurrency)
            sink([a for answers in results for a in answers])
    return []


def measure_items(
    backend: Backend,
    items: Sequence[TaskItem],
    size_of: Callable[[TaskItem], int],
    *,
    uncapped_tokens: int,
    pilot: int,
    concurrency: int | None,
    answer_tokens: int,
    mode: Mode | Literal["auto"],
    prompt: CoTPrompt | None,
) -> tuple[list[ThinkingProfile], dict[str, Completion]]:
    """The uncapped thinking of the first `pilot` items of each size, and the auto grid of each
    size; the runs, where one run serves every budget, to be used again (never paid twice)."""
    by_size: dict[int, list[TaskItem]] = {}
    for item in items:
        by_size.setdefault(size_of(item), []).append(item)
    chosen = [item for group in by_size.values() for item in group[:pilot]]

    def one(item: TaskItem) -> tuple[str, int, bool, Completion | None, str]:
        s = budget_setup(
            backend,
            item,
            mode=mode,
            protocol="auto",
            prompt=prompt,
            answer_tokens=answer_tokens,
            temperature=0.0,
            seed=None,
            logprobs=True,
        )
        if shares_one_run(s):
            run = thinking_run(s, uncapped_tokens)
            length = thinking_length(run, s)
            return item.id, length, run.truncated and length >= uncapped_tokens - 2, run, "runs"
        # Hidden thinking (or a server that caps it): a pilot answer, paid apart.
        answer = budgeted_answer(
            backend, item, uncapped_tokens, answer_tokens=answer_tokens, mode=mode, prompt=prompt
        )
        return item.id, answer.reasoning_tokens, answer.truncated, None, "pilot"

    from cotplan.planner.in_flight import async_requests

    with async_requests(backend, concurrency) as in_flight:
        results = backend.map(one, chosen, concurrency=in_flight)
    measured = {r[0]: r for r in results}
    runs = {r[0]: r[3] for r in results if r[3] is not None}
    profiles = []
    for n, group in sorted(by_size.items()):
        rows = [measured[item.id] for item in group[:pilot]]
        profiles.append(
            thinking_profile(
                n,
                [r[1] for r in rows],
                uncapped_tokens=uncapped_tokens,
                cut=sum(1 for r in rows if r[2]),
                source=rows[0][4],
            )
        )
    return profiles, runs


def check_items(items: Iterable[TaskItem]) -> list[TaskItem]:
    chosen = list(items)
    if not chosen:
        raise InputError("must hold at least one item", field="items")
    seen: set[str] = set()
    for i, item in enumerate(chosen):
        if not isinstance(item, TaskItem):
            raise InputError(f"must be TaskItems; item {i} is {type(item).__name__}", field="items")
        if item.id in seen:
            raise InputError(f"item ids must be unique; {item.id!r} repeats", field="items")
        seen.add(item.id)
    return chosen


@validate_params(answer_tokens=CAP, uncapped_tokens=BUDGET, pilot=COUNT, eps=SHARE, delta=SHARE)
def calibrate(
    backend: Backend,
    items: Iterable[TaskItem],
    budgets: Budgets = "auto",
    *,
    concurrency: int | None = None,
    progress: bool = True,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    prompt: CoTPrompt | None = None,
    uncapped_tokens: int = UNCAPPED_TOKENS,
    pilot: int = AUTO_PILOT,
    eps: float | None = None,
    delta: float = 0.05,
) -> Calibration:
    """Answer every item at every budget and return the tidy `Calibration`.

    `budgets`: "auto" (the default; None means it too): a grid per size from the model's own
    uncapped thinking (see the module docstring; `uncapped_tokens` caps those runs, `pilot`
    items of each size size the grid); a list; "paper" (Algorithm 1's grid for each item's
    size, `paper_budgets`); or a function of the size n. With `eps` (auto grid), budgets are
    added where the error crosses ε and certified at `delta` (`cotplan.planner.refine`).
    `concurrency` bounds simultaneous items (default: the backend's). A model without a price
    gets NaN costs and one `CostUnknownWarning`; the run goes on.
    """
    chosen = check_items(items)
    job = _CalibrationJob.start(
        backend,
        chosen,
        budgets,
        concurrency=concurrency,
        answer_tokens=answer_tokens,
        mode=mode,
        prompt=prompt,
        uncapped_tokens=uncapped_tokens,
        pilot=pilot,
    )
    answers = job.answer(progress=progress)
    frame = calibration_frame(answers, chosen, provider=backend.provider or "")
    notes = job.notes(answers)
    if eps is not None and job.profiles:
        from cotplan.planner.refine import answer_refinement

        _, extra = answer_refinement(
            backend,
            chosen,
            frame,
            eps,
            delta=delta,
            longest={item.id: uncapped_tokens for item in chosen},
            answer_tokens=answer_tokens,
            mode=mode,
            prompt=prompt,
        )
        if len(extra):
            extra["size_source"] = extra["item"].map(frame.groupby("item")["size_source"].first())
            extra["provider"] = backend.provider or ""
            frame = pd.concat([frame, extra[list(CALIBRATION_COLUMNS)]], ignore_index=True)
            frame = frame.sort_values(["item", "k"], kind="stable").reset_index(drop=True)
            notes.append(f"{len(extra)} answer(s) added where the error crosses ε = {eps:g}")
    job.warn(notes, stacklevel=4)  # the declaration's wrapper is one frame more
    return Calibration(
        frame=frame,
        model=answers[0].model if answers else backend.model,
        requests=stat(backend, "requests") - job.requests0,
        cache_hits=stat(backend, "cache_hits") - job.hits0,
        notes=tuple(notes),
        retries=stat(backend, "retries") - job.retries0,
        answers=tuple(answers),
        thinking=tuple(job.profiles),
    )


@dataclass(frozen=True)
class CalibrationFile:
    """A calibration written to `path` as it ran (`calibrate_to_file`): how many rows and
    items, what it cost the endpoint, its notes, and what the auto grid measured.
    `load()` reads the calibration back."""

    path: Path
    rows: int
    items: int
    model: str
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    notes: tuple[str, ...] = ()
    thinking: tuple[ThinkingProfile, ...] = ()

    def load(self) -> Calibration:
        return load_calibration(self.path)

    def to_frame(self) -> pd.DataFrame:
        return self.load().to_frame()


def calibrate_to_file(
    backend: Backend,
    items: Iterable[TaskItem],
    path: str | os.PathLike[str],
    budgets: Budgets = "auto",
    *,
    concurrency: int | None = None,
    progress: bool = True,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    prompt: CoTPrompt | None = None,
    uncapped_tokens: int = UNCAPPED_TOKENS,
    pilot: int = AUTO_PILOT,
    chunk: int = 0,
) -> CalibrationFile:
    """`calibrate`, with each chunk of finished items' rows appended to the CSV at `path` (mode
    0600) and then dropped: memory stays flat however many items there are. `chunk` is the
    items answered between writes (default: eight times the concurrency, at least 64)."""
    chosen = check_items(items)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    job = _CalibrationJob.start(
        backend,
        chosen,
        budgets,
        concurrency=concurrency,
        answer_tokens=answer_tokens,
        mode=mode,
        prompt=prompt,
        uncapped_tokens=uncapped_tokens,
        pilot=pilot,
    )
    counts = {"rows": 0, "first": True}
    tally = Tally()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    model = backend.model
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:

        def sink(answers: list[BudgetedAnswer]) -> None:
            nonlocal model
            frame = calibration_frame(answers, chosen, provider=backend.provider or "")
            frame.to_csv(handle, index=False, header=bool(counts["first"]))
            handle.flush()
            counts["first"] = False
            counts["rows"] = int(counts["rows"]) + len(frame)
            tally.add(answers)
            if answers:
                model = answers[0].model

        job.answer(progress=progress, sink=sink, chunk=chunk)
    notes = job.notes_from(tally)
    job.warn(notes)
    return CalibrationFile(
        path=target,
        rows=int(counts["rows"]),
        items=len(chosen),
        model=model,
        requests=stat(backend, "requests") - job.requests0,
        cache_hits=stat(backend, "cache_hits") - job.hits0,
        retries=stat(backend, "retries") - job.retries0,
        notes=tuple(notes),
        thinking=tuple(job.profiles),
    )


@dataclass
class Tally:
    """What the notes need from the answers, counted as they stream past."""

    cost_notes: set[str] = field(default_factory=set)
    overran: int = 0
    lost: int = 0
    silent: int = 0
    untrusted: int = 0
    top_items: int = 0
    top_cut: int = 0

    def add(self, answers: Sequence[BudgetedAnswer]) -> None:
        self.cost_notes.update(a.cost_note for a in answers if a.cost_note)
        self.overran += sum(1 for a in answers if not a.cap_held)
        self.lost += sum(1 for a in answers if a.answer_lost)
        self.silent += sum(1 for a in answers if a.no_answer)
        self.untrusted += sum(1 for a in answers if not a.usage_trusted)
        top: dict[str, BudgetedAnswer] = {}
        for a in answers:
            if a.item not in top or a.k > top[a.item].k:
                top[a.item] = a
        self.top_items += len(top)
        self.top_cut += sum(1 for a in top.values() if a.truncated and a.k > 0)


@dataclass
class _CalibrationJob:
    """One calibration's grid, runs and counters, shared by `calibrate` and
    `calibrate_to_file`."""

    backend: Backend
    items: list[TaskItem]
    budgets_of: Callable[[TaskItem], list[int]]
    options: dict[str, Any]
    profiles: list[ThinkingProfile]
    runs: dict[str, Completion]
    run_tokens: int | None
    given_top: int | None
    requests0: int
    hits0: int
    retries0: int

    @classmethod
    def start(
        cls,
        backend: Backend,
        chosen: list[TaskItem],
        budgets: Budgets,
        *,
        concurrency: int | None,
        answer_tokens: int,
        mode: Mode | Literal["auto"],
        prompt: CoTPrompt | None,
        uncapped_tokens: int,
        pilot: int,
    ) -> _CalibrationJob:
        auto = budgets is None or (isinstance(budgets, str) and budgets == "auto")
        grid = None if auto else grid_for(budgets)
        requests0 = stat(backend, "requests")
        hits0 = stat(backend, "cache_hits")
        retries0 = stat(backend, "retries")
        sizes: dict[str, int] = {}

        def size_of(item: TaskItem) -> int:
            # Items without `n` are sized by their prompt: computed inside budgeted_answers
            # too, but the grid needs it first.
            if item.id not in sizes:
                if item.n is not None:
                    sizes[item.id] = item.n
                else:
                    from cotplan.tasks.size import item_size

                    sizes[item.id] = item_size(item, counter=backend.count_tokens)
            return sizes[item.id]

        options: dict[str, Any] = {
            "concurrency": concurrency,
            "answer_tokens": answer_tokens,
            "mode": mode,
            "prompt": prompt,
        }
        profiles: list[ThinkingProfile] = []
        runs: dict[str, Completion] = {}
        if grid is None:
            profiles, runs = measure_items(
                backend,
                chosen,
                size_of,
                uncapped_tokens=uncapped_tokens,
                pilot=pilot,
                **options,
            )
            by_n = {p.n: list(p.budgets) for p in profiles}

            def budgets_of(item: TaskItem) -> list[int]:
                return by_n[size_of(item)]

            given_top = None
        else:
            fixed = grid

            def budgets_of(item: TaskItem) -> list[int]:
                return fixed(size_of(item))

            given_top = max(max(budgets_of(item)) for item in chosen)
        return cls(
            backend=backend,
            items=chosen,
            budgets_of=budgets_of,
            options=options,
            profiles=profiles,
            runs=runs,
            run_tokens=uncapped_tokens if grid is None else None,
            given_top=given_top,
            requests0=requests0,
            hits0=hits0,
            retries0=retries0,
        )

    def answer(
        self,
        *,
        progress: bool,
        sink: Callable[[list[BudgetedAnswer]], None] | None = None,
        chunk: int = 0,
    ) -> list[BudgetedAnswer]:
        return answer_items(
            self.backend,
            self.items,
            self.budgets_of,
            description="calibrating",
            progress=progress,
            run_tokens=self.run_tokens,
            runs=self.runs,
            sink=sink,
            chunk=chunk,
            **self.options,
        )

    def notes(self, answers: Sequence[BudgetedAnswer]) -> list[str]:
        tally = Tally()
        tally.add(answers)
        return self.notes_from(tally)

    def notes_from(self, tally: Tally) -> list[str]:
        notes = [p.describe() for p in self.profiles]
        notes += calibration_notes(tally, self.items)
        if self.given_top is not None and self.given_top > 0:
            short = short_grid_note(self.given_top, tally.top_items, tally.top_cut)
            if short:
                notes.append(short)
        return notes

    def warn(self, notes: Sequence[str], *, stacklevel: int = 3) -> None:
        """Warn of `notes`, pointing at the line that called the entry point (`stacklevel`
        counts from here, as in `warnings.warn`)."""
        for note in notes:
            if note.startswith("no price"):
                warnings.warn(CostUnknownWarning(note), stacklevel=stacklevel)
            if note.startswith("the grid's top"):
                warnings.warn(GridShortWarning(note), stacklevel=stacklevel)


def calibration_frame(
    answers: Sequence[BudgetedAnswer], items: Sequence[TaskItem], *, provider: str = ""
) -> pd.DataFrame:
    """The tidy frame of `CALIBRATION_COLUMNS` from answers (`provider`: who served them)."""
    source = {item.id: size_source(item) for item in items}
    rows = []
    for a in answers:
        row = a.to_row()
        row["size_source"] = source.get(a.item, "n")
        row["provider"] = provider
        rows.append({c: row[c] for c in CALIBRATION_COLUMNS})
    return pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS))


def calibration_notes(tally: Tally, items: Sequence[TaskItem]) -> list[str]:
    notes = sorted(tally.cost_notes)
    if notes:
        notes = [f"{notes[0]}; costs are recorded as NaN"]
    sized = sum(1 for item in items if item.n is None)
    if sized:
        notes.append(f"{sized} item(s) had no `n`: their size is the prompt's token count")
    if tally.overran:
        notes.append(f"the provider overran the reasoning budget in {tally.overran} answer(s)")
    if tally.lost:
        notes.append(
            f"the cap ate the answer in {tally.lost} answer(s): scored wrong at that budget"
        )
    if tally.silent:
        notes.append(
            f"{tally.silent} answer(s) came back empty (content null): left out of the fit"
        )
    if tally.untrusted:
        notes.append(f"{tally.untrusted} answer(s) had token counts that cannot be trusted")
    return notes


def stat(backend: Backend, name: Literal["requests", "cache_hits", "retries"]) -> int:
    stats = backend.stats  # declared on every Backend: zero counts where it keeps none
    counts = {"requests": stats.requests, "cache_hits": stats.cache_hits, "retries": stats.retries}
    return counts[name]
