"""What each hosted API takes as a reasoning budget: one `BudgetRule` per request form.

The rules are data; `cotplan.backends.budgets` turns a budget k into request fields with them.
Each rule names the source it follows and the day it was read (2026-12-01); re-check a source
before relying on a detail that may have moved (see ../shared/reasoning-protocols.md).

A rule is one request form. Where an API takes different forms by model (Claude 4.6+ refuses
``budget_tokens``; OpenAI's models accept different effort levels; Gemini 2.5 takes a budget
with per-model ranges, Gemini 3 a level), the API's rule lists `variants`: (model-name prefix,
rule name) pairs, the longest matching prefix winning. `cotplan.backends.known_models` names the
API's rule for a family; the variant is picked from the model's name when the request is built.

Effort and thinking levels are not token counts: a rule with `levels` says so in the notes of
every request it builds, and keeps a hard cap on all generated tokens where the API has one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = ["HOSTED_RULES", "BudgetRule", "Covers", "Shape"]

#: What a rule's cap bounds: the visible text (`output`, reasoning written out as text), hidden
#: reasoning plus the visible answer (`reasoning+output`), or the reasoning alone (`reasoning`).
Covers = Literal["output", "reasoning+output", "reasoning"]

#: How k becomes fields: `output` (a plain cap on written-out reasoning; the answer comes in a
#: second request), `level` (an effort or thinking level, plus a cap on everything where
#: `total_cap`), `budget` (a thinking budget clamped to `minimum`..`maximum`, plus a cap on
#: everything where `total_cap`), `floor-budget` (Anthropic's budget form: a floor below which
#: thinking is off and the reasoning is written out), `total` (only a cap on everything).
Shape = Literal["output", "level", "budget", "floor-budget", "total"]


@dataclass(frozen=True)
class BudgetRule:
    """How one API (or API flavour) takes a reasoning budget.

    `parameter` is the request field that carries k and `covers` what it bounds; `shape` says
    how k becomes fields (see `Shape`). `hard` is False where the API treats the budget as a
    target (check the usage afterwards). `answer_room` is True when one cap covers reasoning and
    answer, so the request must leave room for the answer. `minimum`/`maximum` bound a thinking
    budget (None: no bound); `off` is the budget value that turns thinking off, if any.
    `effort` is True when the API also takes an effort level; `levels` are the levels it
    accepts (lowest first) and `level_parameter` the field that carries one. `on_fields` /
    `off_fields` are sent (dotted names) when thinking is wanted / not wanted. `total_cap`:
    the rule also sends `cap_parameter`, the field that caps all generated tokens, at k plus
    the answer's room. `logprobs` says whether answer probabilities exist. `provider` and
    `forcing` (how the answer is forced out at the cap) are printed in docs/reference/providers.md;
    `source` is where the rule was read, and when. `variants` are the per-model rules within
    this API (see the module docstring). `close_room` is kept under the overall cap for the
    end-of-thinking marker a server writes when it ends the thinking at the budget. `prefill`
    holds the request fields that make the server continue a final assistant message instead
    of starting a new turn (None: it cannot, and a forced answer is asked for in a user turn).
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
    shape: Shape = "output"
    levels: tuple[str, ...] = ()
    level_parameter: str = ""
    on_fields: tuple[tuple[str, Any], ...] = ()
    off_fields: tuple[tuple[str, Any], ...] = ()
    total_cap: bool = False
    provider: str = ""
    forcing: str = ""
    source: str = ""
    variants: tuple[tuple[str, str], ...] = ()
    close_room: int = 0
    prefill: tuple[tuple[str, Any], ...] | None = None


_READ = "read 2026-12-01"

