"""A calibration frame read as each item's probes, and where a stopping rule stops on them.

`probe_sequences` turns the forced answers of a calibration (one greedy run an item, answered
at every calibrated budget) into each item's probes up to its ceiling; `apply_rule` says where
a `StoppingRule` stops on them and what that costs, and `stop_at_budgets` where a stop known in
advance (an oracle's) lands when it still has to be found by probing. What the probes are and
what is charged is in `cotplan.planner.early_exit`, which certifies the rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from cotplan.errors import InputError
from cotplan.generate.probing import StoppingRule
from cotplan.planner.data import validate_frame
from cotplan.validation import require_int

__all__ = [
    "ProbeSequence",
    "apply_rule",
    "least_probing_tokens",
    "probe_sequences",
    "stop_at_budgets",
    "uniform_probing_tokens",
]

_NEEDED = ("item", "n", "k", "extracted", "correct", "reasoning_tokens", "answer_tokens")


@dataclass(frozen=True)
class ProbeSequence:
    """One item's probes up to its ceiling, in budget order (the last is the ceiling)."""

    item: str
    n: int
    k: NDArray[np.int_]
    correct: NDArray[np.bool_]
    run: NDArray[np.int_]  # length of the run of equal (extracted) answers ending at each probe
    prob: NDArray[np.float64]
    ended: NDArray[np.bool_]  # the thinking ended by itself before this budget
    reasoning: NDArray[np.float64]
    answer: NDArray[np.float64]
    prompt: NDArray[np.float64]  # the prompt a probe would be billed again


def _runs(answers: Sequence[Any]) -> NDArray[np.int_]:
    runs = np.zeros(len(answers), dtype=int)
    for j, a in enumerate(answers):
        if _missing(a):
            continue  # no answer read: agrees with nothing
        same = j > 0 and not _missing(answers[j - 1]) and str(answers[j - 1]) == str(a)
        runs[j] = runs[j - 1] + 1 if same else 1
    return runs


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def check_frame(frame: object) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"must be a DataFrame, got {type(frame).__name__}", field="frame")
    missing = [c for c in _NEEDED if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)}; early exit reads the forced answers "
            "(a calibration frame)",
            field="frame",
        )
    if len(frame) == 0:
        raise InputError("has no rows", field="frame")
    validate_frame(frame[["item", "n", "k", "correct"]])  # the planner's checks and messages
    if frame.duplicated(["item", "k"]).any():
        raise InputError(
            "holds repeated answers of one item at one budget; early exit reads one greedy run "
            "an item",
            field="frame",
        )
    return frame


def probe_sequences(
    frame: pd.DataFrame,
    ceilings: Mapping[int, int],
    *,
    every: int | None = None,
    bill_prompt: bool = False,
) -> list[ProbeSequence]:
    """Each item's probes at the sizes that have a ceiling (see the module docstring)."""
    frame = check_frame(frame)
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
        raise InputError(f"must be a positive integer or None, got {every!r}", field="every")
    frame = frame[frame["n"].isin(list(ceilings))].sort_values(["n", "item", "k"], kind="stable")
    if frame.empty:
        return []
    # Whole columns to numpy once, then slices per item: pandas per group is too slow for the
    # simulations that certify thousands of calibrations.
    n_all = frame["n"].to_numpy(dtype=int)
    items = frame["item"].astype(str).to_numpy()
    k_all = frame["k"].to_numpy(dtype=int)
    correct = frame["correct"].to_numpy(dtype=bool)
    extracted = frame["extracted"].to_numpy(dtype=object)
    reasoning = frame["reasoning_tokens"].to_numpy(dtype=float)
    answer = frame["answer_tokens"].to_numpy(dtype=float)
    prob = (
        pd.to_numeric(frame["answer_prob"], errors="coerce").to_numpy(dtype=float)
        if "answer_prob" in frame.columns
        else np.full(len(frame), np.nan)
    )
    prompt = probe_prompt(frame) if bill_prompt else np.zeros(len(frame))
    starts = np.flatnonzero(np.r_[True, (items[1:] != items[:-1]) | (n_all[1:] != n_all[:-1])])
    out: list[ProbeSequence] = []
    for start, end in zip(starts, np.r_[starts[1:], len(frame)], strict=True):
        n, k = int(n_all[start]), k_all[start:end]
        ceiling = int(ceilings[n])
        keep = (k == ceiling) | ((k > 0) & (k < ceiling))
        if every is not None:
            keep &= (k == ceiling) | (k % every == 0)
        if not keep[k == ceiling].any():
            raise InputError(
                f"item {items[start]!r} (n = {n}) has no answer at the ceiling k = {ceiling}; "
                "the ceiling must be a calibrated budget",
                field="ceilings",
            )
        rows = np.flatnonzero(keep) + start
        out.append(
            ProbeSequence(
                item=str(items[start]),
                n=n,
                k=k_all[rows],
                correct=correct[rows],
                run=_runs(list(extracted[rows])),
                prob=prob[rows],
                ended=reasoning[rows] < k_all[rows],
                reasoning=reasoning[rows],
                answer=answer[rows],
                prompt=prompt[rows],
            )
        )
    return out


