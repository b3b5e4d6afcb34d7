"""Reasoning protocols: how a model family writes its thinking, and how an answer is forced.

A protocol is the `CoTPrompt` budgeted generation writes around a question:

- ``plain``: cotplan's own wording for models that do not think natively ("Think step by step,
  then give the final answer after "Answer:""); the reasoning is cut at the cap and "Answer:"
  is written after it.
- ``think``: R1 distills, QwQ and cotplan's embedded thinking model: the assistant turn opens
  with `<think>`, the thinking runs until the model writes `</think>` or the cap cuts it, and
  the forced answer closes the thinking first (`</think>`, as DEER's budget forcing for the R1
  family does), then "Answer:". Without the close, a forced answer would land inside a still-open
  `<think>` block, which a reasoning parser then files as thinking, not as the answer.
- ``qwen3``: the same, with the sentence Qwen's own thinking-budget recipe writes at the cut
  ("Considering the limited time by the user, ...", QwenLM/Qwen3 quickstart, read 2026-12-01).
- ``harmony``: gpt-oss (openai/harmony docs/format.md, read 2026-12-01). The assistant turn
  opens with `<|channel|>analysis<|message|>` (the thinking), the model ends a thought with
  `<|end|>` (where the reasoning phase stops) and answers in a new message,
  `<|start|>assistant<|channel|>final<|message|>`, ended by `<|return|>`. At the cap the
  thinking is closed the way the model closes it: `<|end|>` and the final channel's header,
  then "Answer:" (the closer follows the format spec; OpenAI publishes no budget-forcing
  recipe for gpt-oss). Servers with vLLM's `openai_gptoss` parser return the analysis channel
  as `message.reasoning`; where the raw text comes back, `split_reasoning` splits it.
- ``magistral``: Magistral 2507 and later (model card mistralai/Magistral-Small-2507, read
  2026-12-01): the thinking sits between the `[THINK]` and `[/THINK]` special tokens and the
  answer follows `[/THINK]` directly; the cut is closed with `[/THINK]`, then "Answer:".
  Mistral recommends its reasoning system prompt (the one used in RL): pass it as the item's
  system message, cotplan does not add it.

The model registry names each family's protocol (`cotplan.backends.known_models`); callers override
it with `protocol=`.
"""

from __future__ import annotations

from cotplan.backends.base import Backend
from cotplan.backends.known_models import family_of
from cotplan.errors import InputError
from cotplan.generate.prompts import CoTPrompt

__all__ = ["PROTOCOLS", "protocol_for", "resolve_protocol", "split_reasoning"]

_THINK = CoTPrompt(instruction="", lead="<think>\n", close="</think>\n\n", marker="Answer:")

#: Protocols by name.
PROTOCOLS: dict[str, CoTPrompt] = {
    "plain": CoTPrompt(),
    "think": _THINK,
    "qwen3": CoTPrompt(
        instruction="",
        lead="<think>\n",
        close="</think>\n\n",
        marker="Answer:",
        cut_note="\n\nConsidering the limited time by the user, I have to give the solution "
        "based on the thinking directly now.\n",
    ),
    "harmony": CoTPrompt(
        instruction="",
        lead="<|channel|>analysis<|message|>",
        close="<|end|><|start|>assistant<|channel|>final<|message|>",
        marker="Answer:",
        stop="<|end|>",
        break_before_close=False,
    ),
    "magistral": CoTPrompt(
        instruction="",
        lead="[THINK]",
        close="[/THINK]",
        marker="Answer:",
        break_before_close=False,
    ),
}


def protocol_for(model: str | Backend) -> str:
    """The protocol of a backend (its own `protocol` when set) or of a model name, by the model
    registry (``plain`` when unknown)."""
    if isinstance(model, Backend):
        if model.protocol is not None:
            return model.protocol
        model = model.model
    family = family_of(model)
    return family.protocol if family is not None else "plain"


def resolve_protocol(model: str | Backend, protocol: str = "auto") -> tuple[str, CoTPrompt]:
    """The protocol's name and prompt: `protocol` by name, or the one `protocol_for` gives."""
    name = protocol_for(model) if protocol == "auto" else protocol
    if name not in PROTOCOLS:
        known = ", ".join(["auto", *PROTOCOLS])
        raise InputError(f"must be one of {known}, got {protocol!r}", field="protocol")
    return name, PROTOCOLS[name]


def split_reasoning(text: str, protocol: str | CoTPrompt) -> tuple[str, str]:
    """`(thinking, answer)` of raw output written in `protocol`'s format (a name or its
    words), for servers that return it unsplit (no reasoning parser). The opener may be
    missing (a template that wrote it into the prompt); with no closer the output is all
    answer, as a server without a parser would file it ("" thinking)."""
    words = protocol if isinstance(protocol, CoTPrompt) else resolve_protocol("", protocol)[1]
    closer = words.thinking_stop if words.close else ""
    if not closer or closer not in text:
        return "", text
    thinking, _, answer = text.partition(closer)
    thinking = thinking.strip()
    opener = words.lead.strip()
    if opener and thinking.startswith(opener):
        thinking = thinking[len(opener) :].strip()
    # Harmony's answer comes in a message of its own, after its channel header.
    rest = words.close[len(closer) :] if words.close.startswith(closer) else ""
    if rest and rest in answer:
        answer = answer.split(rest, 1)[1]
    for end in ("<|return|>", "</s>"):
        answer = answer.removesuffix(end)
    return thinking, answer.strip()