# -- OpenAI ----------------------------------------------------------------------------------
# Effort levels by model, from the `reasoning_effort` description in openai-python's types
# (ReasoningEffort; the same text on learn.microsoft.com's ReasoningEffort page), read
# 2026-12-01: gpt-5 takes minimal..high; "gpt-5.1 ... supports none, low, medium and high";
# "all models before gpt-5.1 ... do not support none"; "gpt-5-pro ... only supports high";
# "xhigh is supported for all models after gpt-5.1-codex-max". The o-series takes low, medium
# and high (docs.rs openai-tools ReasoningEffort, model support table). gpt-6 is not on those
# pages: it is taken to accept what the newest gpt-5 models accept (none..xhigh).
_GPT5 = ("minimal", "low", "medium", "high")
_OPENAI_LEVELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # (rule-name suffix, model prefixes joined by "|", levels)
    ("", "", _GPT5),  # gpt-5, and reasoning models not listed below
    ("-o", "o1|o3|o4", ("low", "medium", "high")),
    ("-pro", "gpt-5-pro", ("high",)),
    ("-none", "gpt-5.1", ("none", "low", "medium", "high")),
    ("-xhigh", "gpt-5.2|gpt-5.3|gpt-5.4|gpt-5.5|gpt-6", ("none", "low", "medium", "high", "xhigh")),
)
_OPENAI_CHAT_SOURCE = (
    "openai-python types: ChatCompletion `max_completion_tokens` (reasoning + visible output), "
    f"`reasoning_effort` levels by model; {_READ}"
)
_OPENAI_RESPONSES_SOURCE = (
    "openai-python types: Responses `max_output_tokens` (reasoning + visible output), "
    f"`reasoning.effort`, a cut shows as `incomplete_details.reason`; {_READ}"
)


def _openai_variants(base: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (prefix, base + suffix)
        for suffix, prefixes, _ in _OPENAI_LEVELS
        if prefixes
        for prefix in prefixes.split("|")
    )


def _openai_rules() -> list[BudgetRule]:
    chat = [
        BudgetRule(
            "openai",
            "max_tokens",
            "output",
            notes="OpenAI chat models: reasoning is written out as text and capped as output",
            provider="OpenAI chat completions, chat models",
            forcing="two-phase: cotplan cuts the written reasoning at k, then asks for the "
            "answer in a second request",
            source=f"openai-python types: ChatCompletion `max_tokens`; {_READ}",
        )
    ]
    responses = [
        BudgetRule(
            "openai-responses-output",
            "max_output_tokens",
            "output",
            notes="OpenAI chat models on the Responses API: reasoning is written out as text "
            "and capped as output",
            cap_parameter="max_output_tokens",
            logprobs=False,
            provider="OpenAI Responses API, chat models",
            forcing="two-phase: cotplan cuts the written reasoning at k, then asks for the "
            "answer in a second request",
            source=_OPENAI_RESPONSES_SOURCE,
        )
    ]
    for suffix, prefixes, levels in _OPENAI_LEVELS:
        models = prefixes.replace("|", ", ") if prefixes else "gpt-5 and others"
        chat.append(
            BudgetRule(
                "openai-reasoning" + suffix,
                "max_completion_tokens",
                "reasoning+output",
                answer_room=True,
                effort=True,
                logprobs=False,
                notes="o-series / gpt-5 / gpt-6 reasoning models refuse `max_tokens` and "
                "logprobs; the cap covers hidden reasoning and the visible answer",
                cap_parameter="max_completion_tokens",
                shape="level",
                levels=levels,
                level_parameter="reasoning_effort",
                total_cap=True,
                provider=f"OpenAI chat completions ({models})",
                forcing="none in the request: a cut inside the hidden reasoning leaves no "
                "answer, and cotplan asks once more for the answer alone",
                source=_OPENAI_CHAT_SOURCE,
                variants=_openai_variants("openai-reasoning") if not suffix else (),
            )
        )
        responses.append(
            BudgetRule(
                "openai-responses" + suffix,
                "max_output_tokens",
                "reasoning+output",
                answer_room=True,
                effort=True,
                logprobs=False,
                notes="the Responses API: `reasoning.effort` and `max_output_tokens`; usage "
                "reports `output_tokens_details.reasoning_tokens`",
                cap_parameter="max_output_tokens",
                shape="level",
                levels=levels,
                level_parameter="reasoning.effort",
                total_cap=True,
                provider=f"OpenAI Responses API ({models})",
                forcing="none in the request: a cut shows as `incomplete_details.reason == "
                '"max_output_tokens"`; cotplan asks once more for the answer alone',
                source=_OPENAI_RESPONSES_SOURCE,
                variants=_openai_variants("openai-responses") if not suffix else (),
            )
        )
    return [*chat, *responses]


# -- Anthropic -------------------------------------------------------------------------------
# Which Claude models refuse `thinking: {type: enabled, budget_tokens}`: Bedrock's adaptive
# thinking page (docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking)
# says Opus 4.7 takes adaptive thinking only and the budget form is deprecated on Opus 4.6 and
# Sonnet 4.6; platform.claude.com's Sonnet 5 overview says manual extended thinking returns 400
# there; the Sonnet 5.5 / Opus 5.5 / Fable 5.1 overviews list adaptive thinking only. All read
# 2026-12-01. Older models (Claude 3.7, 4, 4.1, 4.5, Haiku 4.5) take only the budget form.
_ADAPTIVE_PREFIXES = (
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-opus-4-7",
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-haiku-5",
    "claude-fable",
    "claude-mythos",
)

