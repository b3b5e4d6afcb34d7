"""The words and chat templates budgeted generation writes around a question.

`CoTPrompt` holds the wording (instruction, the lead that opens the assistant turn, the answer
marker, and for native thinkers the text that closes the thinking); `ChatTemplate` writes a
conversation out for text-completion endpoints. `cotplan.generate.protocols` names one
`CoTPrompt` per way a model family thinks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cotplan.messages import Message
from cotplan.model_registry import family_of

__all__ = ["CHAT_TEMPLATES", "DEFAULT_PROMPT", "ChatTemplate", "CoTPrompt", "template_for"]


@dataclass(frozen=True)
class CoTPrompt:
    """The words around the question.

    `instruction` follows the question in the user turn (the same at every budget, so budgets
    differ only in the cap). `lead` starts the assistant turn when it reasons (template mode).
    `marker` introduces the final answer. `direct` replaces `instruction` when a chat-only API
    must answer with no reasoning (k = 0), and `force` is the second user turn that asks a
    chat-only API for the answer after its reasoning was cut.

    Native thinkers (`cotplan.generate.protocols`): `close` ends the thinking before the marker
    (`</think>` and the blank line after it) and is also where the reasoning phase stops, since
    the model closing its thinking is how it says it has finished; `cut_note` is written before
    `close` only when the cap cut the thinking (Qwen's early-stop sentence).
    """

    instruction: str = 'Think step by step, then give the final answer after "Answer:".'
    lead: str = ""
    marker: str = "Answer:"
    direct: str = 'Give only the final answer, after "Answer:", with no explanation.'
    force: str = 'Stop reasoning now. Give only the final answer, after "Answer:".'
    close: str = ""
    cut_note: str = ""


DEFAULT_PROMPT = CoTPrompt()


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template written out, for text-completion endpoints (ChatML-style turns)."""

    name: str
    default_system: str | None
    turn_open: str = "<|im_start|>{role}\n"
    turn_close: str = "<|im_end|>\n"
    end: str = "<|im_end|>"

    def render(self, messages: Sequence[Message]) -> str:
        """The conversation, ending with an open assistant turn (ready to be continued)."""
        parts = []
        if self.default_system is not None and not any(m["role"] == "system" for m in messages):
            parts.append(self._turn("system", self.default_system))
        parts.extend(self._turn(m["role"], m["content"]) for m in messages)
        parts.append(self.turn_open.format(role="assistant"))
        return "".join(parts)

    def _turn(self, role: str, content: str) -> str:
        return self.turn_open.format(role=role) + content + self.turn_close


#: Templates by name. SmolLM2's adds its default system message when none is given, exactly as
#: the server's own chat endpoint does (checked: the same greedy text either way).
CHAT_TEMPLATES: dict[str, ChatTemplate] = {
    "smollm2": ChatTemplate(
        "smollm2", "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    ),
    "chatml": ChatTemplate("chatml", None),
}


def template_for(model: str) -> ChatTemplate | None:
    """The chat template of a model's family (`cotplan.model_registry`); None when unknown."""
    family = family_of(model)
    if family is None or family.chat_template is None:
        return None
    return CHAT_TEMPLATES[family.chat_template]