def probe_prompt(rows: pd.DataFrame) -> NDArray[np.float64]:
    if "prompt_tokens" not in rows.columns:
        raise InputError("`bill_prompt` needs the column prompt_tokens", field="frame")
    prompt = rows["prompt_tokens"].to_numpy(dtype=float)
    if "question_tokens" in rows.columns:
        # An answer request after the reasoning request sends the question and the thinking
        # again: that part is what each further probe bills; a single request bills it all.
        extra = prompt - rows["question_tokens"].to_numpy(dtype=float)
        prompt = np.where(extra > 0, extra, prompt)
    return np.asarray(prompt, dtype=float)


def probes_have_prob(sequences: Sequence[ProbeSequence]) -> bool:
    """Whether every probe a rule can read has its `answer_prob`. Where the thinking ended on
    its own, or at the ceiling, the item stops whatever the rule says, so a probability missing
    there (the model's own answer after it closed its thinking) takes no rule away."""
    for s in sequences:
        ended = np.flatnonzero(s.ended)
        last = int(ended[0]) if len(ended) else len(s.k) - 1
        if np.isnan(s.prob[:last]).any():
            return False
    return True


def _stop_index(rule: StoppingRule, probes: ProbeSequence) -> int:
    stop = rule.fires(probes.run, probes.prob) | probes.ended
    stop[-1] = True  # the ceiling
    return int(np.argmax(stop))


_STOP_COLUMNS = [
    "item",
    "n",
    "stop_k",
    "ceiling",
    "correct",
    "probes",
    "thinking_tokens",
    "probe_tokens",
    "answer_tokens",
    "total_tokens",
]


def apply_rule(rule: StoppingRule, sequences: Sequence[ProbeSequence]) -> pd.DataFrame:
    """One row per item: where `rule` stopped (`stop_k`), whether that answer is right, the
    probes it took, and the tokens charged (thinking, probe overhead, answer, total)."""
    # A rule that can never fire needs no probes: it is the fixed cap, charged no overhead.
    return _stops(sequences, [_stop_index(rule, s) for s in sequences], charge=rule.probes)


def stop_at_budgets(sequences: Sequence[ProbeSequence], budgets: Mapping[str, int]) -> pd.DataFrame:
    """Each item stopped at its first probe at or after its own budget (`budgets[item]`; the
    ceiling where none is), charged every probe before it, as `apply_rule` charges: where a
    rule that knew each item's budget in advance, but still probed to stop, would stop."""
    indices = []
    for s in sequences:
        later = np.flatnonzero(s.k >= budgets[s.item])
        indices.append(int(later[0]) if len(later) else len(s.k) - 1)
    return _stops(sequences, indices, charge=True)


def _stops(
    sequences: Sequence[ProbeSequence], indices: Sequence[int], *, charge: bool
) -> pd.DataFrame:
    rows = []
    for s, j in zip(sequences, indices, strict=True):
        overhead = float(s.answer[:j].sum() + s.prompt[:j].sum()) if charge else 0.0
        rows.append(
            {
                "item": s.item,
                "n": s.n,
                "stop_k": int(s.k[j]),
                "ceiling": int(s.k[-1]),
                "correct": bool(s.correct[j]),
                "probes": j + 1 if charge else 1,
                "thinking_tokens": float(s.reasoning[j]),
                "probe_tokens": overhead,
                "answer_tokens": float(s.answer[j]),
                "total_tokens": float(s.reasoning[j] + overhead + s.answer[j]),
            }
        )
    return pd.DataFrame(rows, columns=_STOP_COLUMNS)


def uniform_probing_tokens(stops: Sequence[int], answer_tokens: float, every: int) -> float:
    """Mean tokens to stop items whose answers settle at `stops` (thinking tokens) by probing
    every `every` tokens, knowing the stops: each item thinks to the first probe at or after
    its stop, and each probe it makes, that one included, pays `answer_tokens`."""
    steps = np.ceil(_stops_array(stops) / require_int(every, "every", low=1))
    return float(np.mean(steps * (every + float(answer_tokens))))


def least_probing_tokens(stops: Sequence[int], answer_tokens: float) -> float:
    """The least mean tokens of any fixed set of probe positions that stops items whose
    answers settle at `stops`, the positions chosen knowing the stops (charged as
    `uniform_probing_tokens` charges). No rule that waits for each answer to settle and probes
    at fixed positions spends less on these items: what is left above the stops themselves is
    what probing costs. (A rule that moved its probes by what earlier ones said is not covered.)

    Dynamic programming over the last probe's position q: `least[q]` is the least total for
    the items stopped by the probes up to q, plus one answer for each probe every item still
    thinking made on the way.
    """
    ordered = np.sort(_stops_array(stops).astype(int))
    top = int(ordered[-1])
    stopped_by = np.searchsorted(ordered, np.arange(top + 1), side="right")  # stops ≤ x
    least = np.full(top + 1, np.inf)
    least[0] = 0.0
    for q in range(1, top + 1):
        earlier = np.arange(q)
        cost = (
            least[earlier]
            + (stopped_by[q] - stopped_by[earlier]) * q
            + float(answer_tokens) * (len(ordered) - stopped_by[earlier])
        )
        least[q] = float(cost.min())
    return float(least[top] / len(ordered))


def _stops_array(stops: Sequence[int]) -> NDArray[np.float64]:
    values = np.asarray(stops, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise InputError("must be a non-empty list of thinking tokens", field="stops")
    if not np.all(np.isfinite(values)) or (values < 1).any() or (values % 1).any():
        raise InputError("must be whole numbers of thinking tokens, at least 1", field="stops")
    return values