_ANTHROPIC = (
    BudgetRule(
        "anthropic",
        "thinking.budget_tokens",
        "reasoning",
        hard=False,
        answer_room=True,
        minimum=1024,
        off=0,
        logprobs=False,
        notes="extended thinking needs budget_tokens >= 1024 and < max_tokens, and the "
        "budget is a target, not a strict limit; smaller budgets are reasoning written out "
        "as text under `max_tokens` instead",
        shape="floor-budget",
        on_fields=(("thinking.type", "enabled"),),
        off_fields=(("thinking.type", "disabled"),),
        total_cap=True,
        provider="Anthropic Messages, budget form (Claude 3.7 to 4.5)",
        forcing="max_tokens = budget + the answer's room; the budget is soft, so a long "
        "thinking can still eat the answer (reported after the call)",
        source="Anthropic extended-thinking docs (docs.anthropic.com/.../extended-thinking): "
        f"`budget_tokens` >= 1024 and < `max_tokens`, 'a target rather than a strict limit'; "
        f"{_READ}",
        variants=tuple((prefix, "anthropic-adaptive") for prefix in _ADAPTIVE_PREFIXES),
    ),
    BudgetRule(
        "anthropic-adaptive",
        "max_tokens",
        "reasoning+output",
        answer_room=True,
        effort=True,
        logprobs=False,
        notes="adaptive thinking: the model decides how much to think; `output_config.effort` "
        "steers it and `max_tokens`, over thinking and answer, is the only hard cap",
        shape="level",
        # low/medium/high are taken by every adaptive model; xhigh and max only by some.
        levels=("low", "medium", "high"),
        level_parameter="output_config.effort",
        on_fields=(("thinking.type", "adaptive"),),
        total_cap=True,
        provider="Anthropic Messages, adaptive (Claude 4.6+, 5.x)",
        forcing="none in the request: a cut inside the thinking leaves no answer, and cotplan "
        "asks once more for the answer alone",
        source="Bedrock adaptive-thinking docs (adaptive + effort; budget form refused on Opus "
        f"4.7, deprecated on 4.6); platform.claude.com Sonnet 5 overview; {_READ}",
    ),
)

# -- Google ----------------------------------------------------------------------------------
# Gemini 3 takes `thinking_level` (Gemini 3 Pro: low, high; Gemini 3 Flash: minimal, low,
# medium, high); Gemini 2.5 takes `thinking_budget` (2.5 Pro 128..32768, cannot turn thinking
# off; 2.5 Flash 0..24576; 2.5 Flash-Lite 0 or 512..24576; -1 dynamic); setting both is a 400
# error. Read 2026-12-01 in second-hand copies of ai.google.dev/gemini-api/docs/gemini-3 and
# .../thinking (hexdocs gemini_ex ThinkingConfig, docs.rs adk-rust ThinkingConfig). Gemini 4
# is not on those pages: it is taken to accept what Gemini 3 Pro accepts (low, high).
_GEMINI_SOURCE = (
    "ai.google.dev/gemini-api/docs/thinking and .../gemini-3, read in second-hand copies "
    f"(hexdocs gemini_ex ThinkingConfig, docs.rs adk-rust ThinkingConfig); {_READ}"
)
_GEMINI_FORCING = (
    "not needed: no cap covers the answer (the thinking budget or level bounds the thinking alone)"
)


def _gemini_budget(name: str, minimum: int, maximum: int, off: int | None) -> BudgetRule:
    return BudgetRule(
        name,
        "thinking_config.thinking_budget",
        "reasoning",
        hard=False,
        minimum=minimum,
        maximum=maximum,
        off=off,
        logprobs=False,
        notes=f"{minimum}..{maximum} thinking tokens"
        + (", 0 turns thinking off" if off is not None else ", thinking cannot be turned off")
        + "; the budget may be over- or undershot: check the thinking tokens afterwards",
        shape="budget",
        provider=f"Gemini API, {name} (thinking budget)",
        forcing=_GEMINI_FORCING,
        source=_GEMINI_SOURCE,
    )


