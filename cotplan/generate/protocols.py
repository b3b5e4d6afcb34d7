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

The model registry names each family's protocol (`cotplan.model_registry`); callers override it
with `protocol=`.
"""

from __future__ import annotations

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.prompts import CoTPrompt
from cotplan.model_registry import family_of

__all__ = ["PROTOCOLS", "protocol_for", "resolve_protocol"]

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
