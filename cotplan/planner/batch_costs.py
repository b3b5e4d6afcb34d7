"""What a batch calibration costs: the most a submission can cost, before it is sent
(`CostEstimate`), what its answers cost at batch and at live rates (`BatchSpend`), and the
calibration table at batch rates (`batch_priced`). Prices are `cotplan.pricing.call_cost`'s,
whose `batch=True` is what `cotplan cost call --batch` prices: the model's batch price per
token type where the price data lists one, else the row's batch discount.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cotplan.backends.base import Backend, Completion
from cotplan.errors import InputError
from cotplan.planner.batch_format import BatchRequest

__all__ = ["BatchSpend", "CostEstimate", "batch_priced", "estimate_cost", "spend_of"]


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
    elif isinstance(params.get("input"), str):  # the Responses API's
        text = params["input"]
    elif "input" in params:
        text = "\n".join(str(m.get("content") or "") for m in params["input"])
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


def spend_of(completions: Iterable[Completion]) -> BatchSpend:
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