def _gemini_level(name: str, levels: tuple[str, ...], who: str) -> BudgetRule:
    return BudgetRule(
        name,
        "thinking_config.thinking_level",
        "reasoning",
        hard=False,
        effort=True,
        logprobs=False,
        notes="a thinking level, never together with `thinking_budget` (a 400 error)",
        shape="level",
        levels=levels,
        level_parameter="thinking_config.thinking_level",
        provider=f"Gemini API, {who} (thinking level)",
        forcing=_GEMINI_FORCING,
        source=_GEMINI_SOURCE,
        variants=_GEMINI_VARIANTS if name == "gemini" else (),
    )


_GEMINI_VARIANTS = (
    ("gemini-2.5-pro", "gemini-2.5-pro"),
    ("gemini-2.5-flash", "gemini-2.5-flash"),
    ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
    ("gemini-3-flash", "gemini-flash"),
    ("gemini-3.1-flash", "gemini-flash"),
    ("gemini-3.5-flash", "gemini-flash"),
)

_GOOGLE = (
    _gemini_level("gemini", ("low", "high"), "Gemini 3 Pro and later"),
    _gemini_level("gemini-flash", ("minimal", "low", "medium", "high"), "Gemini 3.x Flash"),
    _gemini_budget("gemini-2.5-pro", 128, 32768, None),
    _gemini_budget("gemini-2.5-flash", 0, 24576, 0),
    _gemini_budget("gemini-2.5-flash-lite", 512, 24576, 0),
)

# -- DeepSeek, xAI, OpenRouter ---------------------------------------------------------------
_OTHERS = (
    BudgetRule(
        "deepseek",
        "max_tokens",
        "reasoning+output",
        answer_room=True,
        logprobs=False,
        notes="no thinking budget: `max_tokens` includes the chain of thought, so it is the "
        "only cap; thinking is switched by `thinking.type`",
        shape="total",
        on_fields=(("thinking.type", "enabled"),),
        off_fields=(("thinking.type", "disabled"),),
        total_cap=True,
        provider="DeepSeek API",
        forcing="none in the request: a cut inside the chain of thought leaves no answer, and "
        "cotplan asks once more for the answer alone",
        source=f"api-docs.deepseek.com thinking_mode (`max_tokens` includes the CoT); {_READ}",
    ),
    BudgetRule(
        "xai",
        "max_completion_tokens",
        "reasoning+output",
        answer_room=True,
        effort=True,
        logprobs=False,
        notes="`reasoning_effort` by model (some cannot turn reasoning off); reasoning tokens "
        "are reported apart from `completion_tokens`; the text is encrypted",
        cap_parameter="max_completion_tokens",
        shape="level",
        levels=("low", "medium", "high"),
        level_parameter="reasoning_effort",
        total_cap=True,
        provider="xAI (Grok 4.5 and later)",
        forcing="none in the request: a cut inside the reasoning leaves no answer, and cotplan "
        "asks once more for the answer alone",
        source="docs.x.ai reasoning (effort levels; grok-3-mini low/high; grok-4.3 adds none); "
        f"{_READ}",
        variants=(("grok-3-mini", "xai-mini"), ("grok-4.3", "xai-none")),
    ),
    BudgetRule(
        "openrouter",
        "reasoning.max_tokens",
        "reasoning",
        hard=False,
        answer_room=True,
        logprobs=False,
        notes="`reasoning: {max_tokens}` or `{effort}`, not both; the budget is passed on to "
        "the model's provider (a target for Claude and Gemini, a level for OpenAI models)",
        shape="budget",
        off_fields=(("reasoning.effort", "none"),),
        total_cap=True,
        provider="OpenRouter",
        forcing="max_tokens = budget + the answer's room (OpenRouter: max_tokens must exceed "
        "the reasoning budget); the budget is soft, so a cut is reported after the call",
        source=f"openrouter.ai/docs/use-cases/reasoning-tokens; {_READ}",
    ),
)


def _xai_variant(name: str, levels: tuple[str, ...], who: str) -> BudgetRule:
    """One of xAI's per-model rules: the same request form, the levels that model takes."""
    base = next(rule for rule in _OTHERS if rule.name == "xai")
    return replace(base, name=name, levels=levels, provider=f"xAI ({who})", variants=())


#: Every hosted rule, in the order docs/reference/providers.md lists them.
HOSTED_RULES: tuple[BudgetRule, ...] = (
    *_openai_rules(),
    *_ANTHROPIC,
    *_GOOGLE,
    *_OTHERS[:2],
    _xai_variant("xai-mini", ("low", "high"), "grok-3-mini"),
    _xai_variant("xai-none", ("none", "low", "medium", "high"), "grok-4.3"),
    *_OTHERS[2:],
)
