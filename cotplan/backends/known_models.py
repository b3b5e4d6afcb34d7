"""What cotplan knows about a model from its name: one table, read by every part.

A model name is matched against the family prefixes below (the longest prefix wins, so
``gpt-5-chat-latest`` is not ``gpt-5``); a ``provider:`` or ``org/`` in front of the name and
letter case are ignored. A family says

- `vendor`: whose model it is (``openai``, ``anthropic``, ``google``, ...);
- `reasoning`: the model reasons in hidden tokens before it answers (OpenAI's o-series and
  gpt-5/gpt-6): it takes `max_completion_tokens` and `reasoning_effort`, and refuses
  `max_tokens`, `temperature` and logprobs;
- `budget_rule`: the name of the rule in `cotplan.backends.budgets.BUDGET_RULES` by which its
  own API takes a reasoning budget (None: whatever the endpoint serving it takes); the rule's
  per-model variants (`cotplan.backends.budgets.resolve_rule`) refine it by the model's name;
- `encoding`: the tiktoken encoding that counts its tokens offline (None: not published, or
  not a tiktoken model);
- `chat_template`: the name of its chat template in `cotplan.generate.budgeted.CHAT_TEMPLATES`,
  for text-completion endpoints that serve it (None: unknown);
- `protocol`: how it writes and closes its thinking, by name in
  `cotplan.generate.protocols.PROTOCOLS`: ``plain`` (cotplan's own "think step by step ...
  Answer:" wording, for models that do not think natively), ``think`` (`<think>` ... `</think>`,
  as R1 distills and Qwen3 write it), ``qwen3`` (the same, with Qwen's own early-stop sentence
  when the cap cuts the thinking), ``harmony`` (gpt-oss: analysis and final channels),
  ``magistral`` (`[THINK]` ... `[/THINK]`).

Readers: `cotplan.backends.tokens` (encodings), `cotplan.backends` (reasoning, budget rules) and
`cotplan.generate.budgeted` (chat templates). The price table is a separate, dated data file
(`cotplan/pricing/prices.csv`); a test checks that every model priced there has a family here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MODEL_FAMILIES",
    "PROTOCOL_NAMES",
    "REGISTERED",
    "ModelFamily",
    "bare_name",
    "builtin_family",
    "family_of",
]

#: The reasoning protocols a family may name (defined in `cotplan.generate.protocols`).
PROTOCOL_NAMES = ("plain", "think", "qwen3", "harmony", "magistral")


@dataclass(frozen=True)
class ModelFamily:
    """The models whose names start with `prefix` (see the module docstring)."""

    prefix: str
    vendor: str
    reasoning: bool = False
    budget_rule: str | None = None
    encoding: str | None = None
    chat_template: str | None = None
    protocol: str = "plain"
    notes: str = ""
    #: The server kind that serves it (a budget rule's provider name, such as
    #: ``llama.cpp-thinking``), for names a team declares (`cotplan.register_model`); None:
    #: whatever the client's address or `provider=` says.
    server: str | None = None


_O200K = "o200k_base"
_CL100K = "cl100k_base"

MODEL_FAMILIES: tuple[ModelFamily, ...] = (
    # OpenAI: reasoning models (hidden reasoning, `max_completion_tokens`, `reasoning_effort`).
    ModelFamily(
        "gpt-6",
        "openai",
        reasoning=True,
        budget_rule="openai-reasoning",
        notes="the price table bills its reasoning inside the completion; its tokenizer is not "
        "published: count with the closest one (gpt-5) and treat the count as an estimate",
    ),
    # The effort levels each of these accepts are the `openai-reasoning` rule's variants.
    ModelFamily("gpt-5", "openai", reasoning=True, budget_rule="openai-reasoning", encoding=_O200K),
    ModelFamily("o1", "openai", reasoning=True, budget_rule="openai-reasoning", encoding=_O200K),
    ModelFamily("o3", "openai", reasoning=True, budget_rule="openai-reasoning", encoding=_O200K),
    ModelFamily("o4", "openai", reasoning=True, budget_rule="openai-reasoning", encoding=_O200K),
    # OpenAI: chat models (reasoning written out as text under `max_tokens`).
    ModelFamily(
        "gpt-5-chat",
        "openai",
        budget_rule="openai",
        encoding=_O200K,
        notes="the chat snapshot of gpt-5 does not reason in hidden tokens",
    ),
    ModelFamily("gpt-4.1", "openai", budget_rule="openai", encoding=_O200K),
    ModelFamily("gpt-4.5", "openai", budget_rule="openai", encoding=_O200K),
    ModelFamily("gpt-4o", "openai", budget_rule="openai", encoding=_O200K),
    ModelFamily("chatgpt-4o", "openai", budget_rule="openai", encoding=_O200K),
    ModelFamily("gpt-4", "openai", budget_rule="openai", encoding=_CL100K),
    ModelFamily("gpt-3.5", "openai", budget_rule="openai", encoding=_CL100K),
    ModelFamily("text-embedding-3", "openai", encoding=_CL100K),
    ModelFamily("text-embedding-ada-002", "openai", encoding=_CL100K),
    # Open weights, served by whatever endpoint runs them (its budget rule applies).
    # gpt-oss writes harmony (openai/harmony docs/format.md); its special tokens are in
    # o200k_harmony, which counts the text as o200k_base does.
    ModelFamily("gpt-oss", "openai", encoding=_O200K, chat_template="harmony", protocol="harmony"),
    ModelFamily("smollm2", "huggingface", chat_template="smollm2"),
    # cotplan's embedded thinking model: SmolLM2 plus a shipped adapter (backends/adapters.py).
    ModelFamily("smollm2-135m-thinking", "huggingface", chat_template="smollm2", protocol="think"),
    ModelFamily("qwen", "qwen", chat_template="chatml"),
    # Qwen3 (hybrid and Thinking-2507) and QwQ write <think>...</think> (QwenLM/Qwen3 docs).
    ModelFamily("qwen3", "qwen", chat_template="chatml", protocol="qwen3"),
    ModelFamily("qwq", "qwen", chat_template="chatml", protocol="think"),
    # R1 and its distills open the turn with <think> (deepseek-ai/DeepSeek-R1 README).
    ModelFamily("deepseek-r1", "deepseek", chat_template="deepseek-r1", protocol="think"),
    # Magistral 2507+ thinks between [THINK] and [/THINK] (model card
    # mistralai/Magistral-Small-2507).
    ModelFamily("magistral", "mistral", chat_template="mistral", protocol="magistral"),
    # Anthropic and Google: their own budget rules; tokenizers not runnable offline.
    ModelFamily(
        "claude",
        "anthropic",
        budget_rule="anthropic",
        notes="the `anthropic` rule's variants pick the form by model: adaptive thinking + "
        "effort for Claude 4.6 and later (the budget form is deprecated on 4.6, refused from "
        "Opus 4.7 and on 5.x), `budget_tokens` (a target, not a limit) before",
    ),
    ModelFamily(
        "gemini",
        "google",
        budget_rule="gemini",
        notes="the `gemini` rule's variants pick the form by model: `thinking_level` for "
        "Gemini 3 and later, `thinking_budget` with per-model ranges for Gemini 2.5",
    ),
)

_BY_LENGTH = sorted(MODEL_FAMILIES, key=lambda f: -len(f.prefix))


def bare_name(model: str) -> str:
    """The model name without a ``provider:`` or ``org/`` in front, in lower case."""
    return model.split(":", 1)[-1].split("/")[-1].lower()


#: Names a team declared (`cotplan.register_model`, a model map), by bare name: they win over
#: the prefixes above, for that exact name only.
REGISTERED: dict[str, ModelFamily] = {}


def builtin_family(model: str) -> ModelFamily | None:
    """The family of `model` from the table above alone (registrations aside)."""
    name = bare_name(model)
    for family in _BY_LENGTH:
        if name.startswith(family.prefix):
            return family
    return None


def family_of(model: str) -> ModelFamily | None:
    """The family of `model`: its registration (`REGISTERED`) if a team declared it, else by
    the longest matching prefix; None when cotplan knows none."""
    name = bare_name(model)
    if name in REGISTERED:
        return REGISTERED[name]
    for family in _BY_LENGTH:
        if name.startswith(family.prefix):
            return family
    return None
