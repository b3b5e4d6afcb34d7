"""The words and chat templates budgeted generation writes around a question.

`CoTPrompt` holds the wording (instruction, the lead that opens the assistant turn, the answer
marker, and for native thinkers the text that closes the thinking); `ChatTemplate` writes a
conversation out for text-completion endpoints. `cotplan.generate.protocols` names one
`CoTPrompt` per way a model family thinks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cotplan.backends.known_models import family_of
from cotplan.messages import Message

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
    stop: str = ""
    break_before_close: bool = True

    @property
    def thinking_stop(self) -> str:
        """The string at which the model itself ends its thinking (the reasoning phase's stop)."""
        return self.stop or self.close.strip() or self.marker


DEFAULT_PROMPT = CoTPrompt()


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template written out, for text-completion endpoints.

    Every turn is `turn_open` (with its role) + content + `turn_close` (ChatML-style), unless
    `turns` gives the role a format of its own (``{content}`` in it); the conversation ends with
    `assistant_open` (default: `turn_open` for the assistant), ready to be continued. `end` is
    what the model writes when its turn is over.
    """

    name: str
    default_system: str | None
    turn_open: str = "<|im_start|>{role}\n"
    turn_close: str = "<|im_end|>\n"
    end: str = "<|im_end|>"
    turns: tuple[tuple[str, str], ...] = ()
    assistant_open: str | None = None

    def render(self, messages: Sequence[Message]) -> str:
        """The conversation, ending with an open assistant turn (ready to be continued)."""
        parts = []
        if self.default_system is not None and not any(m["role"] == "system" for m in messages):
            parts.append(self._turn("system", self.default_system))
        parts.extend(self._turn(m["role"], m["content"]) for m in messages)
        opener = self.assistant_open
        parts.append(self.turn_open.format(role="assistant") if opener is None else opener)
        return "".join(parts)

    def _turn(self, role: str, content: str) -> str:
        own = dict(self.turns).get(role)
        if own is not None:
            return own.replace("{content}", content)
        return self.turn_open.format(role=role) + content + self.turn_close


#: Templates by name. SmolLM2's adds its default system message when none is given, exactly as
#: the server's own chat endpoint does (checked: the same greedy text either way).
CHAT_TEMPLATES: dict[str, ChatTemplate] = {
    "smollm2": ChatTemplate(
        "smollm2", "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    ),
    "chatml": ChatTemplate("chatml", None),
    # gpt-oss (openai/harmony docs/format.md, read 2026-12-01): `<|start|>{role}<|message|>
    # {content}<|end|>` with no line breaks between messages, and the assistant turn opened
    # with `<|start|>assistant` alone, since the model writes its channel first. The system
    # message is harmony's own (identity, knowledge cutoff, reasoning level, channels) without
    # its `Current date:` line, so a prompt does not change with the calendar (a caller's own
    # system message replaces it, as with the other templates).
    "harmony": ChatTemplate(
        "harmony",
        "You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06"
        "\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must "
        "be included for every message.",
        turn_open="<|start|>{role}<|message|>",
        turn_close="<|end|>",
        end="<|return|>",
        assistant_open="<|start|>assistant",
    ),
    # DeepSeek-R1 and its distills (the chat template in deepseek-ai/DeepSeek-R1's
    # tokenizer_config.json; the README asks for no system prompt and for the turn to open
    # with `<think>\n`, which the `think` protocol writes; read 2026-12-01). The BOS
    # `<｜begin▁of▁sentence｜>` is the server's to add.
    "deepseek-r1": ChatTemplate(
        "deepseek-r1",
        None,
        turn_open="",
        turn_close="",
        end="<｜end▁of▁sentence｜>",
        turns=(
            ("system", "{content}"),
            ("user", "<｜User｜>{content}"),
            ("assistant", "<｜Assistant｜>{content}<｜end▁of▁sentence｜>"),
        ),
        assistant_open="<｜Assistant｜>",
    ),
    # Magistral and Mistral's other instruct models (mistral-common's v7/v11 tokenizers, the
    # templates shipped with mistralai/Magistral-Small-2507 and its GGUF builds, read
    # 2026-12-01): `[SYSTEM_PROMPT]...[/SYSTEM_PROMPT][INST]...[/INST]`, the reply follows
    # directly and ends with `</s>`. The BOS `<s>` is the server's to add.
    "mistral": ChatTemplate(
        "mistral",
        None,
        turn_open="",
        turn_close="</s>",
        end="</s>",
        turns=(
            ("system", "[SYSTEM_PROMPT]{content}[/SYSTEM_PROMPT]"),
            ("user", "[INST]{content}[/INST]"),
        ),
        assistant_open="",
    ),
}


def template_for(model: str) -> ChatTemplate | None:
    """The chat template of a model's family (`cotplan.backends.known_models`); None when
    unknown."""
    family = family_of(model)
    if family is None or family.chat_template is None:
        return None
    return CHAT_TEMPLATES[family.chat_template]
