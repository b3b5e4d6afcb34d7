"""Calibration runs: answer every item at every budget of a grid, into one tidy frame.

`calibrate(backend, items, budgets)` answers each item with `budgeted_answer` at each budget
(budgets sharing one greedy reasoning run where the backend allows, see
`cotplan.generate.budgeted`), with bounded concurrency (`backend.map`) and a progress bar. Every
request goes through the backend's call cache, so a run that was killed resumes where it
stopped: the answers already recorded are replayed, not paid for again.

The budget grid. `default_budgets()` is 0 plus powers of two up to 128. `paper_budgets(n)` is
the paper's Algorithm 1: about 20 · ln n log-spaced budgets in [0, 10 √n] (the paper writes
"log"; the natural log is used here, and the integer rounding merges the smallest ones), and
`budgets="paper"` uses it for each item's own size.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.budgeted import (
    BudgetedAnswer,
    CoTPrompt,
    Mode,
    budgeted_answers,
)
from cotplan.io import write_csv
from cotplan.planner.calibration_file import check_calibration_frame, record_lines
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import size_source
from cotplan.validation import require_int

__all__ = [
    "CALIBRATION_COLUMNS",
    "Calibration",
    "CostUnknownWarning",
    "calibrate",
    "calibration_spend",
    "default_budgets",
    "load_calibration",
    "paper_budgets",
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

Budgets = Sequence[int] | Callable[[int], Sequence[int]] | Literal["paper"] | None


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


def default_budgets(max_budget: int = 128) -> list[int]:
    """0, then powers of two from 8 up to `max_budget` (which is included)."""
    max_budget = require_int(max_budget, "max_budget", low=1)
    grid = [0]
    k = 8
    while k < max_budget:
        grid.append(k)
        k *= 2
    grid.append(max_budget)
    return sorted(set(grid))


def paper_budgets(n: int, *, count: int | None = None, scale: float = 10.0) -> list[int]:
    """Algorithm 1's grid: 0 plus about `count` (default ceil(20 · ln n)) log-spaced integer
    budgets in [1, scale · √n]; rounding merges duplicates, so fewer may come back."""
    n = require_int(n, "n", low=1)
    top = max(1, math.ceil(scale * math.sqrt(n)))
    default = max(2, math.ceil(20 * math.log(max(n, 2))))
    wanted = default if count is None else require_int(count, "count", low=1)
    grid = np.unique(np.round(np.geomspace(1, top, wanted)).astype(int))
    return [0, *(int(k) for k in grid)]


def _budgets_for(budgets: Budgets) -> Callable[[int], list[int]]:
    if budgets is None:
        fixed = default_budgets()
        return lambda n: fixed
    if isinstance(budgets, str):
        if budgets != "paper":
            raise InputError(
                f"must be a list of budgets, 'paper' or a function of n, got {budgets!r}",
                field="budgets",
            )
        return paper_budgets
    if callable(budgets):
        chosen = budgets
        return lambda n: _check_grid(chosen(n))
    grid = _check_grid(budgets)
    return lambda n: grid


def _check_grid(budgets: Iterable[Any]) -> list[int]:
    values = list(budgets)
    if not values:
        raise InputError("must hold at least one budget", field="budgets")
    return sorted({require_int(k, "budgets", low=0) for k in values})


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


def _answer_items(
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
) -> list[BudgetedAnswer]:
    """Answer each item at its budgets, concurrently, with a progress bar (shared with
    `cotplan.planner.run`)."""
    with _progress(progress) as bar:
        task = bar.add_task(description, total=len(items))

        def one(item: TaskItem) -> list[BudgetedAnswer]:
            answers = budgeted_answers(
                backend,
                item,
                budgets_of(item),
                answer_tokens=answer_tokens,
                mode=mode,
                prompt=prompt,
            )
            bar.advance(task)
            return answers

        results = backend.map(one, items, concurrency=concurrency)
    return [a for answers in results for a in answers]


def _check_items(items: Iterable[TaskItem]) -> list[TaskItem]:
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


def calibrate(
    backend: Backend,
    items: Iterable[TaskItem],
    budgets: Budgets = None,
    *,
    concurrency: int | None = None,
    progress: bool = True,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    prompt: CoTPrompt | None = None,
) -> Calibration:
    """Answer every item at every budget and return the tidy `Calibration`.

    `budgets`: a list (default `default_budgets()`: 0, 8, 16, 32, 64, 128), "paper" (Algorithm
    1's grid for each item's size, `paper_budgets`), or a function of the size n.
    `concurrency` bounds simultaneous items (default: the backend's). A model without a price
    gets NaN costs and one `CostUnknownWarning`; the run goes on.
    """
    chosen = _check_items(items)
    grid = _budgets_for(budgets)
    requests0 = _stat(backend, "requests")
    hits0 = _stat(backend, "cache_hits")
    retries0 = _stat(backend, "retries")

    def budgets_of(item: TaskItem) -> list[int]:
        # Items without `n` are sized by their prompt: computed inside budgeted_answers too,
        # but the grid needs it first.
        if item.n is not None:
            return grid(item.n)
        from cotplan.tasks.size import item_size

        return grid(item_size(item, counter=backend.count_tokens))

    answers = _answer_items(
        backend,
        chosen,
        budgets_of,
        description="calibrating",
        concurrency=concurrency,
        progress=progress,
        answer_tokens=answer_tokens,
        mode=mode,
        prompt=prompt,
    )
    frame = calibration_frame(answers, chosen, provider=backend.provider or "")
    notes = _notes(answers, chosen)
    for note in notes:
        if note.startswith("no price"):
            warnings.warn(CostUnknownWarning(note), stacklevel=2)
    return Calibration(
        frame=frame,
        model=answers[0].model if answers else backend.model,
        requests=_stat(backend, "requests") - requests0,
        cache_hits=_stat(backend, "cache_hits") - hits0,
        notes=tuple(notes),
        retries=_stat(backend, "retries") - retries0,
        answers=tuple(answers),
    )


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


def _notes(answers: Sequence[BudgetedAnswer], items: Sequence[TaskItem]) -> list[str]:
    notes = sorted({a.cost_note for a in answers if a.cost_note})
    if notes:
        notes = [f"{notes[0]}; costs are recorded as NaN"]
    sized = sum(1 for item in items if item.n is None)
    if sized:
        notes.append(f"{sized} item(s) had no `n`: their size is the prompt's token count")
    overran = sum(1 for a in answers if not a.cap_held)
    if overran:
        notes.append(f"the provider overran the reasoning budget in {overran} answer(s)")
    lost = sum(1 for a in answers if a.answer_lost)
    if lost:
        notes.append(f"the cap ate the answer in {lost} answer(s): scored wrong at that budget")
    silent = sum(1 for a in answers if a.no_answer)
    if silent:
        notes.append(f"{silent} answer(s) came back empty (content null): left out of the fit")
    untrusted = sum(1 for a in answers if not a.usage_trusted)
    if untrusted:
        notes.append(f"{untrusted} answer(s) had token counts that cannot be trusted")
    return notes


def _stat(backend: Backend, name: Literal["requests", "cache_hits", "retries"]) -> int:
    stats = backend.stats  # declared on every Backend: zero counts where it keeps none
    counts = {"requests": stats.requests, "cache_hits": stats.cache_hits, "retries": stats.retries}
    return counts[name]
