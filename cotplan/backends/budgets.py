"""One reasoning budget, translated into each provider's own parameters, as data.

Providers cap reasoning in different ways: a plain output cap (`max_tokens`), a cap on hidden
reasoning plus the visible answer (`max_completion_tokens`), a coarse level
(`reasoning_effort`), a thinking budget with a floor (Anthropic's `budget_tokens` >= 1024) or a
soft budget (Gemini's `thinking_budget`). `BUDGET_RULES` holds what each one accepts;
`budget_params(rule, k)` turns a budget of k reasoning tokens into the request fields (with a
note whenever the provider cannot express k exactly), and `check_cap` says, after the call,
whether the provider kept to it.

The `reasoning_effort` thresholds are cotplan's assumption, not a provider's: effort levels are
not token counts, so the hard limit always travels with them (`max_completion_tokens`), and the
level only keeps the model from planning reasoning it will not be allowed to finish.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from cotplan.errors import InputError

__all__ = [
    "BUDGET_RULES",
    "EFFORT_THRESHOLDS",
    "BudgetParams",
    "BudgetRule",
    "CapCheck",
    "budget_params",
    "check_cap",
    "rule_for",
]

#: What a provider's budget parameter bounds: the visible text (`output`, reasoning written out
#: as text), hidden reasoning plus the visible answer (`reasoning+output`), or hidden reasoning
#: alone (`reasoning`).
Covers = Literal["output", "reasoning+output", "reasoning"]

#: `reasoning_effort` level for a budget of at most this many reasoning tokens (first match).
#: cotplan's assumption (see the module docstring); the hard cap is sent alongside.
EFFORT_THRESHOLDS: tuple[tuple[int, str], ...] = (
    (0, "minimal"),
    (1024, "low"),
    (8192, "medium"),
)
_EFFORT_ABOVE = "high"


@dataclass(frozen=True)
class BudgetRule:
    """How one provider (or API flavour) takes a reasoning budget.

    `parameter` is the request field that carries the cap and `covers` what it bounds.
    `minimum`/`maximum` bound a thinking budget where the provider does (None: no bound);
    `off` is the value that turns thinking off, if any. `hard` is False where the provider
    treats the budget as a hint (check the usage afterwards). `answer_room` is True when the
    cap also has to leave room for the visible answer. `effort` is True when the provider
    also takes a `reasoning_effort` level. `logprobs` says whether answer probabilities exist.
    """

    name: str
    parameter: str
    covers: Covers
    hard: bool = True
    answer_room: bool = False
    minimum: int | None = None
    maximum: int | None = None
    off: int | None = None
    effort: bool = False
    logprobs: bool = True
    notes: str = ""


BUDGET_RULES: Mapping[str, BudgetRule] = MappingProxyType(
    {
        rule.name: rule
        for rule in (
            BudgetRule(
                "openai",
                "max_tokens",
                "output",
                notes="OpenAI chat models: reasoning is written out as text and capped as output",
            ),
            BudgetRule(
                "openai-reasoning",
                "max_completion_tokens",
                "reasoning+output",
                answer_room=True,
                effort=True,
                logprobs=False,
                notes="o-series / gpt-5-style reasoning models refuse `max_tokens` and logprobs; "
                "the cap covers hidden reasoning and the visible answer",
            ),
            BudgetRule(
                "anthropic",
                "thinking.budget_tokens",
                "reasoning",
                answer_room=True,
                minimum=1024,
                off=0,
                logprobs=False,
                notes="extended thinking needs budget_tokens >= 1024 and < max_tokens; smaller "
                "budgets are reasoning written out as text under `max_tokens` instead",
            ),
            BudgetRule(
                "gemini",
                "thinking_config.thinking_budget",
                "reasoning",
                hard=False,
                off=0,
                logprobs=False,
                notes="0 turns thinking off, -1 is dynamic; ranges differ by model and the "
                "budget is reported to be soft: check the thinking tokens afterwards",
            ),
            BudgetRule(
                "vllm",
                "max_tokens",
                "output",
                notes="OpenAI-compatible; logprobs up to 20 by default",
            ),
            BudgetRule(
                "llama.cpp",
                "max_tokens",
                "output",
                notes="OpenAI-compatible (`n_predict` natively); the embedded model uses this",
            ),
            BudgetRule(
                "ollama",
                "max_tokens",
                "output",
                effort=True,
                notes="OpenAI-compatible; logprobs support varies by version",
            ),
        )
    }
)


@dataclass(frozen=True)
class BudgetParams:
    """The request fields for one budget, and how exactly they express it.

    `params` holds dotted field names as nested dicts (``{"thinking": {"type": "enabled",
    "budget_tokens": 1024}, "max_tokens": 1040}``). `cap` is the number of reasoning tokens the
    provider will actually allow (it can exceed `k` where a provider has a floor), and `exact`
    is False whenever `cap` differs from `k` or the budget is soft. `visible_reasoning` is True
    when the reasoning has to be written out as text (the provider's own thinking cannot be
    set as low as `k`). `notes` explains every departure.
    """

    rule: str
    k: int
    params: dict[str, Any]
    cap: int
    exact: bool
    visible_reasoning: bool
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class CapCheck:
    """Did the provider keep to the budget? `overrun` is how many tokens it went past it."""

    k: int
    used: int
    held: bool
    overrun: int
    note: str = ""


def _effort(k: int) -> str:
    for limit, level in EFFORT_THRESHOLDS:
        if k <= limit:
            return level
    return _EFFORT_ABOVE


def _nested(dotted: str, value: Any) -> dict[str, Any]:
    head, _, rest = dotted.partition(".")
    return {head: _nested(rest, value) if rest else value}


def _check_k(k: object, name: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InputError(f"must be a whole number of tokens ≥ 0, got {k!r}", field=name)
    return k


def budget_params(rule: str | BudgetRule, k: int, *, answer_tokens: int = 16) -> BudgetParams:
    """The request fields that cap reasoning at `k` tokens under `rule` (a name or a rule).

    `answer_tokens` is the room left for the visible answer where one cap covers both.
    """
    chosen = _rule(rule)
    k = _check_k(k, "k")
    answer_tokens = _check_k(answer_tokens, "answer_tokens")
    notes: list[str] = []
    if chosen.covers == "output":
        # Reasoning as text under a plain output cap; the answer is a separate short request.
        return BudgetParams(
            chosen.name, k, {chosen.parameter: k} if k > 0 else {}, k, True, True, ()
        )
    if chosen.name == "openai-reasoning":
        params: dict[str, Any] = {"max_completion_tokens": k + answer_tokens}
        params["reasoning_effort"] = _effort(k)
        notes.append(
            f"`reasoning_effort` {params['reasoning_effort']!r} is a level, not a count; "
            f"the hard cap is max_completion_tokens = {k} + {answer_tokens} answer tokens"
        )
        return BudgetParams(chosen.name, k, params, k, False, False, tuple(notes))
    if chosen.name == "anthropic":
        assert chosen.minimum is not None
        if k == 0:
            return BudgetParams(
                chosen.name,
                k,
                {"thinking": {"type": "disabled"}, "max_tokens": max(answer_tokens, 1)},
                0,
                True,
                False,
                (),
            )
        if k < chosen.minimum:
            notes.append(
                f"k = {k} is below Anthropic's minimum thinking budget ({chosen.minimum}): "
                "thinking is off and the reasoning is written out as text under max_tokens"
            )
            return BudgetParams(
                chosen.name,
                k,
                {"thinking": {"type": "disabled"}, "max_tokens": k},
                k,
                True,
                True,
                tuple(notes),
            )
        params = {
            "thinking": {"type": "enabled", "budget_tokens": k},
            "max_tokens": k + max(answer_tokens, 1),
        }
        return BudgetParams(chosen.name, k, params, k, True, False, ())
    # A soft thinking budget (Gemini).
    cap = k
    if chosen.maximum is not None and k > chosen.maximum:
        cap = chosen.maximum
        notes.append(f"k = {k} is above the provider's maximum ({chosen.maximum})")
    if chosen.minimum is not None and 0 < k < chosen.minimum:
        cap = chosen.minimum
        notes.append(f"k = {k} is below the provider's minimum ({chosen.minimum})")
    if not chosen.hard:
        notes.append("the provider treats this budget as a hint: check the usage afterwards")
    params = _nested(chosen.parameter, cap)
    return BudgetParams(chosen.name, k, params, cap, cap == k and chosen.hard, False, tuple(notes))


def check_cap(k: int, used: int, *, rule: str | BudgetRule | None = None) -> CapCheck:
    """Compare the reasoning tokens a call used with its budget `k`."""
    k = _check_k(k, "k")
    used = _check_k(used, "used")
    overrun = max(0, used - k)
    if overrun == 0:
        return CapCheck(k, used, True, 0)
    who = f"{_rule(rule).name} " if rule is not None else ""
    return CapCheck(
        k, used, False, overrun, f"the {who}provider overran the budget: {used} tokens for k = {k}"
    )


def rule_for(backend: Any) -> BudgetRule:
    """The rule that fits a backend: by its `budget_rule` attribute if it has one, else
    OpenAI's two flavours for api.openai.com, llama.cpp for the embedded model, and a plain
    `max_tokens` cap (vLLM-style) for any other OpenAI-compatible endpoint."""
    named = getattr(backend, "budget_rule", None)
    if isinstance(named, str):
        return _rule(named)
    if getattr(backend, "server", None) is not None:
        return BUDGET_RULES["llama.cpp"]
    if getattr(backend, "base_url", "") is None:
        reasoning = getattr(backend, "reasoning", False)
        return BUDGET_RULES["openai-reasoning" if reasoning else "openai"]
    if getattr(backend, "reasoning", False):
        return BUDGET_RULES["openai-reasoning"]
    return BUDGET_RULES["vllm"]


def _rule(rule: str | BudgetRule | None) -> BudgetRule:
    if isinstance(rule, BudgetRule):
        return rule
    if isinstance(rule, str) and rule in BUDGET_RULES:
        return BUDGET_RULES[rule]
    raise InputError(
        f"unknown provider {rule!r}; known: {', '.join(BUDGET_RULES)}", field="provider"
    )
