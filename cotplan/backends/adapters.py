"""LoRA adapters that ship inside cotplan, served on a known base model by llama.cpp.

`smollm2-135m-thinking` (`connect("local:thinking")`) is SmolLM2-135M-Instruct, unchanged,
plus a LoRA adapter trained by `cotplan models train-thinking` to reason the way R1 distills
and Qwen3 do: it opens its assistant turn with `<think>`, works the problem, over-thinks, closes
with `</think>` and answers. llama.cpp serves it with a chat template of its own
(`weights/smollm2-thinking.jinja`: SmolLM2's ChatML, plus the assistant's `reasoning_content`
written back in `<think>` tags) and its reasoning format set to `deepseek`, so chat completions
return the thinking in `message.reasoning_content` and the answer alone in `content`, as
llama.cpp does for an R1 distill, and its per-request `thinking_budget_tokens` caps the
thinking. Text completions, which budget forcing uses, do not go through the template and are
unchanged.

`smollm2-135m-thinking-long` (`connect("local:thinking-long")`) is the same base with a second
adapter (`cotplan models train-thinking --preset long`) that thinks the same way over inputs of
10-80 items, so its uncapped thinking runs to hundreds and thousands of tokens, as the models
teams cap do (docs/thinking-model.md, "The long thinker").

Each adapter is a GGUF file in `cotplan/backends/weights/` with a JSON record beside it (its
SHA-256, the training settings and what training measured); the file is checked against the
record's SHA-256 before it is served.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cotplan.errors import ModelFileError

__all__ = ["ADAPTER_ALIASES", "KNOWN_ADAPTERS", "AdapterSpec", "adapter_dir", "locate_adapter"]


def adapter_dir() -> Path:
    """The package folder holding the shipped adapters and their records."""
    return Path(__file__).with_name("weights")


@dataclass(frozen=True)
class AdapterSpec:
    """A shipped adapter: the base model it fits, its files and how the server runs it.

    `chat_template` names a jinja file beside the adapter that the server runs in place of the
    base model's template ("" keeps the base's). llama.cpp's reasoning parser acts only on a
    template that writes `reasoning_content` back into an assistant turn; its generation prompt
    does not open `<think>`, because the adapter taught the model to open it itself, as R1
    distills do when their template does not prefill it. `reasoning_format` is llama.cpp's
    (``deepseek`` returns the thinking in `reasoning_content`).
    """

    name: str
    base: str
    file_name: str
    record_name: str
    reasoning_format: str
    description: str
    chat_template: str = ""
    #: The context each server slot gets (tokens): prompt plus all it may write.
    context: int = 4096

    def record(self) -> dict[str, object]:
        """The adapter's JSON record (SHA-256, settings, training report)."""
        path = adapter_dir() / self.record_name
        try:
            loaded = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ModelFileError(f"cannot read the adapter record {path}: {exc}") from exc
        if not isinstance(loaded, dict) or not isinstance(loaded.get("sha256"), str):
            raise ModelFileError(f"the adapter record {path} has no sha256")
        return loaded

    @property
    def sha256(self) -> str:
        return str(self.record()["sha256"])

    @property
    def model_id(self) -> str:
        """Name plus the adapter's checksum prefix: identifies the weights in cache keys."""
        return f"{self.name}@{self.sha256[:12]}"

    def template_path(self) -> Path | None:
        """The checked path of the adapter's chat template, or None where it keeps the base's."""
        if not self.chat_template:
            return None
        path = adapter_dir() / self.chat_template
        if not path.is_file():
            raise ModelFileError(f"the chat template {path} is missing: reinstall cotplan")
        return path


KNOWN_ADAPTERS: dict[str, AdapterSpec] = {
    "smollm2-135m-thinking": AdapterSpec(
        name="smollm2-135m-thinking",
        base="smollm2-135m-instruct",
        file_name="smollm2-thinking-lora.gguf",
        record_name="smollm2-thinking-lora.json",
        reasoning_format="deepseek",
        description="SmolLM2-135M-Instruct plus cotplan's LoRA adapter: thinks in <think>, "
        "over-thinks (2-4x the tokens its answer needs), served by llama.cpp",
        chat_template="smollm2-thinking.jinja",
    ),
    "smollm2-135m-thinking-long": AdapterSpec(
        name="smollm2-135m-thinking-long",
        base="smollm2-135m-instruct",
        file_name="smollm2-thinking-long-lora.gguf",
        record_name="smollm2-thinking-long-lora.json",
        reasoning_format="deepseek",
        description="SmolLM2-135M-Instruct plus cotplan's long-thinking LoRA adapter: thinks "
        "hundreds to thousands of tokens in <think> over lists of 10-80 items, then re-checks, "
        "served by llama.cpp",
        chat_template="smollm2-thinking.jinja",
        context=8192,
    ),
}

#: Short names `connect("local:NAME")` accepts.
ADAPTER_ALIASES = {
    "thinking": "smollm2-135m-thinking",
    "thinking-long": "smollm2-135m-thinking-long",
}


def locate_adapter(name: str) -> tuple[AdapterSpec, Path] | None:
    """The spec and checked file of a shipped adapter by name or alias (None: not an adapter)."""
    from cotplan.backends.models import sha256_file

    spec = KNOWN_ADAPTERS.get(ADAPTER_ALIASES.get(name, name))
    if spec is None:
        return None
    path = adapter_dir() / spec.file_name
    if not path.is_file():
        raise ModelFileError(
            f"the adapter file {path} is missing: reinstall cotplan, or train it with "
            "`cotplan models train-thinking`"
        )
    actual = sha256_file(path)
    if actual != spec.sha256:
        raise ModelFileError(
            f"{path} does not match its record's sha256 (expected {spec.sha256[:12]}..., got "
            f"{actual[:12]}...): the file is corrupt or from another training run"
        )
    return spec, path
