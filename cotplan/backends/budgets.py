"""Where a token budget becomes request fields: the one place, for every provider.

Providers cap reasoning in different ways: a plain output cap (`max_tokens`), a cap on hidden
reasoning plus the visible answer (`max_completion_tokens`, `max_output_tokens`), a coarse
level (`reasoning_effort`, Anthropic's `output_config.effort`, Gemini 3's `thinking_level`),
a thinking budget with a floor (Anthropic's `budget_tokens` >= 1024, a target rather than a
limit), a soft budget with per-model ranges (Gemini 2.5's `thinking_budget`), or a server-side
cap that forces the end of the thinking (vLLM, llama.cpp, SGLang). `BUDGET_RULES` holds what
each one accepts: the hosted APIs in `cotplan.backends.hosted_rules`, the servers in
`cotplan.backends.server_rules`, each rule with the source it follows.

- `rule_for_model(provider, model)`: the API's rule, from the model's family
  (`cotplan.backends.known_models`) or else the provider serving it (`PROVIDER_RULES`);
  `resolve_rule(rule, model)`: the rule's per-model variant (the levels a model accepts, the
  request form it requires);
- `request_fields(provider, model, k)` / `budget_params(rule, k, model=)`: the request fields
  that cap reasoning at k tokens (with a note whenever the provider cannot express k exactly,
  and always where a budget becomes a level); `BudgetParams.max_tokens` is the generation cap
  to pass as `Backend.generate(max_tokens=)` and `BudgetParams.extra` the other fields, passed
  as `generate(extra=)`;
- `cap_fields(rule, max_tokens)`: the field that carries a generation cap, which the
  OpenAI-compatible client sends for every request (so the two agree by construction);
- `rule_for(backend)`: the rule a backend declares (`Backend.budget_rule`);
- `prefill_fields(rule)`: the fields that make the server continue a final assistant message
  (where budgeted CoT forces an answer after a cut thought in chat requests);
- `check_cap`: after the call, whether the provider kept to the budget and whether the answer
  survived the cap (`finish_reason == "length"` with no text: the cap ate the answer);
- `budget_table`: what cotplan sends for a budget, per rule (the table in
  docs/reference/providers.md).

The level thresholds (`EFFORT_THRESHOLDS`) are cotplan's assumption, not a provider's: effort
levels are not token counts, so a hard cap travels with a level wherever the API has one, and
the level only keeps the model from planning reasoning it will not be allowed to finish.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from cotplan.backends.base import Backend
from cotplan.backends.hosted_rules import HOSTED_RULES, BudgetRule, Covers
from cotplan.backends.known_models import bare_name, family_of
from cotplan.backends.server_rules import SERVER_RULES
from cotplan.errors import InputError
from cotplan.validation import BUDGET, TOKENS, validate_params

__all__ = [
    "BUDGET_RULES",
    "EFFORT_LADDER",
    "EFFORT_THRESHOLDS",
    "LENGTH_FINISH_REASONS",
    "PROVIDER_RULES",
    "BudgetParams",
    "BudgetRule",
    "CapCheck",
    "CapKind",
    "Covers",
    "budget_params",
    "budget_table",
    "cap_fields",
    "check_cap",
    "prefill_fields",
    "request_fields",
    "resolve_rule",
    "rule_for",
    "rule_for_model",
]

#: Every level any rule accepts, lowest first: where a model lacks the level a budget asks
#: for, the nearest one it has is sent (the lower one on a tie).
EFFORT_LADDER: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

#: The level for a budget of at most this many reasoning tokens (first match; above the last,
#: `xhigh`). cotplan's assumption (see the module docstring); the notes say so on every request.
EFFORT_THRESHOLDS: tuple[tuple[int, str], ...] = (
    (0, "none"),
    (1024, "low"),
    (8192, "medium"),
    (32768, "high"),
)
_EFFORT_ABOVE = "xhigh"
_OFF_LEVELS = frozenset({"none", "minimal"})

#: How a request holds k: `hard` (the reasoning stops at `cap`: an output cap, or a server
#: that forces the end of the thinking), `soft` (a target the provider may miss), `level` (an
#: effort or thinking level, not a count; `total` may still hold everything), `total` (only
#: one cap over reasoning and answer together).
CapKind = Literal["hard", "soft", "level", "total"]

#: `finish_reason` (or its like) when a call stopped at its token cap: chat completions,
#: Anthropic's `stop_reason`, the Responses API's `incomplete_details.reason`, Gemini's.
LENGTH_FINISH_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})

BUDGET_RULES: Mapping[str, BudgetRule] = MappingProxyType(
    {rule.name: rule for rule in (*HOSTED_RULES, *SERVER_RULES)}
)

#: The rule of each provider, for models whose family has no rule of its own: an
#: OpenAI-compatible server of unknown make takes a plain `max_tokens` cap, as vLLM does.
PROVIDER_RULES: Mapping[str, str] = MappingProxyType(
    {
        "openai": "openai",
        "openai-responses": "openai-responses-output",
        "anthropic": "anthropic",
        "google": "gemini",
        "deepseek": "deepseek",
        "xai": "xai",
        "openrouter": "openrouter",
        "vllm": "vllm",
        "llama.cpp": "llama.cpp",
        "sglang": "sglang",
        "ollama": "ollama",
        "openai-compatible": "vllm",
        # Servers started with their reasoning parser (and SGLang with strict thinking): the
        # server caps the thinking inside one request.
        "vllm-thinking": "vllm-thinking",
        "llama.cpp-thinking": "llama.cpp-thinking",
        "sglang-thinking": "sglang-thinking",
        "nim-thinking": "nim-thinking",
    }
)


@dataclass(frozen=True)
class BudgetParams:
    """The request fields for one budget, and how exactly they express it.

    `params` holds dotted field names as nested dicts (``{"thinking": {"type": "enabled",
    "budget_tokens": 1024}, "max_tokens": 1040}``). `rule` is the rule that built them (the
    model's variant where one applies). `cap` is the number of reasoning tokens the provider
    will actually allow (it can exceed `k` where a provider has a floor), and `exact` is False
    whenever `cap` differs from `k` or the budget is soft or a level. `visible_reasoning` is
    True when the reasoning has to be written out as text (the provider's own thinking cannot
    be set as low as `k`). `notes` explains every departure; print them. `cap_parameter` is
    the rule's field for the generation cap (see `max_tokens` and `extra`). `level` is the
    effort or thinking level a budget became (None: none was sent); `kind` says how k is held
    (`CapKind`); `total` is the hard cap over everything generated in this request (None: no
    such cap); `answer_room` is what that cap leaves once the reasoning has used `cap` (None:
    the answer is asked for in a second request, or nothing caps it).
    """

    rule: str
    k: int
    params: dict[str, Any]
    cap: int
    exact: bool
    visible_reasoning: bool
    notes: tuple[str, ...] = field(default_factory=tuple)
    cap_parameter: str = "max_tokens"
    level: str | None = None
    kind: CapKind = "hard"
    total: int | None = None
    answer_room: int | None = None

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
    """Did the provider keep to the budget, and did the answer survive the cap?

    `overrun` is how many reasoning tokens went past k. `answer_survived` is False when the
    call stopped at its token cap with no answer text: the cap ate the answer, which is to be
    reported, never scored as a wrong answer. `verdict` says which in words.
    """

    k: int
    used: int
    held: bool
    overrun: int
    note: str = ""
    answer_survived: bool = True

    @property
    def verdict(self) -> str:
        """``"cap ate the answer"``, ``"overran"`` or ``"held"``."""
        if not self.answer_survived:
            return "cap ate the answer"
        return "held" if self.held else "overran"


def _nested(dotted: str, value: Any) -> dict[str, Any]:
    head, _, rest = dotted.partition(".")
    return {head: _nested(rest, value) if rest else value}


def _merge(into: dict[str, Any], dotted: str, value: Any) -> None:
    """Set a dotted field inside nested dicts, keeping the fields already there."""
    head, _, rest = dotted.partition(".")
    if not rest:
        into[head] = value
        return
    inner = into.setdefault(head, {})
    _merge(inner, rest, value)


def _fields(pairs: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in pairs:
        _merge(out, dotted, value)
    return out


def _level(levels: tuple[str, ...], k: int) -> str:
    """The level for budget k among `levels`: by `EFFORT_THRESHOLDS`, then the nearest one the
    model accepts (the lower on a tie, so a level never asks for more than the budget meant)."""
    wanted = next((level for limit, level in EFFORT_THRESHOLDS if k <= limit), _EFFORT_ABOVE)
    if wanted in levels:
        return wanted
    rank = EFFORT_LADDER.index
    return min(levels, key=lambda level: (abs(rank(level) - rank(wanted)), rank(level)))


def request_fields(provider: str, model: str, k: int, *, answer_tokens: int = 16) -> BudgetParams:
    """The request fields that cap reasoning at `k` tokens for `model` served by `provider`
    (a key of `PROVIDER_RULES`): `budget_params` under `rule_for_model(provider, model)`, with
    the model's own variant of the rule."""
    rule = rule_for_model(provider, model)
    return budget_params(rule, k, answer_tokens=answer_tokens, model=model)


@validate_params(k=BUDGET, answer_tokens=BUDGET)
def budget_params(
    rule: str | BudgetRule, k: int, *, answer_tokens: int = 16, model: str | None = None
) -> BudgetParams:
    """The request fields that cap reasoning at `k` tokens under `rule` (a name or a rule).

    `answer_tokens` is the room left for the visible answer where one cap covers both. With
    `model`, the rule's variant for that model is used (`resolve_rule`); without it, the rule
    as named (an API's rule is its form for the models it does not list).
    """
    chosen = resolve_rule(rule, model)
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
    if chosen.shape == "output":
        # Reasoning as text under a plain output cap; the answer is a separate short request.
        return BudgetParams(
            chosen.name, k, {chosen.parameter: k} if k > 0 else {}, k, True, True, ()
        )
    if chosen.shape == "level":
        return _level_fields(chosen, k, answer_tokens)
    if chosen.shape == "floor-budget":
        return _floor_fields(chosen, k, answer_tokens)
    if chosen.shape == "total":
        return _total_fields(chosen, k, answer_tokens)
    return _thinking_budget_fields(chosen, k, answer_tokens)


def _switch(chosen: BudgetRule, k: int) -> dict[str, Any]:
    """The fields that turn thinking on, or off at k = 0 where the rule has them."""
    return _fields(chosen.off_fields if k == 0 and chosen.off_fields else chosen.on_fields)


def _level_fields(chosen: BudgetRule, k: int, answer_tokens: int) -> BudgetParams:
    level = _level(chosen.levels, k)
    params = _switch(chosen, k)
    _merge(params, chosen.level_parameter, level)
    notes = [f"`{chosen.level_parameter}` {level!r} is a level, not a token count"]
    if k == 0 and level not in _OFF_LEVELS:
        notes.append(f"this model cannot turn its reasoning off: {level!r} is its lowest level")
    total = None
    if chosen.total_cap:
        total = k + answer_tokens
        params[chosen.cap_parameter] = total
        notes[0] += (
            f"; the hard cap is {chosen.cap_parameter} = {k} + {answer_tokens} answer tokens"
        )
    else:
        notes[0] += "; nothing caps the thinking in tokens: check the usage afterwards"
    room = None if total is None else total - k
    return BudgetParams(
        chosen.name,
        k,
        params=params,
        cap=k,
        exact=False,
        visible_reasoning=False,
        notes=tuple(notes),
        level=level,
        kind="level",
        total=total,
        answer_room=room,
    )


def _floor_fields(chosen: BudgetRule, k: int, answer_tokens: int) -> BudgetParams:
    """Anthropic's budget form: thinking below the floor is off (reasoning written out)."""
    assert chosen.minimum is not None
    soft = "the thinking budget is a target, not a strict limit: check the usage afterwards"
    off = _fields(chosen.off_fields)
    if k == 0:
        total = max(answer_tokens, 1)
        return BudgetParams(
            chosen.name,
            k,
            params={**off, "max_tokens": total},
            cap=0,
            exact=True,
            visible_reasoning=False,
            notes=(),
            total=total,
            answer_room=total,
        )
    if k < chosen.minimum:
        note = (
            f"k = {k} is below Anthropic's minimum thinking budget ({chosen.minimum}): "
            "thinking is off and the reasoning is written out as text under max_tokens"
        )
        return BudgetParams(
            chosen.name,
            k,
            params={**off, "max_tokens": k},
            cap=k,
            exact=True,
            visible_reasoning=True,
            notes=(note,),
            total=k,
        )
    params = _fields(chosen.on_fields)
    _merge(params, chosen.parameter, k)
    total = k + max(answer_tokens, 1)
    params["max_tokens"] = total
    return BudgetParams(
        chosen.name,
        k,
        params=params,
        cap=k,
        exact=False,
        visible_reasoning=False,
        notes=(soft,),
        kind="soft",
        total=total,
        answer_room=total - k,
    )


def _total_fields(chosen: BudgetRule, k: int, answer_tokens: int) -> BudgetParams:
    """One cap over reasoning and answer (DeepSeek): thinking switched on or off."""
    params = _switch(chosen, k)
    total = k + answer_tokens if k > 0 else max(answer_tokens, 1)
    params[chosen.cap_parameter] = total
    note = (
        f"no thinking budget: {chosen.cap_parameter} = {total} covers the reasoning and the "
        "answer together, so a long reasoning can take the answer's room"
    )
    return BudgetParams(
        chosen.name,
        k,
        params=params,
        cap=k,
        exact=False,
        visible_reasoning=False,
        notes=(note,) if k > 0 else (),
        kind="total",
        total=total,
        answer_room=total - k,
    )


def _thinking_budget_fields(chosen: BudgetRule, k: int, answer_tokens: int) -> BudgetParams:
    """A thinking budget clamped to the rule's range, with a cap on everything where the rule
    has one: budget + the end-of-thinking marker's room + the answer's room."""
    notes: list[str] = []
    if k == 0 and chosen.off_fields:
        params = _fields(chosen.off_fields)
        cap = 0
    else:
        cap = k
        if k == 0 and chosen.off is None and chosen.minimum:
            cap = chosen.minimum
            notes.append(
                f"this model cannot turn its thinking off: the smallest budget "
                f"({chosen.minimum}) is sent"
            )
        elif chosen.minimum is not None and 0 < k < chosen.minimum:
            cap = chosen.minimum
            notes.append(f"k = {k} is below the provider's minimum ({chosen.minimum})")
        if chosen.maximum is not None and k > chosen.maximum:
            cap = chosen.maximum
            notes.append(f"k = {k} is above the provider's maximum ({chosen.maximum})")
        params = _switch(chosen, k)
        _merge(params, chosen.parameter, cap)
    if not chosen.hard:
        notes.append(
            "the provider treats this budget as a target, not a limit: check the usage afterwards"
        )
    total = room = None
    if chosen.total_cap:
        # At least one token of room: OpenRouter wants max_tokens above the reasoning budget.
        room = chosen.close_room + max(answer_tokens, 1)
        total = cap + room
        params[chosen.cap_parameter] = total
    return BudgetParams(
        chosen.name,
        k,
        params=params,
        cap=cap,
        exact=cap == k and chosen.hard,
        visible_reasoning=False,
        notes=tuple(notes),
        kind="hard" if chosen.hard else "soft",
        total=total,
        answer_room=room,
    )


@validate_params(k=BUDGET, used=TOKENS)
def check_cap(
    k: int,
    used: int,
    *,
    rule: str | BudgetRule | None = None,
    finish_reason: str | None = None,
    content: str | None = None,
) -> CapCheck:
    """Compare the reasoning tokens a call used with its budget `k`; with `finish_reason`,
    also whether the answer survived the cap.

    `finish_reason` is the call's (or Anthropic's `stop_reason`, the Responses API's
    `incomplete_details.reason`); `content` its answer text, None as the APIs send it when
    there is none. A call that stopped at its cap (`LENGTH_FINISH_REASONS`) with no answer
    text is reported as "the cap ate the answer", never as a wrong answer.
    """
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise InputError(f"must be a string, got {finish_reason!r}", field="finish_reason")
    if content is not None and not isinstance(content, str):
        raise InputError(f"must be a string or None, got {content!r}", field="content")
    chosen = _rule(rule) if rule is not None else None
    who = f"{chosen.name} " if chosen is not None else ""
    overrun = max(0, used - k)
    notes = []
    if overrun:
        notes.append(f"the {who}provider overran the budget: {used} tokens for k = {k}")
        if chosen is not None and not chosen.hard:
            notes.append("its budget is a target, not a limit")
    ate = (
        finish_reason is not None
        and finish_reason.lower() in LENGTH_FINISH_REASONS
        and not (content or "").strip()
    )
    if ate:
        notes.append(
            f"the cap ate the answer: the call stopped at its token cap ({finish_reason!r}) "
            f"with no answer text after {used} reasoning tokens; report it, do not score it"
        )
    return CapCheck(k, used, overrun == 0, overrun, "; ".join(notes), answer_survived=not ate)


def rule_for_model(provider: str, model: str) -> BudgetRule:
    """The rule for `model` served by `provider`: its family's own rule where it has one
    (`cotplan.backends.known_models`: OpenAI's chat and reasoning models, Claude, Gemini), else the
    provider's (`PROVIDER_RULES`). This is the API's rule, the one a backend declares; the
    model's variant of it is `resolve_rule(rule, model)`."""
    if provider not in PROVIDER_RULES:
        raise InputError(
            f"unknown provider {provider!r}; known: {', '.join(PROVIDER_RULES)}",
            field="provider",
        )
    family = family_of(model)
    if provider == "openai-responses":
        # The same models on the Responses API: `reasoning.effort` and `max_output_tokens`.
        reasoning = family is not None and family.reasoning
        return _rule("openai-responses" if reasoning else PROVIDER_RULES[provider])
    if family is not None and family.budget_rule is not None:
        return _rule(family.budget_rule)
    return _rule(PROVIDER_RULES[provider])


def resolve_rule(rule: str | BudgetRule, model: str | None) -> BudgetRule:
    """`rule`'s variant for `model` (the longest matching prefix among `rule.variants`, on the
    bare lower-case name), or `rule` itself when no variant matches or `model` is None."""
    chosen = _rule(rule)
    if model is None or not chosen.variants:
        return chosen
    if not isinstance(model, str):
        raise InputError(f"must be a model name, got {model!r}", field="model")
    name = bare_name(model)
    matches = [(prefix, variant) for prefix, variant in chosen.variants if name.startswith(prefix)]
    if not matches:
        return chosen
    return _rule(max(matches, key=lambda match: len(match[0]))[1])


def prefill_fields(rule: str | BudgetRule) -> dict[str, Any] | None:
    """The request fields that make `rule`'s server continue the last (assistant) message of a
    chat request, or None where it cannot (see `BudgetRule.prefill`)."""
    chosen = _rule(rule)
    return None if chosen.prefill is None else _fields(chosen.prefill)


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


# -- the table in docs/reference/providers.md -----------------------------------------------------


def _flat(params: Mapping[str, Any], prefix: str = "") -> list[str]:
    out = []
    for name, value in params.items():
        if isinstance(value, Mapping):
            out.extend(_flat(value, f"{prefix}{name}."))
        else:
            shown = value if isinstance(value, str) else json.dumps(value)
            out.append(f"`{prefix}{name}: {shown}`")
    return out


def _sends(params: BudgetParams) -> str:
    if not params.params:
        return "nothing (no reasoning asked for)"
    text = ", ".join(_flat(params.params))
    if params.level is not None:
        text += " (a level)"
    elif params.visible_reasoning:
        text += " (reasoning written out)"
    return text


def _how_held(rule: BudgetRule) -> str:
    if rule.shape == "output":
        return "hard (output cap)"
    if rule.shape == "level":
        return "level, not a count" + ("; hard cap on the total" if rule.total_cap else "")
    if rule.shape == "total":
        return "hard cap on the total only"
    kind = "hard" if rule.hard else "soft (a target)"
    return kind + ("; hard cap on the total" if rule.total_cap else "")


@validate_params(k=BUDGET, answer_tokens=BUDGET)
def budget_table(k: int = 2048, *, answer_tokens: int = 16) -> str:
    """What cotplan sends for a budget under every rule, as the Markdown table in
    docs/reference/providers.md (a test keeps the two equal): the fields at k = 0 and at `k`,
    whether the cap is hard or soft, and how the answer is forced out at the cap."""
    lines = [
        f"| rule | API or server | k = 0 | k = {k} | cap | the answer at the cap |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for rule in BUDGET_RULES.values():
        zero = budget_params(rule, 0, answer_tokens=answer_tokens)
        at_k = budget_params(rule, k, answer_tokens=answer_tokens)
        cells = [f"`{rule.name}`", rule.provider, _sends(zero), _sends(at_k), _how_held(rule)]
        lines.append("| " + " | ".join([*cells, rule.forcing]) + " |")
    return "\n".join(lines) + "\n"
