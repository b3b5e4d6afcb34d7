"""What a calibration will cost, said before its first request.

`estimate_calibration(backend, items, budgets)` counts the items, the budgets, the requests and
the tokens a calibration sends and generates, at most, and prices them where the model has a
price: with visible thinking each item's one run (capped at the grid's top, or at
`uncapped_tokens` for the auto grid, whose top is measured only by those runs) plus one
answer per budget; with hidden thinking every budget is its own request. The counts are upper
bounds where the model decides (it may stop thinking sooner); the auto grid's answers are
counted at its largest size of grid (0 plus `AUTO_POINTS` budgets).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.budget_setup import budget_setup
from cotplan.generate.budgeted import shares_one_run
from cotplan.planner.auto_grid import AUTO_POINTS
from cotplan.tasks.item import TaskItem

__all__ = ["CalibrationEstimate", "estimate_calibration"]


@dataclass(frozen=True)
class CalibrationEstimate:
    """At most how many requests and tokens a calibration takes, and what they cost (NaN: no
    price; `price_note` says why). `budgets` describes the grid in words."""

    items: int
    sizes: tuple[int, ...]
    budgets: str
    requests: int
    thinking_tokens: int
    answer_tokens: int
    prompt_tokens: int
    cost_usd: float
    one_run: bool
    price_note: str = ""

    def lines(self) -> list[str]:
        """What a command prints before it starts."""
        how = (
            "one run per item serves every budget"
            if self.one_run
            else "every budget is its own request"
        )
        cost = (
            f"at most USD {self.cost_usd:,.4f}"
            if math.isfinite(self.cost_usd)
            else f"cost unknown ({self.price_note})"
        )
        return [
            f"calibration: {self.items} items at sizes {', '.join(map(str, self.sizes))}; "
            f"budgets {self.budgets}",
            f"at most {self.requests:,} requests ({how}); tokens at most: thinking "
            f"{self.thinking_tokens:,}, answers {self.answer_tokens:,}, prompts about "
            f"{self.prompt_tokens:,}; {cost}",
        ]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "items": self.items,
                    "budgets": self.budgets,
                    "requests": self.requests,
                    "thinking_tokens": self.thinking_tokens,
                    "answer_tokens": self.answer_tokens,
                    "prompt_tokens": self.prompt_tokens,
                    "cost_usd": self.cost_usd,
                }
            ]
        )


def _question_tokens(item: TaskItem) -> int:
    """About 4 characters a token, plus the chat template's few: a prompt-side estimate that
    needs no tokenizer (prompts are the small part of a reasoning calibration's bill)."""
    text = (
        item.prompt
        if isinstance(item.prompt, str)
        else " ".join(str(m.get("content") or "") for m in item.prompt)
    )
    return len(text) // 4 + 8


def estimate_calibration(
    backend: Backend,
    items: Sequence[TaskItem],
    grid: Callable[[int], Sequence[int]] | None,
    *,
    uncapped_tokens: int,
    answer_tokens: int = 16,
    describe: str = "",
) -> CalibrationEstimate:
    """The estimate for `items` on `backend` (see the module docstring). `grid` gives each
    size's budgets (None: the auto grid); `describe` is the grid in words."""
    if not items:
        raise InputError("must hold at least one item", field="items")
    s = budget_setup(
        backend,
        items[0],
        mode="auto",
        protocol="auto",
        prompt=None,
        answer_tokens=answer_tokens,
        temperature=0.0,
        seed=None,
        logprobs=True,
    )
    one_run = shares_one_run(s)
    requests = thinking = answers = prompts = 0
    for item in items:
        n = item.n if item.n is not None else 0
        if grid is None:
            top = uncapped_tokens
            # The auto grid's budgets are not known yet; bound them by a full grid below the cap.
            budgets = [0, *(math.ceil(top / 2**i) for i in range(AUTO_POINTS))]
        else:
            budgets = sorted({int(k) for k in grid(n)})
            top = max(budgets)
        q = _question_tokens(item)
        if one_run:
            requests += 1 + len(budgets)
            thinking += top
            prompts += q * (1 + len(budgets)) + sum(budgets)
        else:
            requests += len(budgets) + (1 if grid is None else 0)
            thinking += sum(budgets) + (top if grid is None else 0)
            prompts += q * len(budgets)
        answers += answer_tokens * len(budgets)
    cost, note = _price(backend.model, requests, prompts, thinking + answers, thinking)
    sizes = tuple(sorted({item.n for item in items if item.n is not None}))
    return CalibrationEstimate(
        items=len(items),
        sizes=sizes,
        budgets=describe or ("auto" if grid is None else "given"),
        requests=requests,
        thinking_tokens=thinking,
        answer_tokens=answers,
        prompt_tokens=prompts,
        cost_usd=cost,
        one_run=one_run,
        price_note=note,
    )


def _price(
    model: str, requests: int, prompt: int, completion: int, reasoning: int
) -> tuple[float, str]:
    """The tokens priced as `requests` calls of the mean size: one call of all of them would
    cross a long-context threshold no real call reaches."""
    from cotplan.pricing.cost import call_cost

    calls = max(requests, 1)
    try:
        cost = call_cost(
            model,
            prompt_tokens=math.ceil(prompt / calls),
            completion_tokens=math.ceil(completion / calls),
            reasoning_tokens=math.ceil(reasoning / calls),
        )
    except InputError as exc:
        return math.nan, str(exc).split(": ", 1)[-1]
    return float(cost.usd) * calls, ""
