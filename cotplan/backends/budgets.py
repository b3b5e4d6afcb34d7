"""Where a token budget becomes request fields: the one place, for every provider.

Providers cap reasoning in different ways: a plain output cap (`max_tokens`), a cap on hidden
reasoning plus the visible answer (`max_completion_tokens`), a coarse level
(`reasoning_effort`), a thinking budget with a floor (Anthropic's `budget_tokens` >= 1024) or a
soft budget (Gemini's `thinking_budget`). `BUDGET_RULES` holds what each one accepts.

- `rule_for_model(provider, model)`: the rule that applies, from the model's family
  (`cotplan.model_registry`) or else the provider serving it (`PROVIDER_RULES`);
- `request_fields(provider, model, k)` / `budget_params(rule, k)`: the request fields that cap
  reasoning at k tokens (with a note whenever the provider cannot express k exactly);
  `BudgetParams.max_tokens` is the generation cap to pass as `Backend.generate(max_tokens=)`
  and `BudgetParams.extra` the other fields, passed as `generate(extra=)`;
- `cap_fields(rule, max_tokens)`: the field that carries a generation cap, which the
  OpenAI-compatible client sends for every request (so the two agree by construction);
- `rule_for(backend)`: the rule a backend declares (`Backend.budget_rule`);
- `check_cap`: after the call, whether the provider kept to the budget.

The `reasoning_effort` thresholds are cotplan's assumption, not a provider's: effort levels are
not token counts, so the hard limit always travels with them (`max_completion_tokens`), and the
level only keeps the model from planning reasoning it will not be allowed to finish.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.model_registry import family_of

__all__ = [
    "BUDGET_RULES",
    "EFFORT_THRESHOLDS",
    "PROVIDER_RULES",
    "BudgetParams",
    "BudgetRule",
    "CapCheck",
    "budget_params",
    "cap_fields",
    "check_cap",
    "request_fields",
    "rule_for",
    "rule_for_model",
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
    `cap_parameter` is the chat request field that caps all generated tokens.
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
    cap_parameter: str = "max_tokens"


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
                notes="o-series / gpt-5 / gpt-6 reasoning models refuse `max_tokens` and "
                "logprobs; the cap covers hidden reasoning and the visible answer",
                cap_parameter="max_completion_tokens",
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

#: The rule of each provider, for models whose family has no rule of its own: an
#: OpenAI-compatible server of unknown make takes a plain `max_tokens` cap, as vLLM does.
PROVIDER_RULES: Mapping[str, str] = MappingProxyType(
    {
        "openai": "openai",
        "anthropic": "anthropic",
        "google": "gemini",
        "vllm": "vllm",
        "llama.cpp": "llama.cpp",
        "ollama": "ollama",
        "openai-compatible": "vllm",
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
    set as low as `k`). `notes` explains every departure. `cap_parameter` is the rule's
    field for the generation cap (see `max_tokens` and `extra`).
    """

    rule: str
    k: int
    params: dict[str, Any]
    cap: int
    exact: bool
    visible_reasoning: bool
    notes: tuple[str, ...] = field(default_factory=tuple)
    cap_parameter: str = "max_tokens"

    @property
    def max_tokens(self) -> int | None:
        """The generation cap among the fields (None when they set none): what to pass as
        `Backend.generate(max_tokens=...)`, which sends it back under `cap_parameter`."""
        value = self.params.get(self.cap_parameter)
        return int(value) if value is not None else None

    @property
    def extra(self) -> dict[str, Any]:
        """Every field but the generation cap: what to pass as `Backend.generate(extra=...)`."""
        return {name: value for name, value in self.params.items() if name != self.cap_parameter}


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


def request_fields(provider: str, model: str, k: int, *, answer_tokens: int = 16) -> BudgetParams:
    """The request fields that cap reasoning at `k` tokens for `model` served by `provider`
    (a key of `PROVIDER_RULES`): `budget_params` under `rule_for_model(provider, model)`."""
    return budget_params(rule_for_model(provider, model), k, answer_tokens=answer_tokens)


def budget_params(rule: str | BudgetRule, k: int, *, answer_tokens: int = 16) -> BudgetParams:
    """The request fields that cap reasoning at `k` tokens under `rule` (a name or a rule).

    `answer_tokens` is the room left for the visible answer where one cap covers both.
    """
    chosen = _rule(rule)
    k = _check_k(k, "k")
    answer_tokens = _check_k(answer_tokens, "answer_tokens")
    fields = _budget_fields(chosen, k, answer_tokens)
    return replace(fields, cap_parameter=chosen.cap_parameter)


def cap_fields(
    rule: str | BudgetRule, max_tokens: int, *, operation: str = "chat"
) -> dict[str, int]:
    """The request field that caps all generated tokens at `max_tokens` under `rule`.

    The legacy text `completions` endpoint knows only `max_tokens`; chat requests use the
    rule's `cap_parameter` (`max_completion_tokens` for OpenAI's reasoning models).
    """
    if operation == "completions":
        return {"max_tokens": max_tokens}
    return {_rule(rule).cap_parameter: max_tokens}


def _budget_fields(chosen: BudgetRule, k: int, answer_tokens: int) -> BudgetParams:
    notes: list[str] = []
    if chosen.covers == "output":
        # Reasoning as text under a plain output cap; the answer is a separate short request.
        return BudgetParams(
            chosen.name, k, {chosen.parameter: k} if k > 0 else {}, k, True, True, ()
        )
    if chosen.covers == "reasoning+output":
        params: dict[str, Any] = {chosen.cap_parameter: k + answer_tokens}
        if chosen.effort:
            params["reasoning_effort"] = _effort(k)
            notes.append(
                f"`reasoning_effort` {params['reasoning_effort']!r} is a level, not a count; "
                f"the hard cap is {chosen.cap_parameter} = {k} + {answer_tokens} answer tokens"
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


def rule_for_model(provider: str, model: str) -> BudgetRule:
    """The rule for `model` served by `provider`: its family's own rule where it has one
    (`cotplan.model_registry`: OpenAI's chat and reasoning models, Claude, Gemini), else the
    provider's (`PROVIDER_RULES`)."""
    if provider not in PROVIDER_RULES:
        raise InputError(
            f"unknown provider {provider!r}; known: {', '.join(PROVIDER_RULES)}",
            field="provider",
        )
    family = family_of(model)
    if family is not None and family.budget_rule is not None:
        return _rule(family.budget_rule)
    return _rule(PROVIDER_RULES[provider])


def rule_for(backend: Backend) -> BudgetRule:
    """The rule a backend declares (`Backend.budget_rule`)."""
    return _rule(backend.budget_rule)


def _rule(rule: str | BudgetRule | None) -> BudgetRule:
    if isinstance(rule, BudgetRule):
        return rule
    if isinstance(rule, str) and rule in BUDGET_RULES:
        return BUDGET_RULES[rule]
    raise InputError(
        f"unknown provider {rule!r}; known: {', '.join(BUDGET_RULES)}", field="provider"
    )
