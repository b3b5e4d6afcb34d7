"""The record of one budgeted answer: what its requests returned, and the `BudgetedAnswer` built
from it once (extraction, scoring, prices, the cap check).

Each way of answering (`cotplan.generate.budget_modes`) ends by building one `Exchange`, the
requests it made and what they gave; `Exchange.to_answer(setup, k)` turns it into the public
`BudgetedAnswer` in one place, so the token accounting is the same for every mode.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pandas as pd

from cotplan.backends.base import Completion, TokenLogprob
from cotplan.backends.budgets import check_cap
from cotplan.errors import InputError
from cotplan.generate.budget_setup import BudgetSetup, Mode
from cotplan.tasks.answers import extract_answer, is_correct
from cotplan.tasks.item import TaskItem

__all__ = ["BudgetedAnswer", "Exchange", "answer_probability", "answers_frame"]


@dataclass(frozen=True)
class BudgetedAnswer:
    """One item answered under a reasoning budget `k` (see `cotplan.generate.budgeted` for
    the token accounting). `truncated`: the cap cut the reasoning; `forced`: the answer was
    asked for after such a cut. `answer_prob` is the probability the model gave the extracted
    answer's tokens (NaN without logprobs). `cap_held` is False when the provider generated
    more reasoning tokens than `k` (`overrun` of them). `path` is ``two-phase`` where cotplan
    cut the thinking and forced the answer, ``one-request`` where the server or provider capped
    it inside one request; `answer_lost` is True when that cap ate the answer (the call stopped
    at its token cap with no answer text): such a row is not a wrong answer but a cap set too
    tight. `no_answer` is True when the server sent no answer at all (``content: null``,
    `Completion.no_answer`) other than by such a cut: an outcome of its own too, not a wrong
    answer. `usage_trusted` is False when a call's token counts cannot be right
    (`Completion.usage_trusted`): its counts read 0 and are no measurement, so the token
    columns and the cap check of the row say nothing and its cost is NaN, with the reason in
    `cost_note`. `budget_note` says where the request could not hold k exactly (an effort
    level is not a token count, a provider's floor, a soft budget) and what went wrong with the
    cap or the reply; `cost_note` is about the price alone."""

    item: str
    family: str
    n: int
    k: int
    expected: str
    extracted: str | None
    correct: bool
    reasoning: str
    answer_text: str
    truncated: bool
    forced: bool
    prompt_tokens: int
    question_tokens: int
    reasoning_tokens: int
    answer_tokens: int
    cost_usd: float
    latency_s: float
    answer_prob: float
    cap_held: bool
    overrun: int
    from_cache: bool
    calls: int
    model: str
    mode: Mode
    cost_note: str = ""
    #: How the thinking was written and closed (`cotplan.generate.protocols`).
    protocol: str = "plain"
    path: str = "two-phase"
    answer_lost: bool = False
    budget_note: str = ""
    #: The exact text the answer phase continued (template mode; "" otherwise): score any
    #: candidate answer after it to get probabilities instead of one extracted answer.
    answer_prompt: str = field(default="", repr=False, compare=False)
    # New fields go last, with defaults: rows saved before them still build a record.
    usage_trusted: bool = True
    no_answer: bool = False

    @property
    def completion_tokens(self) -> int:
        """Generated tokens: reasoning plus answer."""
        return self.reasoning_tokens + self.answer_tokens

    def to_row(self) -> dict[str, Any]:
        """A flat dict (one row of `answers_frame`)."""
        row = asdict(self)
        del row["answer_prompt"]  # the whole conversation: too big for a table row
        row["completion_tokens"] = self.completion_tokens
        if not self.usage_trusted:
            # Counts the server did not send or got wrong are unknown: a blank cell, never a 0
            # that a sum or a mean would take as measured.
            for name in _TOKEN_COLUMNS:
                row[name] = None
        return row


_TOKEN_COLUMNS = (
    "prompt_tokens",
    "question_tokens",
    "reasoning_tokens",
    "answer_tokens",
    "completion_tokens",
)


_ROW_FIELDS = [name for name in BudgetedAnswer.__dataclass_fields__ if name != "answer_prompt"]


def answers_frame(answers: Sequence[BudgetedAnswer]) -> pd.DataFrame:
    """A tidy frame, one row per answer (columns: the `BudgetedAnswer` fields)."""
    columns = [*_ROW_FIELDS, "completion_tokens"]
    return pd.DataFrame([a.to_row() for a in answers], columns=columns)


@dataclass(frozen=True)
class _Price:
    usd: float
    note: str


def _price(completion: Completion) -> _Price:
    """List price of a call (also when the cache answered); NaN with a note when unknown, and
    when the call's usage cannot be trusted (its counts read 0: pricing them would be a
    silent $0, which a sum would count)."""
    from cotplan.generate.call_cost import recorded_cost

    if not completion.usage_trusted:
        why = "; ".join(completion.notes) or "the server's counts cannot be right"
        return _Price(
            math.nan,
            f"the usage of a {completion.model} call cannot be trusted ({why}): "
            "its cost is unknown, not $0",
        )
    try:
        cost = recorded_cost(replace(completion, from_cache=False))
    except InputError as exc:  # UnknownModelError, or no price in effect today
        return _Price(math.nan, f"no price for {completion.model}: {exc}")
    return _Price(float(cost.usd), "")


def answer_probability(
    logprobs: Sequence[TokenLogprob] | None, text: str, extracted: str | None, item: TaskItem
) -> float:
    """Probability of the tokens that spell the extracted answer in `text` (NaN if unknown)."""
    if not logprobs or extracted is None:
        return math.nan
    if "".join(t.token for t in logprobs) != text:
        return math.nan
    pattern = re.compile(re.escape(extracted), re.IGNORECASE)
    matches = list(pattern.finditer(text))
    if not matches:
        return math.nan
    # Integers are extracted as the LAST integer of the answer line; other kinds the first hit.
    line_end = text.find("\n", len(text) - len(text.lstrip()))
    in_line = [m for m in matches if line_end < 0 or m.start() < line_end] or matches
    match = in_line[-1] if item.kind in ("integer", "binary") else in_line[0]
    total, position = 0.0, 0
    for token in logprobs:
        start, position = position, position + len(token.token)
        if position > match.start() and start < match.end():
            total += token.logprob
    return math.exp(total)


@dataclass(frozen=True)
class Exchange:
    """The requests one budgeted answer made and what they gave.

    `reasoning` is the call made under the reasoning cap (None at k = 0 in the two-phase
    path) and `answer` the call that asked for the answer alone (None when the first call
    answered). `answer_text` is the text scored; `prefilled` says the answer marker was written
    before it. `reasoning_tokens` are the tokens spent thinking; `answer_tokens` the visible
    answer's (None: the answer call's completion tokens less any hidden reasoning in it).
    `thinking` replaces the reasoning call's text as the thinking shown (one-request calls,
    whose text is the answer); `truncated` overrides "the reasoning call stopped at its cap".
    `one_request` says the server or provider capped the thinking inside the request, and
    `checked` asks the cap check whether the answer survived that cap. `notes` are the
    request fields' notes (`BudgetParams.notes`) and any caveat of the count.
    """

    reasoning: Completion | None
    answer: Completion | None
    answer_text: str
    reasoning_tokens: int
    prefilled: bool = False
    answer_prompt: str = ""
    answer_tokens: int | None = None
    thinking: str | None = None
    truncated: bool | None = None
    one_request: bool = False
    checked: bool = False
    notes: tuple[str, ...] = ()

    @property
    def calls(self) -> list[Completion]:
        return [c for c in (self.reasoning, self.answer) if c is not None]

    def _answer_tokens(self) -> int:
        if self.answer_tokens is not None:
            return self.answer_tokens
        if self.answer is None:
            return 0
        # Visible answer tokens: hidden reasoning in a reply is counted as reasoning.
        return self.answer.usage.completion_tokens - self.answer.usage.reasoning_tokens

    def to_answer(self, s: BudgetSetup, k: int) -> BudgetedAnswer:
        """The `BudgetedAnswer` of this exchange for budget `k`."""
        calls = self.calls
        last = calls[-1]
        check = check_cap(
            k,
            self.reasoning_tokens,
            rule=s.rule,
            finish_reason=last.finish_reason if self.checked else None,
            content=self.answer_text if self.checked else None,
        )
        lost = not check.answer_survived
        silent = not lost and self._no_answer()
        scored = not (lost or silent)  # a lost or missing answer is no wrong answer
        text = self.answer_text if scored else ""
        extracted = extract_answer(text, s.item, prefilled=self.prefilled) if scored else None
        correct = scored and is_correct(text, s.item, prefilled=self.prefilled)
        prices = [_price(c) for c in calls]
        cost_notes = sorted({p.note for p in prices if p.note})
        budget_notes = self._budget_notes(check.note, silent=silent)
        truncated = self.truncated
        if truncated is None:
            truncated = self.reasoning is not None and self.reasoning.truncated
        shown = self.thinking
        if shown is None:
            shown = self.reasoning.text if self.reasoning is not None else ""
        logprobs = self.answer.logprobs if self.answer is not None else None
        return BudgetedAnswer(
            item=s.item.id,
            family=s.item.family,
            n=s.n,
            k=k,
            expected=s.item.answer,
            extracted=extracted,
            correct=correct,
            reasoning="" if s.mode == "hidden" else shown,
            answer_text=text,
            truncated=truncated,
            forced=truncated and (self.answer is not None or self.checked),
            prompt_tokens=sum(c.usage.prompt_tokens for c in calls),
            question_tokens=calls[0].usage.prompt_tokens,
            reasoning_tokens=self.reasoning_tokens,
            answer_tokens=self._answer_tokens(),
            cost_usd=math.nan if any(p.note for p in prices) else sum(p.usd for p in prices),
            latency_s=sum(c.latency_s for c in calls),
            answer_prob=answer_probability(logprobs, text, extracted, s.item),
            cap_held=check.held,
            overrun=check.overrun,
            from_cache=all(c.from_cache for c in calls),
            calls=len(calls),
            model=calls[0].model,
            mode=s.mode,
            cost_note="; ".join(cost_notes),
            protocol=s.protocol,
            path="one-request" if self.one_request else "two-phase",
            answer_lost=lost,
            budget_note="; ".join(budget_notes),
            answer_prompt=self.answer_prompt,
            usage_trusted=all(c.usage_trusted for c in calls),
            no_answer=silent,
        )

    def _no_answer(self) -> bool:
        """The call that gave the answer (the answer call, else the one under the cap) had
        none: the server sent ``content: null``."""
        answering = self.answer if self.answer is not None else self.reasoning
        return answering is not None and answering.no_answer

    def _budget_notes(self, cap_note: str, *, silent: bool) -> list[str]:
        """The request's notes, the cap check's, and what about the reply cannot be trusted."""
        notes = [*self.notes, cap_note] if cap_note else list(self.notes)
        if silent:
            notes.append("the server sent no answer (`content: null`): not scored")
        untrusted = sum(1 for c in self.calls if not c.usage_trusted)
        if untrusted:
            notes.append(
                f"the token counts of {untrusted} call(s) cannot be trusted: the token columns "
                "and the cap check are no measurement"
            )
        return notes
